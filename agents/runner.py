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
* evaluates the policy every ``eval_every_s`` seconds of training and/or every ``eval_every_episodes``
  episodes: a checkpoint is saved and a background process plays ``eval_games`` greedy games of it
  (the ``eval`` command's code path, :func:`agents.arena.evaluate`, on the same seeds every time),
  while training goes on; one evaluator at a time (one still playing when the next is due: that one
  is skipped). Its result is an ``"evaluation"`` event (:data:`EVAL_METRICS`) logged with the run's
  metrics and yielded to the consumer, and the checkpoint with the best ``eval_score`` is marked
  ``best`` in the store;
* keeps the newest ``keep_checkpoints`` checkpoint files plus the best one, deleting older ones;
* keeps the run's status: running, paused (while the control is paused), stopped (a stop request,
  Ctrl-C, or the consumer closing the iterator), finished (budget used), failed (an exception; the
  message is stored and the exception re-raised).

``resume_run(run_id, store)`` loads the run's last checkpoint and goes on with what is left of its
budget (or a new budget). The GUI's worker thread and ``python main.py train`` both iterate these.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agents.base import Agent, Budget, Control, Counters, MetricEvent, TrainContext
from agents.metrics import EVALUATION
from agents.threads import limit_threads
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
#: Greedy games of each periodic evaluation (0 = no evaluation). 20 games give the mean score to
#: about +-10 % for a learner past its first minutes: enough to rank checkpoints, cheap to play.
DEFAULT_EVAL_GAMES = 20
#: Seconds of training between periodic evaluations (every other periodic checkpoint by default).
DEFAULT_EVAL_EVERY_S = 600.0
#: Seed of the evaluation games. Every evaluation of every run plays the same games, so evaluations
#: compare across a run and across runs; 0 is also ``eval``'s default seed, so ``eval --checkpoint
#: FILE --games 20`` plays the very games whose mean became the checkpoint's ``eval_score``.
DEFAULT_EVAL_SEED = 0
#: Checkpoint files a run keeps: the newest this many, plus its best (0 = keep every one).
DEFAULT_KEEP_CHECKPOINTS = 3
#: How often (seconds) the training loop looks for a finished evaluation.
EVAL_POLL_S = 0.2
#: Threads of the background evaluator's math libraries: one core; training keeps the others.
EVALUATOR_THREADS = 1
#: The metrics of an ``"evaluation"`` event: mean score, its 95 % half-width (NaN under two games),
#: median max tile, share of games that reached 2048, mean moves per game, games played, wall seconds.
EVAL_METRICS: tuple[str, ...] = tuple(m.name for m in EVALUATION)


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

    def set_checkpoint_eval(self, checkpoint_id: int, eval_score: float) -> bool: ...

    def prune_checkpoints(self, run_id: int, keep_last: int, protect: Any = ()) -> list[Path]: ...

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


def check_eval_options(
    eval_games: int,
    eval_every_s: float | None,
    eval_every_episodes: int | None,
    eval_seed: int,
    keep_checkpoints: int,
    eval_at_end: bool = False,
) -> None:
    """RunError (with the field at fault) for evaluation and retention settings that make no sense."""
    from agents.arena import MAX_GAMES

    if not 0 <= eval_games <= MAX_GAMES:
        raise RunError(
            f"evaluation games must be between 0 (none) and {MAX_GAMES:,}, got {eval_games}", "eval_games"
        )
    if eval_every_s is not None and not (math.isfinite(eval_every_s) and eval_every_s >= 0):
        raise RunError(
            f"seconds between evaluations must be >= 0 (0 = not by time), got {eval_every_s}", "eval_every_s"
        )
    if eval_every_episodes is not None and eval_every_episodes < 0:
        raise RunError(
            f"episodes between evaluations must be >= 0 (0 = not by episodes), got {eval_every_episodes}",
            "eval_every_episodes",
        )
    if eval_games and not eval_every_s and not eval_every_episodes and not eval_at_end:
        raise RunError(
            "evaluations need a cadence: seconds and/or episodes between them (or 0 evaluation games)",
            "eval_every_s",
        )
    if not 0 <= eval_seed < 2**63:
        raise RunError(f"evaluation seed must be between 0 and 2**63 - 1, got {eval_seed}", "eval_seed")
    if keep_checkpoints < 0:
        raise RunError(
            f"checkpoints to keep must be >= 0 (0 = all), got {keep_checkpoints}", "keep_checkpoints"
        )


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


