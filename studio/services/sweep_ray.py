"""A sweep's trials as Ray Tune trials: the ``ray`` backend of :mod:`studio.services.sweep`.

**Who writes the store.** Only the driver (the process that runs :func:`ray_backend` and owns
``store``). A trial may run on another machine, so it never opens the SQLite file: it trains with the
ordinary runner (:func:`studio.services.runs.open_run`) against a :class:`RelayStore`, a run store that
keeps the run's checkpoint bookkeeping in a private scratch GameStore in a temporary folder of the
trial's own machine, and records every write the real store must see as an *op* (metric events,
checkpoint files with their bytes, evaluation scores, pruning, status). Every :data:`REPORT_EVERY_S`
seconds and at its end the trial sends its pending ops with ``tune.report``; a Tune callback in the
driver takes them out of the result (so no Tune logger or experiment-state file ever holds them) and
hands them to :class:`RayTrials` (the driver's loop), which applies them to the real run
(:class:`RunSink`) and yields what a local trial's child process says (the typed messages of
:mod:`studio.services.messages`: ``Started`` / ``Events`` / ``CheckpointSaved`` / ``Done`` / ``Failed``). A trial reports between its learner's events, so a learner that is silent for a while
(a long slice) sends its ops with its next event; the stop flag is watched by a thread of its own.

**Records.** The driver makes a new trial's run record itself (the record ``train`` would make,
:meth:`ResolvedRun.stored`, linked to its trial) when the trial's first ops arrive, that is once the
trial has built its agent: a trial refused before that (a bad config) leaves no run, as a local one
does. A resumed trial's run is claimed by the driver; the trial gets the run's record and its last
checkpoint file (the bytes, read by the driver) and resumes it in its scratch store; the history past
that checkpoint is truncated in the real store as a local resume does.

**Stop.** The driver sets a flag in a small actor (:class:`_Hub`) that every trial polls; a trial that
sees it stops its run cleanly (a final checkpoint, status stopped) and reports it, so a resume goes on
from there. A trial that starts after the flag is set leaves at once without a run, and Tune starts no
more trials once the live ones ended. A driver that goes away takes the actor with it: the trials see
the flag unreachable and stop as well.

**Ray.** Joined at the sweep's ``ray_address``, or the instance this process already runs, or a local
one of ``workers`` CPUs (:func:`agents.ray_util.init_ray`); a trial takes one CPU. The nodes of a
cluster import the studio from the same checkout (README).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import pickle
import queue
import shutil
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from agents.base import Control, MetricEvent
from agents.runner import IncompatibleCheckpoint, NoCheckpoint, RunBusy, RunError
from engine.fsutil import atomic_write, path_under
from engine.paths import checkpoints_dir
from engine.store import GameStore
from studio.services.messages import (
    CheckpointOp,
    CheckpointSaved,
    ChildMessage,
    Done,
    EvalOp,
    Events,
    Failed,
    MetricsOp,
    PruneOp,
    RelayOp,
    Started,
    StatusOp,
    TraceOp,
    TrialBegan,
    TrialEnded,
    TrialGone,
    TrialReport,
    TrialWord,
    TruncateOp,
    TuneEnded,
    TuneNews,
)
from studio.services.runs import RunRequest, resolve
from studio.services.trials import TrialJob, TrialMessage

__all__ = ["REPORT_EVERY_S", "RayTrials", "RelayStore", "RunSink", "ray_backend"]

log = logging.getLogger(__name__)

#: Seconds between a trial's reports to the driver (metrics reach the store about this late).
REPORT_EVERY_S = 0.5
#: Seconds between a trial's looks at the stop flag.
STOP_POLL_S = 0.5
#: The key of a report that carries a trial's pending ops (pickled); the driver's callback removes it.
OPS_KEY = "studio_relay_ops"
#: Seconds a driver that is closing waits for its trials to save and report before it leaves them.
CLOSE_GRACE_S = 120.0
#: Numbers a report carries for Tune itself (its progress, schedulers): the last value of each.
TUNE_METRICS = ("score", "max_tile", "eval_score")


# ------------------------------------------------------------------------------ the relay store


class RelayStore:
    """The run store of a trial away from the driver (see the module's docstring).

    Checkpoint rows, evaluation scores and pruning live in ``inner``, a private GameStore, so the
    runner's own logic decides them exactly as it does against a real store (which checkpoint is the
    best, which files go); each write is also recorded as an op, taken with :meth:`take` and applied to
    the real run by :class:`RunSink`. Metric events and training games are only recorded: nothing in
    the trial reads them back. Thread-safe: the runner logs metrics from a background thread.
    """

    def __init__(self, inner: GameStore) -> None:
        self.inner = inner
        self._ops: list[RelayOp | TrialWord] = []
        self._lock = threading.Lock()

    def _record(self, op: RelayOp | TrialWord) -> None:
        with self._lock:
            self._ops.append(op)

    def take(self) -> list[RelayOp | TrialWord]:
        """The ops recorded since the last call, in order."""
        with self._lock:
            ops, self._ops = self._ops, []
        return ops

    def note(self, word: TrialWord) -> None:
        """Record the trial's own word (it began, its end, its error), after the runner's ops."""
        self._record(word)

    # ---------------------------------------------------------------- RunStore
    @property
    def path(self) -> Path:
        return Path(self.inner.path)

    def create_run(
        self,
        agent: str,
        config: Any,
        rules: Any,
        budget: Any,
        seed: int | None = None,
        *,
        status: str = "running",
    ) -> int:
        # The driver makes the real record (it owns run ids); this one only keeps the checkpoints.
        return int(self.inner.create_run(agent, config, rules, budget, seed, status=status))

    def claim_run(self, run_id: int) -> None:
        self.inner.claim_run(run_id)  # the driver claims the real run itself

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None:
        self.inner.set_run_status(run_id, status, error)
        self._record(StatusOp(status, error))

    def log_metrics(self, run_id: int, events: Any) -> None:
        events = list(events)
        if events:
            self._record(MetricsOp(events))

    def truncate_metrics(self, run_id: int, step: int) -> int:
        self._record(TruncateOp(int(step)))
        return int(self.inner.truncate_metrics(run_id, step))

    def add_checkpoint(self, run_id: int, path: Any, episode: int, step: int, final: bool = False) -> int:
        cid = int(self.inner.add_checkpoint(run_id, path, episode, step, final))
        # The bytes now: the file was just written (atomically), and pruning may delete it before
        # the next report.
        data = Path(path).read_bytes()
        self._record(CheckpointOp(cid, Path(path).name, data, int(episode), int(step), bool(final)))
        return cid

    def set_checkpoint_eval(self, checkpoint_id: int, eval_score: float) -> bool:
        best = bool(self.inner.set_checkpoint_eval(checkpoint_id, eval_score))
        self._record(EvalOp(int(checkpoint_id), float(eval_score)))
        return best

    def prune_checkpoints(self, run_id: int, keep_last: int, protect: Any = ()) -> list[Path]:
        deleted: list[Path] = self.inner.prune_checkpoints(run_id, keep_last, protect)
        self._record(PruneOp(int(keep_last), tuple(int(i) for i in protect)))
        return deleted

    def record_trace(
        self,
        trace: Any,
        source: str,
        agent: str | None = None,
        checkpoint: Any = None,
        *,
        run_id: int | None = None,
    ) -> int:
        # ``checkpoint`` would name a file of this machine: the driver's copy has another path.
        self._record(TraceOp(trace, source, agent))
        return 0

    # ---------------------------------------------------------------- what resume_run reads
    def get_run(self, run_id: int) -> Any:
        return self.inner.get_run(run_id)

    def last_checkpoint(self, run_id: int) -> Path | None:
        last: Path | None = self.inner.last_checkpoint(run_id)
        return last

    def run_checkpoints(self, run_id: int) -> Any:
        return self.inner.run_checkpoints(run_id)


# --------------------------------------------------------------------------- the driver's side


def _write_file(path: Path, data: bytes) -> None:
    """A checkpoint file from its bytes, atomically (a reader never sees half of it)."""

    def write(fh: Any) -> None:
        fh.write(data)

    atomic_write(path, write)


@dataclass
class RunSink:
    """The driver's side of one trial's run: applies a relay's ops to run ``run_id`` of ``store``.

    Checkpoint files are written atomically into the run's own checkpoint folder under the store's
    data folder, with the trial's file name; the trial's checkpoint ids are mapped to the store's.
    """

    store: GameStore
    run_id: int
    ids: dict[int, int] = field(default_factory=dict)
    last_checkpoint: Path | None = None
    status: str | None = None
    error: str | None = None
    games_logged: int = 0

    def checkpoint_dir(self) -> Path:
        return path_under(checkpoints_dir(Path(self.store.path).parent), f"run-{self.run_id}")

    def apply(self, ops: Sequence[RelayOp | TrialWord]) -> list[ChildMessage]:
        """Apply ``ops`` in order; the messages they make for the sweep (``Events``, ``CheckpointSaved``).
        The trial's own word (``TrialBegan`` / ``TrialEnded`` / ``Failed``) is :class:`RayTrials`'s."""
        out: list[ChildMessage] = []
        events: list[MetricEvent] = []
        for op in ops:
            if isinstance(op, MetricsOp):
                events.extend(op.events)
                continue
            if events:  # metric events go in one batch (one transaction), before any op that follows
                out.append(self._log(events))
                events = []
            saved = self._apply(op)
            if saved is not None:
                out.append(saved)
        if events:
            out.append(self._log(events))
        return out

    def _log(self, events: list[MetricEvent]) -> Events:
        self.store.log_metrics(self.run_id, events)
        return Events(events)

    def _apply(self, op: RelayOp | TrialWord) -> CheckpointSaved | None:
        match op:
            case CheckpointOp():
                path = path_under(self.checkpoint_dir(), Path(op.name).name)  # a name a trial sent
                _write_file(path, op.data)
                self.ids[op.checkpoint_id] = self.store.add_checkpoint(
                    self.run_id, path, op.episode, op.step, op.final
                )
                self.last_checkpoint = path
                return CheckpointSaved(str(path))
            case EvalOp():
                real = self.ids.get(op.checkpoint_id)
                if real is not None:
                    self.store.set_checkpoint_eval(real, op.eval_score)
            case PruneOp():
                protect = tuple(self.ids[i] for i in op.protect if i in self.ids)
                self.store.prune_checkpoints(self.run_id, op.keep_last, protect=protect)
            case StatusOp():
                self.store.set_run_status(self.run_id, op.status, op.error)
                self.status, self.error = op.status, op.error
            case TruncateOp():
                self.store.truncate_metrics(self.run_id, op.step)
            case TraceOp():
                self.store.record_trace(op.trace, op.source, agent=op.agent, run_id=self.run_id)
                self.games_logged += 1
        return None

    def done(self, status: str) -> Done:
        """The trial's last word as a local trial's child says it."""
        last = None if self.last_checkpoint is None else str(self.last_checkpoint)
        return Done(status, last, self.games_logged)


# ------------------------------------------------------------------------------------ the trial


@dataclass(frozen=True)
class _Job:
    """What a trial gets: its run request, and for a resumed run the run's record and checkpoints
    (``(file name, bytes or None, episode, step, final, eval score)``, oldest first)."""

    trial: int
    request: RunRequest
    record: dict[str, Any] | None = None
    checkpoints: tuple[tuple[str, bytes | None, int, int, bool, float | None], ...] = ()


class _Hub:
    """The stop flag the trials poll (a Ray actor of the driver; see the module's docstring)."""

    def __init__(self) -> None:
        self.all = False
        self.trials: set[int] = set()

    def stop(self, trial: int | None = None) -> None:
        if trial is None:
            self.all = True
        else:
            self.trials.add(int(trial))

    def stopping(self, trial: int) -> bool:
        return self.all or int(trial) in self.trials


def _seed_resume(inner: GameStore, job: _Job) -> int:
    """The resumed run in the trial's scratch store: its record and checkpoints (the last one's file,
    the best one's score, so that "best so far" is judged as the real store judges it)."""
    rec = job.record or {}
    run_id = int(
        inner.create_run(
            rec["agent"], rec["config"], rec["rules"], rec["budget"], rec["seed"], status="stopped"
        )
    )
    folder = path_under(checkpoints_dir(Path(inner.path).parent), f"run-{run_id}")
    for name, data, episode, step, final, score in job.checkpoints:
        path = path_under(folder, Path(name).name)  # a name the store gave
        if data is not None:
            _write_file(path, data)
        cid = inner.add_checkpoint(run_id, path, episode, step, final)
        if score is not None:
            inner.set_checkpoint_eval(cid, score)
    return run_id


def _watch_stop(hub: Any, trial: int, control: Control, done: threading.Event) -> None:
    """Stop the run when the driver says so, or when the driver is gone (the flag is unreachable)."""
    import ray
    from ray.exceptions import RayError

    while not done.wait(STOP_POLL_S):
        try:
            stopping = bool(ray.get(hub.stopping.remote(trial), timeout=30))
        except RayError:  # the hub died with its driver, or does not answer (GetTimeoutError)
            stopping = True
        if stopping:
            control.stop()
            return


def _trial_main(config: dict[str, Any], jobs: dict[int, _Job], hub: Any) -> None:
    """A Tune function trainable: one trial's run, trained here and reported to the driver."""
    import ray
    from ray import tune
    from ray.exceptions import RayError

    from studio.services.runs import open_run

    trial = int(config["trial"])
    job = jobs[trial]
    try:
        if ray.get(hub.stopping.remote(trial), timeout=30):
            return  # the sweep stopped before this trial began: it has no run and starts next time
    except RayError:  # the flag does not answer: the trial trains, and its stop watch decides
        log.warning("trial %s cannot read the sweep's stop flag", trial, exc_info=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"sweep-trial-{trial}-"))
    inner = GameStore(scratch / "trial.sqlite3")
    relay = RelayStore(inner)
    control = Control()
    done = threading.Event()
    last: dict[str, float] = {}

    def report() -> None:
        ops = relay.take()
        tune.report({**last, OPS_KEY: pickle.dumps(ops, protocol=pickle.HIGHEST_PROTOCOL)})

    threading.Thread(target=_watch_stop, args=(hub, trial, control, done), daemon=True).start()
    try:
        # The address is where the sweep's trials run; a trial trains here, its games played here too.
        request = replace(job.request, ray_address=None)
        if job.record is not None:
            request = replace(request, resume=_seed_resume(inner, job))
        else:
            request = replace(request, sweep_trial=None)  # the driver links its own record
        try:
            # the relay answers what a run asks of its store (GameStore's methods, by the same names)
            run = open_run(request, cast(GameStore, relay), control)
            # The driver makes (or claims) the run's record now, as a local trial does.
            relay.note(TrialBegan())
            report()
            due = time.monotonic() + REPORT_EVERY_S
            for event in run:
                last["episode"], last["step"] = float(event.episode), float(event.step)
                for name in TUNE_METRICS:
                    value = event.metrics.get(name)
                    if value is not None and math.isfinite(float(value)):
                        last[name] = float(value)
                if time.monotonic() >= due:
                    report()
                    due = time.monotonic() + REPORT_EVERY_S
            relay.note(TrialEnded(run.status))
        except Exception as e:  # refused or stopped itself (one line), or a bug (its traceback goes to
            # the driver): the runner has marked the run failed
            relay.note(Failed.of(e))
        report()
    finally:
        done.set()
        inner.close()
        shutil.rmtree(scratch, ignore_errors=True)


