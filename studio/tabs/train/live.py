"""The Train tab's live view: the curves of every run shown, the board being played, the focused run's figures.

:class:`LiveRun` is what the tab knows of a run training from this window (its worker, its curves,
the figures of its last events); :class:`LivePanel` draws them. Events only update a LiveRun's
numbers and append to its curves; the panel shows them when the tab's timer asks (a few times a
second), so the work per second is bounded whatever the learner emits.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from agents.base import MetricEvent
from studio.services import messages
from studio.services.runs import RunEnd, run_end
from studio.services.runs_model import LIVE, RunKey, RunsModel, is_live_key
from studio.widgets.curves import CurvesPanel, RunSeries
from studio.worker import RunWorker

if TYPE_CHECKING:
    from engine.store import GameStore

log = logging.getLogger(__name__)

_tokens = itertools.count(1)
#: The board's caption while a run of this window plays, and while none does.
PLAYING_CAPTION = "Being played now"
IDLE_CAPTION = "No game being played"


def paused_caption(run_id: int | None) -> str:
    """The board's caption while the focused run is paused."""
    return f"Run {run_id} paused (its game waits)" if run_id is not None else "Paused"


@dataclass
class LiveRun:
    """A run training from this window: its worker, its curves and the figures of its last events."""

    worker: RunWorker
    series: RunSeries
    key: tuple[str, int] = field(default_factory=lambda: (LIVE, next(_tokens)))  # 0 is LIVE_KEY's
    progress: float = 0.0
    episodes: int = 0
    steps: int = 0
    elapsed: float = 0.0
    best_score: float = float("-inf")
    last_score: float | None = None
    last_eval: float | None = None  # mean score of the latest greedy evaluation
    notice: str = ""  # the run's latest "info" message (a checkpoint refused, an evaluation failed)
    speed: float | None = None
    dirty: bool = False
    #: (progress, lifetime training seconds) where this call's budget began: a new run starts at
    #: (0, 0); a resumed run's counters go on from its checkpoint, so its first event is the anchor
    anchor: tuple[float, float] | None = (0.0, 0.0)
    #: how the run ended, as its child said (None while it trains, or when it said nothing)
    last_word: messages.Done | messages.Failed | messages.Detached | None = None
    #: the newest checkpoint it reported saving
    checkpoint: str | None = None

    @property
    def run_id(self) -> int | None:
        return self.worker.run_id

    def heard(self, msg: messages.ChildMessage) -> None:
        """Keep what the run's child said that its figures or its end need."""
        match msg:
            case messages.Events(events=events) if events:
                self.add(events)
            case messages.CheckpointSaved(path=path):
                self.checkpoint = path
            case messages.Done() | messages.Failed() | messages.Detached():
                self.last_word = msg

    @property
    def games_logged(self) -> int:
        return self.last_word.games_logged if isinstance(self.last_word, messages.Done) else 0

    def end(self) -> RunEnd:
        """How the run ended, from its last word: a run that said nothing (detached) was stopped."""
        match word := self.last_word:
            case messages.Done():
                return run_end(word.status, False, word.last_checkpoint)
            case messages.Failed():
                return run_end("failed", True, None)
        return run_end("detached", False, self.checkpoint)

    def add(self, events: Sequence[MetricEvent]) -> None:
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
        if self.anchor is None:
            self.anchor = (events[0].progress, events[0].elapsed)
        self.episodes, self.steps, self.elapsed, self.progress = (
            last.episode,
            last.step,
            last.elapsed,
            last.progress,
        )
        self.dirty = True

    @property
    def trained_s(self) -> float:
        """Training seconds of this call so far (time paused left out, as the budget counts it)."""
        return max(0.0, self.elapsed - (self.anchor[1] if self.anchor is not None else self.elapsed))

    def eta_s(self) -> float | None:
        """Seconds of training left: see :func:`eta_seconds`."""
        if self.anchor is None:
            return None
        return eta_seconds(self.progress, self.elapsed, *self.anchor)

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


