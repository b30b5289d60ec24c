"""A training run in a child process: the window's learner can never starve the window.

A learner and the GUI sharing one interpreter share its lock: a jitted n-tuple chunk holds it for a
whole call, a Python training loop takes most of it, and the window stalls (1.5 s stalls measured
with n-tuple). So the window runs each run in a child process that makes the same
:func:`studio.services.runs.open_run` call as ``python main.py train`` and owns the run's store
writes (metrics, checkpoints, training games); the window only reads.

The child is ``python -m studio.services.training_process``, started with :class:`TrainingProcess`
(a fresh interpreter, like multiprocessing's spawn, but a plain subprocess: one that the user lets
finish headless outlives the window without multiprocessing joining it at exit). The two talk in
length-prefixed pickle frames (trusted: our own child) over the child's stdin / stdout:

parent -> child: an :class:`~studio.services.messages.Opening` (the
:class:`~studio.services.runs.RunRequest`, the database path, the watchdog's limit), then commands
``"pause"``, ``"resume"``, ``"stop"``, ``"checkpoint"`` (save one now), ``"detach"`` (keep training
when the window goes away). End of input without ``"detach"`` means the window died: the child stops
the run cleanly (final checkpoint), so nothing is lost and nothing trains unowned.

child -> parent: the typed messages of :mod:`studio.services.messages`: ``Started(run_id, agent)``,
``Events([MetricEvent, ...])`` at most :data:`BATCH_S` apart (boards and game traces dropped but the
last board of a batch kept: the window shows one board, and the child stores the games itself),
``CheckpointSaved(path)``, ``Done(status, last_checkpoint, games_logged)`` and, when the run could not
start or raised, ``Failed(message, field, traceback)``. After ``"detach"`` the child answers
``Detached()`` and closes its output, so the window stops reading at once.

SIGINT and SIGTERM stop the child's run cleanly too (a window that re-attached to it uses SIGINT).

A learner that reports nothing for :data:`NO_PROGRESS_S` while it is not paused (a hung library call, a
jitted loop that never returns: nothing short of ending the process stops it) is ended by a watchdog
in the child: the run is marked failed with the reason, the window gets it as a ``Failed`` frame, and
the last checkpoint stays the one a resume starts from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pickle
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agents.base import Control, MetricEvent
from studio.services.messages import (
    COMMANDS,
    CheckpointSaved,
    ChildMessage,
    Detached,
    Done,
    Events,
    Failed,
    Opening,
    Started,
)

if TYPE_CHECKING:
    from studio.services.runs import RunRequest

log = logging.getLogger(__name__)

#: Seconds between event batches sent to the window (the window redraws at a bounded rate anyway).
BATCH_S = 0.1
#: Scheduling niceness of a training child. Two learners and another busy program on two cores left
#: the window's process a third of a core, and key presses waited up to half a second for it; a nicer
#: learner yields the CPU the moment the window wakes up, and loses nothing on a machine that is
#: otherwise idle (niceness only matters under contention).
CHILD_NICENESS = 10
#: Seconds without a report from an unpaused learner before the child ends its run as failed. Long:
#: the slowest legitimate gap (an MCTS generation with a big search, a first numba compile) is minutes.
NO_PROGRESS_S = 1800.0
#: Exit status of a child ended by the watchdog.
EXIT_NO_PROGRESS = 3
_HEADER = struct.Struct("<I")


# ------------------------------------------------------------------------------------- framing


def write_frame(fh: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(_HEADER.pack(len(data)) + data)
    fh.flush()


def read_frame(fh: IO[bytes]) -> Any:
    """The next object, or None at the end of the stream (the other side is gone)."""
    head = _read_exactly(fh, _HEADER.size)
    if head is None:
        return None
    (n,) = _HEADER.unpack(head)
    body = _read_exactly(fh, n)
    return None if body is None else pickle.loads(body)


def _read_exactly(fh: IO[bytes], n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = fh.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


# ------------------------------------------------------------------------------------ the parent


class TrainingProcess:
    """The parent's handle on one child training process (Qt-free; the window wraps it in a QThread).

    ``messages()`` yields what the child says until its output ends; ``send(cmd)`` never raises once
    the child is gone (the command no longer matters).
    """

    def __init__(
        self,
        request: RunRequest,
        db_path: str | os.PathLike[str],
        *,
        no_progress_s: float = NO_PROGRESS_S,
        env: dict[str, str] | None = None,
    ) -> None:
        env = {**os.environ, **(env or {})}
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "studio.services.training_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=root,
            # Its own session: Ctrl-C in the terminal that started the window is the window's, and a
            # run left to finish headless is not killed with the window's process group.
            start_new_session=True,
        )
        self._lock = threading.Lock()
        self.detached = False
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in: IO[bytes] = self.proc.stdin
        self._out: IO[bytes] = self.proc.stdout
        self.send(Opening(request, str(db_path), float(no_progress_s)))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: str | Opening) -> bool:
        """Send a command (or the opening); False when the child is gone."""
        if isinstance(message, str) and message not in COMMANDS:
            raise ValueError(f"unknown command {message!r}")
        with self._lock:
            try:
                write_frame(self._in, message)
                return True
            except (BrokenPipeError, OSError, ValueError):
                return False

    def messages(self) -> Iterator[ChildMessage]:
        """What the child says, in order, until it ends (blocking; run it in a worker thread)."""
        while True:
            msg = read_frame(self._out)
            if msg is None:
                return
            yield msg

    def detach(self) -> None:
        """Let the run finish without this process (the window is closing and the user chose so)."""
        self.detached = True
        self.send("detach")
        with self._lock, contextlib.suppress(OSError):
            self._in.close()

    def kill(self) -> None:
        """SIGKILL (tests; a child that ignores stop): the run is left as a killed run is."""
        if self.proc.poll() is None:
            self.proc.kill()

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()


def exit_reason(code: int | None) -> str:
    """Why a child ended, in words: ``killed by SIGKILL`` / ``exit status 1``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


