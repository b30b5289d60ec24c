"""``python main.py train --agent NAME [settings] [--episodes N | --minutes M | --steps S] [--resume RUN_ID]``.

Trains an agent as a recorded run (:mod:`agents.runner`): a live progress line on stderr, periodic
checkpoints, Ctrl-C stops cleanly (first press: stop after the current step and save; second: abort),
and the checkpoint path printed at the end. ``train --agent NAME --help`` lists that agent's settings.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import traceback
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agents.base import Control, MetricEvent
from agents.metrics import metrics_of
from agents.runner import RunError, TrainingRun
from engine.store import GameStore
from engine.store.model import format_size
from studio.cli import CliError, ctrl_c_stops
from studio.commands import _agent_flags as flags
from studio.progress import ProgressLine
from studio.services.runs import RunRequest, open_run
from studio.text import duration, number

log = logging.getLogger(__name__)
#: The flags that are the run request's fields of the same name, as given (the run options' flags are
#: made and read from their declaration: :func:`studio.commands._agent_flags.add_run_option_flags`).
SAME_NAMED = (
    "agent",
    "preset",
    "seed",
    "workers",
    "backend",
    "ray_address",
    "resume",
)
HELP = "train an agent (recorded run, checkpoints, resume)"
DESCRIPTION = """Train an agent as a recorded run (see: python main.py runs list).

The run's settings come from the agent's defaults, then --preset, then the flags given here.
Budget: any of --episodes / --minutes / --steps (the first reached ends the run), or the preset's.
Ctrl-C stops after the current step and saves a checkpoint; --resume RUN_ID continues from it.
Every --eval-every-minutes of training a checkpoint is evaluated in the background (--eval-games
greedy games, the same seeds each time); the best one is kept (runs show ID), with the newest
--keep-checkpoints files."""


def register(subparsers: Any) -> None:
    flags.register_two_stage(subparsers, "train", HELP, build_parser, run)


def build_parser(first: argparse.Namespace) -> argparse.ArgumentParser:
    names, epilog = flags.one_agent(first)
    p = flags.new_parser("train", DESCRIPTION, epilog)
    flags.add_agent_choice(p, "to train")
    flags.add_budget_flags(p)
    flags.add_seed_flag(p, None, "random seed of the agent (default: fresh)")
    flags.add_rules_flags(p)
    flags.add_resume_flag(p, "RUN_ID", "continue this run from its last checkpoint")
    flags.add_run_option_flags(p)  # checkpoints, logged games, evaluations: from their declaration
    flags.add_parallel_flags(
        p,
        (1, "processes for agents that play in parallel (default 1)"),
        ("local", "where those parallel games run: local processes (default) or Ray actors (optional extra)"),
        "a running Ray cluster to use, e.g. 10.0.0.5:6379 (implies --backend ray)",
    )
    flags.add_agent_flags(p, names)
    return p


def request_from_args(args: argparse.Namespace) -> RunRequest:
    """The command line as a run request (what the Train tab builds from its form)."""
    name, preset = flags.agent_and_preset(args)
    return RunRequest(
        config=flags.overrides_for(args, name) if name and args.resume is None else {},
        rules=flags.rules_from(args, preset),
        budget=flags.budget_from(args),
        **flags.run_options_from(args),
        **{field: getattr(args, field) for field in SAME_NAMED},
    )


class _Live:
    """The progress line's figures: recent episodes' scores and tiles, the agent's loss and schedules."""

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        self.scores: deque[float] = deque(maxlen=100)
        self.tiles: deque[float] = deque(maxlen=100)
        self.games: deque[int] = deque(maxlen=100)  # games behind each of ``scores``
        self.last: dict[str, float] = {}
        self.message = ""
        self.step0: int | None = None
        self.t0 = time.perf_counter()
        self.event: MetricEvent | None = None

    def add(self, ev: MetricEvent) -> str:
        if ev.kind == "evaluation":
            # a checkpoint's greedy games, reported with that (older) checkpoint's counters: its message
            # goes on the line, its counters do not
            self.last.update(ev.metrics)
            self.message = ev.message
            ev = self.event or ev
        self.event = ev
        if self.step0 is None:
            self.step0 = ev.step
        self.last.update(ev.metrics)
        if ev.kind == "episode":
            if "score" in ev.metrics:
                self.scores.append(float(ev.metrics["score"]))
                # the games behind that score: an event of a learner that plays many games between
                # events (n-tuple) is their mean, of those begun from the start (restarts left out)
                games = ev.metrics.get("games", 1.0) - ev.metrics.get("restarted_games", 0.0)
                self.games.append(max(1, round(games)))
            if "max_tile" in ev.metrics:
                self.tiles.append(float(ev.metrics["max_tile"]))
        if ev.message:
            self.message = ev.message
        return self.text()

    def text(self) -> str:
        """The progress line's figures as they stand."""
        ev = self.event
        assert ev is not None
        agent = self.run.agent
        # Most telling first: a terminal narrower than the whole line cuts its end with an ellipsis.
        parts = [f"ep {ev.episode:,}"]
        if self.scores:
            parts += [
                f"mean {sum(self.scores) / len(self.scores):,.0f}",
                f"tile {max(self.tiles):,.0f}" if self.tiles else "",
            ]
        parts.append(f"{self.steps_per_s():,.0f} steps/s")
        for info in metrics_of(agent):
            # the agent's own drawn metrics (loss, schedules, evaluations); score / speed are above
            if info.drawn and info.kind not in ("score", "speed") and info.name in self.last:
                parts.append(f"{info.name} {number(self.last[info.name])}")
        if self.scores:
            parts.append(f"last {self.scores[-1]:,.0f}")
        if self.message:
            parts.append(self.message)
        return " ".join(p for p in parts if p)

    def summary(self) -> str:
        """ "last 3 games: mean score 1,204, best tile 128": the games the recent scores are of."""
        games = sum(self.games)
        mean = sum(s * g for s, g in zip(self.scores, self.games, strict=True)) / games
        tile = f", best tile {max(self.tiles):,.0f}" if self.tiles else ""
        restarts = (
            " (played from the start; restarted games left out)" if "restarted_games" in self.last else ""
        )
        return f"last {games:,} {'game' if games == 1 else 'games'}{restarts}: mean score {mean:,.0f}{tile}"

    def steps_per_s(self) -> float:
        if "steps_per_s" in self.last:
            return float(self.last["steps_per_s"])
        if self.event is None or self.step0 is None:
            return 0.0
        return (self.event.step - self.step0) / max(1e-9, time.perf_counter() - self.t0)


