"""Training runs: ``agent.train()`` recorded in the store, with checkpoints, status and resume.

``run_training(agent, budget, store)`` creates a run and returns a :class:`TrainingRun`, an iterator
of the agent's :class:`MetricEvent` records that, as they pass:

* logs every event to the run's metric history. Events are written in batches, by the training
  thread when a batch is due and by a small background thread otherwise, so an event is on disk
  within about ``FLUSH_AFTER_S`` seconds (plus one write) even when the agent goes quiet: a killed
  run loses at most the last second of metrics;
* saves a checkpoint every ``checkpoint_every_s`` seconds, on pause, and a final one when the run
  stops or finishes (files under ``engine.paths.checkpoints_dir()``, written atomically); never one
  whose weights hold NaN or an infinity: the run fails as diverged instead, and its last checkpoint
  stays the last good one;
* records finished training games (events that carry a ``GameTrace``) as ``source="training"``,
  one game in ``log_every`` (see :data:`DEFAULT_LOG_EVERY`);
* keeps the run's status: running, paused (while the control is paused), stopped (a stop request,
  Ctrl-C, or the consumer closing the iterator), finished (budget used), failed (an exception; the
  message is stored and the exception re-raised).

``resume_run(run_id, store)`` loads the run's last checkpoint and goes on with what is left of its
budget (or a new budget). The GUI's worker thread and ``python main.py train`` both iterate these.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from agents.base import Agent, Budget, Control, Counters, MetricEvent, TrainContext
from engine.paths import checkpoints_dir
from engine.records import GameTrace

#: Seconds between periodic checkpoints.
DEFAULT_CHECKPOINT_EVERY_S = 300.0
#: Record one training game in this many (0 = none). Learners play tens of thousands of games and a
#: stored move costs ~100 bytes with its board, so logging all of them grows the store by hundreds of
#: MB per long run, mostly early random-looking play; one in 10 keeps a dense sample of the whole
#: learning curve to replay or learn from, at a tenth of the size.
DEFAULT_LOG_EVERY = 10
#: Episodes in a row without a single move before a run is stopped as stuck (a diverged agent that
#: picks no move plays 0-move games forever, and its store grows by the minute).
STALL_EPISODES = 200
#: Metric events wait at most this long in memory before they are written.
FLUSH_AFTER_S = 0.5
#: ... or until this many are waiting (fast agents emit thousands per second).
FLUSH_BATCH = 500


class RunStore(Protocol):
    """What a run needs from :class:`engine.store.GameStore` (a protocol, so tests may pass a fake)."""

    @property
    def path(self) -> Path: ...

    def create_run(
        self,
        agent: str,
        config: Any,
        rules: Any,
        budget: Any,
        seed: int | None = None,
        *,
        status: str = "running",
    ) -> int: ...

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None: ...

    def claim_run(self, run_id: int) -> None: ...

    def log_metrics(self, run_id: int, events: Any) -> None: ...

    def add_checkpoint(self, run_id: int, path: Any, episode: int, step: int, final: bool = False) -> int: ...

    def record_trace(
        self,
        trace: GameTrace,
        source: str,
        agent: str | None = None,
        checkpoint: Any = None,
        *,
        run_id: int | None = None,
    ) -> int: ...


# ----------------------------------------------------------------------------------------- errors


class RunError(ValueError):
    """A run that cannot start or go on. ``field`` names the input at fault, so a front end can show
    the message where the user fixes it (``"budget"``, ``"resume"``, ``"agent"``, a knob's name...);
    a ValueError, so the CLI prints it as one line."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class BudgetUsedUp(RunError):
    """A resumed run has used its whole budget and no new one was given."""


class RunBusy(RunError):
    """The run is running or paused in another process (it has one owner at a time)."""


class NoCheckpoint(RunError):
    """The run saved no checkpoint, so there is nothing to resume from."""


class Diverged(RunError):
    """The learner reported a non-finite value, or stopped making moves: a run that cannot recover."""


class IncompatibleCheckpoint(RunError):
    """The run's checkpoint cannot be loaded (other agent, damaged, settings this version lacks)."""


# ---------------------------------------------------------------------------------------- budgets


def budget_to_dict(budget: Budget, start: Counters) -> dict[str, Any]:
    """The budget as stored with the run, with the counters it started from (so a resume knows what is left)."""
    return {
        "episodes": budget.episodes,
        "steps": budget.steps,
        "seconds": budget.seconds,
        "start": dataclasses.asdict(start),
    }


def remaining_budget(stored: Mapping[str, Any], counters: Counters) -> Budget | None:
    """What is left of a stored budget given the agent's counters now; None when any limit is reached."""
    start = stored.get("start") or {}
    left: dict[str, Any] = {}
    for name in ("episodes", "steps", "seconds"):
        total = stored.get(name)
        if total is None:
            continue
        rest = total - (getattr(counters, name) - start.get(name, 0))
        if rest <= 0:
            return None  # the first limit reached ends a run
        left[name] = rest if name == "seconds" else int(rest)
    return Budget(**left) if left else None


# -------------------------------------------------------------------------------------- internals


class _MetricWriter:
    """Batches metric events for the store; a daemon thread writes batches that would otherwise wait."""

    def __init__(self, store: RunStore, run_id: int) -> None:
        self._store = store
        self._run_id = run_id
        self._buf: list[MetricEvent] = []
        self._oldest = 0.0
        self._buf_lock = threading.Lock()  # held briefly, by the training thread too
        self._write_lock = threading.Lock()  # held while writing: keeps batches in order
        self._error: BaseException | None = None
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"run-{run_id}-metrics", daemon=True)
        self._thread.start()

    def add(self, event: MetricEvent) -> None:
        self._raise_error()
        with self._buf_lock:
            if not self._buf:
                self._oldest = time.monotonic()
            # Boards and games are not stored with metrics: drop them so the buffer stays small.
            self._buf.append(dataclasses.replace(event, board=None, game=None))
            due = len(self._buf) >= FLUSH_BATCH or time.monotonic() - self._oldest >= FLUSH_AFTER_S
        if due:
            self.flush()

    def flush(self) -> None:
        with self._write_lock:
            with self._buf_lock:
                events, self._buf = self._buf, []
            if events:
                self._store.log_metrics(self._run_id, events)

    def _loop(self) -> None:
        while not self._closed.wait(FLUSH_AFTER_S / 2):
            with self._buf_lock:
                due = bool(self._buf) and time.monotonic() - self._oldest >= FLUSH_AFTER_S
            if due:
                try:
                    self.flush()
                except BaseException as e:  # handed to the training thread, which reports it
                    self._error = e
                    return

    def _raise_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def close(self) -> None:
        """Stop the thread and write what is left."""
        self._closed.set()
        self._thread.join()
        self.flush()
        self._raise_error()