def eta_seconds(
    progress: float, elapsed: float, progress0: float = 0.0, elapsed0: float = 0.0
) -> float | None:
    """Seconds until the budget ends the run, from the run's own clock; None while unknown.

    ``progress`` is the share of the budget used, the largest of its limits' shares (agents.base.Budget),
    and ``elapsed`` the run's training seconds (its clock leaves out time paused), both against where
    this call began (``progress0`` / ``elapsed0``). At the pace so far, the limit used the most is the
    one that ends the run first, so the time left is the time so far times (1 - p) / p: with a minutes
    limit alone that is exactly the minutes left (2 minutes, 19 s trained: 101 s). The window's own
    clock is not used: it counts the child's start-up (seconds of imports) as training, which read
    2:23 left after 0:19 of a 2-minute budget.
    """
    done, spent = progress - progress0, elapsed - elapsed0
    if done <= 0 or spent <= 0 or not math.isfinite(spent):
        return None
    return max(0.0, spent * (1.0 - progress) / done)


class LivePanel(QWidget):
    """Curves on the left; on the right the board being played and the focused run's figures. The
    curves are a view of ``model``'s shown runs (a model of its own when given none)."""

    def __init__(
        self, parent: QWidget | None = None, settings: QSettings | None = None, model: RunsModel | None = None
    ) -> None:
        from studio.widgets.board import BoardWidget

        super().__init__(parent)
        self.model = model if model is not None else RunsModel()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.curves = CurvesPanel(settings=settings, model=self.model)
        layout.addWidget(self.curves, 1)
        side = QVBoxLayout()
        self.liveBoard = BoardWidget(interactive=False)
        self.liveBoard.setObjectName("liveBoard")
        self.liveBoard.animation_ms = 0
        self.liveBoard.setFixedSize(170, 170)
        # What the board is: a game being played now only while a run of this window trains; after
        # that the last board of the run that ended, said so (a sweep's trials play elsewhere).
        self.boardCaption = QLabel(IDLE_CAPTION)
        self.boardCaption.setObjectName("boardCaption")
        self.boardCaption.setWordWrap(True)
        # Two lines always: "Last board of run N (finished)" wraps, and a caption that grows at a run's
        # end re-laid the tab (the plots repainted) and, mid-run, was squeezed to one line with its
        # first line cut off. Aligned to the bottom, a one-line caption sits on the board.
        self.boardCaption.setFixedSize(170, 2 * self.boardCaption.fontMetrics().lineSpacing() + 2)
        self.boardCaption.setAlignment(Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignLeft)
        side.addWidget(self.boardCaption)
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

    def show_stored(self, store: GameStore, run_ids: Sequence[int]) -> list[str]:
        """Draw exactly these stored runs (their whole history) beside the live ones; the problems met,
        as text. Each run brings its own agent's panels and keeps its colour (by run id)."""
        keep = [(k, r) for k, r in self.model.shown if is_live_key(k)]
        shown = {k: r for k, r in self.model.shown if not is_live_key(k)}
        loaded: list[tuple[RunKey, RunSeries]] = []
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
            except Exception as e:  # the caller shows the problems; the log keeps the traceback
                log.warning("cannot read run %d's metrics", rid, exc_info=True)
                problems.append(f"cannot read run {rid}: {e}")
                continue
            series = RunSeries(f"run {rid} {summary.agent}", agent=summary.agent, run_id=rid)
            series.set_config(summary.config)
            series.add_columns(cols)
            loaded.append((rid, series))
        self.model.show(keep + loaded)
        return problems

    def show_idle(self, caption: str = IDLE_CAPTION) -> None:
        """No run of this window plays: an empty board, and ``caption`` says why."""
        self.boardCaption.setText(caption)
        self.liveBoard.set_board(np.zeros_like(self.liveBoard.board))
        self.statsLabel.setText("")

    def show_ended(self, run_id: int | None, status: str) -> None:
        """The focused run ended: its last board stays, named as such (not "being played now")."""
        who = f"run {run_id}" if run_id is not None else "the run"
        self.boardCaption.setText(f"Last board of {who} ({status})")

    def show_run(self, run: LiveRun, n_live: int) -> None:
        """The focused run's board and figures (``n_live``: how many train now)."""
        # A paused run plays nothing: its board waits where it stopped.
        self.boardCaption.setText(paused_caption(run.run_id) if run.worker.paused else PLAYING_CAPTION)
        if run.series.last_board is not None:
            self.liveBoard.set_board(run.series.last_board)
        parts = run.figures()
        if n_live > 1:
            parts.append(f"{n_live} runs training")
        self.statsLabel.setText("\n".join(parts))