# ------------------------------------------------------------------------------------- the child


class _Sender:
    """Frames to the parent from two threads; once the parent is gone, sending quietly stops."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.lock = threading.Lock()
        self.gone = False

    def __call__(self, obj: ChildMessage) -> None:
        if self.gone:
            return
        with self.lock:
            if self.gone:
                return
            try:
                write_frame(self.fh, obj)
            except (BrokenPipeError, OSError, ValueError):
                self.gone = True

    def close(self) -> None:
        """No more frames: the parent sees the end of the stream."""
        with self.lock:
            self.gone = True
            with contextlib.suppress(OSError):
                self.fh.close()


def _slim(events: list[MetricEvent]) -> list[MetricEvent]:
    """No game traces, and one board per batch (the last one), so batches stay small."""
    keep = max((i for i, e in enumerate(events) if e.board is not None), default=-1)
    return [
        e
        if e.game is None and (e.board is None or i == keep)
        else dataclasses.replace(e, game=None, board=e.board if i == keep else None)
        for i, e in enumerate(events)
    ]


def _listen(inp: IO[bytes], control: Control, run_box: dict[str, Any], send: _Sender) -> None:
    """The command thread: pause / resume / stop / checkpoint / detach, until the parent goes."""
    detached = False
    while True:
        try:
            msg = read_frame(inp)
        except (OSError, pickle.UnpicklingError, EOFError):
            msg = None
        if msg is None:
            if not detached:
                control.stop()  # the window died: end cleanly, with a final checkpoint
            return
        if msg == "pause":
            control.pause()
        elif msg == "resume":
            control.resume()
        elif msg == "stop":
            control.stop()
        elif msg == "checkpoint":
            run = run_box.get("run")
            if run is not None:
                run.request_checkpoint()
        elif msg == "detach":
            # Say so, then go quiet: the window stops reading at once (it is closing), and the run
            # keeps writing only to the store.
            detached = True
            send(Detached())
            send.close()


def _watchdog(
    heard: list[float], limit_s: float, control: Control, db_path: Path, run_id: int, send: _Sender
) -> None:
    """End the process when the learner has said nothing for ``limit_s`` seconds while not paused."""
    from engine.store import GameStore
    from studio.text import duration

    while True:
        time.sleep(min(1.0, limit_s / 4))
        now = time.monotonic()
        if control.paused:
            heard[0] = now  # a paused learner is silent by design
            continue
        if now - heard[0] <= limit_s:
            continue
        reason = (
            f"no progress: the learner reported nothing for {duration(now - heard[0])} (m:ss), so its run "
            "was ended; resume continues from the last checkpoint"
        )
        try:
            with GameStore(db_path) as store:  # its own connection
                store.set_run_status(run_id, "failed", reason)
        except (sqlite3.Error, OSError, ValueError):  # the process ends anyway; the window still hears why
            log.exception("the watchdog could not mark run %s failed", run_id)
        send(Failed(reason))  # never raises: a parent that is gone only silences it
        sys.stderr.flush()
        os._exit(EXIT_NO_PROGRESS)


def child_main() -> int:
    """The child's whole life: read the request, train, report; exit status 0 / 1 (failed) / 2 (refused)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print from a library goes to stderr, never into the frames
    inp = sys.stdin.buffer
    send = _Sender(out)
    opening = read_frame(inp)
    if not isinstance(opening, Opening):
        return 2
    request, db_path, no_progress_s = opening.request, opening.db_path, opening.no_progress_s
    from studio.logs import setup_logging

    setup_logging(Path(db_path).parent, "train child", stderr=False)  # the window's DATA/logs/studio.log
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(CHILD_NICENESS)
    control = Control()
    # SIGTERM / SIGINT: stop after this step and save (a window that re-attached asks with SIGINT, as
    # it asks a `train` in a terminal). The child has its own session, so the terminal's Ctrl-C is not it.
    signal.signal(signal.SIGTERM, lambda *_: control.stop())
    signal.signal(signal.SIGINT, lambda *_: control.stop())
    run_box: dict[str, Any] = {}
    threading.Thread(target=_listen, args=(inp, control, run_box, send), name="commands", daemon=True).start()

    from engine.store import GameStore
    from studio.services.runs import RunError, open_run

    store = GameStore(Path(db_path))
    try:
        try:
            run = open_run(request, store, control)
        except RunError as e:
            send(Failed.of(e))
            return 2
        run_box["run"] = run
        send(Started(run.run_id, run.agent.name))
        heard = [time.monotonic()]  # when the learner last reported (or was last paused)
        threading.Thread(
            target=_watchdog,
            args=(heard, no_progress_s, control, Path(db_path), run.run_id, send),
            name="watchdog",
            daemon=True,
        ).start()
        pending: list[MetricEvent] = []
        last_sent = time.monotonic()
        checkpoint = run.last_checkpoint
        try:
            for event in run:
                heard[0] = time.monotonic()
                pending.append(event)
                now = time.monotonic()
                if now - last_sent >= BATCH_S:
                    send(Events(_slim(pending)))
                    pending, last_sent = [], now
                if run.last_checkpoint != checkpoint:
                    checkpoint = run.last_checkpoint
                    send(CheckpointSaved(str(checkpoint)))
        finally:
            if pending:
                send(Events(_slim(pending)))
        last = None if run.last_checkpoint is None else str(run.last_checkpoint)
        send(Done(run.status, last, run.games_logged))
        return 0
    except Exception as e:  # stopped itself (diverged, stuck: one line) or a bug (with its traceback,
        # which the window shows): the runner has marked the run failed
        send(Failed.of(e))
        return 1
    finally:
        store.close()