class _HealthWatch:
    """Stops a run that cannot recover: a non-finite metric, or episodes that make no move."""

    def __init__(self) -> None:
        self.last_step: int | None = None
        self.still = 0

    def check(self, event: MetricEvent) -> None:
        for name, value in event.metrics.items():
            if not math.isfinite(float(value)):
                raise Diverged(
                    f"diverged: {name} is {value} at step {event.step:,} (nothing after it is saved)"
                )
        if event.kind != "episode":
            return
        self.still = self.still + 1 if self.last_step is not None and event.step == self.last_step else 0
        self.last_step = event.step
        if self.still >= STALL_EPISODES:
            raise Diverged(
                f"stuck: {self.still} episodes in a row without a move at step {event.step:,} "
                "(nothing after it is saved)"
            )


class _RunControl(Control):
    """The control handed to the agent: the caller's control, plus run bookkeeping while paused."""

    def __init__(self, outer: Control, on_pause: Any, on_resume: Any) -> None:
        super().__init__()
        self._outer = outer
        self._on_pause = on_pause
        self._on_resume = on_resume

    def pause(self) -> None:
        self._outer.pause()

    def resume(self) -> None:
        self._outer.resume()

    def stop(self) -> None:
        self._outer.stop()

    @property
    def paused(self) -> bool:
        return self._outer.paused

    @property
    def stopped(self) -> bool:
        return self._outer.stopped

    def checkpoint(self) -> bool:
        if self._outer.paused and not self._outer.stopped:
            self._on_pause()
            go_on = self._outer.checkpoint()
            if go_on:
                self._on_resume()
            return go_on
        return self._outer.checkpoint()


# ------------------------------------------------------------------------------------------- runs


