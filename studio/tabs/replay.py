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
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from agents.review import GRADES
from engine import Direction
from engine.store import GameStore
from engine.store.recorder import takebacks
from studio.services.review import (
    DEFAULT_RULE,
    GameReview,
    Reviewer,
    earlier_default_review,
    resolve_reviewer,
    stored_review,
)
from studio.settings import get_bool, get_int
from studio.tabs.common import ReviewingTab, button, fill_reviewer_combo, wait_worker
from studio.text import game_status, plural
from studio.theme import load_theme
from studio.widgets.board import BEST_ARROW, BoardWidget
from studio.widgets.filter_bar import FilterBar
from studio.widgets.review_graph import GRADE_COLOURS, ReviewGraph
from studio.widgets.slider import JumpSlider

SPEEDS = (1, 2, 5, 10, 20, 50, 100, 500)  # steps per second
LIST_LIMIT = 5000  # newest games listed; the Games tab's table holds the rest
ARROWS = {Direction.UP: "↑", Direction.LEFT: "←", Direction.DOWN: "↓", Direction.RIGHT: "→"}
log = logging.getLogger(__name__)

PLAYED_COLOUR = load_theme().hint_arrow  # the played move's arrow (the best move's: BEST_ARROW)


def _who(g: Any) -> str:
    """``human``, ``greedy``, ``mixed (you + greedy)``."""
    return f"mixed ({g.who})" if g.source == "mixed" else g.agent or g.source


def game_label(g: Any) -> str:
    """One line per game: ``#12 human · 1,234 · max 256 · 180 moves · 5x5 · unfinished``."""
    who = _who(g)
    parts = [f"#{g.id} {who}", f"{g.score:,}", f"max {g.max_tile}", _moves(g.n_moves)]
    if g.rules.shape != (4, 4):
        parts.append(f"{g.rules.rows}x{g.rules.cols}")
    if g.status != "finished":
        parts.append(game_status(g.status))
    return " · ".join(parts)


def game_title(g: Any) -> str:
    """The heading above the replayed board: who, where, how it went."""
    who = g.source if not g.agent or g.source == "mixed" else f"{g.source} ({g.agent})"
    if g.source == "mixed":
        who = _who(g)
    if g.origin is not None:
        who += f", imported from {g.origin.get('file', '?')}"
    status = game_status(g.status)
    return f"Game #{g.id} · {who} · {g.rules.rows}x{g.rules.cols} · {g.score:,} points · {status}"


def _moves(n: int) -> str:
    return f"{n:,} move" if n == 1 else f"{n:,} moves"


def spawn_text(spawns: Any) -> str:
    if not spawns:
        return "none"
    return ", ".join(f"{s.value} at ({s.row}, {s.col})" for s in spawns)


