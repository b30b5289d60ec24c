"""The Replay tab's list of games: the source filter, a text box narrowing the list, a re-read button.

The list only shows what it is given (:meth:`GameList.fill`); the tab reads the store through
:mod:`studio.services.replay`. Choosing a row says which game (``chosen``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from studio.services.replay import LIST_LIMIT, game_label
from studio.text import plural
from studio.widgets.filter_bar import FilterBar

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.store import GameSummary


class GameList(QWidget):
    """The games on the left of the Replay tab, newest first."""

    #: a game was chosen in the list (its id)
    chosen = Signal(int)
    #: the source filter changed: the list is to be read again
    filterChanged = Signal()
    #: the ⟳ button was pressed
    refreshClicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lcol = QVBoxLayout(self)
        lcol.setContentsMargins(0, 0, 0, 0)
        filters = QHBoxLayout()
        self.filterBar = FilterBar("replay", ("source",))
        self.filterBar.changed.connect(lambda _filter: self.filterChanged.emit())
        self.textFilter = QLineEdit()
        self.textFilter.setObjectName("replayTextFilter")
        self.textFilter.setPlaceholderText("filter: agent, #id, 4x4…")
        self.textFilter.setClearButtonEnabled(True)
        self.textFilter.textChanged.connect(self.apply_text_filter)
        filters.addWidget(self.filterBar)
        filters.addWidget(self.textFilter, 1)
        self.refreshButton = QPushButton("⟳")
        self.refreshButton.setObjectName("replayRefreshButton")
        self.refreshButton.setToolTip("Re-read the list of games")
        self.refreshButton.setFixedWidth(32)
        self.refreshButton.clicked.connect(lambda _checked=False: self.refreshClicked.emit())
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

    def fill(self, games: Sequence[GameSummary], current: int | None) -> None:
        """List ``games``, keeping game ``current`` selected when it is among them (without choosing
        it again), the text filter applied."""
        self.replayList.blockSignals(True)
        self.replayList.clear()
        for g in games:
            item = QListWidgetItem(game_label(g))
            item.setData(Qt.ItemDataRole.UserRole, g.id)
            self.replayList.addItem(item)
            if g.id == current:
                self.replayList.setCurrentItem(item)
        self.replayList.blockSignals(False)
        self.apply_text_filter(self.textFilter.text())
        more = " (newest only)" if len(games) >= LIST_LIMIT else ""
        self.listInfo.setText(f"{plural(len(games), 'game')}{more}")

    def apply_text_filter(self, text: str) -> None:
        """Hide the rows that lack any word of ``text``; the line under the list counts the rest."""
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
            self.chosen.emit(int(item.data(Qt.ItemDataRole.UserRole)))

    def find_item(self, game_id: int) -> QListWidgetItem | None:
        for i in range(self.replayList.count()):
            item = self.replayList.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == game_id:
                return item
        return None

    def shows(self, game_id: int) -> bool:
        """Whether game ``game_id`` has a row that the text filter lets through."""
        item = self.find_item(game_id)
        return item is not None and not item.isHidden()

    def clear_filters(self) -> None:
        """Empty the text box and reset the source filter (the caller reads the list again)."""
        self.textFilter.clear()
        self.filterBar.reset()

    def select(self, game_id: int) -> bool:
        """Select and show game ``game_id``'s row (which chooses it); False when it is not listed."""
        item = self.find_item(game_id)
        if item is None:
            return False
        self.replayList.setCurrentItem(item)
        self.replayList.scrollToItem(item)
        return True