# ----------------------------------------------------------------------------------- the driver


def _resume_job(store: GameStore, trial: int, request: RunRequest) -> _Job:
    """A resumed trial's job: the run's record and checkpoints read here (RunError when it cannot)."""
    assert request.resume is not None
    try:
        summary = store.get_run(request.resume)
    except ValueError as e:
        raise RunError(str(e), "resume") from None
    if summary.status in ("running", "paused"):
        raise RunBusy(f"run {summary.id} is {summary.status} elsewhere: stop it there first", "resume")
    cps = store.run_checkpoints(summary.id)
    if not cps:
        raise NoCheckpoint(f"run {summary.id} has no checkpoint to resume from", "resume")
    last = cps[-1]
    try:
        data = last.path.read_bytes()
    except OSError as e:
        raise IncompatibleCheckpoint(f"run {summary.id} cannot resume: {e}", "resume") from None
    best = store.best_checkpoint(summary.id)
    kept: list[tuple[str, bytes | None, int, int, bool, float | None]] = []
    if best is not None and best.id != last.id:
        kept.append((best.path.name, None, best.episode, best.step, best.final, best.eval_score))
    kept.append((last.path.name, data, last.episode, last.step, last.final, last.eval_score))
    record = {
        "agent": summary.agent,
        "config": summary.config,
        "rules": summary.rules,
        "budget": summary.budget,
        "seed": summary.seed,
    }
    return _Job(trial, request, record, tuple(kept))


