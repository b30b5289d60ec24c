"""The run loop: :class:`TrainingRun` iterates ``agent.train()`` and, per event, watches its health,
writes its metrics, logs sampled games, saves checkpoints and starts or collects evaluations.

Read :meth:`TrainingRun._run` top-down: train (:meth:`~TrainingRun._train`), the evaluations that end a
budget (:meth:`~TrainingRun._closing`), then the end (:meth:`~TrainingRun._finish`: the final
checkpoint and status). The helpers live beside it: :mod:`agents.run.health`,
:mod:`agents.run.metrics_writer`, :mod:`agents.run.evaluator`, :mod:`agents.run.retention`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.base import Agent, Budget, Control, MetricEvent, TrainContext
from agents.run import settings
from agents.run.errors import BudgetUsedUp, Diverged, IncompatibleCheckpoint, NoCheckpoint, RunBusy, RunError
from agents.run.evaluator import EvalJob, EvalOutput, EvalSchedule, Evaluator, evaluation_metrics
from agents.run.health import HealthWatch
from agents.run.metrics_writer import MetricWriter
from agents.run.options import RunOptions
from agents.run.retention import RunCheckpoints
from agents.run.settings import budget_to_dict, remaining_budget
from agents.run.store import RunStore

if TYPE_CHECKING:
    from engine.store import GameStore

log = logging.getLogger(__name__)

Events = Generator[MetricEvent, None, None]

#: Moves a throwaway twin of a jitted learner trains before a run's budget clock starts (see
#: :func:`warm_up_training`), by agent name; an agent class may say its own with a ``warm_up_steps``
#: class attribute (a plug-in's jitted learner). The n-tuple network's first slice compiled its numba
#: kernels for ~30 s (or loaded them from the on-disk cache for a second or two), inside its budget.
WARM_UP_STEPS: dict[str, int] = {"ntuple": 256}


def warm_up_steps(cls: type[Agent]) -> int:
    """Moves of the warm-up a learner of class ``cls`` gets before its budget starts (0: none)."""
    declared = getattr(cls, "warm_up_steps", None)
    return int(declared if declared is not None else WARM_UP_STEPS.get(cls.name, 0))


def warm_up_training(agent: Agent, context: TrainContext | None = None) -> float:
    """Compile (or load from numba's on-disk cache) ``agent``'s training kernels before its budget's
    clock starts, so start-up is never charged to the budget: a throwaway agent of the same class,
    settings and rules trains :func:`warm_up_steps` moves (nothing stored, ``agent`` untouched).
    The seconds it took; 0.0 when the agent needs no warm-up. A failure is logged and left to the
    run itself, which then meets (and reports) the same problem."""
    steps = warm_up_steps(type(agent))
    if steps <= 0:
        return 0.0
    t0 = time.perf_counter()
    try:
        twin = type(agent)(agent.config, agent.rules, seed=0)
        for _ in twin.train(Budget(steps=steps), Control(), context):
            pass
    except Exception:  # the run's own training says what is wrong, in its own words
        log.warning("warming %s up failed; its run compiles as it goes", agent.name, exc_info=True)
    seconds = time.perf_counter() - t0
    log.info("%s warmed up in %.1f s (outside the budget)", agent.name, seconds)
    return seconds


class _RunControl(Control):
    """The control handed to the agent: the caller's control, plus run bookkeeping while paused."""

    def __init__(self, outer: Control, on_pause: Callable[[], None], on_resume: Callable[[], None]) -> None:
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


class TrainingRun(Iterator[MetricEvent]):
    """One training run, iterated for its events. The run is recorded when this object is made.

    Attributes: ``run_id``, ``agent``, ``control`` (pause / resume / stop it), ``status`` (the last
    status written), ``last_checkpoint`` (path of the newest checkpoint, or None), ``games_logged``,
    ``evaluations`` (evaluations finished), ``evaluations_skipped`` (due while one still played),
    ``best_checkpoint`` (path of the best evaluated checkpoint this run has made here, or None).

    ``options``: how it trains besides agent and budget (checkpoint and evaluation cadence, logged games,
    files kept, the checkpoint size limit): see :class:`~agents.run.options.RunOptions`, checked here.
    A checkpoint past the size limit is refused and the run goes on; both that and a file past half the
    limit are an ``"info"`` event in the run's log.
    """

    def __init__(
        self,
        agent: Agent,
        budget: Budget,
        store: RunStore,
        control: Control | None = None,
        context: TrainContext | None = None,
        *,
        run_id: int | None = None,
        options: RunOptions | None = None,
    ) -> None:
        if not agent.trainable:
            raise ValueError(f"agent {agent.name!r} does not learn: there is nothing to train (try eval)")
        options = options if options is not None else RunOptions()
        options.check()
        self.options = options
        self.agent = agent
        self.budget = budget
        self.store = store
        self.control = control if control is not None else Control()
        self.context = context if context is not None else TrainContext(data_dir=store.path.parent)
        self.status = "running"
        self.games_logged = 0
        self.evaluations = 0
        self.evaluations_skipped = 0
        self._checkpoint_asked = False
        #: seconds spent readying the learner's kernels before its budget started (warm_up_training)
        self.warm_up_s = 0.0
        self._evaluated_step: int | None = None
        self._last_elapsed = 0.0
        self._last_progress = 0.0
        self._final_saved = False
        cls = type(agent)
        target = f"{cls.__module__}:{cls.__qualname__}"
        self._evaluator = Evaluator(agent.name, target, options.eval_games, options.eval_seed)
        self._schedule = EvalSchedule(
            # None and 0 both mean "not by that measure"
            options.eval_games,
            float(options.eval_every_s or 0.0),
            int(options.eval_every_episodes or 0),
            agent.counters,
        )
        self.run_id = self._open(run_id)
        self._checkpoints = RunCheckpoints(
            store,
            self.run_id,
            agent,
            options.keep_checkpoints,
            self._evaluator.protected,
            settings.checkpoint_limits(options.max_checkpoint_mb),
        )
        self._writer: MetricWriter | None = None
        self._gen = self._run()

    def _open(self, run_id: int | None) -> int:
        """A new run recorded in the store, or run ``run_id`` claimed for this process."""
        if run_id is None:
            return self.store.create_run(
                self.agent.name,
                self.agent.config.to_dict(),
                self.agent.rules,
                budget_to_dict(self.budget, self.agent.counters),
                seed=self.agent.seed,
                status="running",
            )
        try:
            self.store.claim_run(run_id)  # one owner at a time, decided by the store atomically
        except ValueError as e:
            raise RunBusy(str(e), "resume") from None
        return run_id

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

    def request_checkpoint(self) -> None:
        """Save a checkpoint after the current step ("checkpoint now"; safe from another thread)."""
        self._checkpoint_asked = True

    # ---------------------------------------------------------------- checkpoints
    @property
    def last_checkpoint(self) -> Path | None:
        return self._checkpoints.last

    @property
    def last_checkpoint_id(self) -> int | None:
        return self._checkpoints.last_id

    @property
    def best_checkpoint(self) -> Path | None:
        return self._checkpoints.best

    def checkpoint_dir(self) -> Path:
        return self._checkpoints.folder()

    def save_checkpoint(self, *, final: bool = False) -> Path | None:
        """Save the agent as the run's newest checkpoint (:meth:`RunCheckpoints.save`); None when it
        was past the size limit (not saved)."""
        return self._checkpoints.save(final=final)

    @property
    def evaluating(self) -> bool:
        """Whether an evaluation plays in the background now."""
        return self._evaluator.busy

    # ---------------------------------------------------------------- the loop
    def _run(self) -> Events:
        writer = self._writer = MetricWriter(self.store, self.run_id)
        status, error, save = "failed", None, False
        try:
            yield from self._train(writer)
            yield from self._closing(writer)
            status = "stopped" if self.control.stopped else "finished"
            yield from self._final_checkpoint(writer)
        except GeneratorExit:
            # The consumer stopped iterating; the agent sits at a yield, between steps: saveable.
            status, save = "stopped", not self._final_saved
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
            self._finish(writer, status, error, save)

    def _train(self, writer: MetricWriter) -> Events:
        """The agent's events, each checked, written and acted on; finished evaluations in between."""
        control = _RunControl(self.control, self._on_pause, self._on_resume)
        # The budget's clock starts in agent.train(): the kernels are compiled before it is called.
        self.warm_up_s = warm_up_training(self.agent, self.context)
        watch = HealthWatch()
        next_checkpoint = time.monotonic() + self.options.checkpoint_every_s
        for event in self.agent.train(self.budget, control, self.context):
            self._last_elapsed, self._last_progress = event.elapsed, event.progress
            watch.check(event)  # before anything is saved: the last good checkpoint stays the last
            writer.add(event)
            self._log_game(event)
            evaluate = self._evaluation_due(event)
            if evaluate or self._checkpoint_asked or time.monotonic() >= next_checkpoint:
                self._checkpoint_asked = False
                saved = self.save_checkpoint()
                next_checkpoint = time.monotonic() + self.options.checkpoint_every_s
                if evaluate and saved is not None:
                    self._start_evaluation(event.elapsed)
            yield event
            for notice in self._notices(event):  # this save's, or a pause's
                yield _written(writer, notice)
            done = self._evaluator.finished()
            if done is not None:
                yield _written(writer, self._evaluated(*done, progress=event.progress))

    def _closing(self, writer: MetricWriter) -> Events:
        """The budget is used: the evaluation in flight, then (``eval_at_end``) one of the agent the
        budget left, unless the last one evaluated it already. A stop skips both."""
        if self._evaluator.busy and not self.control.stopped:
            result = self._evaluator.wait(lambda: self.control.stopped)
            if result is not None:
                yield _written(writer, self._evaluated(*result, progress=1.0))
        if (
            self.options.eval_at_end
            and self.options.eval_games > 0
            and not self.control.stopped
            and self._evaluated_step != self.agent.counters.steps
        ):
            done = self._closing_evaluation(self._last_elapsed)
            if done is not None:
                yield _written(writer, done)

    def _final_checkpoint(self, writer: MetricWriter) -> Events:
        """The checkpoint of a run that ends well, saved while its events still flow, so that a refusal
        (past the size limit) reaches the window and the progress line as the others do. A failure to
        save fails the run."""
        try:
            self.save_checkpoint(final=True)
        except Diverged:
            raise
        except Exception as e:
            raise RunError(f"could not save the run's end: {type(e).__name__}: {e}") from e
        self._final_saved = True
        for notice in self._notices(None):
            yield _written(writer, notice)

    def _finish(self, writer: MetricWriter, status: str, error: str | None, save: bool) -> None:
        """The run's end: the evaluator ended (a stopped or failed run does not wait for it), the last
        metrics written, the final checkpoint of a run the consumer closed saved (``save``; a run that
        ends well saved its own, :meth:`_final_checkpoint`), the status stored. A failure to save fails
        a run that was ending well (raised); one that failed already keeps its first error."""
        self._evaluator.stop()
        try:
            writer.close()
            if save:
                self.save_checkpoint(final=True)
                last = self._notices(None)
                if last:  # the final file refused: in the run's log, after the writer's last batch
                    self.store.log_metrics(self.run_id, last)
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
            log.exception("run %d failed (%s) and could not save its end either", self.run_id, error)
        self._set_status(status, error)

    # ---------------------------------------------------------------- per event
    def _log_game(self, event: MetricEvent) -> None:
        log_every = self.options.log_every
        if event.game is None or log_every == 0 or event.episode % log_every:
            return
        self.store.record_trace(event.game, "training", agent=self.agent.name, run_id=self.run_id)
        self.games_logged += 1

    def _evaluation_due(self, event: MetricEvent) -> bool:
        """Whether to evaluate after ``event``: due, and no evaluation still playing (else skipped)."""
        if not self._schedule.due(event):
            return False
        if self._evaluator.busy:
            self.evaluations_skipped += 1  # one evaluator at a time: this one is skipped
            return False
        return True

    def _start_evaluation(self, elapsed: float) -> None:
        """Evaluate the checkpoint just saved, in the background."""
        self._evaluator.start(self._job(elapsed))

    def _job(self, elapsed: float) -> EvalJob:
        """The newest checkpoint as an evaluation job at the agent's counters now."""
        path, checkpoint_id = self._checkpoints.last, self._checkpoints.last_id
        assert path is not None and checkpoint_id is not None
        c = self.agent.counters
        return EvalJob(checkpoint_id, path, c.episodes, c.steps, elapsed)

    def _closing_evaluation(self, elapsed: float) -> MetricEvent | None:
        """Evaluate the agent the budget left (what a sweep ranks its trials by): its checkpoint, played
        here (training is over, so there is no learner to keep going: a spawned evaluator would only
        add seconds of start-up to every trial). None when a stop cut it short."""
        if self.save_checkpoint() is None:
            return None
        job = self._job(elapsed)
        out = self._evaluator.play_here(job.path, lambda: self.control.stopped)
        return None if out is None else self._evaluated(job, out, progress=1.0)

    def _evaluated(self, job: EvalJob, out: EvalOutput, progress: float) -> MetricEvent:
        """An evaluation's result as an event (``"evaluation"``, or ``"info"`` when it failed); the
        checkpoint's score stored, and it marked best when it is."""
        where = f"episode {job.episode:,}"
        if "error" in out:
            message = f"evaluation at {where} failed: {out['error']}"
            return MetricEvent("info", job.episode, job.step, job.elapsed, {}, progress, message)
        metrics = evaluation_metrics(out["scores"], out["max_tiles"], out["moves"], out["wall_seconds"])
        self.evaluations += 1
        self._evaluated_step = job.step
        best = self._checkpoints.scored(job.checkpoint_id, job.path, metrics["eval_score"])
        message = (
            f"evaluation at {where}: mean score {metrics['eval_score']:,.0f} over {int(metrics['eval_games'])} "
            f"greedy games{' (best so far)' if best else ''}"
        )
        return MetricEvent("evaluation", job.episode, job.step, job.elapsed, metrics, progress, message)

    def _notices(self, event: MetricEvent | None) -> list[MetricEvent]:
        """The checkpoints' notices (a file refused or large) as ``"info"`` events at ``event``'s
        counters (None: the agent's now, at the run's end); each logged as a warning too."""
        texts, self._checkpoints.notices = self._checkpoints.notices, []
        out = []
        for text in texts:
            log.warning("run %d: %s", self.run_id, text)
            c = self.agent.counters
            if event is None:
                out.append(
                    MetricEvent(
                        "info", c.episodes, c.steps, self._last_elapsed, {}, self._last_progress, text
                    )
                )
            else:
                out.append(
                    MetricEvent("info", event.episode, event.step, event.elapsed, {}, event.progress, text)
                )
        return out

    # ---------------------------------------------------------------- status
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


def _written(writer: MetricWriter, event: MetricEvent) -> MetricEvent:
    """``event``, added to the run's metric history (for yielding it next)."""
    writer.add(event)
    return event


def run_training(
    agent: Agent,
    budget: Budget,
    store: RunStore,
    control: Control | None = None,
    context: TrainContext | None = None,
    options: RunOptions | None = None,
    **changes: Any,
) -> TrainingRun:
    """Start a recorded training run of ``agent`` (iterate the result to train).

    ``options`` (default: :class:`RunOptions`'s defaults) with ``changes``, fields of
    :class:`~agents.run.options.RunOptions` by name (``eval_games=0``)."""
    return TrainingRun(agent, budget, store, control, context, options=_with(options, changes))


def _with(options: RunOptions | None, changes: dict[str, Any]) -> RunOptions:
    """``options`` (or the defaults) with the fields in ``changes`` replaced."""
    return dataclasses.replace(options if options is not None else RunOptions(), **changes)


def resume_run(
    run_id: int,
    store: GameStore,
    budget: Budget | None = None,
    control: Control | None = None,
    context: TrainContext | None = None,
    *,
    budget_if_used_up: Budget | None = None,
    options: RunOptions | None = None,
    **changes: Any,
) -> TrainingRun:
    """Continue run ``run_id`` from its last checkpoint, with what is left of its budget (or ``budget``).

    ``budget_if_used_up``: what to train when the run has used its whole budget and ``budget`` is None
    (the window's Budget box); without it that case raises :class:`BudgetUsedUp`. ``options`` and
    ``changes``: as for :func:`run_training`; the run's best checkpoint so far stays the one to beat.

    Metric events logged after that checkpoint (a run killed between two checkpoints) are dropped
    from the history: the resumed run plays those steps again, and its curves show each step once.
    """
    agent, stored_budget, status = _last_checkpoint_of(run_id, store)
    if budget is None:
        budget = remaining_budget(stored_budget, agent.counters) or budget_if_used_up
        if budget is None:
            raise BudgetUsedUp(
                f"run {run_id} ({status}) has used its whole budget: give a new one "
                "(--episodes / --minutes / --steps) to train it further",
                "budget",
            )
    store.truncate_metrics(run_id, agent.counters.steps)
    return TrainingRun(agent, budget, store, control, context, options=_with(options, changes), run_id=run_id)


def _last_checkpoint_of(run_id: int, store: GameStore) -> tuple[Agent, Mapping[str, Any], str]:
    """The agent of run ``run_id``'s last checkpoint, the run's stored budget and its status; RunError
    when the run is owned elsewhere or has no checkpoint this version can load."""
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
    return agent, summary.budget, summary.status
