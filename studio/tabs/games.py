"""The Games tab: the library of logged games (a sortable, filterable table), with delete, export,
import, "open in Replay" and a summary of the selection.

The table is a :class:`GamesTableModel` over the store's ``GameSummary`` rows, so a library of
100,000 training games costs one Python object per game, not a widget per cell. The filter bar
(:class:`studio.widgets.filter_bar.FilterBar`: source, agent, score, max tile, status and date) gives
the :class:`GameFilter` that goes to :meth:`GameStore.list_games`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QItemSelection,
    QModelIndex,
    QPersistentModelIndex,
    QSettings,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.store import SOURCES, GameStore, format_time
from studio.tabs.common import StoreTab, button
from studio.text import GAME_STATUS_WORDS, game_status, plural
from studio.widgets.filter_bar import FilterBar
from studio.widgets.histogram import TileHistogram

log = logging.getLogger(__name__)

TABLE_LIMIT = 50_000
#: The store's statuses in the user's words, the command line's too (:data:`studio.text.GAME_STATUS_WORDS`):
#: a game left before game over (new game, window closed, process killed) is "unfinished"; "playing"
#: is being played right now.
STATUS_TEXT = GAME_STATUS_WORDS
#: A row the store could not read back as it is (``GameSummary.problem`` says why, in its tooltip).
DAMAGED_TEXT = "damaged"

Index = QModelIndex | QPersistentModelIndex


def _one_line(error: BaseException) -> str:
    """An exception's message on one line (its type when it has none)."""
    if isinstance(error, OSError) and error.strerror and error.filename is not None:
        return f"{error.strerror} ({error.filename})"
    return " ".join(str(error).split()) or type(error).__name__


def _when(ts: float | None) -> str:
    """A row's time to the minute: the store's formatter (``?`` for a time no clock shows)."""
    return format_time(ts)[:16]


class GamesTableModel(QAbstractTableModel):
    """Rows of ``GameSummary``; sorting is done here on the raw values (numbers sort as numbers)."""

    COLUMNS: tuple[tuple[str, str], ...] = (
        ("id", "#"),
        ("source", "Source"),
        ("agent", "Agent"),
        ("board", "Board"),
        ("score", "Score"),
        ("max_tile", "Max tile"),
        ("n_moves", "Moves"),
        ("status", "Status"),
        ("started", "Started"),
    )
    NUMERIC = frozenset({"id", "score", "max_tile", "n_moves"})

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.games: list[Any] = []
        self._sort: tuple[int, Qt.SortOrder] = (0, Qt.SortOrder.DescendingOrder)

    def set_games(self, games: Sequence[Any]) -> None:
        self.beginResetModel()
        self.games = list(games)
        self._apply_sort()
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's own signature
        return 0 if parent.isValid() else len(self.games)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section][1]
        return None

    @staticmethod
    def raw(g: Any, key: str) -> Any:
        if key == "board":
            return (g.rules.rows, g.rules.cols)
        if key == "agent":
            return ", ".join(g.agents)
        if key == "source":
            return f"{g.source} (imported)" if g.imported else g.source
        return getattr(g, key)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        g = self.games[index.row()]
        key = self.COLUMNS[index.column()][0]
        if role == Qt.ItemDataRole.DisplayRole:
            if key == "board":
                return f"{g.rules.rows}x{g.rules.cols}"
            if key == "status":
                return DAMAGED_TEXT if getattr(g, "problem", None) else game_status(g.status)
            if key == "started":
                return _when(g.started)
            if key == "score":
                return f"{g.score:,}"
            if key in ("agent", "source"):
                return self.raw(g, key)
            return str(getattr(g, key))
        if role == Qt.ItemDataRole.UserRole:
            return self.raw(g, key)
        if role == Qt.ItemDataRole.TextAlignmentRole and key in self.NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and getattr(g, "problem", None):
            return QColor("#c53030")
        if role == Qt.ItemDataRole.ForegroundRole and key == "status" and g.status != "finished":
            return QColor("#b7791f" if g.status == "abandoned" else "#2b7a3d")
        if role == Qt.ItemDataRole.ToolTipRole:
            if getattr(g, "problem", None):
                return f"game #{g.id} is damaged: {g.problem}"
            bits = [f"game #{g.id}", f"p4 {g.rules.p4:g}", f"{g.rules.spawn_per_move} per spawn"]
            if g.seed is not None:
                bits.append(f"seed {g.seed}")
            if g.source == "mixed":
                bits.append(f"played by {g.who}")
            elif g.checkpoint:
                bits.append(f"checkpoint {g.checkpoint}")
            if getattr(g, "origin", None):
                bits.append(f"imported from {g.origin.get('file', '?')}")
            if g.ended is not None:
                bits.append(f"ended {_when(g.ended)}")
            return " · ".join(bits)
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        self._sort = (column, order)
        self._apply_sort()
        self.layoutChanged.emit()

    def _apply_sort(self) -> None:
        column, order = self._sort
        key = self.COLUMNS[column][0]
        self.games.sort(key=lambda g: self.raw(g, key), reverse=order == Qt.SortOrder.DescendingOrder)

    def game(self, row: int) -> Any:
        return self.games[row]