def _init_ray(workers: int, address: str | None) -> Any:
    """``ray``, joined or started; a Ray that does not start is one line saying what failed and what to
    try (a RunError: exit 2 in the CLI), never a traceback from Ray's internals."""
    from agents.ray_util import init_ray

    try:
        return init_ray(workers, address)
    except RunError:
        raise
    except Exception as e:  # RuntimeError, ConnectionError, TimeoutError ... from inside Ray
        log.warning("Ray did not start", exc_info=True)  # the user gets one line; the log keeps it all
        lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
        why = lines[-1] if lines else type(e).__name__
        where = f"the Ray cluster at {address}" if address else f"a local Ray of {workers} CPU(s)"
        hint = (
            "check the address and that the cluster runs (ray status there)"
            if address
            else "run `ray stop` to clear a stale instance, check free memory and /tmp space, then resume; "
            "or use --backend local"
        )
        raise RunError(f"Ray did not start ({where}): {why[:200]}; {hint}", "backend") from None


@dataclass
class _Channel:
    """What the driver's Tune hooks share with :class:`RayTrials`: the inbox of what Tune said, the
    sweep's stop flag, and the trials running now."""

    inbox: queue.Queue[TuneNews]
    stop: threading.Event
    live: set[int] = field(default_factory=set)


