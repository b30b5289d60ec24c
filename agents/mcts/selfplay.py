"""Run independent games (self-play, evaluation) on N workers: in-process, local processes, or Ray actors.

One interface, :class:`GamePool`, and three implementations behind :func:`make_pool`:

- :class:`InlinePool` (``workers == 1``, backend ``"local"``): plays in this process; no start-up cost.
- :class:`LocalPool` (``workers > 1``, backend ``"local"``): N processes of the ``spawn`` context (safe
  with torch and Qt threads in the parent), one pipe each.
- :class:`RayPool` (backend ``"ray"``): N Ray actors, on a local Ray instance or the cluster at
  ``ray_address``. Ray is imported (by :mod:`agents.ray_util`) only when asked for.

A worker is whatever ``WorkerSpec.factory`` (``"module:callable"``) builds from ``WorkerSpec.kwargs``: an
object with ``set_weights(arrays)`` and ``play(task, should_stop=None) -> result`` (``should_stop``, given
in-process only, is asked between moves; the worker returns None when it gave up) and, for a pool whose ``batch``
is above 1, ``play_many(tasks, should_stop=None)``: an iterator of ``(position in tasks, result)`` in task
order, playing several tasks at once (MCTS: their search leaves share one network call). Such a pool hands
each worker groups of up to ``batch`` consecutive tasks (in this process: all of them, the worker keeps
``batch`` in flight); results still come back one per task. The learner stays in the driver;
:meth:`GamePool.set_weights` takes the weights as plain numpy arrays once per generation and every worker
gets them before its next game (Ray: one ``ray.put``, each actor reads the same object). Results come
back as they finish, with the index of their task, so callers can restore task order for determinism.
Abandoning a run (closing its iterator early, e.g. on a stop) kills the workers still busy with it;
they are restarted on the next run.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing as mp
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, cast

import numpy as np

from agents.ray_util import RAY_TASK_CPUS, init_ray

# import_ray: re-exported for the callers that took it from here (bench mcts, tests).
from agents.ray_util import import_ray as import_ray
from agents.threads import PLAY_TORCH_THREADS, cpu_share, limit_threads, threads_report

Weights = Mapping[str, np.ndarray]
KeepGoing = Callable[[], bool]


@dataclass(frozen=True)
class WorkerSpec:
    """How to build a worker anywhere: an importable ``"module:callable"`` and its keyword arguments.

    The kwargs must be picklable plain data (dicts of config values), since they travel to other
    processes and machines. ``threads`` is passed as a keyword too: the torch threads the worker plays
    with, :data:`agents.threads.PLAY_TORCH_THREADS` in worker processes (their numba keeps the process's
    share of the cores, :func:`agents.threads.cpu_share`), 1 on Ray actors (one reserved CPU), ``None``
    (leave as is) in-process.
    """

    factory: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def build(self, threads: int | None) -> Any:
        module, _, name = self.factory.partition(":")
        return getattr(importlib.import_module(module), name)(threads=threads, **dict(self.kwargs))


class WorkerError(RuntimeError):
    """A worker failed: the message carries the worker's own traceback."""


