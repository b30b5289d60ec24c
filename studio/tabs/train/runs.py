"""The Train tab's runs table: every run of the store, with what can be done to the selected ones.

What needs only the store happens here: export the metrics as CSV, hand the last checkpoint to Play
or the Arena (``useInPlay`` / ``useInArena`` with agent and checkpoint path). A tick in a row's box
draws that run's curves beside the others (compare); "Show / compare" draws the selected rows. What needs the live
runs or the curves is the tab's: the buttons emit signals with run ids (show / compare curves, resume
from the last checkpoint, and for runs training now pause / resume, stop and "checkpoint now").
The table is re-read from ``store.list_runs()`` (the runs table only, never metrics) when a run
starts or ends; the rows of live runs are updated from their events in memory.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QMenu,
    QPushButton,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.services.runs import export_run_tensorboard, write_metrics_csv
from studio.services.runs_model import (
    TITLES,
    CheckedChanged,
    Column,
    ElsewhereChanged,
    RowChanged,
    RunsChange,
    RunsModel,
    SelectionChanged,
    StateChanged,
)
from studio.tabs.common import button, error_box, table, titled_row
from studio.widgets.curves import RUN_COLOURS

if TYPE_CHECKING:
    from engine.store import GameStore, RunSummary

log = logging.getLogger(__name__)

#: Tooltips of the columns that need a word of explanation.
TIPS = {
    Column.EVAL: "Mean score of the latest greedy evaluation (fixed games, no exploration); "
    "the run keeps its best checkpoint",
    Column.DISK: "What the run's checkpoint files take on disk (the newest few and the best are kept)",
    Column.SWEEP: "The run's sweep and its trial number in it (a sweep's trials are ordinary runs)",
}
RUN_COLUMNS = tuple(TITLES[c] for c in Column)


class RunsPanel(QWidget):
    """The runs table and its actions, a view of a :class:`~.model.RunsModel` (its rows, ticks,
    selection and where its runs train; the panel makes its own when given none). Signals carry
    run ids."""

    showRuns = Signal(list)
    resumeRun = Signal(int)
    pauseRuns = Signal(list)
    stopRuns = Signal(list)
    checkpointRuns = Signal(list)
    useInPlay = Signal(str, str)
    useInArena = Signal(str, str)
    status = Signal(str)

    def __init__(
        self, store: GameStore, parent: QWidget | None = None, model: RunsModel | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("runsPanel")
        self.store = store
        self.model = model if model is not None else RunsModel()
        self.model.subscribe(self._on_change)
        self.error_box: Any = None
        self._icons: dict[str, QIcon] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.showRunsButton = button(
            "Show / compare",
            "showRunsButton",
            self.show_selected,
            "Draw the selected runs' curves (or tick the runs' boxes to compare them)",
        )
        self.runPauseButton = button(
            "Pause", "runPauseButton", self._emit(self.pauseRuns), "Pause / resume the selected training runs"
        )
        self.runStopButton = button(
            "Stop",
            "runStopButton",
            self._emit(self.stopRuns),
            "Stop the selected training runs (with a checkpoint)",
        )
        self.checkpointButton = button(
            "Checkpoint now",
            "checkpointButton",
            self._emit(self.checkpointRuns),
            "Save a checkpoint of the selected training runs now",
        )
        # "Continue", not "Resume": Pause beside it reads "Resume" while a run is paused, and two
        # buttons of one name side by side left the person guessing which one un-pauses.
        self.resumeButton = button(
            "Continue",
            "resumeButton",
            self._emit_one(self.resumeRun),
            "Train the selected run on from its last checkpoint (what is left of its budget)",
        )
        self.useInPlayButton = button(
            "Use in Play",
            "useInPlayButton",
            self.use_selected_in_play,
            "Hint / watch with the run's best checkpoint (by greedy evaluation), else its last",
        )
        self.useInArenaButton = button(
            "Use in Arena",
            "useInArenaButton",
            self.use_selected_in_arena,
            "Evaluate the runs' best checkpoints (by greedy evaluation), else their last",
        )
        self.exportButton = QPushButton("Export…")
        self.exportButton.setObjectName("exportButton")
        self.exportButton.setToolTip("Save the selected run's metrics as CSV or TensorBoard event files")
        menu = QMenu(self.exportButton)
        self.exportCsvAction = menu.addAction("Metrics as CSV…", self.export_selected)
        self.exportTensorboardAction = menu.addAction(
            "TensorBoard event files…", self.export_selected_tensorboard
        )
        self.exportButton.setMenu(menu)
        self.buttons = (
            self.showRunsButton,
            self.runPauseButton,
            self.runStopButton,
            self.checkpointButton,
            self.resumeButton,
            self.useInPlayButton,
            self.useInArenaButton,
            self.exportButton,
        )
        layout.addLayout(titled_row("Runs", *self.buttons))
        t = self.runsTable = table("runsTable", list(RUN_COLUMNS), multi=True)
        t.itemSelectionChanged.connect(self._on_selection)
        t.itemDoubleClicked.connect(lambda _item: self.show_selected())
        t.itemChanged.connect(self._on_item_changed)
        layout.addWidget(t)
        self.update_buttons()

    # The model's facts, by the names the tab's users know.
    @property
    def live(self) -> dict[int, str]:
        """Runs training here: run id -> "running", "paused", "stopping"."""
        return self.model.here

    @property
    def elsewhere(self) -> dict[int, RunSummary]:
        """Runs training in another process."""
        return self.model.elsewhere

    @property
    def checked(self) -> set[int]:
        """Runs ticked to compare (their curves are drawn)."""
        return self.model.checked

    def _on_change(self, change: RunsChange) -> None:
        match change:
            case RowChanged(run_id=run_id, cells=cells):
                self.update_live_row(run_id, cells)
            case CheckedChanged():
                self._show_checks()
            case SelectionChanged() | StateChanged() | ElsewhereChanged():
                self.update_buttons()

    def _emit(self, signal: Any) -> Any:
        return lambda: signal.emit(self.selected_run_ids()) if self.selected_run_ids() else None

    def show_selected(self) -> None:
        """Draw the selected runs (and tick them): what "Show / compare" and a double click do."""
        ids = self.selected_run_ids()
        if ids:
            self.set_checked(ids)
            self.showRuns.emit(ids)

    def set_checked(self, ids: Sequence[int]) -> None:
        """Tick exactly these runs' boxes (no signal: the caller draws them)."""
        self.model.set_checked(ids)

    def _show_checks(self) -> None:
        table = self.runsTable
        table.blockSignals(True)
        for row in range(table.rowCount()):
            item = table.item(row, Column.RUN)
            if item is not None:
                rid = int(item.data(Qt.ItemDataRole.UserRole))
                state = Qt.CheckState.Checked if rid in self.checked else Qt.CheckState.Unchecked
                if item.checkState() != state:
                    item.setCheckState(state)
        table.blockSignals(False)

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() != Column.RUN:
            return
        rid = int(item.data(Qt.ItemDataRole.UserRole))
        ticked = item.checkState() == Qt.CheckState.Checked
        if ticked == (rid in self.checked):
            return
        self.model.set_checked(self.checked | {rid} if ticked else self.checked - {rid})
        self.showRuns.emit(sorted(self.checked))

    def _icon(self, run_id: int) -> QIcon:
        """A square of the run's colour: the same as its curves'."""
        colour = RUN_COLOURS[(run_id - 1) % len(RUN_COLOURS)]
        if colour not in self._icons:
            pix = QPixmap(10, 10)
            pix.fill(QColor(colour))
            self._icons[colour] = QIcon(pix)
        return self._icons[colour]

    def _emit_one(self, signal: Any) -> Any:
        def fire() -> None:
            ids = self.selected_run_ids()
            if len(ids) == 1:
                signal.emit(ids[0])

        return fire

    # ------------------------------------------------------------------ contents
    def refresh(self, own_pids: set[int] | None = None) -> None:
        """Re-read the runs of the store (keeps the selection). Runs training in a process that is
        not in ``own_pids`` (this window's training children) show as training elsewhere."""
        from studio.tabs.train.follow import Follower

        try:
            runs = self.store.list_runs()
        except Exception as e:  # a closed or broken store: say so, keep the tab alive
            log.exception("cannot list the runs of the store")
            self.status.emit(f"cannot list runs: {e}")
            return
        self.model.set_elsewhere(Follower.elsewhere(runs, own_pids or set()))
        self.set_runs(runs)

    def set_runs(self, runs: Sequence[RunSummary]) -> None:
        """Show ``runs`` (the store's list), keeping the selection."""
        selected = set(self.selected_run_ids())
        try:  # what the checkpoints take on disk, in one query; each run's best checkpoint
            disk = self.store.runs_disk_use([r.id for r in runs])
            best = {r.id: self.store.best_checkpoint(r.id) for r in runs if "eval_score" in r.last_metrics}
        except Exception:  # a store that cannot say: the columns stay empty, the table shows
            log.warning("cannot read the runs' checkpoints (disk use, best)", exc_info=True)
            disk, best = {}, {}
        try:  # each trial's sweep and trial number, in one query
            sweeps = self.store.sweep_of_runs([r.id for r in runs])
        except Exception:  # the same: the sweep column stays empty
            log.warning("cannot read the runs' sweeps", exc_info=True)
            sweeps = {}
        table = self.runsTable
        table.setSortingEnabled(False)
        table.blockSignals(True)  # filling cells is not the user ticking boxes
        table.setRowCount(len(runs))
        for row, r in enumerate(runs):
            cells = self.model.row(r, disk.get(r.id), sweeps.get(r.id))
            b = best.get(r.id)
            for col in Column:
                item = table.item(row, col)
                if item is None:
                    item = QTableWidgetItem()
                    table.setItem(row, col, item)
                item.setText(cells[col])
                item.setData(Qt.ItemDataRole.UserRole, r.id)
                tip = TIPS.get(col, "")
                if col == Column.EVAL and b is not None:
                    tip += f"\nBest: {b.eval_score:,.0f} at episode {b.episode:,} ({b.path.name})"
                item.setToolTip(r.error if col == Column.STATUS and r.error else tip)
                if col == Column.RUN:
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                    item.setCheckState(
                        Qt.CheckState.Checked if r.id in self.checked else Qt.CheckState.Unchecked
                    )
                    item.setIcon(self._icon(r.id))
                    item.setToolTip("Tick to draw this run's curves beside the others")
        table.blockSignals(False)
        self.select_runs([r.id for r in runs if r.id in selected])

    def update_live_row(self, run_id: int, texts: Mapping[Column, str]) -> None:
        """Replace some cells of run ``run_id``'s row: a live run's figures."""
        table = self.runsTable
        for row in range(table.rowCount()):
            item = table.item(row, Column.RUN)
            if item is None or int(item.data(Qt.ItemDataRole.UserRole)) != run_id:
                continue
            for col, text in texts.items():
                cell = table.item(row, col)
                if cell is not None and cell.text() != text:
                    cell.setText(text)
            return

    def refresh_elsewhere(self) -> bool:
        """Re-read the runs that train in other processes and update their rows (moves, time, scores
        go on growing without a click); True when one of them ended (the caller re-reads the whole
        table then: its buttons and its status change)."""
        from studio.tabs.train.follow import LIVE_STATUSES

        ended = False
        for rid in list(self.elsewhere):
            try:
                r = self.store.get_run(rid)
            except (ValueError, sqlite3.Error) as e:  # StoreError: deleted meanwhile, the store closing
                log.warning("run %d, training elsewhere, cannot be read: %s", rid, e)
                ended = True
                continue
            if r.status not in LIVE_STATUSES:
                ended = True
                continue
            self.model.update_elsewhere(r)  # its row follows
        return ended

    def selected_run_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.runsTable.selectedIndexes()})
        out = []
        for row in rows:
            item = self.runsTable.item(row, Column.RUN)
            if item is not None:
                out.append(int(item.data(Qt.ItemDataRole.UserRole)))
        return out

    def select_runs(self, ids: Sequence[int]) -> None:
        table = self.runsTable
        table.blockSignals(True)
        table.clearSelection()
        mode = table.selectionMode()
        table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for row in range(table.rowCount()):
            item = table.item(row, Column.RUN)
            if item is not None and int(item.data(Qt.ItemDataRole.UserRole)) in ids:
                table.selectRow(row)
        table.setSelectionMode(mode)
        table.blockSignals(False)
        self._on_selection()

    def _on_selection(self) -> None:
        self.model.select(self.selected_run_ids())  # the buttons and the tab follow the model

    def update_buttons(self) -> None:
        ids = self.selected_run_ids()
        live = [i for i in ids if i in self.live]
        self.showRunsButton.setEnabled(bool(ids))
        self.runPauseButton.setEnabled(bool(live) and all(self.live[i] != "stopping" for i in live))
        paused = bool(live) and all(self.live[i] == "paused" for i in live)
        self.runPauseButton.setText("Resume" if paused else "Pause")
        away = [i for i in ids if i in self.elsewhere]
        self.runStopButton.setEnabled(bool(live or away) and all(self.live[i] != "stopping" for i in live))
        self.checkpointButton.setEnabled(bool(live))
        self.resumeButton.setEnabled(len(ids) == 1 and not live and not away)
        self.useInPlayButton.setEnabled(len(ids) == 1)
        self.useInArenaButton.setEnabled(bool(ids))
        self.exportButton.setEnabled(len(ids) == 1)

    # ------------------------------------------------------------------ actions on stored runs
    def _show_error(self, title: str, text: str) -> None:
        if self.error_box is not None:
            self.error_box.close()
        self.error_box = error_box(self, title, text, name="trainErrorBox")

    def checkpoint_of(self, run_id: int) -> tuple[str, str] | None:
        """(agent, checkpoint path) of a run: its best checkpoint by greedy evaluation when it has one
        (the strongest player it made), else its last; None (and says why) when it has no file."""
        try:
            summary = self.store.get_run(run_id)
            best = self.store.best_checkpoint(run_id)
            path = (
                best.path if best is not None and best.path.exists() else self.store.last_checkpoint(run_id)
            )
        except Exception as e:  # a store that cannot say: the box says why, the log has the traceback
            log.warning("cannot find run %d's checkpoint", run_id, exc_info=True)
            self._show_error("No checkpoint", str(e))
            return None
        if path is None or not Path(path).exists():
            self._show_error("No checkpoint", f"Run {run_id} has no checkpoint file to use.")
            return None
        return summary.agent, str(path)

    def use_in_play(self, run_id: int) -> bool:
        found = self.checkpoint_of(run_id)
        if found is not None:
            self.useInPlay.emit(*found)
        return found is not None

    def use_in_arena(self, run_id: int) -> bool:
        found = self.checkpoint_of(run_id)
        if found is not None:
            self.useInArena.emit(*found)
        return found is not None

    def use_selected_in_play(self) -> None:
        ids = self.selected_run_ids()
        if len(ids) == 1:
            self.use_in_play(ids[0])

    def use_selected_in_arena(self) -> None:
        for rid in self.selected_run_ids():
            self.use_in_arena(rid)

    def export_csv(self, run_id: int, path: str | Path) -> Path:
        """Write run ``run_id``'s metrics to ``path`` as CSV."""
        out = write_metrics_csv(self.store.run_metrics(run_id), path)
        self.status.emit(f"run {run_id} metrics saved to {out}")
        return out

    def export_tensorboard(self, run_id: int, directory: str | Path) -> Path:
        """Write run ``run_id``'s metrics as TensorBoard event files under ``directory``."""
        out = export_run_tensorboard(self.store, run_id, directory)
        self.status.emit(f"run {run_id} written for TensorBoard: tensorboard --logdir {Path(directory)}")
        return out

    def export_selected_tensorboard(self) -> None:
        ids = self.selected_run_ids()
        if len(ids) != 1:
            return
        directory = QFileDialog.getExistingDirectory(self, "Export for TensorBoard (a log folder)")
        if directory:
            try:
                self.export_tensorboard(ids[0], directory)
            except Exception as e:  # no tensorboard, a folder we cannot write, a store that cannot say
                log.exception("exporting run %d for TensorBoard to %s failed", ids[0], directory)
                self._show_error("Export failed", str(e))

    def export_selected(self) -> None:
        ids = self.selected_run_ids()
        if len(ids) != 1:
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export run metrics", f"run-{ids[0]}-metrics.csv", "CSV files (*.csv)"
        )
        if path:
            try:
                self.export_csv(ids[0], path)
            except Exception as e:  # a file we cannot write, a store that cannot say
                log.exception("exporting run %d's metrics to %s failed", ids[0], path)
                self._show_error("Export failed", str(e))