class TrainingRun(Iterator[MetricEvent]):
    """One training run, iterated for its events. The run is recorded when this object is made.

    Attributes: ``run_id``, ``agent``, ``control`` (pause / resume / stop it), ``status`` (the last
    status written), ``last_checkpoint`` (path of the newest checkpoint, or None), ``games_logged``.
    """

    def __init__(
        self,
        agent: Agent,
        budget: Budget,
        store: RunStore,
        control: Control | None = None,
        context: TrainContext | None = None,
        *,
        checkpoint_every_s: float = DEFAULT_CHECKPOINT_EVERY_S,
        log_every: int = DEFAULT_LOG_EVERY,
        run_id: int | None = None,
    ) -> None:
        if not agent.trainable:
            raise ValueError(f"agent {agent.name!r} does not learn: there is nothing to train (try eval)")
        if checkpoint_every_s <= 0:
            raise ValueError(f"checkpoint_every_s must be > 0, got {checkpoint_every_s}")
        if log_every < 0:
            raise ValueError(f"log_every must be >= 0 (0 = log no training game), got {log_every}")
        self.agent = agent
        self.budget = budget
        self.store = store
        self.control = control if control is not None else Control()
        self.context = context if context is not None else TrainContext(data_dir=store.path.parent)
        self.checkpoint_every_s = float(checkpoint_every_s)
        self.log_every = int(log_every)
        self.status = "running"
        self.last_checkpoint: Path | None = None
        self.games_logged = 0
        self._checkpoint_asked = False
        if run_id is None:
            run_id = store.create_run(
                agent.name,
                agent.config.to_dict(),
                agent.rules,
                budget_to_dict(budget, agent.counters),
                seed=agent.seed,
                status="running",
            )
        else:
            try:
                store.claim_run(run_id)  # one owner at a time, decided by the store atomically
            except ValueError as e:
                raise RunBusy(str(e), "resume") from None
        self.run_id = run_id
        self._writer: _MetricWriter | None = None
        self._gen = self._run()

    # ---------------------------------------------------------------- iteration
    def __next__(self) -> MetricEvent:
        return next(self._gen)

    def close(self) -> None:
        """Stop iterating now: the run ends as stopped, with a final checkpoint."""
        self._gen.close()

    def run_to_end(self) -> str:
        """Iterate to the end (for callers that only want the side effects); the final status."""
        for _ in self:
            pass
        return self.status

    # ---------------------------------------------------------------- bookkeeping
    def checkpoint_dir(self) -> Path:
        return checkpoints_dir(self.store.path.parent) / f"run-{self.run_id}"

    def save_checkpoint(self, *, final: bool = False) -> Path:
        """Save the agent as the run's newest checkpoint. A network holding NaN or an infinity is never
        saved (:class:`Diverged` instead): the last good checkpoint stays the one a resume starts from."""
        from agents.checkpoint import NonFiniteWeights, save_checkpoint

        c = self.agent.counters
        path = self.checkpoint_dir() / f"{self.agent.name}-ep{c.episodes}-step{c.steps}.npz"
        try:
            save_checkpoint(self.agent, path, require_finite=True)
        except NonFiniteWeights as e:
            raise Diverged(
                f"diverged: {self.agent.name}'s {e.entry!r} holds NaN or infinite values at step {c.steps:,} "
                "(nothing after it is saved)"
            ) from None
        self.store.add_checkpoint(self.run_id, path, c.episodes, c.steps, final=final)
        self.last_checkpoint = path
        return path

    def request_checkpoint(self) -> None:
        """Save a checkpoint after the current step ("checkpoint now"; safe from another thread)."""
        self._checkpoint_asked = True

    def _set_status(self, status: str, error: str | None = None) -> None:
        self.store.set_run_status(self.run_id, status, error)
        self.status = status

    def _on_pause(self) -> None:
        if self._writer is not None:
            self._writer.flush()
        # A paused run may never be resumed (the window closes): keep what it has learnt.
        self.save_checkpoint()
        self._set_status("paused")

    def _on_resume(self) -> None:
        self._set_status("running")

    def _log_game(self, event: MetricEvent) -> None:
        if event.game is None or self.log_every == 0 or event.episode % self.log_every:
            return
        self.store.record_trace(event.game, "training", agent=self.agent.name, run_id=self.run_id)
        self.games_logged += 1

    def _run(self) -> Generator[MetricEvent, None, None]:
        writer = self._writer = _MetricWriter(self.store, self.run_id)
        control = _RunControl(self.control, self._on_pause, self._on_resume)
        status, error, save = "failed", None, False
        next_checkpoint = time.monotonic() + self.checkpoint_every_s
        watch = _HealthWatch()
        try:
            for event in self.agent.train(self.budget, control, self.context):
                watch.check(event)  # before anything is saved: the last good checkpoint stays the last
                writer.add(event)
                self._log_game(event)
                if self._checkpoint_asked or time.monotonic() >= next_checkpoint:
                    self._checkpoint_asked = False
                    self.save_checkpoint()
                    next_checkpoint = time.monotonic() + self.checkpoint_every_s
                yield event
            status, save = ("stopped" if self.control.stopped else "finished"), True
        except GeneratorExit:
            # The consumer stopped iterating; the agent sits at a yield, between steps: saveable.
            status, save = "stopped", True
            raise
        except KeyboardInterrupt:
            # Raised anywhere inside a step: the agent may be half-updated, so no checkpoint now;
            # a resume starts from the last one.
            status, error = "stopped", "interrupted (Ctrl-C): resume continues from the last checkpoint"
            raise
        except BaseException as e:
            status, error = "failed", str(e) if isinstance(e, RunError) else f"{type(e).__name__}: {e}"
            raise
        finally:
            try:
                writer.close()
                if save:
                    self.save_checkpoint(final=True)
            except Exception as e:
                if status != "failed":
                    status = "failed"
                    error = (
                        str(e)
                        if isinstance(e, Diverged)
                        else f"could not save the run's end: {type(e).__name__}: {e}"
                    )
                    self._set_status(status, error)
                    raise
            self._set_status(status, error)