class GamePool(ABC):
    """Independent tasks on ``workers`` workers, all playing with the weights last given."""

    backend: str = ""
    poll_s: float = 0.1

    def __init__(self, spec: WorkerSpec, workers: int, batch: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        self.spec = spec
        self.workers = workers
        self.batch = batch
        self._weights: dict[str, np.ndarray] | None = None
        self._version = 0

    def set_weights(self, arrays: Weights) -> None:
        """Weights for every game started from now on (sent lazily, once per worker and version)."""
        self._weights = {k: np.asarray(v, order="C") for k, v in arrays.items()}  # keeps 0-d arrays 0-d
        self._version += 1

    def groups(self, n: int) -> list[list[int]]:
        """Task indices ``0..n-1`` cut into the consecutive groups handed to one worker at a time: single
        tasks when ``batch`` is 1, else up to ``batch`` tasks, fewer when that leaves workers idle
        (10 tasks, 2 workers, batch 8 -> two groups of 5)."""
        if self.batch <= 1:
            return [[i] for i in range(n)]
        size = max(1, min(self.batch, -(-n // self.workers)))
        return [list(range(i, min(i + size, n))) for i in range(0, n, size)]

    @abstractmethod
    def run(self, tasks: Sequence[Any], keep_going: KeepGoing | None = None) -> Iterator[tuple[int, Any]]:
        """Play every task; yield ``(task_index, result)`` as each finishes.

        ``keep_going`` is asked while games are in flight (every ``poll_s`` seconds, and between moves in
        this process): once it returns False the run ends at once, abandoning the games still playing,
        so that a stop or a used-up time budget does not wait for a long game to finish. It may block
        (a paused training loop): no new game starts meanwhile.
        """

    @abstractmethod
    def close(self) -> None:
        """Stop the workers (idempotent)."""

    def describe(self) -> str:
        return f"{self.workers} {self.backend} worker{'s' if self.workers != 1 else ''}"

    def __enter__(self) -> GamePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------------------------- inline


class InlinePool(GamePool):
    """One worker in this process (the default for ``workers == 1``: no process start-up, no copies)."""

    backend = "inline"

    def __init__(self, spec: WorkerSpec, workers: int = 1, batch: int = 1) -> None:
        super().__init__(spec, 1, batch)
        self._worker: Any = None
        self._has = 0

    def run(self, tasks: Sequence[Any], keep_going: KeepGoing | None = None) -> Iterator[tuple[int, Any]]:
        if self._worker is None:
            self._worker = self.spec.build(threads=None)
        # In this process the worker itself asks between moves: ``play(task, should_stop)`` returns None
        # when it gave up.
        should_stop = None if keep_going is None else (lambda: not keep_going())
        if self.batch > 1:
            # One worker here: it gets every task and keeps ``batch`` of them in flight.
            if self._has != self._version and self._weights is not None:
                self._worker.set_weights(self._weights)
                self._has = self._version
            yield from self._worker.play_many(tasks, should_stop)
            return
        for i, task in enumerate(tasks):
            if self._has != self._version and self._weights is not None:
                self._worker.set_weights(self._weights)
                self._has = self._version
            result = self._worker.play(task, should_stop)
            if result is None:
                return
            yield i, result

    def close(self) -> None:
        self._worker = None

    def describe(self) -> str:
        return "1 worker (in this process)"


# -------------------------------------------------------------------------------------- processes


def _process_main(conn: Connection, spec: WorkerSpec, threads: int = 1) -> None:
    """A worker process: build the worker, then answer messages until told to stop or the pipe closes.

    ``threads``: this process's share of the cores, for torch, numba, OpenMP and BLAS."""
    # The environment first: the worker's libraries read it as they load. Torch on one thread: a
    # self-play worker only plays (the learner trains in the parent).
    limit_threads(threads, PLAY_TORCH_THREADS)
    try:
        worker = spec.build(threads=PLAY_TORCH_THREADS)  # the worker sets its torch threads
        limit_threads(threads, PLAY_TORCH_THREADS)  # and the pools the build loaded
    except BaseException:
        conn.send(("error", -1, traceback.format_exc()))
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        kind = msg[0]
        if kind == "close":
            return
        try:
            if kind == "threads":
                conn.send(("threads", -1, threads_report()))
            elif kind == "weights":
                worker.set_weights(msg[1])
            elif kind == "play":
                conn.send(("done", msg[1], worker.play(msg[2])))
            elif kind == "play_many":
                # One message per game as it finishes: the pool counts them down.
                for i, result in worker.play_many(msg[2]):
                    conn.send(("done", msg[1][i], result))
        except BaseException:
            index = msg[1] if kind == "play" else msg[1][0] if kind == "play_many" else -1
            conn.send(("error", index, traceback.format_exc()))


@dataclass
class _Proc:
    process: Any
    conn: Connection
    version: int = 0
    task: int | None = None
    pending: int = 0  # results still to come from the group it plays


class LocalPool(GamePool):
    """N worker processes on this machine (``spawn`` context), started on first use and kept across runs."""

    backend = "local"

    def __init__(self, spec: WorkerSpec, workers: int, batch: int = 1) -> None:
        super().__init__(spec, workers, batch)
        self._ctx = mp.get_context("spawn")
        self._procs: list[_Proc | None] = [None] * workers

    def _start(self, slot: int) -> _Proc:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=_process_main,
            args=(child, self.spec, cpu_share(self.workers)),
            name=f"selfplay-{slot}",
            daemon=True,
        )
        process.start()
        child.close()
        proc = _Proc(process, parent)
        self._procs[slot] = proc
        return proc

    def _send(self, slot: int, group: list[int], tasks: Sequence[Any]) -> None:
        proc = self._procs[slot] or self._start(slot)
        if proc.version != self._version and self._weights is not None:
            proc.conn.send(("weights", self._weights))
            proc.version = self._version
        if self.batch > 1:
            proc.conn.send(("play_many", group, [tasks[i] for i in group]))
        else:
            proc.conn.send(("play", group[0], tasks[group[0]]))
        proc.task = group[0]
        proc.pending = len(group)

    def _kill(self, slot: int) -> None:
        proc = self._procs[slot]
        if proc is None:
            return
        proc.conn.close()
        if proc.process.is_alive():
            proc.process.terminate()
        proc.process.join(timeout=5)
        self._procs[slot] = None

    def run(self, tasks: Sequence[Any], keep_going: KeepGoing | None = None) -> Iterator[tuple[int, Any]]:
        todo = self.groups(len(tasks))[::-1]
        busy: dict[Connection, int] = {}  # connection -> slot
        try:
            for slot in range(self.workers):
                if todo:
                    self._send(slot, todo.pop(), tasks)
                    busy[self._procs[slot].conn] = slot  # type: ignore[union-attr]
            while busy:
                ready_conns = wait(list(busy), timeout=self.poll_s)
                if keep_going is not None and not keep_going():
                    return
                for ready in ready_conns:
                    conn = cast(Connection, ready)
                    slot = busy.pop(conn)
                    try:
                        kind, index, payload = conn.recv()
                    except (EOFError, OSError):
                        self._kill(slot)
                        raise WorkerError(f"self-play worker process {slot} died") from None
                    if kind == "error":
                        self._kill(slot)
                        raise WorkerError(f"self-play worker process {slot} failed:\n{payload}")
                    proc = self._procs[slot]
                    assert proc is not None
                    proc.pending -= 1
                    if proc.pending > 0:
                        busy[proc.conn] = slot  # more of its group to come
                    else:
                        proc.task = None
                        if todo:
                            self._send(slot, todo.pop(), tasks)
                            busy[proc.conn] = slot
                    yield index, payload
        finally:
            # Abandoned (or failed) mid-run: the games still in flight would answer the next run.
            for slot in list(busy.values()):
                self._kill(slot)

    def threads_reports(self) -> list[dict[str, Any]]:
        """What each worker process runs with (:func:`agents.threads.threads_report`), starting the
        workers not started yet; call it between runs, not while games are in flight."""
        reports = []
        for slot in range(self.workers):
            proc = self._procs[slot] or self._start(slot)
            proc.conn.send(("threads",))
            kind, _, payload = proc.conn.recv()
            if kind == "error":
                self._kill(slot)
                raise WorkerError(f"self-play worker process {slot} failed:\n{payload}")
            reports.append(payload)
        return reports

    def close(self) -> None:
        for slot, proc in enumerate(self._procs):
            if proc is None:
                continue
            with contextlib.suppress(OSError, BrokenPipeError):
                proc.conn.send(("close",))
            proc.process.join(timeout=2)
            self._kill(slot)


# -------------------------------------------------------------------------------------------- Ray


class _RayWorker:
    """The Ray actor: the same worker as in a local process, built on the actor's node."""

    def __init__(self, spec: WorkerSpec) -> None:
        limit_threads(RAY_TASK_CPUS)  # the CPUs Ray reserved for this actor
        self.worker = spec.build(threads=RAY_TASK_CPUS)
        limit_threads(RAY_TASK_CPUS)

    def set_weights(self, arrays: Weights) -> None:
        self.worker.set_weights(arrays)

    def play(self, task: Any) -> Any:
        return self.worker.play(task)

    def play_many(self, tasks: Sequence[Any]) -> list[tuple[int, Any]]:
        return list(self.worker.play_many(tasks))


class RayPool(GamePool):
    """N Ray actors (1 CPU each). Connects to ``address`` (a running cluster), or to the Ray instance this
    process already started, or starts a local one sized for ``workers``.
    """

    backend = "ray"

    def __init__(self, spec: WorkerSpec, workers: int, address: str | None = None, batch: int = 1) -> None:
        super().__init__(spec, workers, batch)
        ray = init_ray(workers, address)
        self._ray = ray
        self._actor_cls = ray.remote(num_cpus=RAY_TASK_CPUS)(_RayWorker)
        self._actors: list[Any] = [None] * workers
        self._versions = [0] * workers
        self._weights_ref: Any = None
        self._ref_version = 0

    def _actor(self, slot: int) -> Any:
        if self._actors[slot] is None:
            self._actors[slot] = self._actor_cls.remote(self.spec)
            self._versions[slot] = 0
        return self._actors[slot]

    def _send(self, slot: int, group: list[int], tasks: Sequence[Any]) -> Any:
        actor = self._actor(slot)
        if self._versions[slot] != self._version and self._weights is not None:
            if self._ref_version != self._version:
                self._weights_ref = self._ray.put(self._weights)  # one object, read by every actor
                self._ref_version = self._version
            actor.set_weights.remote(self._weights_ref)  # actor calls run in order: before the game
            self._versions[slot] = self._version
        if self.batch > 1:
            return actor.play_many.remote([tasks[i] for i in group])
        return actor.play.remote(tasks[group[0]])

    def _kill(self, slot: int) -> None:
        if self._actors[slot] is not None:
            self._ray.kill(self._actors[slot])
            self._actors[slot] = None

    def run(self, tasks: Sequence[Any], keep_going: KeepGoing | None = None) -> Iterator[tuple[int, Any]]:
        ray = self._ray
        todo = self.groups(len(tasks))[::-1]
        pending: dict[Any, tuple[int, list[int]]] = {}  # object ref -> (slot, task indices)
        try:
            for slot in range(self.workers):
                if todo:
                    group = todo.pop()
                    pending[self._send(slot, group, tasks)] = (slot, group)
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=self.poll_s)
                if keep_going is not None and not keep_going():
                    return
                if not ready:
                    continue
                slot, group = pending.pop(ready[0])
                try:
                    result = ray.get(ready[0])
                except ray.exceptions.RayError as e:
                    self._kill(slot)
                    raise WorkerError(f"self-play Ray actor {slot} failed: {e}") from None
                if todo:
                    next_group = todo.pop()
                    pending[self._send(slot, next_group, tasks)] = (slot, next_group)
                if self.batch > 1:
                    for i, one in result:
                        yield group[i], one
                else:
                    yield group[0], result
        finally:
            for slot, _ in list(pending.values()):
                self._kill(slot)

    def close(self) -> None:
        for slot in range(self.workers):
            self._kill(slot)

    def describe(self) -> str:
        return f"{self.workers} Ray actor{'s' if self.workers != 1 else ''}"


def make_pool(
    spec: WorkerSpec,
    workers: int = 1,
    backend: str = "local",
    ray_address: str | None = None,
    batch: int = 1,
) -> GamePool:
    """The pool for a :class:`~agents.base.TrainContext`'s ``workers`` / ``backend`` / ``ray_address``;
    ``batch`` > 1: workers play up to that many tasks at once (``play_many``)."""
    if backend == "ray" or ray_address:
        return RayPool(spec, workers, ray_address, batch)
    if backend != "local":
        raise ValueError(f"unknown backend {backend!r}: use 'local' or 'ray'")
    if workers <= 1:
        return InlinePool(spec, batch=batch)
    return LocalPool(spec, workers, batch)
