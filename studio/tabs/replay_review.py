"""The Replay tab's review controls, and the words it shows for a review.

:class:`ReviewPanel`: the reviewer, Review / Cancel with the progress, Previous / Next mistake;
"Prepare a reviewer" with its progress under them (it trains an n-tuple network in a child process,
:func:`studio.services.replay.start_preparing`, followed on a worker thread); the summary line. The
panel asks (its signals) and shows; the tab holds the game and its review. :func:`verdict_text` and
:func:`review_summary` word one move's grade and a whole review (rich text, the graph's colours).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QProgressBar, QVBoxLayout, QWidget

from agents.review import GRADES
from studio.services.replay import ARROWS, duration_text, follow_preparing, start_preparing
from studio.services.review import DEFAULT_RULE
from studio.tabs.common import button, fill_reviewer_combo, wait_worker
from studio.theme import load_theme
from studio.widgets.board import BEST_ARROW
from studio.widgets.review_graph import GRADE_COLOURS

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.store import GameStore
    from studio.services.review import GameReview
    from studio.services.training_process import TrainingProcess
    from studio.worker import CallWorker

PLAYED_COLOUR = load_theme().hint_arrow  # the played move's arrow (the best move's: BEST_ARROW)
NOT_REVIEWED = "Not reviewed: press Review (R)"


class ReviewPanel(QWidget):
    """The rows under the Replay tab's playback controls."""

    reviewRequested = Signal()
    cancelRequested = Signal()
    previousMistake = Signal()
    nextMistake = Signal()
    #: the reviewer combo changed
    reviewerChanged = Signal()
    #: a reviewer was prepared (the run's end, e.g. ``"finished"``); the reviewers are re-read
    prepared = Signal(object)
    #: the preparing run's worker ended (well or not): the tab shows the button as the reviewer now is
    prepareEnded = Signal()
    #: what preparing did, for the status bar
    status = Signal(str)

    def __init__(self, store: GameStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.prepare_worker: CallWorker | None = None  # follows the training run that prepares a reviewer
        self._prepare_process: TrainingProcess | None = None
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addLayout(self._build_review_row())
        outer.addLayout(self._build_prepare_row())
        self.summaryLabel = QLabel(NOT_REVIEWED)
        self.summaryLabel.setObjectName("replayReviewSummary")
        self.summaryLabel.setTextFormat(Qt.TextFormat.RichText)
        self.summaryLabel.setWordWrap(True)
        outer.addWidget(self.summaryLabel)

    def _build_review_row(self) -> QHBoxLayout:
        """The reviewer, Review / Cancel with the progress, Previous / Next mistake."""
        self.reviewerCombo = QComboBox()
        self.reviewerCombo.setObjectName("replayReviewerCombo")
        self.reviewerCombo.setToolTip(
            f"Who grades the moves, in expected points given up. Default: {DEFAULT_RULE} (the same as "
            "the coach, Progress and the review command)"
        )
        self.fill_reviewers()
        self.reviewerCombo.currentIndexChanged.connect(lambda _i: self.reviewerChanged.emit())
        self.reviewButton = button(
            "Review",
            "replayReviewButton",
            self.reviewRequested.emit,
            "Grade every move of this game with the reviewer (R); a stopped review goes on where it stopped",
            takes_focus=False,
        )
        self.cancelReviewButton = button(
            "Cancel",
            "replayCancelReviewButton",
            self.cancelRequested.emit,
            "Stop the review (Esc); what is done is kept",
            takes_focus=False,
        )
        self.reviewProgress = QProgressBar()
        self.reviewProgress.setObjectName("replayReviewProgress")
        self.reviewProgress.setFormat("%v / %m moves")
        self.reviewProgress.setVisible(False)
        self.prevMistakeButton = button(
            "◀ Mistake",
            "replayPrevMistakeButton",
            self.previousMistake.emit,
            "Previous inaccuracy, mistake or blunder (P or [)",
            takes_focus=False,
        )
        self.nextMistakeButton = button(
            "Mistake ▶",
            "replayNextMistakeButton",
            self.nextMistake.emit,
            "Next inaccuracy, mistake or blunder (N or ])",
            takes_focus=False,
        )
        row = QHBoxLayout()
        row.addWidget(QLabel("Reviewer:"))
        row.addWidget(self.reviewerCombo)
        row.addWidget(self.reviewButton)
        row.addWidget(self.reviewProgress, 1)
        row.addWidget(self.cancelReviewButton)
        row.addStretch(0)
        row.addWidget(self.prevMistakeButton)
        row.addWidget(self.nextMistakeButton)
        return row

    def _build_prepare_row(self) -> QHBoxLayout:
        """ "Prepare a reviewer", its progress and what it did; hidden until the reviewer is a fallback."""
        self.prepareButton = button(
            "Prepare a reviewer",
            "replayPrepareButton",
            # through a lambda: clicked(bool) would arrive as minutes=False, which the training refuses
            lambda: self.prepare_reviewer(),
            "Train an n-tuple network for a few minutes in the background; it then grades as the "
            "default reviewer (sharper than the fallback)",
            takes_focus=False,
        )
        self.prepareButton.setVisible(False)
        self.prepareProgress = QProgressBar()
        self.prepareProgress.setObjectName("replayPrepareProgress")
        self.prepareProgress.setRange(0, 1000)
        self.prepareProgress.setVisible(False)
        # what preparing says: started (and for how long), failed, or who the default is now
        self.prepareLabel = QLabel("")
        self.prepareLabel.setObjectName("replayPrepareLabel")
        self.prepareLabel.setWordWrap(True)
        self.prepareLabel.setVisible(False)
        prep = QHBoxLayout()
        prep.addWidget(self.prepareButton)
        prep.addWidget(self.prepareProgress, 1)
        prep.addWidget(self.prepareLabel, 1)
        prep.addStretch(0)
        return prep

    def fill_reviewers(self) -> None:
        fill_reviewer_combo(self.reviewerCombo, self.store)

    @property
    def reviewer_choice(self) -> tuple[str | None, int | None]:
        """The combo's reviewer: its name (None: the default) and search depth."""
        text, depth = self.reviewerCombo.currentData() or (None, None)
        return text, depth

    # ------------------------------------------------------------------ what it shows
    def show_state(
        self, *, can_review: bool, reviewing: bool, review: GameReview | None, position: int
    ) -> None:
        """Enable what can be done now; "Review again" when an earlier default's review is shown (Review
        grades the game again with today's default)."""
        self.reviewButton.setEnabled(can_review and not reviewing)
        again = review is not None and review.default_now is not None
        self.reviewButton.setText("Review again" if again else "Review")
        self.reviewerCombo.setEnabled(not reviewing)
        self.cancelReviewButton.setEnabled(reviewing)
        self.reviewProgress.setVisible(reviewing)
        self.prevMistakeButton.setEnabled(
            review is not None and review.previous_mistake(position) is not None
        )
        self.nextMistakeButton.setEnabled(review is not None and review.next_mistake(position) is not None)

    def show_summary(self, review: GameReview | None, fallback: str | None) -> None:
        """The review's summary, or "Not reviewed" with why the reviewer is a fallback (``fallback``,
        the review's or the chosen reviewer's); "Prepare a reviewer" shows where there is one."""
        if review is not None:
            self.summaryLabel.setText(review_summary(review))
        else:
            note = f"<br><span style='color:#8a8178'>Reviewer: {fallback}</span>" if fallback else ""
            self.summaryLabel.setText(NOT_REVIEWED + note)
        self.show_prepare(fallback)

    def show_progress(self, done: float, total: float) -> None:
        self.reviewProgress.setRange(0, max(int(total), 1))
        self.reviewProgress.setValue(int(done))

    # ------------------------------------------------------------------ preparing a reviewer
    @property
    def preparing(self) -> bool:
        return self.prepare_worker is not None and not self.prepare_worker.done

    def show_prepare(self, fallback: str | None) -> None:
        """ "Prepare a reviewer" shows where the review (or the reviewer about to review) is a fallback,
        and while one is being prepared."""
        self.prepareButton.setVisible(bool(fallback) or self.preparing)
        self.prepareButton.setEnabled(not self.preparing)
        self.prepareProgress.setVisible(self.preparing)

    def prepare_reviewer(self, minutes: float | None = None) -> bool:
        """Train an n-tuple network in a child process (the Train tab's machinery) with its progress on
        the bar; when it ends, the reviewer list is re-read, so the default is the new network (when it
        is the strongest). False when one is being prepared already."""
        from studio.worker import CallWorker

        if self.preparing:
            return False
        try:
            proc, total = start_preparing(self.store.path, minutes)
        except (ValueError, OSError) as e:  # said where the button is, not on stderr only
            self.say_prepare(f"Cannot prepare a reviewer: {e}")
            return False
        self._prepare_process = proc

        def job(report: Callable[..., None]) -> str:
            return follow_preparing(proc, total, report)

        worker = CallWorker(job, parent=self)
        worker.progress.connect(self._on_prepare_progress)
        worker.result.connect(self._on_prepared)
        worker.error.connect(lambda m: self.say_prepare(f"Preparing a reviewer failed: {m}"))
        worker.finished.connect(self.prepareEnded)
        self.prepare_worker = worker
        self.prepareProgress.setValue(0)
        self.prepareProgress.setFormat("preparing a reviewer: starting")
        worker.start()
        self.say_prepare(
            f"Preparing a reviewer: training an n-tuple network for {duration_text(total)} in the "
            "background; it then reviews as the default"
        )
        self.show_prepare(None)
        return True

    def say_prepare(self, text: str) -> None:
        """Show what preparing a reviewer did beside its button, and on the status bar."""
        self.prepareLabel.setText(text)
        self.prepareLabel.setVisible(True)
        self.status.emit(text)

    def _on_prepare_progress(self, done: float, total: float, text: str) -> None:
        self.prepareProgress.setValue(int(1000 * done / max(total, 1e-9)))
        left = max(0.0, total - done)
        self.prepareProgress.setFormat(
            f"preparing a reviewer: {int(left // 60)}:{int(left % 60):02d} left {text}"
        )

    def _on_prepared(self, value: object) -> None:
        self.fill_reviewers()
        self.prepared.emit(value)

    def wait_prepared(self, timeout_ms: int = 600_000) -> bool:
        """Block until the reviewer is prepared (tests)."""
        return wait_worker(self.prepare_worker, timeout_ms)

    def stop_preparing(self) -> None:
        """The window is closing: a clean stop, so the run keeps its final checkpoint."""
        if self.preparing and self._prepare_process is not None and self.prepare_worker is not None:
            self._prepare_process.send("stop")
            self.prepare_worker.wait(30_000)


def verdict_text(g: Any, points: bool = True, mixed: bool = False) -> str:
    """The verdict on one move (rich text, the arrows' colours): ``Next move 12 (you): played ↑ up ·
    best ← left · −1,240 pts · blunder``; an agent's move in a shared game says it is not counted."""
    colour = GRADE_COLOURS.get(g.grade, "#777")
    played = f"<span style='color:{PLAYED_COLOUR}'>{ARROWS[g.played]} {g.played.label}</span>"
    who = f" ({g.player})" if mixed and g.player else ""
    parts = [f"Next move {g.index + 1}{who}: played {played}"]
    if g.best != g.played:
        parts.append(f"best <span style='color:{BEST_ARROW}'>{ARROWS[g.best]} {g.best.label}</span>")
        if math.isfinite(g.loss):
            parts.append(f"−{g.loss:,.0f} pts ({100 * g.relative:.1f} % of the expected final score)")
    elif g.grade != "forced":
        parts.append("the best move")
    grade = g.grade + (" (may lose at once)" if g.risky else "")
    if not g.counted:
        parts.append(f"<span style='color:#999'>{grade} · not counted: not your move</span>")
    else:
        parts.append(f"<b style='color:{colour}'>{grade}</b>")
    return " · ".join(parts)


def review_summary(review: GameReview) -> str:
    """Accuracy (whose), per player in a shared game, per phase, moves per grade, the reviewer and
    its fallback note (rich text)."""
    counts = review.counts
    partial = "" if review.complete else f" (first {len(review.moves):,} of {review.n_moves:,} moves)"
    grades = " · ".join(f"<span style='color:{GRADE_COLOURS[g]}'>{counts[g]:,} {g}</span>" for g in GRADES)
    # the figure, what it is made from (the expected final score given up) and who made it, together
    head = (
        f"<b>Accuracy {review.accuracy:.1f} %</b> ({review.subject}){partial} · gave up "
        f"{review.given_up_text()} · reviewer {review.label}"
    )
    lines = [head]
    if review.superseded:
        lines.append(f"<b style='color:#b0722a'>{review.superseded[0].upper()}{review.superseded[1:]}</b>")
    lines.append(grades)
    if review.mixed:
        lines.append(
            " · ".join(
                f"{who}: {row['moves']:,} moves"
                + (
                    f", {row['accuracy']:.1f} %"
                    if row["counted"]
                    else " <span style='color:#999'>(not counted)</span>"
                )
                for who, row in review.by_player().items()
            )
        )
    phases = [f"{p}: {a:.0f} %" for p, a in review.phase_accuracy().items() if a is not None]
    if len(phases) > 1:
        lines.append("by phase (highest tile): " + " · ".join(phases))
    if review.fallback:
        lines.append(f"<span style='color:#b0722a'>Reviewer: {review.fallback}</span>")
    return "<br>".join(lines)