def evaluation_metrics(
    scores: Any, max_tiles: Any, moves: Any, wall_seconds: float = math.nan
) -> dict[str, float]:
    """The metrics of an ``"evaluation"`` event (:data:`EVAL_METRICS`) from per-game results."""
    import numpy as np

    from agents.arena import mean_ci95, reached_at_least

    scores = np.asarray(scores, dtype=float)
    tiles = np.asarray(max_tiles, dtype=float)
    mean, half = mean_ci95(scores)
    return {
        "eval_score": float(mean),
        "eval_score_ci95": math.nan if half is None else float(half),
        "eval_max_tile": float(np.median(tiles)),
        "eval_2048_rate": float(reached_at_least(tiles.astype(np.int64), (2048,))[2048]),
        "eval_moves": float(np.mean(np.asarray(moves, dtype=float))),
        "eval_games": float(scores.size),
        "eval_seconds": float(wall_seconds),
    }


def evaluate_checkpoint(
    path: str | os.PathLike[str],
    games: int,
    seed: int = DEFAULT_EVAL_SEED,
    *,
    agent: str | None = None,
    target: str | None = None,
) -> dict[str, Any]:
    """Play ``games`` greedy games of a checkpoint file, as ``eval`` does (:func:`agents.arena.evaluate`,
    one process, game ``i`` seeded from ``(seed, i)``): the per-game lists and the wall time. What a
    run's evaluator process does; the same checkpoint and seed always give the same games."""
    from agents.arena import evaluate
    from agents.spec import AgentSpec

    result = evaluate(AgentSpec.from_checkpoint(str(path), agent, target=target), games, seed, workers=1)
    return _per_game(result)


def _per_game(result: Any) -> dict[str, Any]:
    """An evaluation's per-game lists and wall time, as an evaluation event is made from."""
    return {
        "scores": result.scores.tolist(),
        "max_tiles": result.max_tiles.tolist(),
        "moves": result.moves.tolist(),
        "wall_seconds": float(result.wall_seconds),
    }


