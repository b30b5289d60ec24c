"""Start or resume a training run: the one code path behind the Train tab and ``python main.py train``.

A front end gathers a :class:`RunRequest` (the window from its form, the CLI from its flags) and calls
:func:`open_run`, which returns the :class:`agents.runner.TrainingRun` to iterate. Everything a run
is made of is decided here, once:

* the settings: the agent's defaults, then the preset's, then the request's ``config`` (the form's
  values, or the CLI's flags);
* the rules: the request's, else the preset's, else the classic game;
* the budget: the request's, else the preset's (any of episodes, steps, seconds: the first reached
  ends the run); a resumed run goes on with what is left of its own;
* parallel play (workers, local processes or Ray, a cluster address) and the checkpoint and
  game-logging cadence;
* periodic greedy evaluation (games, every N seconds of training and/or N episodes, seed) and how
  many checkpoint files to keep besides the best.

Errors are :class:`agents.runner.RunError` subclasses with a ``field`` naming the input at fault, so
the window marks that field and the CLI prints one line.
"""

from __future__ import annotations

import csv
import importlib.util
import logging
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.base import Agent, Budget, Control, Counters, TrainContext
from agents.config import AgentConfig, ConfigError, load_preset
from agents.ray_util import RAY_MISSING
from agents.run.options import RunOptions
from agents.runner import (
    BudgetUsedUp,
    IncompatibleCheckpoint,
    NoCheckpoint,
    RunBusy,
    RunError,
    TrainingRun,
    budget_to_dict,
    resume_run,
    run_training,
)
from engine import Rules
from engine.fsutil import path_under

if TYPE_CHECKING:
    from engine.store import GameStore

__all__ = [
    "BACKENDS",
    "BudgetUsedUp",
    "IncompatibleCheckpoint",
    "NoCheckpoint",
    "ResolvedRun",
    "RunBusy",
    "RunEnd",
    "RunError",
    "RunRequest",
    "TensorBoardMissing",
    "check_parallel",
    "export_run_tensorboard",
    "mark_failed",
    "open_run",
    "preset_budget",
    "resolve",
    "run_end",
    "stop_elsewhere",
    "write_metrics_csv",
    "write_tensorboard",
]

log = logging.getLogger(__name__)

#: Where the parallel games of an agent that plays them (MCTS self-play) run.
BACKENDS: tuple[str, ...] = ("local", "ray")


def have_ray() -> bool:
    """Whether the optional Ray extra is installed (asked without importing it: that takes seconds)."""
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError, AttributeError):  # ray set to None in sys.modules, a broken install
        return False


def check_parallel(workers: int, backend: str, ray_address: str | None) -> None:
    """Where parallel play runs (a run's games, a sweep's trials): RunError naming the field at fault."""
    if workers < 1:
        raise RunError(f"workers must be >= 1, got {workers}", "workers")
    if backend not in BACKENDS:
        raise RunError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}", "backend")
    if (backend == "ray" or ray_address) and not have_ray():
        raise RunError(RAY_MISSING, "backend")


@dataclass(frozen=True)
class RunRequest(RunOptions):
    """Everything a user says about a run. Plain data (picklable: a child process can receive it).

    A new run names ``agent`` and/or ``preset``; ``resume`` names a run to continue instead (its own
    agent, settings and rules; ``budget`` None = what is left of its budget, else ``budget_if_used_up``).
    The run's options (checkpoint and evaluation cadence, logged games, files kept, the checkpoint
    size limit) are the fields of :class:`agents.run.options.RunOptions`, which it extends: declared
    and checked there, given here by name (``RunRequest(agent="dqn", eval_games=0)``);
    :meth:`~agents.run.options.RunOptions.options` hands them to the run.
    """

    agent: str | None = None
    preset: str | None = None
    #: knob values over the preset's (or the defaults); the window sends its whole form
    config: Mapping[str, Any] = field(default_factory=dict)
    rules: Rules | None = None
    budget: Budget | None = None
    seed: int | None = None
    workers: int = 1
    backend: str = "local"
    ray_address: str | None = None
    resume: int | None = None
    budget_if_used_up: Budget | None = None
    #: (sweep id, trial index) when this run is a sweep's trial: linked in the store as it is created
    sweep_trial: tuple[int, int] | None = None
    #: the agent's class as "module:Class", for a child process that must find an agent registered
    #: at run time (tests, plug-ins); registry agents need none
    target: str | None = None

    def context(self, data_dir: Path | None) -> TrainContext:
        """The training context this request asks for (a Ray address implies the Ray backend)."""
        backend = "ray" if self.ray_address else self.backend
        return TrainContext(
            data_dir=data_dir, workers=self.workers, backend=backend, ray_address=self.ray_address
        )

    def check(self) -> None:
        """Checks that need no agent or store (RunError with the field at fault)."""
        check_parallel(self.workers, self.backend, self.ray_address)
        super().check()
        if self.resume is not None and (self.agent or self.preset):
            raise RunError(
                "a resumed run keeps its own agent and settings: give no agent or preset", "resume"
            )


