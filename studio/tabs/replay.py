"""The Replay tab: pick a logged game, step through it, play it back at a speed.

A game is read from the store once (:meth:`GameStore.load_game` gives whole numpy arrays), so every
step afterwards is an array lookup: a 10,000-move game opens at once and the slider scrubs smoothly.
Position ``i`` (0..n) shows the board *before* move ``i`` (position n: the final board) together with
what the previous move did (direction, who made it, reward, score, spawn) and, as an arrow, the move
about to come. A game a person shared with an agent is one record (source ``mixed``): the step label
says for every move whether "you" or the agent (and its checkpoint file) made it.
"""

from __future__ import annotations

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
    QPushButton,
    QSlider,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from engine import Direction
from engine.store import SOURCE_FILTERS
from studio.settings import get_bool, get_int
from studio.tabs.common import button
from studio.widgets.board import BoardWidget

SPEEDS = (1, 2, 5, 10, 20, 50, 100, 500)  # steps per second
LIST_LIMIT = 5000  # newest games listed; the Games tab's table holds the rest
ARROWS = {Direction.UP: "↑", Direction.LEFT: "←", Direction.DOWN: "↓", Direction.RIGHT: "→"}


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
        parts.append({"playing": "in progress", "abandoned": "unfinished"}.get(g.status, g.status))
    return " · ".join(parts)


def game_title(g: Any) -> str:
    """The heading above the replayed board: who, where, how it went."""
    who = g.source if not g.agent or g.source == "mixed" else f"{g.source} ({g.agent})"
    if g.source == "mixed":
        who = _who(g)
    if g.origin is not None:
        who += f", imported from {g.origin.get('file', '?')}"
    status = {"playing": "in progress", "abandoned": "unfinished"}.get(g.status, g.status)
    return f"Game #{g.id} · {who} · {g.rules.rows}x{g.rules.cols} · {g.score:,} points · {status}"


def _moves(n: int) -> str:
    return f"{n:,} move" if n == 1 else f"{n:,} moves"


def spawn_text(spawns: Any) -> str:
    if not spawns:
        return "none"
    return ", ".join(f"{s.value} at ({s.row}, {s.col})" for s in spawns)


class ReplayTab(QWidget):
    """Replays one game record; :meth:`open_game` is how other tabs send a game here."""

    status = Signal(str)

    def __init__(self, store: Any, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("replayTab")
        self.store = store
        self.settings = settings
        self.record: Any = None
        self.position = 0
        self._dirty = True
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._tick)
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        left = QWidget()
        lcol = QVBoxLayout(left)
        lcol.setContentsMargins(0, 0, 0, 0)
        filters = QHBoxLayout()
        self.sourceFilter = QComboBox()
        self.sourceFilter.setObjectName("replaySourceFilter")
        self.sourceFilter.addItem("all sources", None)
        for s in SOURCE_FILTERS:
            self.sourceFilter.addItem(s, s)
        self.textFilter = QLineEdit()
        self.textFilter.setObjectName("replayTextFilter")
        self.textFilter.setPlaceholderText("filter: agent, #id, 4x4…")
        self.textFilter.setClearButtonEnabled(True)
        self.sourceFilter.currentIndexChanged.connect(self.refresh)
        self.textFilter.textChanged.connect(self._apply_text_filter)
        filters.addWidget(self.sourceFilter)
        filters.addWidget(self.textFilter, 1)
        self.refreshButton = QPushButton("⟳")
        self.refreshButton.setObjectName("replayRefreshButton")
        self.refreshButton.setToolTip("Re-read the list of games")
        self.refreshButton.setFixedWidth(32)
        self.refreshButton.clicked.connect(self.refresh)
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
        self.replaySlider = QSlider(Qt.Orientation.Horizontal)
        self.replaySlider.setObjectName("replaySlider")
        self.replaySlider.setRange(0, 0)
        self.replaySlider.setPageStep(10)
        self.replaySlider.valueChanged.connect(self._on_slider)

        rcol.addWidget(self.titleLabel)
        rcol.addWidget(self.board, 1)
        rcol.addWidget(self.stepLabel)
        rcol.addWidget(self.replaySlider)
        rcol.addLayout(self._build_controls())

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
        ):
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(ctx)
            sc.activated.connect(slot)
        self._update_controls()

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

    # ------------------------------------------------------------------ list
    def mark_dirty(self) -> None:
        """Games changed elsewhere: reload the list next time the tab is shown."""
        self._dirty = True

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self._dirty:
            self.refresh()

    def refresh(self) -> None:
        """Re-read the game list from the store (keeps the selection when it is still listed)."""
        self._dirty = False
        current = self.record.id if self.record is not None else None
        games = self.store.list_games(source=self.sourceFilter.currentData(), limit=LIST_LIMIT)
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
        self.listInfo.setText(f"{len(games)} games{more}")

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
            self.sourceFilter.setCurrentIndex(0)
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
        """Read the whole game once; every step after this is an array lookup."""
        self.pause()
        try:
            self.record = self.store.load_game(game_id)
        except (KeyError, ValueError) as e:
            self.record = None
            self.titleLabel.setText(f"Cannot open game #{game_id}: {e}")
            self._update_controls()
            return
        g = self.record.summary
        self.titleLabel.setText(game_title(g))
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
            text += " · " + {"finished": "game over", "playing": "in progress"}.get(
                r.summary.status, "unfinished"
            )
        self.stepLabel.setText(text)
        for w, value in ((self.replaySlider, i), (self.jumpSpin, i)):
            w.blockSignals(True)
            w.setValue(value)
            w.blockSignals(False)
        self._update_controls()

    def _show_arrow(self) -> None:
        r = self.record
        on = self.arrowCheck.isChecked() and r is not None and self.position < r.n_moves
        self.board.set_hint(Direction(int(r.moves[self.position])) if on else None)

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

    def shutdown(self) -> None:
        """The window is closing."""
        self._timer.stop()