def _evaluator_main(conn: Any, path: str, games: int, seed: int, agent: str, target: str | None) -> None:
    """The evaluator process: one evaluation, its result (or its error, one line) sent back on ``conn``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle; the run ends us
    # One core (training keeps the others): the environment before the agent's imports read it, torch's
    # and numba's pools once they are loaded (the agent's module, imported first, loads torch).
    limit_threads(EVALUATOR_THREADS)
    try:
        from agents.registry import get_agent_class, register

        if target:
            register(agent, target)
        get_agent_class(agent)  # its module's imports (torch) now, so that their pools are set below
        threads = limit_threads(EVALUATOR_THREADS)
        out: dict[str, Any] = evaluate_checkpoint(path, games, seed, agent=agent, target=target)
        out["threads"] = threads
    except BaseException as e:  # everything goes back to the run as one line
        out = {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
    try:
        conn.send(out)
    finally:
        conn.close()


@dataclass(frozen=True)
class _EvalJob:
    """The checkpoint an evaluation plays (its counters are those of the evaluation event)."""

    checkpoint_id: int
    path: Path
    episode: int
    step: int
    elapsed: float


class _Evaluator:
    """At most one background evaluation: a spawned process that plays a checkpoint file's games."""

    def __init__(self, agent: str, target: str | None, games: int, seed: int) -> None:
        self.agent = agent
        self.target = target
        self.games = games
        self.seed = seed
        self.job: _EvalJob | None = None
        self._proc: Any = None
        self._conn: Any = None

    @property
    def busy(self) -> bool:
        return self.job is not None

    def start(self, job: _EvalJob) -> None:
        ctx = mp.get_context("spawn")  # no inherited threads, locks or CUDA state
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_evaluator_main,
            args=(send, str(job.path), self.games, self.seed, self.agent, self.target),
            name=f"evaluate-{job.path.name}",
            daemon=True,
        )
        proc.start()
        send.close()  # ours closed: a child that dies unheard reads as end of file
        self.job, self._proc, self._conn = job, proc, recv

    def poll(self, timeout: float = 0.0) -> tuple[_EvalJob, dict[str, Any]] | None:
        """The finished job and its result (``{"error": ...}`` when it failed), or None while it plays."""
        if self.job is None:
            return None
        try:
            if not self._conn.poll(timeout):
                return None
            out = self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(5)
            out = {"error": f"the evaluator process ended without a result (exit code {self._proc.exitcode})"}
        job = self.job
        self._close()
        return job, out

    def wait(self, should_stop: Any) -> tuple[_EvalJob, dict[str, Any]] | None:
        """Wait for the evaluation in flight; None (and the evaluator ended) once ``should_stop()``."""
        while self.job is not None:
            if should_stop():
                self.stop()
                return None
            done = self.poll(EVAL_POLL_S)
            if done is not None:
                return done
        return None

    def stop(self) -> None:
        """End the evaluation in flight, if any (its result is lost)."""
        if self._proc is not None and self._proc.is_alive():
            self._proc.terminate()
        self._close()

    def _close(self) -> None:
        if self._proc is not None:
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self.job, self._proc, self._conn = None, None, None


# ------------------------------------------------------------------------------------------- runs


