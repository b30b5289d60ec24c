"""The Train tab's live view: the curves of every run shown, the board being played, the focused run's figures.

:class:`LiveRun` is what the tab knows of a run training from this window (its worker, its curves,
the figures of its last events); :class:`LivePanel` draws them. Events only update a LiveRun's
numbers and append to its curves; the panel shows them when the tab's timer asks (a few times a
second), so the work per second is bounded whatever the learner emits.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from agents.base import MetricEvent
from studio.widgets.curves import CurvesPanel, RunSeries
from studio.worker import RunWorker

_tokens = itertools.count(1)


@dataclass
class LiveRun:
    """A run training from this window: its worker, its curves and the figures of its last events."""

    worker: RunWorker
    series: RunSeries
    key: tuple[str, int] = field(default_factory=lambda: ("live", next(_tokens)))
    started: float = field(default_factory=time.perf_counter)
    progress: float = 0.0
    episodes: int = 0
    steps: int = 0
    elapsed: float = 0.0
    best_score: float = float("-inf")
    last_score: float | None = None
    last_eval: float | None = None  # mean score of the latest greedy evaluation
    speed: float | None = None
    dirty: bool = False

    @property
    def run_id(self) -> int | None:
        return self.worker.run_id

    def add(self, events: list[MetricEvent]) -> None:
        for ev in events:
            score = ev.metrics.get("score")
            if ev.kind == "episode" and score is not None:
                self.last_score = float(score)
                self.best_score = max(self.best_score, float(score))
            if ev.kind == "evaluation" and "eval_score" in ev.metrics:
                self.last_eval = float(ev.metrics["eval_score"])
            sp = ev.metrics.get("steps_per_s")
            if sp is not None:
                self.speed = float(sp)
        last = events[-1]
        self.episodes, self.steps, self.elapsed, self.progress = (
            last.episode,
            last.step,
            last.elapsed,
            last.progress,
        )
        self.dirty = True

    def state_text(self) -> str:
        w = self.worker
        return "stopping" if w.stopping else "paused" if w.paused else "running" if w.run_id else "starting"

    def figures(self) -> list[str]:
        """The lines of the stats box."""
        parts = [
            f"Run {self.run_id}" if self.run_id is not None else "Starting",
            f"Episode {self.episodes:,}",
        ]
        if self.last_score is not None:
            parts += [f"Last score {self.last_score:,.0f}", f"Best score {self.best_score:,.0f}"]
        if self.last_eval is not None:
            parts.append(f"Greedy evaluation {self.last_eval:,.0f}")
        if self.speed is not None:
            parts.append(f"{self.speed:,.0f} moves/s")
        return parts


def is_live_key(key: object) -> bool:
    """Curves keys of runs that grow: ``("live", n)`` (training here) and ``("follow", run_id)``
    (training elsewhere); stored runs are keyed by their run id."""
    return isinstance(key, tuple) and bool(key) and key[0] in ("live", "follow")


class LivePanel(QWidget):
    """Curves on the left; on the right the board being played and the focused run's figures."""

    def __init__(self, parent: QWidget | None = None, settings: QSettings | None = None) -> None:
        from studio.widgets.board import BoardWidget

        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.curves = CurvesPanel(settings=settings)
        layout.addWidget(self.curves, 1)
        side = QVBoxLayout()
        self.liveBoard = BoardWidget(interactive=False)
        self.liveBoard.setObjectName("liveBoard")
        self.liveBoard.animation_ms = 0
        self.liveBoard.setFixedSize(170, 170)
        side.addWidget(QLabel("Being played now"))
        side.addWidget(self.liveBoard)
        self.statsLabel = QLabel("")
        self.statsLabel.setObjectName("statsLabel")
        # A fixed size: its text changes a few times a second, and a label that resizes with its text
        # makes the whole tab lay itself out (and the plots repaint) every time.
        self.statsLabel.setFixedSize(170, 130)
        self.statsLabel.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        side.addWidget(self.statsLabel)
        side.addStretch(1)
        layout.addLayout(side)

    def show_stored(self, store: Any, run_ids: Sequence[int]) -> list[str]:
        """Draw exactly these stored runs (their whole history) beside the live ones; the problems met,
        as text. Each run brings its own agent's panels and keeps its colour (by run id)."""
        keep = [(k, r) for k, r in self.curves.runs if is_live_key(k)]
        shown = {k: r for k, r in self.curves.runs if not is_live_key(k)}
        loaded: list[tuple[object, RunSeries]] = []
        problems: list[str] = []
        live_ids = {r.run_id for _k, r in keep}
        for rid in run_ids:
            if rid in live_ids:  # drawn already as it trained here
                continue
            if rid in shown:  # already drawn: keep it (its zoom, no second read of the store)
                loaded.append((rid, shown[rid]))
                continue
            try:
                summary = store.get_run(rid)
                cols = store.run_metrics(rid)
            except Exception as e:
                problems.append(f"cannot read run {rid}: {e}")
                continue
            series = RunSeries(f"run {rid} {summary.agent}", agent=summary.agent, run_id=rid)
            series.add_columns(cols)
            loaded.append((rid, series))
        self.curves.set_runs(keep + loaded)
        return problems

    def show_run(self, run: LiveRun, n_live: int) -> None:
        """The focused run's board and figures (``n_live``: how many train now)."""
        if run.series.last_board is not None:
            self.liveBoard.set_board(run.series.last_board)
        parts = run.figures()
        if n_live > 1:
            parts.append(f"{n_live} runs training")
        self.statsLabel.setText("\n".join(parts))