# ---------------------------------------------------------------------- the fast engine, ahead

#: The argument that makes the child prepare the fast engine instead of training a run.
PREPARE_ARG = "--prepare"


def prepare_main() -> int:
    """Compile (or load) every jitted learner's kernels, training and playing, once: numba writes them
    to its on-disk cache (``cache=True``), so the first n-tuple run and the first hint of the session
    load them in a second or two instead of compiling for ~30 s and ~22 s. The window starts this at
    its start (:func:`start_prepare`); exit status 0, or 1 when an agent could not be prepared."""
    from agents.arena import warm_up
    from agents.registry import get_agent_class
    from agents.run.loop import WARM_UP_STEPS, warm_up_training

    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(CHILD_NICENESS)  # the window comes first: this is only ahead of time
    code = 0
    for name in WARM_UP_STEPS:
        try:
            agent = get_agent_class(name)(seed=0)
            warm_up_training(agent)
            warm_up(agent, agent.rules)  # its moves: what hints and Watch call
        except Exception:  # that agent compiles on first use instead, as before
            log.exception("could not prepare %s's kernels", name)
            code = 1
    return code


def start_prepare() -> subprocess.Popen[bytes]:
    """Start :func:`prepare_main` in a child process of its own (a compile holds the interpreter's lock
    for seconds at a time: in the window's process it would freeze the window)."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ}
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.Popen(
        [sys.executable, "-m", "studio.services.training_process", PREPARE_ARG],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=root,
        start_new_session=True,
    )


if __name__ == "__main__":
    code = prepare_main() if sys.argv[1:] == [PREPARE_ARG] else child_main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: the command thread sits in a blocking read of stdin, and interpreter shutdown
    # would wait on its buffer lock. Everything that matters (store, frames) is closed by now.
    os._exit(code)
