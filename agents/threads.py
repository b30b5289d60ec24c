"""How many threads a process's math libraries may start: one helper for every process that plays or
trains on a share of the cores.

Two worker processes on a 2-core machine that each let torch (OpenMP), MKL, OpenBLAS and numba start a
thread per core run four or more busy threads on two cores. OpenMP threads spin at their barriers, so
each batch-of-one forward pass then waits for a thread that is not running: on this project's 2-core
machine two evaluation workers were 8x slower than one. Every such process calls
:func:`limit_threads` with its share (:func:`cpu_share`) before it builds its agent and again after
(once the agent's imports loaded torch), and :func:`threads_report` says what it runs with, so tests
and ``eval --json`` can check it.

What is set, and when it takes effect:

- the environment variables of :data:`THREAD_ENV_VARS` (OpenMP, MKL, OpenBLAS, numexpr, Accelerate):
  read by those libraries when they load, so they bind libraries loaded after the call and every
  process started from this one; :func:`thread_env` gives the same as a dict for a child's environment
  (set before the child imports anything, they bind everything);
- torch, when it is loaded: ``set_num_threads`` (its OpenMP and MKL pools) and ``set_num_interop_threads``
  (possible once per process, before any inter-op work: later calls that cannot change it are ignored);
- numba, when it is loaded: ``set_num_threads`` (at most ``NUMBA_NUM_THREADS``, fixed at its import).

numpy's OpenBLAS, if loaded before the call, keeps the thread count it started with; play and training
here never call it (the networks are torch's, the kernels numba's), and a child given
:func:`thread_env` starts it at its share.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

#: Environment variables that size a math library's thread pool when it loads.
THREAD_ENV_VARS: tuple[str, ...] = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


#: Torch (with OpenMP, MKL and OpenBLAS) threads of a process that only plays: evaluation and Arena
#: workers, ``eval`` playing in its own process, MCTS self-play workers. A move's forward pass is one
#: board, or one search's few leaves: too little work to split. On a 16-core machine two evaluation
#: workers with 8 torch threads each played no faster than with one each and kept 15.8 cores busy instead
#: of 2, their OpenMP threads spinning at every pass's barrier (``bench eval``). numba keeps the
#: process's share: its parallel kernels split whole games between threads.
PLAY_TORCH_THREADS = 1


def cpu_count() -> int:
    """Cores this process may run on (its CPU affinity where the OS has one, else all of them)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's word for it: what a benchmark names
    beside its figures, as a ratio holds only for the machine it was measured on."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def cpu_share(workers: int, cpus: int | None = None) -> int:
    """Threads for each of ``workers`` processes sharing ``cpus`` cores (default: this process's): the
    cores split evenly, at least one each."""
    total = cpu_count() if cpus is None else int(cpus)
    return max(1, total // max(1, int(workers)))


def thread_env(threads: int) -> dict[str, str]:
    """:data:`THREAD_ENV_VARS` set to ``threads``: the environment of a child process that runs on that
    many cores (given before the child starts, it binds every library the child loads)."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return dict.fromkeys(THREAD_ENV_VARS, str(int(threads)))


def limit_threads(threads: int, torch_threads: int | None = None) -> dict[str, Any]:
    """Make this process use ``threads`` threads in numba and ``torch_threads`` (default: ``threads``)
    in torch, OpenMP, MKL and OpenBLAS (see the module's docstring for what binds when); returns
    :func:`threads_report`. Processes that only play pass :data:`PLAY_TORCH_THREADS`.

    Idempotent: call it first thing in a worker (the environment, before torch loads) and again once the
    agent is built (torch's and numba's pools, now loaded). It never imports torch or numba itself: a
    worker that plays without them does not pay their import."""
    torch_threads = threads if torch_threads is None else torch_threads
    os.environ.update(thread_env(torch_threads))
    # numba first: its first set_num_threads starts its OpenMP layer, which sets the OpenMP thread count
    # (torch's too, the same libgomp) back to NUMBA_NUM_THREADS; torch's count set after it stays.
    numba = sys.modules.get("numba")
    if numba is not None and hasattr(numba, "set_num_threads"):
        numba.set_num_threads(max(1, min(threads, int(numba.config.NUMBA_NUM_THREADS))))
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(torch_threads)
        if torch.get_num_interop_threads() != torch_threads:
            # Refused once inter-op work started in this process (or after an earlier call): kept then.
            with contextlib.suppress(RuntimeError):
                torch.set_num_interop_threads(torch_threads)
    return threads_report()


def threads_report() -> dict[str, Any]:
    """The thread counts this process runs with: ``torch`` / ``interop`` (None when torch is not
    loaded), ``numba`` (None when numba is not loaded), each of :data:`THREAD_ENV_VARS` as set (None
    when unset), and ``pid``. Plain data: it travels back from worker processes with their results."""
    torch: Any = sys.modules.get("torch")
    numba: Any = sys.modules.get("numba")
    if torch is None or not hasattr(torch, "get_num_threads"):  # absent, or half-imported
        torch = None
    if numba is None or not hasattr(numba, "get_num_threads"):
        numba = None
    return {
        "pid": os.getpid(),
        "torch": None if torch is None else int(torch.get_num_threads()),
        "interop": None if torch is None else int(torch.get_num_interop_threads()),
        "numba": None if numba is None else int(numba.get_num_threads()),
        **{var: os.environ.get(var) for var in THREAD_ENV_VARS},
    }


def report_matches(report: dict[str, Any], threads: int, torch_threads: int | None = None) -> bool:
    """A :func:`threads_report` says what :func:`limit_threads` (``threads``, ``torch_threads``) set:
    numba's count equals ``threads``, torch's counts and the environment ``torch_threads`` (default:
    ``threads``); counts of libraries not loaded are passed over."""
    tt = threads if torch_threads is None else torch_threads
    torch_ok = all(report.get(k) in (None, tt) for k in ("torch", "interop"))
    env_ok = all(report.get(var) == str(tt) for var in THREAD_ENV_VARS)
    return torch_ok and env_ok and report.get("numba") in (None, threads)