@dataclass(frozen=True)
class ResolvedRun:
    """What a new run is made of, after defaults, preset and request are merged."""

    agent: str
    config: AgentConfig
    rules: Rules
    budget: Budget
    seed: int | None

    def stored(self) -> dict[str, Any]:
        """The run's record as the store keeps it (what two front ends must agree on)."""
        return {
            "agent": self.agent,
            "config": self.config.to_dict(),
            "rules": self.rules.to_dict(),
            "budget": budget_to_dict(self.budget, Counters()),
            "seed": self.seed,
        }


def preset_budget(preset: Mapping[str, Any] | None) -> Budget | None:
    """A preset's ``budget`` (episodes / steps / seconds or minutes / cpu_seconds) as a Budget; None when
    it has none."""
    pb = (preset or {}).get("budget") or {}
    seconds = pb.get("seconds")
    if seconds is None and pb.get("minutes") is not None:
        seconds = float(pb["minutes"]) * 60.0
    cpu = pb.get("cpu_seconds")
    if pb.get("episodes") is None and pb.get("steps") is None and seconds is None and cpu is None:
        return None
    return Budget(episodes=pb.get("episodes"), steps=pb.get("steps"), seconds=seconds, cpu_seconds=cpu)


def resolve(request: RunRequest) -> ResolvedRun:
    """Merge defaults, preset and request into the run to make (RunError naming the field at fault)."""
    from agents.registry import get_agent_class, unknown_agent_message

    request.check()
    try:
        preset = load_preset(request.preset) if request.preset else None
    except ValueError as e:
        raise RunError(str(e), "preset") from None
    name = request.agent or (preset or {}).get("agent")
    if not name:
        raise RunError("give the agent to train (or a preset)", "agent")
    if preset is not None and preset["agent"] != name:
        raise RunError(f"preset {request.preset!r} is for agent {preset['agent']!r}, not {name!r}", "preset")
    try:
        cls = get_agent_class(name)
    except KeyError:
        raise RunError(unknown_agent_message(name), "agent") from None
    if not cls.trainable:
        raise RunError(
            f"agent {name!r} does not learn, so there is nothing to train: evaluate it instead", "agent"
        )
    try:
        config = cls.config_cls.from_dict({**(preset or {}).get("config", {}), **request.config})
    except ConfigError as e:
        raise RunError(str(e), e.field) from None
    rules = request.rules if request.rules is not None else _preset_rules(preset)
    if not 1 <= rules.start_tiles < rules.rows * rules.cols:
        # A start board that is empty or full may have no legal move: an episode over before it began.
        raise RunError(
            f"training needs games that can start: from 1 to {rules.rows * rules.cols - 1} start tiles "
            f"on a {rules.rows}x{rules.cols} board, not {rules.start_tiles}",
            "rules",
        )
    problem = cls.unsupported_reason(rules)
    if problem:
        raise RunError(f"{name} cannot play these rules: {problem}", "rules")
    budget = request.budget if request.budget is not None else preset_budget(preset)
    if budget is None:
        raise RunError("give a budget: episodes, minutes, steps or CPU-seconds", "budget")
    return ResolvedRun(name, config, rules, budget, request.seed)


def _preset_rules(preset: Mapping[str, Any] | None) -> Rules:
    given = (preset or {}).get("rules")
    if not given:
        return Rules()
    try:
        return Rules.from_dict({**Rules().to_dict(), **given})
    except (TypeError, ValueError) as e:
        raise RunError(f"the preset's rules make no game: {e}", "rules") from None