class GamesTab(StoreTab):
    """The games library. ``openInReplay(game_id)`` asks the window to show a game in Replay."""

    openInReplay = Signal(int)
    gamesChanged = Signal()
    status = Signal(str)

    def __init__(self, store: GameStore, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__("gamesTab", store, parent)
        self.settings = settings
        self.last_error = ""
        self.last_message = ""  # the last import's "N imported, M already in the library"
        self._box: QMessageBox | None = None
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.filterBar = FilterBar("games")
        self.filterBar.changed.connect(lambda _filter: self.refresh())

        self.model = GamesTableModel(self)
        self.table = QTableView()
        self.table.setObjectName("gamesTable")
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(24)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        for col, width in enumerate((60, 90, 110, 60, 90, 75, 65, 90, 140)):
            self.table.setColumnWidth(col, width)
        self._fit_word_columns()
        # Enter or a double-click (the platform's "activate") opens the game in Replay.
        self.table.activated.connect(lambda idx: self.openInReplay.emit(self.model.game(idx.row()).id))
        self.table.selectionModel().selectionChanged.connect(self._on_selection)

        actions = QHBoxLayout()
        self.openButton = button("Open in Replay", "gamesOpenButton", self.open_selected)
        self.deleteButton = button("Delete…", "gamesDeleteButton", lambda: self.delete_selected(confirm=True))
        self.exportButton = button("Export…", "gamesExportButton", self.export_dialog)
        self.importButton = button("Import…", "gamesImportButton", self.import_dialog)
        self.refreshButton = button("Refresh", "gamesRefreshButton", self.refresh)
        for b in (self.openButton, self.deleteButton, self.exportButton):
            actions.addWidget(b)
        actions.addStretch(1)
        actions.addWidget(self.importButton)
        actions.addWidget(self.refreshButton)

        summary = QFrame()
        summary.setObjectName("gamesSummary")
        summary.setFrameShape(QFrame.Shape.StyledPanel)
        srow = QHBoxLayout(summary)
        self.summaryLabel = QLabel()
        self.summaryLabel.setObjectName("gamesSummaryLabel")
        self.summaryLabel.setMinimumWidth(220)
        self.summaryLabel.setTextFormat(Qt.TextFormat.RichText)
        self.histogram = TileHistogram()
        srow.addWidget(self.summaryLabel)
        srow.addWidget(self.histogram, 1)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.addWidget(self.filterBar)
        layout.addWidget(self.table, 1)
        layout.addLayout(actions)
        layout.addWidget(summary)

        delete = QShortcut(QKeySequence(QKeySequence.StandardKey.Delete), self.table)
        delete.setContext(Qt.ShortcutContext.WidgetShortcut)  # only while the table has the focus
        delete.activated.connect(lambda: self.delete_selected(confirm=True))
        self._update_buttons()

    def _fit_word_columns(self) -> None:
        """Source and Status as wide as their longest possible text ("evaluation (imported)"), so no
        row is cut to "mixed …" whatever the library holds (and the width does not jump on refresh)."""
        keys = [k for k, _ in self.model.COLUMNS]
        words = {
            "source": [*SOURCES, *(f"{s} (imported)" for s in SOURCES)],
            "status": [*GAME_STATUS_WORDS.values(), DAMAGED_TEXT],
        }
        fm = self.table.fontMetrics()
        header_fm = self.table.horizontalHeader().fontMetrics()
        for key, texts in words.items():
            col = keys.index(key)
            title = str(self.model.headerData(col, Qt.Orientation.Horizontal))
            # The cell's padding on each side, and room for the header's sort arrow.
            need = max(
                max(fm.horizontalAdvance(t) for t in texts) + 24, header_fm.horizontalAdvance(title) + 36
            )
            self.table.setColumnWidth(col, max(self.table.columnWidth(col), need))

    # ------------------------------------------------------------------ data
    def shutdown(self) -> None:
        """Nothing runs in the background here."""

    def refresh(self) -> None:
        """Re-read the games that pass the filters, keeping the selected ones selected."""
        self._dirty = False
        keep = set(self.selected_ids())
        games = self.store.list_games(self.filterBar.game_filter(), limit=TABLE_LIMIT)
        self.model.set_games(games)
        if keep:
            sel = QItemSelection()
            for row, g in enumerate(self.model.games):
                if g.id in keep:
                    sel.select(self.model.index(row, 0), self.model.index(row, self.model.columnCount() - 1))
            self.table.selectionModel().select(sel, self.table.selectionModel().SelectionFlag.ClearAndSelect)
        self._on_selection()

    def selected_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.model.game(r).id for r in rows]

    def select_ids(self, ids: Sequence[int]) -> None:
        wanted = set(ids)
        sel = QItemSelection()
        for row, g in enumerate(self.model.games):
            if g.id in wanted:
                sel.select(self.model.index(row, 0), self.model.index(row, self.model.columnCount() - 1))
        self.table.selectionModel().select(sel, self.table.selectionModel().SelectionFlag.ClearAndSelect)

    def _on_selection(self, *args: Any) -> None:
        ids = set(self.selected_ids())
        games = [g for g in self.model.games if g.id in ids] if ids else self.model.games
        what = f"{len(games):,} selected" if ids else f"{len(games):,} listed"
        if len(self.model.games) >= TABLE_LIMIT and not ids:
            what += " (newest only)"
        best = max((g.score for g in games), default=0)
        moves = sum(g.n_moves for g in games)
        lines = [f"<b>{what}</b>", f"best score <b>{best:,}</b>", plural(moves, "move")]
        for status in ("abandoned", "playing"):
            n = sum(g.status == status for g in games)
            if n:
                lines.append(f"{n:,} {game_status(status)}")
        self.summaryLabel.setText("<br>".join(lines))
        self.histogram.set_counts(Counter(int(g.max_tile) for g in games if g.max_tile))
        self._update_buttons()

    def _update_buttons(self) -> None:
        n = len(self.table.selectionModel().selectedRows())
        self.openButton.setEnabled(n == 1)
        self.deleteButton.setEnabled(n > 0)
        self.exportButton.setEnabled(n > 0)

    # ------------------------------------------------------------------ actions
    def open_selected(self) -> None:
        ids = self.selected_ids()
        if ids:
            self.openInReplay.emit(ids[0])

    def delete_selected(self, confirm: bool = True) -> int:
        ids = self.selected_ids()
        if not ids:
            return 0
        if confirm:
            answer = QMessageBox.question(
                self,
                "Delete games",
                f"Delete {len(ids)} game{'s' if len(ids) > 1 else ''} and all their moves? This cannot be undone.",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return 0
        self.store.delete_games(ids)
        self.refresh()
        self.gamesChanged.emit()
        self.status.emit(f"Deleted {plural(len(ids), 'game')}")
        return len(ids)

    def export_dialog(self) -> None:
        ids = self.selected_ids()
        if not ids:
            self.status.emit("Select the games to export first")
            return
        start = str(Path(str(self.settings.value("games/export_dir", str(Path.home())))) / "games.npz")
        path, chosen = QFileDialog.getSaveFileName(
            self, "Export games", start, "NumPy archive (*.npz);;JSON lines (*.jsonl)"
        )
        if path:
            if not Path(path).suffix:
                path += ".jsonl" if "jsonl" in chosen else ".npz"
            self.export_selected(Path(path))

    def export_selected(self, path: Path) -> bool:
        """Write the selected games to ``path`` (.npz or .jsonl by its suffix), oldest first: the
        file keeps the library's order (the table's newest-first rows made an import of it number the
        games backwards), as ``games export`` writes it."""
        ids = sorted(self.selected_ids())
        try:
            if path.suffix.lower() == ".jsonl":
                self.store.export_jsonl(ids, path)
            elif path.suffix.lower() == ".npz":
                self.store.export_npz(ids, path)
            else:
                raise ValueError(f"cannot export to {path.name}: choose a .npz or .jsonl file")
        except (OSError, ValueError) as e:
            self.show_error("Export failed", str(e))
            return False
        self.settings.setValue("games/export_dir", str(path.parent))
        self.status.emit(f"Exported {plural(len(ids), 'game')} to {path}")
        return True

    def import_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self,
            "Import games",
            str(self.settings.value("games/import_dir", str(Path.home()))),
            "Game files (*.npz *.jsonl);;All files (*)",
        )
        if paths:
            self.import_files([Path(p) for p in paths])

    def import_files(self, paths: Sequence[Path]) -> list[int]:
        """Import each file whole or not at all (the store's guarantee), less the games the library
        holds already (the status bar says how many); errors are shown, not raised. The new ids."""
        imported: list[int] = []
        already: list[int] = []
        errors: list[str] = []
        for path in paths:
            try:
                result = self.store.import_games(path)
                imported += result.ids
                already += result.already
            except (OSError, ValueError) as e:  # a bad file (StoreError is a ValueError) or an OS refusal
                why = _one_line(e)  # the store's messages name the file already
                errors.append(why if why.startswith(Path(path).name) else f"{Path(path).name}: {why}")
            except (RecursionError, MemoryError) as e:
                errors.append(
                    f"{Path(path).name}: too large or nested too deeply to read ({type(e).__name__})"
                )
            except Exception as e:  # a bug, not the file: shown with its type, and logged with its traceback
                log.exception("importing %s", path)
                errors.append(f"{Path(path).name}: unexpected error {type(e).__name__}: {_one_line(e)}")
            self.settings.setValue("games/import_dir", str(Path(path).parent))
        if imported or already:
            self.refresh()
            self.select_ids(imported + already)  # what the files hold, new or not, shown selected
            if imported:
                self.gamesChanged.emit()
            self.last_message = f"{len(imported):,} imported, {len(already):,} already in the library"
            self.status.emit(self.last_message)
        if errors:
            done = f"\n\nImported {plural(len(imported), 'game')} from the other files." if imported else ""
            self.show_error(
                "Import failed",
                "Nothing was imported from:\n\n" + "\n".join(errors) + done,
            )
        return imported

    def show_error(self, title: str, text: str) -> None:
        """A clear, non-blocking message box (tests read ``last_error``)."""
        self.last_error = text
        self.status.emit(f"{title}: {text.splitlines()[0] if text else ''}")
        if self._box is not None:
            self._box.close()
        self._box = QMessageBox(QMessageBox.Icon.Critical, title, text, QMessageBox.StandardButton.Ok, self)
        self._box.setObjectName("gamesErrorBox")
        self._box.open()

    @property
    def error_box(self) -> QMessageBox | None:
        return self._box
