"""The Replay tab: pick a logged game, step through it, play it back at a speed.

A game is read from the store once (:meth:`GameStore.load_game` gives whole numpy arrays), so every
step afterwards is an array lookup: a 10,000-move game opens at once and the slider scrubs smoothly.
Position ``i`` (0..n) shows the board *before* move ``i`` (position n: the final board) together with
what the previous move did (direction, who made it, reward, score, spawn) and, as an arrow, the move
about to come. A game a person shared with an agent is one record (source ``mixed``): the step label
says for every move whether "you" or the agent (and its checkpoint file) made it.

Review (button or R): a reviewer (the default one, as the coach, Progress and ``review`` use it; an
n-tuple run's network; expectimax at depth 1-3 calibrated to points) grades every move of the shown
game in a worker thread (:func:`studio.services.review.review_game`), in expected points given up;
Cancel keeps what was done in the store and the next Review goes on from there. A stored review by the
chosen reviewer is shown as soon as a game opens: the summary (the person's accuracy, per player in a
shared game, moves per grade, the reviewer and, when it is a fallback, why, with "Prepare a reviewer"
beside it), the evaluation graph beside the board (:class:`studio.widgets.review_graph.ReviewGraph`;
a click jumps to that move; an agent's moves greyed), the verdict on the move about to be played with
who played it and the reviewer's best move as a second, green arrow, and Next / Previous mistake of
the person's (N or ], P or [). "Prepare a reviewer" trains an n-tuple network for a few minutes in a
child process (:func:`studio.services.review.prepare_request`, the Train tab's own machinery) with its
progress on the button's bar; it then reviews as the default reviewer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QListWidgetItem, QSplitter, QWidget

from engine import Direction
from studio.services.replay import (
    ARROWS,
    LIST_LIMIT,
    game_label,
    game_title,
    list_games,
    moves_text,
    open_game,
    review_in_thread,
    shown_review,
    spawn_text,
    step_text,
)
from studio.services.review import GameReview, Reviewer, resolve_reviewer
from studio.tabs.common import ReviewingTab, wait_worker
from studio.tabs.replay_list import GameList
from studio.tabs.replay_playback import SPEEDS
from studio.tabs.replay_review import PLAYED_COLOUR, review_summary, verdict_text
from studio.tabs.replay_view import ReplayView

if TYPE_CHECKING:
    from engine.store import GameStore

# The names other modules and tests have imported from here, before the tab was split in parts.
__all__ = [
    "ARROWS",
    "LIST_LIMIT",
    "PLAYED_COLOUR",
    "SPEEDS",
    "ReplayTab",
    "game_label",
    "game_title",
    "review_summary",
    "spawn_text",
    "verdict_text",
]
log = logging.getLogger(__name__)


class ReplayTab(ReviewingTab):
    """Replays one game record; :meth:`open_game` is how other tabs send a game here. Its parts: the
    list (:class:`~studio.tabs.replay_list.GameList`) and the view of one game
    (:class:`~studio.tabs.replay_view.ReplayView`, with its playback row and review rows); the tab
    holds the game, the position and the review, and reads the store through
    :mod:`studio.services.replay`."""

    status = Signal(str)
    #: a background review ended with this (maybe unfinished) :class:`GameReview`
    reviewed = Signal(object)

    def __init__(self, store: GameStore, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__("replayTab", store, parent)
        self.settings = settings
        self.record: Any = None
        self.review: GameReview | None = None
        self._review_game: int | None = None
        self.position = 0
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._tick)
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.gameList = GameList()
        self.gameList.chosen.connect(self.load)
        self.gameList.filterChanged.connect(self.refresh)
        self.gameList.refreshClicked.connect(self._refresh_clicked)
        right = self._build_game_view()
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setObjectName("replaySplitter")
        splitter.addWidget(self.gameList)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([340, 700])
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.addWidget(splitter)
        self._name_parts()
        self._add_shortcuts()
        self._update_controls()

    def _build_game_view(self) -> ReplayView:
        """The right-hand side, its requests wired to the tab's slots."""
        self.view = ReplayView(self.store, self.settings)
        self.view.replaySlider.valueChanged.connect(self.step_to)
        self.view.graph.moveClicked.connect(self.step_to)
        self.playback = pb = self.view.playback
        pb.stepBy.connect(self.step)
        pb.stepTo.connect(self.step_to)
        pb.toEnd.connect(lambda: self.step_to(self.n_positions - 1))
        pb.playToggled.connect(self.toggle_play)
        pb.speedChanged.connect(self._on_speed)
        pb.arrowToggled.connect(self._on_arrow_toggled)
        self.reviewPanel = rp = self.view.reviewPanel
        rp.reviewRequested.connect(self.start_review)
        rp.cancelRequested.connect(self.cancel_review)
        rp.previousMistake.connect(self.previous_mistake)
        rp.nextMistake.connect(self.next_mistake)
        rp.reviewerChanged.connect(self._on_reviewer_changed)
        rp.prepared.connect(self._on_prepared)
        rp.prepareEnded.connect(self._update_prepare)
        rp.status.connect(self.status)
        return self.view

    def _name_parts(self) -> None:
        """The parts' controls under the names the tab's users (tests, the window) know them by."""
        gl, vw, pb, rp = self.gameList, self.view, self.playback, self.reviewPanel
        self.titleLabel, self.board, self.graph = vw.titleLabel, vw.board, vw.graph
        self.stepLabel, self.verdictLabel, self.replaySlider = vw.stepLabel, vw.verdictLabel, vw.replaySlider
        self.filterBar, self.textFilter, self.refreshButton = gl.filterBar, gl.textFilter, gl.refreshButton
        self.replayList, self.listInfo = gl.replayList, gl.listInfo
        self.firstButton, self.backButton, self.playButton = pb.firstButton, pb.backButton, pb.playButton
        self.forwardButton, self.lastButton = pb.forwardButton, pb.lastButton
        self.speedCombo, self.arrowCheck, self.jumpSpin = pb.speedCombo, pb.arrowCheck, pb.jumpSpin
        self.reviewerCombo, self.reviewButton, self.reviewProgress = (
            rp.reviewerCombo,
            rp.reviewButton,
            rp.reviewProgress,
        )
        self.cancelReviewButton, self.summaryLabel = rp.cancelReviewButton, rp.summaryLabel
        self.prevMistakeButton, self.nextMistakeButton = rp.prevMistakeButton, rp.nextMistakeButton
        self.prepareButton, self.prepareProgress, self.prepareLabel = (
            rp.prepareButton,
            rp.prepareProgress,
            rp.prepareLabel,
        )

    def _add_shortcuts(self) -> None:
        # Keys work anywhere in the tab; a focused line edit keeps its own arrows (Qt's shortcut override).
        ctx = Qt.ShortcutContext.WidgetWithChildrenShortcut
        for key, slot in (
            ("Left", lambda: self.step(-1)),
            (",", lambda: self.step(-1)),
            ("Right", lambda: self.step(1)),
            (".", lambda: self.step(1)),
            ("Home", lambda: self.step_to(0)),
            ("End", lambda: self.step_to(self.n_positions - 1)),
            ("Space", self.toggle_play),
            ("R", self.start_review),
            ("Escape", self.cancel_review),
            ("N", self.next_mistake),
            ("]", self.next_mistake),
            ("P", self.previous_mistake),
            ("[", self.previous_mistake),
        ):
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(ctx)
            sc.activated.connect(slot)

    # ------------------------------------------------------------------ list
    def _refresh_clicked(self) -> None:
        # A list that did not change looks the same after a re-read: the status line says it was read.
        self.refresh()
        self.status.emit(f"Games read again: {self.listInfo.text()}")

    def refresh(self) -> None:
        """Re-read the game list from the store (keeps the selection when it is still listed)."""
        self._dirty = False
        self.reviewPanel.fill_reviewers()
        current = self.record.id if self.record is not None else None
        self.gameList.fill(list_games(self.store, self.filterBar.game_filter()), current)

    def select_row(self, row: int) -> None:
        self.replayList.setCurrentRow(row)

    def _find_item(self, game_id: int) -> QListWidgetItem | None:
        return self.gameList.find_item(game_id)

    # ------------------------------------------------------------------ game
    def open_game(self, game_id: int) -> None:
        """Show game ``game_id`` (from the Games tab): select it in the list, clearing filters if needed."""
        if self._dirty:
            self.refresh()
        if not self.gameList.shows(game_id):
            self.gameList.clear_filters()
            self.refresh()
        if not self.gameList.select(game_id):  # older than the list's limit: still replayable
            self.load(game_id)

    def load(self, game_id: int) -> None:
        """Read the whole game once; every step after this is an array lookup. A review of another
        game in progress is stopped (what it did is kept)."""
        self.pause()
        if self.reviewing and self._review_game != game_id:
            self.cancel_review()
        try:
            self.record, taken = open_game(self.store, game_id)
        except (KeyError, ValueError) as e:
            self.record = None
            self._set_review(None)
            self.titleLabel.setText(f"Cannot open game #{game_id}: {e}")
            self._update_controls()
            return
        g = self.record.summary
        self.titleLabel.setText(game_title(g, taken))
        self.position = -1
        n = self.n_positions
        self.view.show_length(n)
        self._set_review(self._stored_review())
        self.step_to(0)
        self._update_controls()
        self.status.emit(f"Replaying game #{g.id}: {moves_text(g.n_moves)}")

    @property
    def n_positions(self) -> int:
        """Positions 0..n: before each move, then the final board."""
        return 0 if self.record is None else self.record.n_moves + 1

    def board_at(self, i: int) -> np.ndarray:
        r = self.record
        return r.layouts[i] if i < r.n_moves else r.final_board

    # ------------------------------------------------------------------ stepping
    def step(self, delta: int) -> None:
        if self.record is not None:
            self.step_to(self.position + delta, animate=abs(delta) == 1)

    def step_to(self, i: int, animate: bool = False) -> None:
        """Show position ``i`` (clamped); one step forward animates the move, jumps do not."""
        if self.record is None:
            return
        i = max(0, min(int(i), self.n_positions - 1))
        if i == self.position:
            return
        r = self.record
        previous = self.position
        self.position = i
        spawns = r.spawns_of(i - 1) if i > 0 else ()
        if animate and i == previous + 1 and self.board.board.shape == r.layouts[previous].shape:
            self.board.push_transition(
                r.layouts[previous], Direction(int(r.moves[previous])), self.board_at(i), spawns
            )
        else:
            self.board.set_board(self.board_at(i), spawns)
        self._show_arrow()
        self.stepLabel.setText(step_text(r, i))
        self._show_verdict()
        self.view.show_position(i)
        self._update_controls()

    def _show_arrow(self) -> None:
        r = self.record
        on = self.playback.shows_arrow and r is not None and self.position < r.n_moves
        self.board.set_hint(Direction(int(r.moves[self.position])) if on else None)
        grade = self.grade_at(self.position)
        self.board.set_best_hint(grade.best if on and grade is not None else None)

    def _on_arrow_toggled(self, _on: bool) -> None:
        if self.record is not None:
            self._show_arrow()

    # ------------------------------------------------------------------ playback
    @property
    def speed(self) -> int:
        return self.playback.speed

    def _on_speed(self, speed: int) -> None:
        if self._timer.isActive():
            self._timer.setInterval(int(1000 / speed))
        self.board.animation_ms = min(110, int(800 / speed))

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    def toggle_play(self) -> None:
        if self.playing:
            self.pause()
        else:
            self.play()

    def play(self) -> None:
        if self.record is None:
            return
        if self.position >= self.n_positions - 1:
            self.step_to(0)
        self.board.animation_ms = min(110, int(800 / self.speed))
        self._timer.start(int(1000 / self.speed))
        self._update_controls()

    def pause(self) -> None:
        self._timer.stop()
        self.board.animation_ms = 110
        self._update_controls()

    def _tick(self) -> None:
        if self.position >= self.n_positions - 1:
            self.pause()
            return
        self.step_to(self.position + 1, animate=True)

    def _update_controls(self) -> None:
        has = self.record is not None
        self.playback.show_state(has, self.position, self.n_positions, self.playing)
        self.replaySlider.setEnabled(has)
        self.reviewPanel.show_state(
            can_review=has and self.n_positions > 1,
            reviewing=self.reviewing,
            review=self.review,
            position=self.position,
        )

    # ------------------------------------------------------------------ review
    def current_reviewer(self) -> Reviewer:
        """The reviewer the combo names, for the shown game's rules (ValueError: it cannot be made)."""
        rules = self.record.rules if self.record is not None else None
        text, depth = self.reviewPanel.reviewer_choice
        return resolve_reviewer(self.store, text, depth, rules)

    def _stored_review(self) -> GameReview | None:
        if self.record is None:
            return None
        try:
            reviewer = self.current_reviewer()
        except ValueError:  # a reviewer that cannot be made: not reviewed
            return None
        return shown_review(self.store, self.record.id, reviewer)

    def _fallback(self) -> str | None:
        """Why the shown review's reviewer (or, with none, the chosen one) is a fallback; None: it is not."""
        if self.review is not None:
            return self.review.fallback
        if self.record is None:
            return None
        try:
            return self.current_reviewer().fallback
        except ValueError:
            return None

    def _on_reviewer_changed(self) -> None:
        if not self.reviewing:
            self._set_review(self._stored_review())

    def start_review(self) -> bool:
        """Review the shown game in a worker thread with the chosen reviewer; False when it cannot
        start (no game, already reviewing, no such reviewer)."""
        if self.record is None or self.reviewing or self.record.n_moves == 0:
            return False
        try:
            reviewer = self.current_reviewer()
        except ValueError as e:
            self.summaryLabel.setText(f"Cannot review: {e}")
            self.status.emit(f"Cannot review: {e}")
            return False
        game_id = self.record.id
        db_path = self.store.path
        stop = threading.Event()

        def job(report: Callable[..., None]) -> GameReview:
            return review_in_thread(db_path, game_id, reviewer, report, stop)

        self._review_game = game_id
        worker = self._review_worker(job, stop)
        worker.finished.connect(self._update_controls)
        done = len(self.review.moves) if self.review is not None else 0
        self.reviewPanel.show_progress(done, self.record.n_moves)
        worker.start()
        self.status.emit(f"Reviewing game #{game_id} with {reviewer.label}…")
        self._update_controls()
        return True

    def wait_review(self, timeout_ms: int = 60_000) -> bool:
        return wait_worker(self.review_worker, timeout_ms)

    def _on_review_progress(self, done: float, total: float, _text: str) -> None:
        self.reviewPanel.show_progress(done, total)

    def _on_review_partial(self, review: object) -> None:
        """While a review runs, draw the review so far that its worker graded (at most once a second):
        the GUI thread only draws, it reads nothing back from the store."""
        if not isinstance(review, GameReview) or self.record is None:
            return
        if review.game_id != self.record.id or self._review_stop is None or self._review_stop.is_set():
            return
        if self.review is None or len(review.moves) > len(self.review.moves):
            self._set_review(review)

    def _on_review_result(self, value: object) -> None:
        review: GameReview = value  # type: ignore[assignment]
        if self.record is not None and review.game_id == self.record.id:
            self._set_review(review)
            self._show_arrow()
            self._show_verdict()
            self._update_controls()
        state = (
            "done" if review.complete else f"stopped after {len(review.moves):,} of {review.n_moves:,} moves"
        )
        self.status.emit(f"Review of game #{review.game_id} {state}: accuracy {review.accuracy:.1f} %")
        self.reviewed.emit(review)

    def _on_review_error(self, message: str) -> None:
        self.summaryLabel.setText(f"Review failed: {message}")
        self.status.emit(f"Review failed: {message}")

    def _set_review(self, review: GameReview | None) -> None:
        self.review = review
        n = self.record.n_moves if self.record is not None else 0
        self.graph.set_review(review, n)
        self.graph.setVisible(review is not None)
        self.reviewPanel.show_summary(review, self._fallback())
        if self.record is not None and self.position >= 0:
            self._show_arrow()
            self._show_verdict()
            self.graph.set_position(self.position)
        self._update_controls()

    def grade_at(self, move: int) -> Any:
        """The review's verdict on move ``move`` (None: not reviewed)."""
        review = self.review
        if review is None or not 0 <= move < len(review.moves):
            return None
        return review.moves[move]

    def _show_verdict(self) -> None:
        """The verdict on the move about to be played (shown while the game has a review)."""
        review = self.review if self.record is not None else None
        self.view.show_verdict(review, self.grade_at(self.position), self.position, self.n_positions - 1)

    def next_mistake(self) -> None:
        self._step_to_mistake(forward=True)

    def previous_mistake(self) -> None:
        self._step_to_mistake(forward=False)

    def _step_to_mistake(self, forward: bool) -> None:
        """Pause and step to the review's next (or previous) mistake from the position shown, if any."""
        if self.review is None:
            return
        find = self.review.next_mistake if forward else self.review.previous_mistake
        move = find(self.position)
        if move is not None:
            self.pause()
            self.step_to(move)

    # ------------------------------------------------------------------ preparing a reviewer
    @property
    def preparing(self) -> bool:
        return self.reviewPanel.preparing

    def prepare_reviewer(self, minutes: float | None = None) -> bool:
        """Train an n-tuple network for the default reviewer in a child process (see
        :meth:`~studio.tabs.replay_review.ReviewPanel.prepare_reviewer`); False when one is being prepared already."""
        return self.reviewPanel.prepare_reviewer(minutes)

    def _update_prepare(self) -> None:
        self.reviewPanel.show_prepare(self._fallback())

    def _on_prepared(self, value: object) -> None:
        try:
            label = self.current_reviewer().label
        except ValueError:
            label = "?"
        self.reviewPanel.say_prepare(f"Reviewer prepared ({value}); the default reviewer is now {label}")
        if not self.reviewing:
            self._set_review(self._stored_review())

    def wait_prepared(self, timeout_ms: int = 600_000) -> bool:
        """Block until the reviewer is prepared (tests)."""
        return self.reviewPanel.wait_prepared(timeout_ms)

    def shutdown(self) -> None:
        """The window is closing."""
        self._timer.stop()
        if self.reviewing:
            self.cancel_review()
            self.wait_review(30_000)
        self.reviewPanel.stop_preparing()