def build_agent(resolved: ResolvedRun) -> Agent:
    """A fresh agent for the resolved run (seconds for a large network: not on the GUI thread)."""
    from agents.registry import get_agent_class

    return get_agent_class(resolved.agent)(resolved.config, resolved.rules, resolved.seed)


def open_run(request: RunRequest, store: GameStore, control: Control | None = None) -> TrainingRun:
    """Start (or resume) the requested run in ``store`` and return it, ready to iterate.

    The run is in the store when this returns (status running); iterating trains it. Slow work
    happens here (importing torch, building networks, loading a checkpoint): call it where that may
    take seconds (a worker thread or a child process, never the GUI thread).
    """
    from agents.registry import register

    request.check()
    options = request.options()
    context = request.context(Path(store.path).parent)
    if request.resume is not None:
        try:
            summary = store.get_run(request.resume)
        except ValueError as e:  # StoreError: no such run
            raise RunError(str(e), "resume") from None
        if request.target:
            register(summary.agent, request.target)
        return resume_run(
            request.resume,
            store,
            request.budget,
            control,
            context,
            budget_if_used_up=request.budget_if_used_up,
            options=options,
        )
    if request.target and request.agent:
        register(request.agent, request.target)
    resolved = resolve(request)
    agent = build_agent(resolved)
    try:
        agent.check_can_train(context)
    except ConfigError as e:
        raise RunError(str(e), e.field) from None
    if request.sweep_trial is None:
        return run_training(agent, resolved.budget, store, control, context, options)
    # Linked in the run's own transaction: a kill at any moment leaves either no run or a linked one,
    # which the sweep's resume finds and resumes.
    with store.linking_runs_to(*request.sweep_trial):
        return run_training(agent, resolved.budget, store, control, context, options)


# ------------------------------------------------------------------------------ a run's records


def write_metrics_csv(columns: dict[str, np.ndarray], path: str | Path) -> Path:
    """A run's metric columns (``GameStore.run_metrics``) as CSV: one row per event, empty where NaN."""
    path = Path(path)
    names = list(columns)
    n = len(next(iter(columns.values()))) if columns else 0
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for start in range(0, n, 10_000):
            chunk = [columns[k][start : start + 10_000] for k in names]
            for row in zip(*chunk):
                w.writerow(["" if isinstance(v, float) and v != v else _cell(v) for v in row])
    return path


class TensorBoardMissing(ValueError):
    """TensorBoard export without the optional extra (a ValueError: the CLI prints it as one line)."""


#: What to install for :func:`write_tensorboard` (the optional extra, or the package itself).
TENSORBOARD_HINT = "pip install -e '.[tensorboard]' (or pip install tensorboard)"
#: The columns of ``run_metrics`` that are a metric's coordinates, not a metric.
_AXES = ("step", "elapsed")


def write_tensorboard(columns: dict[str, np.ndarray], directory: str | Path, start_time: float = 0.0) -> Path:
    """A run's metric columns (``GameStore.run_metrics``) as TensorBoard scalars; the event file.

    One tag per metric (and ``episode``), each point at the event's ``step`` (moves trained), with the
    wall time ``start_time + elapsed`` (TensorBoard's "relative" axis is then the training time);
    NaN (a metric the event did not report) is left out. ``directory`` is made if needed; event files
    an earlier export left there are replaced, so that exporting again does not draw the run twice.
    Needs the ``tensorboard`` package (:class:`TensorBoardMissing` without it).
    """
    try:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:
        raise TensorBoardMissing(
            f"TensorBoard export needs the optional tensorboard extra: {TENSORBOARD_HINT}"
        ) from None
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("events.out.tfevents.*"):
        old.unlink()
    n = len(next(iter(columns.values()))) if columns else 0
    steps = columns["step"].astype(np.int64) if "step" in columns else np.arange(n, dtype=np.int64)
    elapsed = columns["elapsed"].astype(float) if "elapsed" in columns else np.zeros(n)
    tags = [k for k in columns if k not in _AXES]
    values = {k: columns[k].astype(float) for k in tags}
    writer = EventFileWriter(str(directory), max_queue_size=1000, flush_secs=3600)
    try:
        for i in range(n):
            points = [
                Summary.Value(tag=k, simple_value=float(values[k][i]))
                for k in tags
                if values[k][i] == values[k][i]
            ]
            if points:
                writer.add_event(
                    Event(
                        wall_time=start_time + float(elapsed[i]),
                        step=int(steps[i]),
                        summary=Summary(value=points),
                    )
                )
    finally:
        writer.close()
    return max(directory.glob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime)