def _events_with_ctrl_c(run: TrainingRun) -> Iterator[MetricEvent]:
    """Iterate the run; the first Ctrl-C asks it to stop (it then saves), the second aborts."""
    control = run.control
    with ctrl_c_stops(
        control.stop, lambda: control.stopped, "stopping after the current step and saving a checkpoint"
    ):
        yield from run


def _save_traceback(data_dir: Path, run_id: int) -> Path:
    """The current exception's traceback in ``DATA/logs/run-N-traceback.txt``."""
    path = data_dir / "logs" / f"run-{run_id}-traceback.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(traceback.format_exc())
    return path


def _device_name(device: Any) -> str:
    """``cpu``, ``cuda (NVIDIA H100 80GB HBM3)``: the torch device a learner trains on, for the header."""
    from agents.nn.device import describe_device  # imports torch: only for torch learners

    return describe_device(device)


def run(args: argparse.Namespace) -> int:
    control = Control()
    with GameStore.open(args.data_dir) as store:
        training = open_run(request_from_args(args), store, control)
        live = _Live(training)
        device = getattr(training.agent, "device", None)  # torch learners: where they train
        on_device = f" on {_device_name(device)}" if device is not None else ""
        try:
            with ProgressLine(
                f"train {training.agent.name} run {training.run_id}{on_device}", total=1.0
            ) as line:
                for ev in _events_with_ctrl_c(training):
                    line.update(ev.progress, live.add(ev))
                if live.event is not None:
                    # the last event again, drawn, not added: a second add counted its games twice
                    line.update(live.event.progress, live.text(), force=True)
        except (KeyboardInterrupt, CliError):
            raise
        except RunError as e:  # the run stopped itself (diverged, stuck): one line says why
            print(f"run {training.run_id} failed: {e}", file=sys.stderr)
            return 1
        except Exception as e:
            # A bug in the agent: its traceback helps whoever fixes it, so it goes to a file beside the
            # store; the terminal gets one line and the run is recorded as failed.
            where = _save_traceback(Path(store.path).parent, training.run_id)
            log.exception("run %s failed (traceback also in %s)", training.run_id, where)
            print(
                f"run {training.run_id} failed: {type(e).__name__}: {e} (traceback: {where})", file=sys.stderr
            )
            return 1
        c = training.agent.counters
        print(
            f"run {training.run_id} {training.status}: {c.episodes:,} episodes, {c.steps:,} steps, "
            f"{duration(c.seconds)} of training in all"
        )
        if live.scores:
            print(live.summary())
        if training.games_logged:
            print(
                f"training games stored: {training.games_logged} (python main.py games list --source training)"
            )
        print(f"checkpoint: {training.last_checkpoint}")
        best = store.best_checkpoint(training.run_id)
        if best is not None and best.eval_score is not None:
            print(f"best checkpoint (evaluation mean score {best.eval_score:,.0f}): {best.path}")
        if training.evaluations_skipped:
            print(
                f"evaluations skipped: {training.evaluations_skipped} (due while the one before still played)"
            )
        print(f"checkpoint files: {format_size(store.run_disk_use(training.run_id))}")
    return 0
