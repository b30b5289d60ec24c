"""The Games tab: the library of logged games (a sortable, filterable table), with delete, export,
import, "open in Replay" and a summary of the selection.

The table is a :class:`GamesTableModel` over the store's ``GameSummary`` rows, read a page at a time
as the table scrolls (Qt's ``canFetchMore`` / ``fetchMore``) and sorted by the store, so a library of
100,000 training games shows its first rows at once instead of reading every row first (issue 47).
The summary (how many, best score, moves, the tile histogram) adds up the whole filter in the store
(:meth:`GameStore.game_stats`), not the rows read so far. The filter bar
(:class:`studio.widgets.filter_bar.FilterBar`: source, agent, score, max tile, status and date) gives
the :class:`GameFilter` that goes to :meth:`GameStore.list_games`.

Import runs in a worker thread on its own store connection (checking every game of a file and
comparing it with the library takes seconds for a big file or library): the table stays usable, the
status bar shows how far it got and then one line of what it did, and a second import waits its turn
(refused with a word) until the first has ended.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

from studio.services.library import SOURCES, GameStats, connect, format_time
from studio.tabs.common import StoreTab, button
from studio.text import GAME_STATUS_WORDS, game_status, plural
from studio.widgets.filter_bar import FilterBar
from studio.widgets.histogram import TileHistogram

if TYPE_CHECKING:
    from engine.store import GameStore
    from studio.worker import CallWorker

log = logging.getLogger(__name__)

#: Rows read from the store at a time: the first page is what the tab shows at once; scrolling near
#: the end of what was read reads the next.
PAGE = 500
#: The most rows :meth:`GamesTab.select_ids` reads to find games to select (imported games keep
#: their original start times, so they need not be among the newest).
SELECT_READ_LIMIT = 50_000
#: The store's statuses in the user's words, the command line's too (:data:`studio.text.GAME_STATUS_WORDS`):
#: a game left before game over (new game, window closed, process killed) is "unfinished"; "playing"
#: is being played right now.
STATUS_TEXT = GAME_STATUS_WORDS
#: A row the store could not read back as it is (``GameSummary.problem`` says why, in its tooltip).
DAMAGED_TEXT = "damaged"

Index = QModelIndex | QPersistentModelIndex
#: ``fetch(order, descending, offset, limit)``: a page of the listing in the store's order.
Fetch = Callable[[str, bool, int, int], list[Any]]


def _one_line(error: BaseException) -> str:
    """An exception's message on one line (its type when it has none)."""
    if isinstance(error, OSError) and error.strerror and error.filename is not None:
        return f"{error.strerror} ({error.filename})"
    return " ".join(str(error).split()) or type(error).__name__