class TrainingRun(Iterator[MetricEvent]):
    """One training run, iterated for its events. The run is recorded when this object is made.

    Attributes: ``run_id``, ``agent``, ``control`` (pause / resume / stop it), ``status`` (the last
    status written), ``last_checkpoint`` (path of the newest checkpoint, or None), ``games_logged``,
    ``evaluations`` (evaluations finished), ``evaluations_skipped`` (due while one still played),
    ``best_checkpoint`` (path of the best evaluated checkpoint this run has made here, or None).

    Evaluation: ``eval_games`` greedy games (0 = none) every ``eval_every_s`` seconds of training
    and/or every ``eval_every_episodes`` episodes (None or 0 = not by that measure), on seed
    ``eval_seed``. ``keep_checkpoints``: checkpoint files kept besides the best (0 = all).
    ``eval_at_end``: also evaluate the agent the budget leaves (not after a stop), so the run ends with
    its own evaluation (what a sweep ranks its trials by).
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
        eval_games: int = DEFAULT_EVAL_GAMES,
        eval_every_s: float | None = DEFAULT_EVAL_EVERY_S,
        eval_every_episodes: int | None = None,
        eval_seed: int = DEFAULT_EVAL_SEED,
        keep_checkpoints: int = DEFAULT_KEEP_CHECKPOINTS,
        eval_at_end: bool = False,
    ) -> None:
        if not agent.trainable:
            raise ValueError(f"agent {agent.name!r} does not learn: there is nothing to train (try eval)")
        if checkpoint_every_s <= 0:
            raise ValueError(f"checkpoint_every_s must be > 0, got {checkpoint_every_s}")
        if log_every < 0:
            raise ValueError(f"log_every must be >= 0 (0 = log no training game), got {log_every}")
        check_eval_options(
            eval_games, eval_every_s, eval_every_episodes, eval_seed, keep_checkpoints, eval_at_end
        )
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
        self.eval_games = int(eval_games)
        self.eval_every_s = float(eval_every_s or 0.0)
        self.eval_every_episodes = int(eval_every_episodes or 0)
        self.eval_seed = int(eval_seed)
        self.keep_checkpoints = int(keep_checkpoints)
        self.eval_at_end = bool(eval_at_end)
        self._evaluated_step: int | None = None
        self.evaluations = 0
        self.evaluations_skipped = 0
        self.best_checkpoint: Path | None = None
        self.last_checkpoint_id: int | None = None
        cls = type(agent)
        self._evaluator = _Evaluator(
            agent.name, f"{cls.__module__}:{cls.__qualname__}", self.eval_games, self.eval_seed
        )
        c = agent.counters
        self._next_eval_s = c.seconds + self.eval_every_s
        self._next_eval_episode = c.episodes + self.eval_every_episodes
        self._next_eval_poll = 0.0
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
        self.last_checkpoint_id = self.store.add_checkpoint(
            self.run_id, path, c.episodes, c.steps, final=final
        )
        self.last_checkpoint = path
        self._prune()
        return path

    @property
    def evaluating(self) -> bool:
        """Whether an evaluation plays in the background now."""
        return self._evaluator.busy

    def _prune(self) -> None:
        """Keep the newest ``keep_checkpoints`` files, the best, and the one being evaluated."""
        if self.keep_checkpoints <= 0:
            return
        job = self._evaluator.job
        self.store.prune_checkpoints(
            self.run_id, self.keep_checkpoints, protect=() if job is None else (job.checkpoint_id,)
        )

    def _evaluation_due(self, event: MetricEvent) -> bool:
        """Whether an evaluation is due after ``event`` (and if so, when the next one is)."""
        if self.eval_games <= 0:
            return False
        by_time = bool(self.eval_every_s) and event.elapsed >= self._next_eval_s
        by_episodes = bool(self.eval_every_episodes) and event.episode >= self._next_eval_episode
        if not (by_time or by_episodes):
            return False
        self._next_eval_s = event.elapsed + self.eval_every_s
        self._next_eval_episode = event.episode + self.eval_every_episodes
        if self._evaluator.busy:
            self.evaluations_skipped += 1  # one evaluator at a time: this one is skipped
            return False
        return True

    def _start_evaluation(self, elapsed: float) -> None:
        """Evaluate the checkpoint just saved, in the background."""
        assert self.last_checkpoint is not None and self.last_checkpoint_id is not None
        c = self.agent.counters
        self._evaluator.start(
            _EvalJob(self.last_checkpoint_id, self.last_checkpoint, c.episodes, c.steps, elapsed)
        )

    def _evaluation_event(self, timeout: float = 0.0, progress: float = 0.0) -> MetricEvent | None:
        """The finished evaluation as an event (``"evaluation"``, or ``"info"`` when it failed), or None."""
        done = self._evaluator.poll(timeout)
        return None if done is None else self._evaluated(*done, progress=progress)

    def _evaluated(self, job: _EvalJob, out: Mapping[str, Any], progress: float) -> MetricEvent:
        where = f"episode {job.episode:,}"
        if "error" in out:
            return MetricEvent(
                "info",
                job.episode,
                job.step,
                job.elapsed,
                {},
                progress,
                f"evaluation at {where} failed: {out['error']}",
            )
        metrics = evaluation_metrics(out["scores"], out["max_tiles"], out["moves"], out["wall_seconds"])
        self.evaluations += 1
        self._evaluated_step = job.step
        best = self.store.set_checkpoint_eval(job.checkpoint_id, metrics["eval_score"])
        if best:
            self.best_checkpoint = job.path
        self._prune()  # the previous best may go now
        message = (
            f"evaluation at {where}: mean score {metrics['eval_score']:,.0f} over {int(metrics['eval_games'])} "
            f"greedy games{' (best so far)' if best else ''}"
        )
        return MetricEvent("evaluation", job.episode, job.step, job.elapsed, metrics, progress, message)

    def _closing_evaluation(self, elapsed: float) -> MetricEvent | None:
        """Evaluate the agent the budget left (what a sweep ranks its trials by): its checkpoint, on the
        same seeded games as every periodic evaluation, played here (training is over, so there is no
        learner to keep going: a spawned evaluator would only add seconds of start-up to every trial).
        None when a stop cut it short."""
        from agents.arena import evaluate
        from agents.spec import AgentSpec

        path = self.save_checkpoint()
        assert self.last_checkpoint_id is not None
        c = self.agent.counters
        job = _EvalJob(self.last_checkpoint_id, path, c.episodes, c.steps, elapsed)
        try:
            result = evaluate(
                AgentSpec.from_checkpoint(str(path), self._evaluator.agent, target=self._evaluator.target),
                self.eval_games,
                self.eval_seed,
                workers=1,
                should_stop=lambda: self.control.stopped,
            )
        except Exception as e:  # reported like a failed background evaluation: one line, the run goes on
            return self._evaluated(job, {"error": f"{type(e).__name__}: {e}".splitlines()[0]}, progress=1.0)
        if result.cancelled:
            return None
        return self._evaluated(job, _per_game(result), progress=1.0)

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
        last_elapsed = 0.0
        try:
            for event in self.agent.train(self.budget, control, self.context):
                last_elapsed = event.elapsed
                watch.check(event)  # before anything is saved: the last good checkpoint stays the last
                writer.add(event)
                self._log_game(event)
                evaluate = self._evaluation_due(event)
                if evaluate or self._checkpoint_asked or time.monotonic() >= next_checkpoint:
                    self._checkpoint_asked = False
                    self.save_checkpoint()
                    next_checkpoint = time.monotonic() + self.checkpoint_every_s
                    if evaluate:
                        self._start_evaluation(event.elapsed)
                yield event
                if self._evaluator.busy and time.monotonic() >= self._next_eval_poll:
                    self._next_eval_poll = time.monotonic() + EVAL_POLL_S
                    done = self._evaluation_event(progress=event.progress)
                    if done is not None:
                        writer.add(done)
                        yield done
            if self._evaluator.busy and not self.control.stopped:
                # The budget is used: the evaluation in flight is the run's last word (a stop skips it).
                result = self._evaluator.wait(lambda: self.control.stopped)
                if result is not None:
                    done = self._evaluated(*result, progress=1.0)
                    writer.add(done)
                    yield done
            steps = self.agent.counters.steps
            if (
                self.eval_at_end
                and self.eval_games > 0
                and not self.control.stopped
                and self._evaluated_step != steps
            ):
                done = self._closing_evaluation(last_elapsed)
                if done is not None:
                    writer.add(done)
                    yield done
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
            self._evaluator.stop()  # a stopped or failed run does not wait for its evaluation
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
    **evaluation: Any,
) -> TrainingRun:
    """Start a recorded training run of ``agent`` (iterate the result to train).

    ``evaluation``: ``eval_games``, ``eval_every_s``, ``eval_every_episodes``, ``eval_seed``,
    ``keep_checkpoints`` (see :class:`TrainingRun`)."""
    return TrainingRun(
        agent,
        budget,
        store,
        control,
        context,
        checkpoint_every_s=checkpoint_every_s,
        log_every=log_every,
        **evaluation,
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
    **evaluation: Any,
) -> TrainingRun:
    """Continue run ``run_id`` from its last checkpoint, with what is left of its budget (or ``budget``).

    ``budget_if_used_up``: what to train when the run has used its whole budget and ``budget`` is None
    (the window's Budget box); without it that case raises :class:`BudgetUsedUp`. ``evaluation``: as
    for :func:`run_training`; the run's best checkpoint so far stays the one to beat.

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
        **evaluation,
    )