def run_training(
    agent: Agent,
    budget: Budget,
    store: RunStore,
    control: Control | None = None,
    context: TrainContext | None = None,
    *,
    checkpoint_every_s: float = DEFAULT_CHECKPOINT_EVERY_S,
    log_every: int = DEFAULT_LOG_EVERY,
) -> TrainingRun:
    """Start a recorded training run of ``agent`` (iterate the result to train)."""
    return TrainingRun(
        agent, budget, store, control, context, checkpoint_every_s=checkpoint_every_s, log_every=log_every
    )


def resume_run(
    run_id: int,
    store: Any,
    budget: Budget | None = None,
    control: Control | None = None,
    context: TrainContext | None = None,
    *,
    checkpoint_every_s: float = DEFAULT_CHECKPOINT_EVERY_S,
    log_every: int = DEFAULT_LOG_EVERY,
    budget_if_used_up: Budget | None = None,
) -> TrainingRun:
    """Continue run ``run_id`` from its last checkpoint, with what is left of its budget (or ``budget``).

    ``budget_if_used_up``: what to train when the run has used its whole budget and ``budget`` is None
    (the window's Budget box); without it that case raises :class:`BudgetUsedUp`.

    ``store`` is a :class:`engine.store.GameStore` (``get_run`` and ``last_checkpoint`` besides the
    :class:`RunStore` methods). Metric events logged after that checkpoint (a run killed between two
    checkpoints) are dropped from the history: the resumed run plays those steps again, and its
    curves show each step once.
    """
    from agents.checkpoint import CheckpointError, load_checkpoint

    summary = store.get_run(run_id)
    if summary.status in ("running", "paused"):
        # The store marks runs of dead processes "stopped" when it opens, so this one is alive elsewhere.
        raise RunBusy(
            f"run {run_id} is {summary.status} in another window or terminal: stop it there first", "resume"
        )
    path = store.last_checkpoint(run_id)
    if path is None:
        raise NoCheckpoint(
            f"run {run_id} has no checkpoint to resume from (it saved none before it ended)", "resume"
        )
    try:
        agent = load_checkpoint(path, expect_agent=summary.agent)
    except CheckpointError as e:
        raise IncompatibleCheckpoint(f"run {run_id} cannot resume: {e}", "resume") from None
    if budget is None:
        budget = remaining_budget(summary.budget, agent.counters) or budget_if_used_up
        if budget is None:
            raise BudgetUsedUp(
                f"run {run_id} ({summary.status}) has used its whole budget: give a new one "
                "(--episodes / --minutes / --steps) to train it further",
                "budget",
            )
    store.truncate_metrics(run_id, agent.counters.steps)
    return TrainingRun(
        agent,
        budget,
        store,
        control,
        context,
        checkpoint_every_s=checkpoint_every_s,
        log_every=log_every,
        run_id=run_id,
    )