def _import_error(path: Path, error: BaseException) -> str:
    """One line on why ``path`` could not be imported, naming the file."""
    name = Path(path).name
    if isinstance(error, (OSError, ValueError)):  # a bad file (StoreError is a ValueError) or an OS refusal
        why = _one_line(error)  # the store's messages name the file already
        return why if why.startswith(name) else f"{name}: {why}"
    if isinstance(error, (RecursionError, MemoryError)):
        return f"{name}: too large or nested too deeply to read ({type(error).__name__})"
    # a bug, not the file: shown with its type, and logged with its traceback
    log.error("importing %s", path, exc_info=error)
    return f"{name}: unexpected error {type(error).__name__}: {_one_line(error)}"


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

    def __init__(self, parent: Any = None, page: int = PAGE) -> None:
        super().__init__(parent)
        self.games: list[Any] = []
        self.page = page
        self.total = 0  # rows of the listing, read or not
        self._fetch: Fetch | None = None
        self._sort: tuple[int, Qt.SortOrder] = (0, Qt.SortOrder.DescendingOrder)

    def set_games(self, games: Sequence[Any]) -> None:
        """Show ``games``, all of them in memory (sorted here)."""
        self.beginResetModel()
        self._fetch = None
        self.games = list(games)
        self.total = len(self.games)
        self._apply_sort()
        self.endResetModel()

    def set_listing(self, fetch: Fetch, total: int) -> None:
        """Show a listing of ``total`` rows that ``fetch`` reads a page at a time, sorted by the store:
        the first page now, the next ones as the view asks for them (:meth:`fetchMore`)."""
        self.beginResetModel()
        self._fetch = fetch
        self.total = total
        self.games = self._page(0) if total else []
        self.endResetModel()

    def _page(self, offset: int) -> list[Any]:
        assert self._fetch is not None
        column, order = self._sort
        return self._fetch(self.COLUMNS[column][0], order == Qt.SortOrder.DescendingOrder, offset, self.page)

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008 - Qt's own signature
        return not parent.isValid() and self._fetch is not None and len(self.games) < self.total

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if not self.canFetchMore(parent):
            return
        rows = self._page(len(self.games))
        if not rows:  # games were deleted elsewhere since the count: the listing ends here
            self.total = len(self.games)
            return
        self.beginInsertRows(QModelIndex(), len(self.games), len(self.games) + len(rows) - 1)
        self.games.extend(rows)
        self.endInsertRows()

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
        if self._fetch is not None:  # the store sorts the whole listing; its first page is read again
            self.beginResetModel()
            self._sort = (column, order)
            self.games = self._page(0) if self.total else []
            self.endResetModel()
            return
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
        self.stats = GameStats(0, 0, 0, {}, {})  # what the listing adds up to (refresh reads it)
        self.import_worker: CallWorker | None = None
        self.last_import: list[int] = []  # the last import's new ids
        self._closed = False
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.filterBar = FilterBar("games")
        self.filterBar.remember(self.settings)  # the filters chosen are back after a reopen
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
        self.refreshButton = button("Refresh", "gamesRefreshButton", self._refresh_clicked)
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
        """Let a running import end (it is one transaction: cut off, it would add nothing); what it
        reports afterwards is dropped, as the window's store is closed by then."""
        self._closed = True
        if self.import_worker is not None:
            self.import_worker.wait(120_000)

    def _refresh_clicked(self) -> None:
        # A library that did not change looks the same after a re-read: the status line says it was read.
        self.refresh()
        self.status.emit(f"Library read again: {plural(self.stats.count, 'game')} match the filters")

    def refresh(self) -> None:
        """Re-read the games that pass the filters (their first page), keeping the selected ones
        selected where they are among the rows read."""
        self._dirty = False
        keep = set(self.selected_ids())
        match = self.filterBar.game_filter()
        store = self.store
        self.stats = store.game_stats(match)

        def fetch(order: str, descending: bool, offset: int, limit: int) -> list[Any]:
            return store.list_games(match, order=order, descending=descending, offset=offset, limit=limit)

        self.model.set_listing(fetch, self.stats.count)
        if keep:
            self._select_loaded(keep)
        self._on_selection()

    def selected_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.model.game(r).id for r in rows]

    def select_ids(self, ids: Sequence[int]) -> None:
        """Select the games ``ids``, reading more pages of the listing until they are all among the
        rows read (or :data:`SELECT_READ_LIMIT` rows are)."""
        wanted = set(ids)
        while (
            self.model.canFetchMore()
            and len(self.model.games) < SELECT_READ_LIMIT
            and not wanted <= {g.id for g in self.model.games}
        ):
            self.model.fetchMore()
        self._select_loaded(wanted)

    def _select_loaded(self, wanted: set[int]) -> None:
        sel = QItemSelection()
        for row, g in enumerate(self.model.games):
            if g.id in wanted:
                sel.select(self.model.index(row, 0), self.model.index(row, self.model.columnCount() - 1))
        self.table.selectionModel().select(sel, self.table.selectionModel().SelectionFlag.ClearAndSelect)

    def _on_selection(self, *args: Any) -> None:
        ids = set(self.selected_ids())
        if ids:  # the selected rows are among those read
            games = [g for g in self.model.games if g.id in ids]
            best = max((g.score for g in games), default=0)
            moves = sum(g.n_moves for g in games)
            statuses = Counter(str(g.status) for g in games)
            tiles = Counter(int(g.max_tile) for g in games if g.max_tile)
            what = f"{len(games):,} selected"
        else:  # the whole listing, added up by the store
            stats = self.stats
            best, moves, statuses, tiles = (
                stats.best_score,
                stats.moves,
                Counter(stats.statuses),
                Counter(stats.tiles),
            )
            what = f"{stats.count:,} listed"
        lines = [f"<b>{what}</b>", f"best score <b>{best:,}</b>", plural(moves, "move")]
        for status in ("abandoned", "playing"):
            n = statuses[status]
            if n:
                lines.append(f"{n:,} {game_status(status)}")
        self.summaryLabel.setText("<br>".join(lines))
        self.histogram.set_counts(tiles)
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

    # ------------------------------------------------------------------ import (off the GUI thread)
    @property
    def importing(self) -> bool:
        """An import is running."""
        return self.import_worker is not None and not self.import_worker.done

    def import_dialog(self) -> None:
        """Import… and File > Import games…: pick files, then import them in the background."""
        if self._refuse_second_import():
            return
        paths, _ = QFileDialog.getOpenFileNames(
            self,
            "Import games",
            str(self.settings.value("games/import_dir", str(Path.home()))),
            "Game files (*.npz *.jsonl);;All files (*)",
        )
        if paths:
            self.start_import([Path(p) for p in paths])

    def _refuse_second_import(self) -> bool:
        if self.importing:
            self.status.emit("An import is running: wait for it to end before importing more")
            return True
        return False

    def start_import(self, paths: Sequence[Path]) -> bool:
        """Import each file whole or not at all (the store's guarantee), less the games the library
        holds already, in a worker thread on its own store connection; the status bar follows it and
        then says what it did, errors are shown, not raised. False (and a word) while one runs."""
        from studio.worker import CallWorker

        if self._refuse_second_import() or not paths:
            return False
        files = [Path(p) for p in paths]
        db_path = self.store.path

        def job(report: Callable[..., None]) -> list[tuple[Path, list[int], list[int], str]]:
            done: list[tuple[Path, list[int], list[int], str]] = []
            with connect(db_path) as store:  # the worker thread's own connection
                for k, path in enumerate(files):
                    where = f"Importing {path.name}" + (
                        f" ({k + 1} of {len(files)})" if len(files) > 1 else ""
                    )

                    def step(text: str, k: int = k, where: str = where) -> None:
                        report(k, len(files), f"{where}: {text}…")

                    try:
                        result = store.import_games(path, progress=step)
                        done.append((path, list(result.ids), list(result.already), ""))
                    except Exception as e:  # one file's failure is reported, the rest go on
                        done.append((path, [], [], _import_error(path, e)))
            return done

        worker = CallWorker(job, parent=self)
        worker.progress.connect(lambda _done, _total, text: self.status.emit(text))
        worker.result.connect(self._on_import_result)
        worker.error.connect(self._on_import_error)
        worker.finished.connect(self._on_import_finished)
        if self.import_worker is not None:
            self.import_worker.deleteLater()
        self.import_worker = worker
        self.last_import = []
        self.importButton.setEnabled(False)
        self.importButton.setToolTip("An import is running")
        worker.start()
        names = files[0].name if len(files) == 1 else f"{len(files)} files"
        self.status.emit(f"Importing {names}…")
        return True

    def wait_import(self, timeout_s: float = 60.0) -> bool:
        """Block, the events flowing, until no import runs (scripts, tests); True when it ended."""
        from PySide6.QtWidgets import QApplication

        end = time.monotonic() + timeout_s
        while self.importing and time.monotonic() < end:
            QApplication.processEvents()
            if self.import_worker is not None:
                self.import_worker.wait(20)
        QApplication.processEvents()
        return not self.importing

    def import_files(self, paths: Sequence[Path]) -> list[int]:
        """:meth:`start_import` and wait for it (scripts and tests): the new ids."""
        if not self.start_import(paths):
            return []
        self.wait_import(600.0)
        return list(self.last_import)

    def _on_import_result(self, value: object) -> None:
        done: list[tuple[Path, list[int], list[int], str]] = value  # type: ignore[assignment]
        if self._closed:
            return
        imported = [i for _, ids, _, _ in done for i in ids]
        already = [i for _, _, old, _ in done for i in old]
        errors = [why for _, _, _, why in done if why]
        self.last_import = imported
        if done:
            self.settings.setValue("games/import_dir", str(done[-1][0].parent))
        if imported or already:
            self.refresh()
            self.select_ids(imported + already)  # what the files hold, new or not, shown selected
            if imported:
                self.gamesChanged.emit()
            self.last_message = f"{len(imported):,} imported, {len(already):,} already in the library"
            self.status.emit(self.last_message)
        if errors:
            also = f"\n\nImported {plural(len(imported), 'game')} from the other files." if imported else ""
            self.show_error("Import failed", "Nothing was imported from:\n\n" + "\n".join(errors) + also)

    def _on_import_error(self, message: str) -> None:
        if not self._closed:  # a bug of the job itself (each file's failure is a result)
            self.show_error("Import failed", message)

    def _on_import_finished(self) -> None:
        if self._closed:
            return
        self.importButton.setEnabled(True)
        self.importButton.setToolTip("")

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