#: Channels of the sweeps this process drives, by key. Tune pickles its run config (callbacks and
#: stopper included) for a later restore, and a queue or an event cannot be pickled: the hooks hold
#: only the key.
_CHANNELS: dict[str, _Channel] = {}


def _channel(key: str) -> _Channel | None:
    # The hooks' classes are local, so cloudpickle copies what their code names: a module function is
    # copied by reference, where the registry itself (queues, locks) could not be copied at all.
    return _CHANNELS.get(key)


def _tune_hooks(key: str) -> tuple[list[Any], Any]:
    """The Tune callbacks (one passes trials' reports to the channel's inbox, one keeps Tune quiet), and
    the stopper that ends the experiment once the sweep's stop is set and no trial runs (pending ones
    would only start to leave at once)."""
    from ray import tune
    from ray.tune.progress_reporter import TrialProgressCallback

    class Quiet(TrialProgressCallback):
        # Tune prints "Trial ... completed" whatever its verbosity, on stdout, where ``sweep --json``
        # writes its answer; given one, Tune adds no progress callback of its own.
        def _print(self, msg: str) -> None:
            pass

    class Inbox(tune.Callback):
        def __init__(self) -> None:
            self.key = key

        def _put(self, news: TuneNews) -> None:
            channel = _channel(self.key)
            if channel is not None:
                channel.inbox.put(news)

        def on_trial_start(self, iteration: int, trials: Any, trial: Any, **info: Any) -> None:
            channel = _channel(self.key)
            if channel is not None:
                channel.live.add(int(trial.config["trial"]))

        def on_trial_result(self, iteration: int, trials: Any, trial: Any, result: dict, **info: Any) -> None:
            # Taken out of the result before Tune keeps or logs it (callbacks may change it in place).
            blob = result.pop(OPS_KEY, None)
            if blob is not None:
                self._put(TrialReport(int(trial.config["trial"]), blob))

        def on_trial_complete(self, iteration: int, trials: Any, trial: Any, **info: Any) -> None:
            self._ended(trial, crashed=False)

        def on_trial_error(self, iteration: int, trials: Any, trial: Any, **info: Any) -> None:
            message = "the trial's Ray worker failed"
            try:
                err = trial.get_error()
                lines = [] if err is None else str(err).strip().splitlines()
                if lines:
                    message = f"{message}: {lines[-1]}"
            except Exception:  # Tune's error file is Tune's business: the trial failed all the same
                log.warning("cannot read why trial %s failed", trial.config.get("trial"), exc_info=True)
            self._ended(trial, crashed=True, message=message)

        def _ended(self, trial: Any, crashed: bool, message: str = "") -> None:
            channel = _channel(self.key)
            if channel is not None:
                channel.live.discard(int(trial.config["trial"]))
            self._put(TrialGone(int(trial.config["trial"]), crashed, message))

    class StopWhenIdle(tune.Stopper):
        def __init__(self) -> None:
            self.key = key

        def __call__(self, trial_id: str, result: dict) -> bool:
            return False

        def stop_all(self) -> bool:
            channel = _channel(self.key)
            return channel is None or (channel.stop.is_set() and not channel.live)

    return [Inbox(), Quiet()], StopWhenIdle()