def export_run_tensorboard(store: GameStore, run_id: int, directory: str | Path) -> Path:
    """Run ``run_id`` of ``store`` as TensorBoard event files in ``directory/run-ID-AGENT`` (the folder
    to give ``tensorboard --logdir``: every run exported there is a run to compare); the event file.

    What the Train tab's "Export TensorBoard…" and ``runs export ID DIR --tensorboard`` write."""
    summary = store.get_run(run_id)
    columns = store.run_metrics(run_id)
    # The agent's name is stored text: a hostile store's ``../../x`` must not lead out of ``directory``.
    folder = path_under(directory, f"run-{run_id}-{summary.agent}")
    return write_tensorboard(columns, folder, summary.created)


def _cell(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.10g}"
    return str(v.item() if isinstance(v, np.generic) else v)


def stop_elsewhere(summary: Any) -> str:
    """Ask the process that trains ``summary``'s run (the window's child left training headless, or
    ``train`` in a terminal) to stop and save, with SIGINT, which both take as "stop after this step
    and save a checkpoint". What happened, in words (RunError when it cannot be asked from here)."""
    import os
    import signal
    import socket

    if summary.status not in ("running", "paused"):
        raise RunError(f"run {summary.id} is {summary.status}, not training", "run")
    if summary.pid is None or summary.host != socket.gethostname():
        raise RunError(
            f"run {summary.id} trains on {summary.host or 'another machine'}: stop it there", "run"
        )
    if summary.pid == os.getpid():
        raise RunError(f"run {summary.id} trains in this process: stop it here", "run")
    try:
        os.kill(summary.pid, signal.SIGINT)
    except ProcessLookupError:
        raise RunError(f"run {summary.id}'s process {summary.pid} is gone", "run") from None
    except PermissionError:
        raise RunError(f"run {summary.id} belongs to another user: stop it there", "run") from None
    return f"run {summary.id}: asked process {summary.pid} to stop (it saves a checkpoint first)"


# ------------------------------------------------------------------------------ a run's end

#: How a run the window started may end, in the window's words.
END_WORDS: dict[str, str] = {
    "finished": "Finished",
    "stopped": "Stopped",
    "failed": "Failed",
    "detached": "Training on without the window",
}


@dataclass(frozen=True)
class RunEnd:
    """How a run supervised from the window ended: ``status`` (a key of :data:`END_WORDS`) and the
    file name of its last checkpoint when that one is worth using (None after a failure)."""

    status: str
    checkpoint: str | None = None

    @property
    def text(self) -> str:
        """``Finished · checkpoint run-3-final.pt``."""
        words = END_WORDS[self.status]
        return words if self.checkpoint is None else f"{words} · checkpoint {self.checkpoint}"

    @property
    def complete(self) -> bool:
        """The whole budget was trained and a checkpoint holds it (the progress bar shows it full)."""
        return self.status == "finished" and self.checkpoint is not None


def run_end(status: str, failed: bool, last_checkpoint: str | None) -> RunEnd:
    """How a run ended from its supervisor's last word: ``status`` as the child said it, ``failed``
    when an error was reported (it could not start, raised, or its process died). A run that said
    nothing of its end (its process went away quietly) was stopped."""
    final = "failed" if failed else status if status in END_WORDS else "stopped"
    keep = last_checkpoint and final != "failed"
    return RunEnd(final, Path(last_checkpoint).name if keep and last_checkpoint else None)


def mark_failed(store: GameStore, run_id: int, message: str) -> None:
    """Run ``run_id`` failed with ``message``: marked so in the store unless it already ended. The
    runner marks its run failed before its child reports; a child that died could not."""
    try:
        if store.get_run(run_id).status in ("running", "paused"):
            store.set_run_status(run_id, "failed", message)
    except (sqlite3.Error, ValueError):  # the store is unreadable or the run gone: the window says why
        log.exception("cannot mark run %s failed", run_id)