class ReplayTab(ReviewingTab):
    """Replays one game record; :meth:`open_game` is how other tabs send a game here."""

    status = Signal(str)
    #: a background review ended with this (maybe unfinished) :class:`GameReview`
    reviewed = Signal(object)

    def __init__(self, store: GameStore, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__("replayTab", store, parent)
        self.settings = settings
        self.record: Any = None
        self.review: GameReview | None = None
        self._review_game: int | None = None
        self._review_reviewer: Reviewer | None = None
        self._live_due = 0.0  # when the graph may next be redrawn from the store during a review
        self.prepare_worker: Any = None  # CallWorker following the training run that prepares a reviewer
        self._prepare_process: Any = None
        self.position = 0
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._tick)
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        left = self._build_list()
        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.setContentsMargins(6, 0, 0, 0)
        self.titleLabel = QLabel("Pick a game on the left")
        self.titleLabel.setObjectName("replayTitle")
        self.titleLabel.setStyleSheet("font-size: 15px; font-weight: bold;")
        self.board = BoardWidget(self, interactive=False, hint_margin=True)  # the next-move arrow beside it
        self.board.setObjectName("replayBoard")
        self.stepLabel = QLabel("")
        self.stepLabel.setObjectName("replayStepLabel")
        self.stepLabel.setStyleSheet("font-size: 14px;")
        self.stepLabel.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.replaySlider = JumpSlider(Qt.Orientation.Horizontal)  # a click on the track jumps there
        self.replaySlider.setObjectName("replaySlider")
        self.replaySlider.setRange(0, 0)
        self.replaySlider.setPageStep(10)
        self.replaySlider.valueChanged.connect(self._on_slider)

        self.verdictLabel = QLabel("")
        self.verdictLabel.setObjectName("replayVerdictLabel")
        self.verdictLabel.setStyleSheet("font-size: 14px;")
        self.verdictLabel.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.graph = ReviewGraph(self)
        self.graph.setObjectName("replayReviewGraph")
        self.graph.setMinimumWidth(260)
        self.graph.moveClicked.connect(self.step_to)
        self.graph.setVisible(False)  # shown with a review: empty, its axes read "move (x0.001)"

        rcol.addWidget(self.titleLabel)
        # The graph stands beside the board, not under it: under it, it took the height the board
        # needs and the board shrank to a quarter of its area when a review appeared.
        boardRow = QHBoxLayout()
        boardRow.addWidget(self.board, 1)
        boardRow.addWidget(self.graph, 1)
        rcol.addLayout(boardRow, 1)
        rcol.addWidget(self.verdictLabel)
        rcol.addWidget(self.stepLabel)
        rcol.addWidget(self.replaySlider)
        rcol.addLayout(self._build_controls())
        rcol.addLayout(self._build_review_controls())
        rcol.addWidget(self.summaryLabel)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setObjectName("replaySplitter")
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([340, 700])
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.addWidget(splitter)

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
        self._update_controls()

    def _build_list(self) -> QWidget:
        """The games on the left: the source filter, a text box narrowing the list, the list."""
        left = QWidget()
        lcol = QVBoxLayout(left)
        lcol.setContentsMargins(0, 0, 0, 0)
        filters = QHBoxLayout()
        self.filterBar = FilterBar("replay", ("source",))
        self.filterBar.changed.connect(lambda _filter: self.refresh())
        self.textFilter = QLineEdit()
        self.textFilter.setObjectName("replayTextFilter")
        self.textFilter.setPlaceholderText("filter: agent, #id, 4x4…")
        self.textFilter.setClearButtonEnabled(True)
        self.textFilter.textChanged.connect(self._apply_text_filter)
        filters.addWidget(self.filterBar)
        filters.addWidget(self.textFilter, 1)
        self.refreshButton = QPushButton("⟳")
        self.refreshButton.setObjectName("replayRefreshButton")
        self.refreshButton.setToolTip("Re-read the list of games")
        self.refreshButton.setFixedWidth(32)
        self.refreshButton.clicked.connect(self._refresh_clicked)
        filters.addWidget(self.refreshButton)
        self.replayList = QListWidget()
        self.replayList.setObjectName("replayList")
        self.replayList.setUniformItemSizes(True)  # keeps thousands of rows cheap to lay out
        self.replayList.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.replayList.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.replayList.currentItemChanged.connect(self._on_current_item)
        self.listInfo = QLabel()
        self.listInfo.setStyleSheet("color: #8a8178;")
        lcol.addLayout(filters)
        lcol.addWidget(self.replayList, 1)
        lcol.addWidget(self.listInfo)
        return left

    def _build_controls(self) -> QHBoxLayout:
        """First / back / play / forward / last, the speed, a jump to a move, the next-move arrow."""
        buttons = QHBoxLayout()
        self.firstButton = button(
            "|◀", "replayFirstButton", lambda: self.step_to(0), "First position (Home)", takes_focus=False
        )
        self.backButton = button(
            "◀", "replayBackButton", lambda: self.step(-1), "Back one move (Left or ,)", takes_focus=False
        )
        self.playButton = button(
            "▶ Play", "replayPlayButton", self.toggle_play, "Play / pause (Space)", takes_focus=False
        )
        self.playButton.setCheckable(True)
        self.forwardButton = button(
            "▶",
            "replayForwardButton",
            lambda: self.step(1),
            "Forward one move (Right or .)",
            takes_focus=False,
        )
        self.lastButton = button(
            "▶|",
            "replayLastButton",
            lambda: self.step_to(self.n_positions - 1),
            "Last position (End)",
            takes_focus=False,
        )
        self.speedCombo = QComboBox()
        self.speedCombo.setObjectName("replaySpeedCombo")
        for speed in SPEEDS:
            self.speedCombo.addItem(f"{speed} moves/s", speed)
        saved = get_int(self.settings, "replay/speed", 5)
        self.speedCombo.setCurrentIndex(SPEEDS.index(saved) if saved in SPEEDS else SPEEDS.index(5))
        self.speedCombo.currentIndexChanged.connect(self._on_speed)
        self.arrowCheck = QCheckBox("show next move")
        self.arrowCheck.setObjectName("replayArrowCheck")
        self.arrowCheck.setChecked(get_bool(self.settings, "replay/arrow", True))
        self.arrowCheck.toggled.connect(self._on_arrow_toggled)
        self.jumpSpin = QSpinBox()
        self.jumpSpin.setObjectName("replayJumpSpin")
        self.jumpSpin.setPrefix("move ")
        self.jumpSpin.setKeyboardTracking(False)
        self.jumpSpin.valueChanged.connect(self.step_to)
        for w in (self.firstButton, self.backButton, self.playButton, self.forwardButton, self.lastButton):
            buttons.addWidget(w)
        buttons.addWidget(self.speedCombo)
        buttons.addStretch(1)
        buttons.addWidget(self.jumpSpin)
        buttons.addWidget(self.arrowCheck)
        return buttons

    def _build_review_controls(self) -> QVBoxLayout:
        """The reviewer, Review / Cancel with the progress, Previous / Next mistake; "Prepare a
        reviewer" with its progress under them; the summary line."""
        row = QHBoxLayout()
        self.reviewerCombo = QComboBox()
        self.reviewerCombo.setObjectName("replayReviewerCombo")
        self.reviewerCombo.setToolTip(
            f"Who grades the moves, in expected points given up. Default: {DEFAULT_RULE} (the same as "
            "the coach, Progress and the review command)"
        )
        self._fill_reviewers()
        self.reviewerCombo.currentIndexChanged.connect(self._on_reviewer_changed)
        self.reviewButton = button(
            "Review",
            "replayReviewButton",
            self.start_review,
            "Grade every move of this game with the reviewer (R); a stopped review goes on where it stopped",
            takes_focus=False,
        )
        self.cancelReviewButton = button(
            "Cancel",
            "replayCancelReviewButton",
            self.cancel_review,
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
            self.previous_mistake,
            "Previous inaccuracy, mistake or blunder (P or [)",
            takes_focus=False,
        )
        self.nextMistakeButton = button(
            "Mistake ▶",
            "replayNextMistakeButton",
            self.next_mistake,
            "Next inaccuracy, mistake or blunder (N or ])",
            takes_focus=False,
        )
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
        label = QLabel("Reviewer:")
        row.addWidget(label)
        row.addWidget(self.reviewerCombo)
        row.addWidget(self.reviewButton)
        row.addWidget(self.reviewProgress, 1)
        row.addWidget(self.cancelReviewButton)
        row.addStretch(0)
        row.addWidget(self.prevMistakeButton)
        row.addWidget(self.nextMistakeButton)
        self.summaryLabel = QLabel("Not reviewed: press Review (R)")
        self.summaryLabel.setObjectName("replayReviewSummary")
        self.summaryLabel.setTextFormat(Qt.TextFormat.RichText)
        self.summaryLabel.setWordWrap(True)
        outer = QVBoxLayout()
        outer.addLayout(row)
        prep = QHBoxLayout()
        prep.addWidget(self.prepareButton)
        prep.addWidget(self.prepareProgress, 1)
        prep.addWidget(self.prepareLabel, 1)
        prep.addStretch(0)
        outer.addLayout(prep)
        return outer

    def _fill_reviewers(self) -> None:
        fill_reviewer_combo(self.reviewerCombo, self.store)

    # ------------------------------------------------------------------ list
    def _refresh_clicked(self) -> None:
        # A list that did not change looks the same after a re-read: the status line says it was read.
        self.refresh()
        self.status.emit(f"Games read again: {self.listInfo.text()}")

    def refresh(self) -> None:
        """Re-read the game list from the store (keeps the selection when it is still listed)."""
        self._dirty = False
        self._fill_reviewers()
        current = self.record.id if self.record is not None else None
        games = self.store.list_games(self.filterBar.game_filter(), limit=LIST_LIMIT)
        games = sorted(games, key=lambda g: g.id, reverse=True)
        self.replayList.blockSignals(True)
        self.replayList.clear()
        for g in games:
            item = QListWidgetItem(game_label(g))
            item.setData(Qt.ItemDataRole.UserRole, g.id)
            self.replayList.addItem(item)
            if g.id == current:
                self.replayList.setCurrentItem(item)
        self.replayList.blockSignals(False)
        self._apply_text_filter(self.textFilter.text())
        more = " (newest only)" if len(games) >= LIST_LIMIT else ""
        self.listInfo.setText(f"{plural(len(games), 'game')}{more}")

    def _apply_text_filter(self, text: str) -> None:
        words = text.lower().split()
        shown = 0
        for i in range(self.replayList.count()):
            item = self.replayList.item(i)
            hide = any(w not in item.text().lower() for w in words)
            item.setHidden(hide)
            shown += not hide
        if words:
            self.listInfo.setText(f"{shown} of {self.replayList.count()} games match")

    def _on_current_item(self, item: QListWidgetItem | None, _prev: Any = None) -> None:
        if item is not None:
            self.load(int(item.data(Qt.ItemDataRole.UserRole)))

    def select_row(self, row: int) -> None:
        self.replayList.setCurrentRow(row)

    # ------------------------------------------------------------------ game
    def open_game(self, game_id: int) -> None:
        """Show game ``game_id`` (from the Games tab): select it in the list, clearing filters if needed."""
        if self._dirty:
            self.refresh()
        item = self._find_item(game_id)
        if item is None or item.isHidden():
            self.textFilter.clear()
            self.filterBar.reset()
            self.refresh()
            item = self._find_item(game_id)
        if item is not None:
            self.replayList.setCurrentItem(item)
            self.replayList.scrollToItem(item)
        else:  # older than the list's limit: still replayable
            self.load(game_id)

    def _find_item(self, game_id: int) -> QListWidgetItem | None:
        for i in range(self.replayList.count()):
            item = self.replayList.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == game_id:
                return item
        return None

    def load(self, game_id: int) -> None:
        """Read the whole game once; every step after this is an array lookup. A review of another
        game in progress is stopped (what it did is kept)."""
        self.pause()
        if self.reviewing and self._review_game != game_id:
            self.cancel_review()
        try:
            self.record = self.store.load_game(game_id)
        except (KeyError, ValueError) as e:
            self.record = None
            self._set_review(None)
            self.titleLabel.setText(f"Cannot open game #{game_id}: {e}")
            self._update_controls()
            return
        g = self.record.summary
        taken = len(takebacks(self.store, g.id))  # moves taken back in Play: not in the record
        self.titleLabel.setText(game_title(g) + (f" · {taken} taken back" if taken else ""))
        self.position = -1
        n = self.n_positions
        self.replaySlider.blockSignals(True)
        self.replaySlider.setRange(0, n - 1)
        self.replaySlider.setPageStep(max(1, (n - 1) // 20))
        self.replaySlider.blockSignals(False)
        self.jumpSpin.blockSignals(True)
        self.jumpSpin.setRange(0, n - 1)
        self.jumpSpin.setSuffix(f" / {n - 1}")
        self.jumpSpin.blockSignals(False)
        self._set_review(self._stored_review())
        self.step_to(0)
        self._update_controls()
        self.status.emit(f"Replaying game #{g.id}: {_moves(g.n_moves)}")

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
        n = r.n_moves
        if i == 0:
            text = f"Start · {_moves(n)} in this game" if n else "Start: this game has no moves"
            if r.summary.seed is not None:
                text += f" · seed {r.summary.seed}"
        else:
            k = i - 1
            d = Direction(int(r.moves[k]))
            text = (
                f"Move {i}/{n}: {ARROWS[d]} {d.label} by {r.player_of(k).label} · reward {int(r.rewards[k]):,} · "
                f"score {int(r.scores[k]):,} · spawn {spawn_text(spawns)}"
            )
        if i == n and n:
            status = r.summary.status
            text += " · " + ("game over" if status == "finished" else game_status(status))
        self.stepLabel.setText(text)
        self._show_verdict()
        self.graph.set_position(i)
        for w, value in ((self.replaySlider, i), (self.jumpSpin, i)):
            w.blockSignals(True)
            w.setValue(value)
            w.blockSignals(False)
        self._update_controls()

    def _show_arrow(self) -> None:
        r = self.record
        on = self.arrowCheck.isChecked() and r is not None and self.position < r.n_moves
        self.board.set_hint(Direction(int(r.moves[self.position])) if on else None)
        grade = self.grade_at(self.position)
        self.board.set_best_hint(grade.best if on and grade is not None else None)

    def _on_arrow_toggled(self, on: bool) -> None:
        self.settings.setValue("replay/arrow", "true" if on else "false")
        if self.record is not None:
            self._show_arrow()

    def _on_slider(self, value: int) -> None:
        self.step_to(value)

    # ------------------------------------------------------------------ playback
    @property
    def speed(self) -> int:
        return int(self.speedCombo.currentData())

    def _on_speed(self) -> None:
        self.settings.setValue("replay/speed", self.speed)
        if self._timer.isActive():
            self._timer.setInterval(int(1000 / self.speed))
        self.board.animation_ms = min(110, int(800 / self.speed))

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
        at_start = not has or self.position <= 0
        at_end = not has or self.position >= self.n_positions - 1
        for w in (self.firstButton, self.backButton):
            w.setEnabled(not at_start)
        for w in (self.forwardButton, self.lastButton):
            w.setEnabled(not at_end)
        self.playButton.setEnabled(has and self.n_positions > 1)
        self.replaySlider.setEnabled(has)
        self.jumpSpin.setEnabled(has)
        self.playButton.blockSignals(True)
        self.playButton.setChecked(self.playing)
        self.playButton.setText("❚❚ Pause" if self.playing else "▶ Play")
        self.playButton.blockSignals(False)

        reviewing = self.reviewing
        self.reviewButton.setEnabled(has and not reviewing and self.n_positions > 1)
        # an earlier default's review is shown: Review grades the game again with today's default
        again = self.review is not None and self.review.default_now is not None
        self.reviewButton.setText("Review again" if again else "Review")
        self.reviewerCombo.setEnabled(not reviewing)
        self.cancelReviewButton.setEnabled(reviewing)
        self.reviewProgress.setVisible(reviewing)
        review = self.review
        self.prevMistakeButton.setEnabled(
            review is not None and review.previous_mistake(self.position) is not None
        )
        self.nextMistakeButton.setEnabled(
            review is not None and review.next_mistake(self.position) is not None
        )

    # ------------------------------------------------------------------ review
    def current_reviewer(self) -> Reviewer:
        """The reviewer the combo names, for the shown game's rules (ValueError: it cannot be made)."""
        rules = self.record.rules if self.record is not None else None
        text, depth = self.reviewerCombo.currentData() or (None, None)
        return resolve_reviewer(self.store, text, depth, rules)

    def _stored_review(self) -> GameReview | None:
        if self.record is None:
            return None
        try:
            reviewer = self.current_reviewer()
            review = stored_review(self.store, self.record.id, reviewer)
            if review is None and reviewer.default:
                # the default changed since this game was reviewed: show that review, saying whose it is
                review = earlier_default_review(self.store, self.record.id, reviewer)
            return review
        except (
            ValueError,
            OSError,
        ):  # a damaged stored review (a StoreError) or a reviewer that cannot be made
            return None
        except Exception:  # none of those: shown as not reviewed, its traceback in the log
            log.exception("reading the stored review of game %s", self.record.id)
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
            with GameStore(db_path) as store:  # the worker thread's own connection
                return _review(store, game_id, reviewer, report, stop)

        self._review_game = game_id
        self._review_reviewer = reviewer
        self._live_due = 0.0
        worker = self._review_worker(job, stop)
        worker.finished.connect(self._update_controls)
        done = len(self.review.moves) if self.review is not None else 0
        self.reviewProgress.setRange(0, self.record.n_moves)
        self.reviewProgress.setValue(done)
        worker.start()
        self.status.emit(f"Reviewing game #{game_id} with {reviewer.label}…")
        self._update_controls()
        return True

    def wait_review(self, timeout_ms: int = 60_000) -> bool:
        return wait_worker(self.review_worker, timeout_ms)

    def _on_review_progress(self, done: float, total: float, _text: str) -> None:
        self.reviewProgress.setRange(0, max(int(total), 1))
        self.reviewProgress.setValue(int(done))
        self._show_live_review()

    def _show_live_review(self) -> None:
        """While a review runs, draw what it has stored so far; redrawn at most every second, and less
        often when reading it back takes long (a game of many thousand moves)."""
        now = time.perf_counter()
        if now < self._live_due or self._review_reviewer is None or self.record is None:
            return
        if self.record.id != self._review_game or self._review_stop is None or self._review_stop.is_set():
            return
        try:
            review = stored_review(self.store, self.record.id, self._review_reviewer)
        except (ValueError, OSError):  # a chunk being written (a busy store's StoreError): the next report
            review = None
        except Exception:
            log.exception("reading the review of game %s while it runs", self.record.id)
            review = None
        if review is not None and (self.review is None or len(review.moves) > len(self.review.moves)):
            self._set_review(review)
        took = time.perf_counter() - now
        self._live_due = time.perf_counter() + max(1.0, 10 * took)

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
        if review is not None:
            self.summaryLabel.setText(review_summary(review))
        else:
            note = ""
            try:
                fallback = self.current_reviewer().fallback if self.record is not None else None
            except ValueError:
                fallback = None
            if fallback:
                note = f"<br><span style='color:#8a8178'>Reviewer: {fallback}</span>"
            self.summaryLabel.setText("Not reviewed: press Review (R)" + note)
        self._update_prepare()
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
        review = self.review
        self.verdictLabel.setVisible(review is not None)
        g = self.grade_at(self.position)
        if review is None or self.record is None:
            self.verdictLabel.setText("")
        elif g is not None:
            self.verdictLabel.setText(verdict_text(g, review.points, review.mixed))
        elif self.position >= self.record.n_moves:
            self.verdictLabel.setText("Final position: no move to grade")
        else:
            self.verdictLabel.setText(
                f"Next move {self.position + 1}: not reviewed yet (Review goes on from here)"
            )

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
        return self.prepare_worker is not None and not self.prepare_worker.done

    def _update_prepare(self) -> None:
        """ "Prepare a reviewer" shows where the review (or the reviewer about to review) is a fallback."""
        fallback = self.review.fallback if self.review is not None else None
        if self.review is None and self.record is not None:
            try:
                fallback = self.current_reviewer().fallback
            except ValueError:
                fallback = None
        self.prepareButton.setVisible(bool(fallback) or self.preparing)
        self.prepareButton.setEnabled(not self.preparing)
        self.prepareProgress.setVisible(self.preparing)

    def prepare_reviewer(self, minutes: float | None = None) -> bool:
        """Train an n-tuple network in a child process (the Train tab's machinery) with its progress on
        the bar; when it ends, the reviewer list is re-read, so the default is the new network (when it
        is the strongest). False when one is being prepared already."""
        from studio.services.messages import Done, Events, Failed, Started
        from studio.services.review import PREPARE_MINUTES, prepare_request
        from studio.services.training_process import TrainingProcess
        from studio.worker import CallWorker

        if self.preparing:
            return False
        try:
            request = prepare_request(PREPARE_MINUTES if minutes is None else minutes)
            total = float(request.budget.seconds or 1.0)
            proc = TrainingProcess(request, self.store.path)
        except (ValueError, OSError) as e:  # said where the button is, not on stderr only
            self._say_prepare(f"Cannot prepare a reviewer: {e}")
            return False
        self._prepare_process = proc

        def job(report: Callable[..., None]) -> str:
            status, error = "?", ""
            for msg in proc.messages():
                if isinstance(msg, Started):
                    report(0.0, total, f"run {msg.run_id}: starting")
                elif isinstance(msg, Events) and msg.events:
                    ev = msg.events[-1]
                    mean = ev.metrics.get("mean_score")
                    text = "" if mean is None else f"mean score {mean:,.0f}"
                    report(min(ev.progress, 1.0) * total, total, text)
                elif isinstance(msg, Done):
                    status = msg.status
                elif isinstance(msg, Failed):
                    status, error = "failed", msg.message
            proc.wait(30)
            return f"{status}{': ' + error if error else ''}"

        worker = CallWorker(job, parent=self)
        worker.progress.connect(self._on_prepare_progress)
        worker.result.connect(self._on_prepared)
        worker.error.connect(lambda m: self._say_prepare(f"Preparing a reviewer failed: {m}"))
        worker.finished.connect(self._update_prepare)
        self.prepare_worker = worker
        self.prepareProgress.setValue(0)
        self.prepareProgress.setFormat("preparing a reviewer: starting")
        worker.start()
        self._say_prepare(
            f"Preparing a reviewer: training an n-tuple network for {_duration(total)} in the background; "
            "it then reviews as the default"
        )
        self._update_prepare()
        return True

    def _say_prepare(self, text: str) -> None:
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
        self._fill_reviewers()
        try:
            label = self.current_reviewer().label
        except ValueError:
            label = "?"
        self._say_prepare(f"Reviewer prepared ({value}); the default reviewer is now {label}")
        if not self.reviewing:
            self._set_review(self._stored_review())

    def wait_prepared(self, timeout_ms: int = 600_000) -> bool:
        """Block until the reviewer is prepared (tests)."""
        return wait_worker(self.prepare_worker, timeout_ms)

    def shutdown(self) -> None:
        """The window is closing."""
        self._timer.stop()
        if self.reviewing:
            self.cancel_review()
            self.wait_review(30_000)
        if self.preparing and self._prepare_process is not None:
            self._prepare_process.send("stop")  # a clean stop: the run keeps its final checkpoint
            self.prepare_worker.wait(30_000)


def _duration(seconds: float) -> str:
    """``4 minutes``, ``1 minute``, ``3 seconds``."""
    if seconds >= 60:
        minutes = seconds / 60
        return f"{minutes:g} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:.0f} seconds"


def _review(
    store: GameStore, game_id: int, reviewer: Reviewer, report: Callable[..., None], stop: threading.Event
) -> GameReview:
    from studio.services.review import review_game

    return review_game(
        store,
        game_id,
        reviewer,
        progress=lambda done, total: report(done, total, ""),
        should_stop=stop.is_set,
    )


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