@dataclass
class _TrialState:
    job: _Job
    sink: RunSink | None = None
    agent: str = ""
    ended: bool = False
    ignored: bool = False


class RayTrials:
    """The ``ray`` backend's driver: runs the trials as Ray Tune trials, ``workers`` at once (see the
    module's docstring), and :meth:`run` yields (trial, message) with the messages a local trial's
    child says. Tune's fit runs in a thread of its own; its callbacks put what they hear in a queue,
    and this loop alone writes the store."""

    def __init__(self, jobs: list[TrialJob], store: GameStore, workers: int, stop: threading.Event) -> None:
        self.jobs, self.store, self.workers, self.stop = jobs, store, workers, stop
        self.states: dict[int, _TrialState] = {}
        self.inbox: queue.Queue[TuneNews] = queue.Queue()
        self.key = uuid.uuid4().hex
        self.hub: Any = None
        self.tuner: Any = None

    def run(self) -> Iterator[TrialMessage]:
        if not self.jobs:
            return
        for trial, req in self.jobs:
            try:
                job = _resume_job(self.store, trial, req) if req.resume is not None else _Job(trial, req)
            except RunError as e:
                yield TrialMessage(trial, Failed.of(e))
                continue
            self.states[trial] = _TrialState(job)
        if not self.states:
            return
        address = next((r.ray_address for _, r in self.jobs if r.ray_address), None)
        ray = _init_ray(self.workers, address)
        self.hub = ray.remote(num_cpus=0)(_Hub).remote()
        _CHANNELS[self.key] = _Channel(self.inbox, self.stop)
        storage = tempfile.mkdtemp(prefix="sweep-ray-")
        self.tuner = self._tuner(storage)
        # Tune's newer console output prints its experiment table to stdout whatever ``verbose`` says,
        # which would land in the middle of ``sweep --json``; its older output is silent at verbose=0
        # (read when the experiment starts; a user who set it keeps theirs).
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
        thread = threading.Thread(target=self._fit, name="sweep-tune", daemon=True)
        thread.start()
        try:
            yield from self._follow()
        finally:
            if thread.is_alive():
                self._drain()
            _CHANNELS.pop(self.key, None)
            try:
                ray.kill(self.hub)
            except Exception:  # the actor went with a Ray that shut down: nothing left to end
                log.warning("cannot end the sweep's stop-flag actor", exc_info=True)
            shutil.rmtree(storage, ignore_errors=True)

    def _tuner(self, storage: str) -> Any:
        from ray import tune

        callbacks, stopper = _tune_hooks(self.key)
        trainable = tune.with_resources(
            tune.with_parameters(_trial_main, jobs={t: s.job for t, s in self.states.items()}, hub=self.hub),
            {"cpu": 1},
        )
        return tune.Tuner(
            trainable,
            param_space={"trial": tune.grid_search(list(self.states))},
            # Actors reused: a fresh one per trial imports the studio and compiles the n-tuple kernels
            # again, seconds a trial; a trial keeps no state in its process (its scratch store goes).
            tune_config=tune.TuneConfig(
                num_samples=1, max_concurrent_trials=max(1, int(self.workers)), reuse_actors=True
            ),
            run_config=tune.RunConfig(
                name="sweep",
                storage_path=storage,
                verbose=0,
                callbacks=callbacks,
                stop=stopper,
                failure_config=tune.FailureConfig(max_failures=0),
            ),
        )

    def _fit(self) -> None:
        """The thread that runs Tune; its end (or its error) goes to the inbox."""
        error: BaseException | None = None
        try:
            self.tuner.fit()
        except BaseException as e:  # handed to the loop, which raises it in the sweep
            error = e
        self.inbox.put(TuneEnded(error))

    def _follow(self) -> Iterator[TrialMessage]:
        """What the trials say, until Tune ends (its error raised here)."""
        stopping = False
        while True:
            if self.stop.is_set() and not stopping:
                stopping = True
                self.hub.stop.remote()
            try:
                news = self.inbox.get(timeout=0.2)
            except queue.Empty:
                continue
            if isinstance(news, TuneEnded):
                if news.error is not None:
                    error = news.error
                    raise RuntimeError(f"Ray Tune failed: {type(error).__name__}: {error}") from error
                return
            yield from self._handle(news)

    def _drain(self) -> None:
        """Closed early (or failed): the trials stop and save, and their last ops are still applied."""
        self.stop.set()
        try:
            self.hub.stop.remote()
        except Exception:  # Ray is going down: the trials see the flag unreachable and stop anyway
            log.warning("cannot set the sweep's stop flag", exc_info=True)
        deadline = time.monotonic() + CLOSE_GRACE_S
        while time.monotonic() < deadline:
            try:
                news = self.inbox.get(timeout=0.2)
            except queue.Empty:
                continue
            if isinstance(news, TuneEnded):
                break
            try:
                self._handle(news)
            except Exception:  # an error is already under way: this one must not hide it
                log.exception("applying a closing sweep's last trial report failed")

    def _handle(self, news: TrialReport | TrialGone) -> list[TrialMessage]:
        """Apply what Tune said of a trial to the store; the messages for the sweep."""
        state = self.states.get(news.trial)
        if state is None or state.ignored:
            return []
        if isinstance(news, TrialReport):
            ops: list[RelayOp | TrialWord] = pickle.loads(news.ops)
            return [TrialMessage(news.trial, m) for m in self._report(news.trial, state, ops)]
        return [TrialMessage(news.trial, m) for m in self._gone(news, state)]

    def _report(self, trial: int, state: _TrialState, ops: list[RelayOp | TrialWord]) -> list[ChildMessage]:
        out: list[ChildMessage] = []
        writes = [op for op in ops if not isinstance(op, TrialEnded | Failed)]
        if writes and state.sink is None:  # the trial began (or wrote): its run's record now
            try:
                state.sink, state.agent = _open_record(self.store, state.job)
            except (RunError, ValueError) as e:  # the run was claimed elsewhere meanwhile
                state.ignored = True
                self.hub.stop.remote(trial)
                return [Failed(str(e), getattr(e, "field", "resume"))]
            out.append(Started(state.sink.run_id, state.agent))
        if state.sink is not None:
            out.extend(state.sink.apply(writes))
        word = next((op for op in ops if isinstance(op, TrialEnded | Failed)), None)
        if word is not None and not state.ended:
            state.ended = True
            if isinstance(word, Failed):
                out.append(word)
            else:
                out.append(state.sink.done(word.status) if state.sink is not None else Done(word.status))
        return out

    def _gone(self, news: TrialGone, state: _TrialState) -> list[ChildMessage]:
        # A trial that completes without a run left on the stop flag before it began: nothing to say.
        if state.ended or (state.sink is None and not news.crashed):
            return []
        # The trial ended without its last word (its worker died): its run stops where its last
        # checkpoint is, and a resume of the sweep goes on from there (a killed local trial too).
        state.ended = True
        message = news.message if news.crashed else "the trial ended without its last report"
        if state.sink is not None:
            try:
                self.store.set_run_status(state.sink.run_id, "stopped", message)
            except (sqlite3.Error, ValueError):  # the sweep still hears why; a resume fixes the status
                log.exception("cannot mark run %s stopped", state.sink.run_id)
        return [Failed(message)]


def ray_backend(
    jobs: list[TrialJob], store: GameStore, workers: int, stop: threading.Event
) -> Iterator[TrialMessage]:
    """Run the trials as Ray Tune trials (:class:`RayTrials`)."""
    return RayTrials(jobs, store, workers, stop).run()


def _open_record(store: GameStore, job: _Job) -> tuple[RunSink, str]:
    """The real run of a trial that began training: a new record (linked to its trial), or the resumed
    run claimed by this driver."""
    request = job.request
    if job.record is not None:
        assert request.resume is not None
        store.claim_run(request.resume)
        return RunSink(store, request.resume), str(job.record["agent"])
    stored = resolve(request).stored()
    link = (
        contextlib.nullcontext()
        if request.sweep_trial is None
        else store.linking_runs_to(*request.sweep_trial)
    )
    with link:  # the run and its trial's link in one transaction: a kill leaves no orphan run
        run_id = store.create_run(
            stored["agent"], stored["config"], stored["rules"], stored["budget"], stored["seed"]
        )
    return RunSink(store, run_id), str(stored["agent"])
