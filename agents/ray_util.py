"""Ray, the optional extra, for whatever plays games on Ray actors (MCTS self-play, the evaluation arena).

Ray is imported only here and only when asked for: importing it takes seconds, and most runs never
need it. :func:`init_ray` joins a running cluster (``address``), or keeps the Ray instance this
process already started, or starts a local one sized for ``workers``.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
from collections.abc import Callable
from typing import Any

from agents.threads import thread_env

#: CPUs each actor or task the studio starts on Ray reserves (arena players, self-play workers, sweep
#: trials all ask for one): the threads their math libraries start.
RAY_TASK_CPUS = 1

#: What every front end says when the Ray backend is asked for without Ray installed.
RAY_MISSING = (
    "the Ray backend needs Ray, an optional extra: pip install -e '.[ray]' (or pip install 'ray[default]')"
)


def import_ray() -> Any:
    """``ray``, or a clear error naming the optional extra."""
    try:
        import ray
    except ImportError:
        raise RuntimeError(RAY_MISSING) from None
    return ray


#: Seconds to wait for a cluster's head to answer before saying it does not.
CONNECT_TIMEOUT_S = 5.0


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise ConnectionError when nothing listens at a ``HOST:PORT`` address.

    Ray itself retries a silent address for minutes, deaf to Ctrl-C; a wrong port should be one line
    now. Other forms (``auto``, ``ray://…``, a malformed one) are left to Ray, which names them."""
    host, sep, port = address.rpartition(":")
    if not (sep and host and port.isdigit()) or "://" in address or int(port) > 65535:
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except (OSError, UnicodeError) as e:
        reason = getattr(e, "strerror", None) or str(e) or type(e).__name__
        raise ConnectionError(
            f"no Ray cluster answers at {address} ({reason}): start one with `ray start --head` there, "
            "or check the address"
        ) from None


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def init_ray(workers: int, address: str | None = None) -> Any:
    """``ray``, initialised: on the cluster at ``address``, or as already started in this process, or as a
    local instance of ``workers`` CPUs (one per 1-CPU actor)."""
    ray = import_ray()
    if not ray.is_initialized():
        # Workers on this machine import the studio from this checkout even when it is not installed;
        # on other machines it must be installed (docs/guide.md, "Scaling self-play with Ray").
        # Their math libraries start one thread per reserved CPU, set before they load: Ray sets
        # OMP_NUM_THREADS alone, and MKL, OpenBLAS (and torch's inter-op pool, set by the actors
        # themselves with agents.threads.limit_threads) would take every core of the node.
        env = {
            "env_vars": {
                "PYTHONPATH": os.pathsep.join(p for p in (_repo_root(), os.environ.get("PYTHONPATH")) if p),
                **thread_env(RAY_TASK_CPUS),
            }
        }
        kwargs: dict[str, Any] = {
            "runtime_env": env,
            "logging_level": "WARNING",
            "log_to_driver": False,
            # Another thread (or a caller) may have started it since the check above: keep that one.
            "ignore_reinit_error": True,
        }
        if address:
            check_reachable(address)
            _on_owner_thread(lambda: ray.init(address=address, **kwargs))
        else:
            _on_owner_thread(
                lambda: ray.init(num_cpus=max(1, int(workers)), include_dashboard=False, **kwargs)
            )
    return ray


_owner_lock = threading.Lock()
_owner_jobs: queue.Queue[tuple[Callable[[], Any], queue.Queue[BaseException | None]]] | None = None


def _on_owner_thread(job: Callable[[], Any]) -> None:
    """Run ``job`` (``ray.init``) on one thread that lives as long as the process, and wait for it.

    Ray starts its local cluster's processes (GCS, raylet) with the parent-death signal, which Linux
    ties to the *thread* that started them: a ``ray.init`` on an Arena or sweep job's thread had the
    cluster killed when that job ended, and the driver, unable to reach it, ended the whole process a
    minute later (the window closed under the person). The main thread may be busy in the event loop,
    so the owner is a thread of its own that never ends before the process does."""
    global _owner_jobs
    with _owner_lock:
        if _owner_jobs is None:
            jobs: queue.Queue[tuple[Callable[[], Any], queue.Queue[BaseException | None]]] = queue.Queue()

            def serve() -> None:
                while True:
                    work, reply = jobs.get()
                    try:
                        work()
                    except BaseException as e:  # handed back to the caller, raised there
                        reply.put(e)
                    else:
                        reply.put(None)

            threading.Thread(target=serve, name="ray-owner", daemon=True).start()
            _owner_jobs = jobs
    reply: queue.Queue[BaseException | None] = queue.Queue()
    _owner_jobs.put((job, reply))
    error = reply.get()
    if error is not None:
        raise error
