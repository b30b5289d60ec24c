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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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

from engine.store import GameStore, RunSummary, format_time
from engine.store.model import format_size
from studio.services.runs import export_run_tensorboard, write_metrics_csv
from studio.tabs.common import button, error_box, table, titled_row
from studio.text import duration
from studio.widgets.curves import RUN_COLOURS

log = logging.getLogger(__name__)

#: Tooltips of the columns that need a word of explanation (by column).
TIPS = {
    7: "Mean score of the latest greedy evaluation (fixed games, no exploration); "
    "the run keeps its best checkpoint",
    8: "What the run's checkpoint files take on disk (the newest few and the best are kept)",
    9: "The run's sweep and its trial number in it (a sweep's trials are ordinary runs)",
}
RUN_COLUMNS = (
    "Run",
    "Agent",
    "Status",
    "Episodes",
    "Moves",
    "Time",
    "Last score",
    "Eval",
    "Disk",
    "Sweep",
    "Started",
)


def _status_text(
    r: RunSummary, live: dict[int, str], elsewhere: dict[int, RunSummary], sweep_live: dict[int, str]
) -> str:
    if r.id in live:
        return live[r.id]
    if r.id in elsewhere and r.id in sweep_live:  # a trial of the window's sweep (its own process)
        return f"{r.status} ({sweep_live[r.id]})"
    if r.id in elsewhere:
        return f"{r.status} elsewhere (pid {r.pid})"
    return r.status + (f": {r.error}" if r.error and r.status == "failed" else "")


class RunsPanel(QWidget):
    """The runs table and its actions. Signals carry run ids; ``live`` marks runs training here."""

    showRuns = Signal(list)
    resumeRun = Signal(int)
    pauseRuns = Signal(list)
    stopRuns = Signal(list)
    checkpointRuns = Signal(list)
    useInPlay = Signal(str, str)
    useInArena = Signal(str, str)
    selectionChanged = Signal()
    status = Signal(str)

    def __init__(self, store: GameStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runsPanel")
        self.store = store
        self.error_box: Any = None
        self.live: dict[int, str] = {}  # run id -> state text ("running", "paused", "stopping")
        self.elsewhere: dict[int, RunSummary] = {}  # runs training in another process
        self.checked: set[int] = set()  # runs ticked to compare (their curves are drawn)
        #: trials of the sweep this window runs: run id -> "sweep 3 #1" (each trains in its own process)
        self.sweep_live: dict[int, str] = {}
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
        self.checked = set(ids)
        table = self.runsTable
        table.blockSignals(True)
        for row in range(table.rowCount()):
            item = table.item(row, 0)
            if item is not None:
                rid = int(item.data(Qt.ItemDataRole.UserRole))
                state = Qt.CheckState.Checked if rid in self.checked else Qt.CheckState.Unchecked
                if item.checkState() != state:
                    item.setCheckState(state)
        table.blockSignals(False)

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() != 0:
            return
        rid = int(item.data(Qt.ItemDataRole.UserRole))
        ticked = item.checkState() == Qt.CheckState.Checked
        if ticked == (rid in self.checked):
            return
        if ticked:
            self.checked.add(rid)
        else:
            self.checked.discard(rid)
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
        self.elsewhere = Follower.elsewhere(runs, own_pids or set())
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
            score = r.last_metrics.get("score")
            evaluated = r.last_metrics.get("eval_score")  # the latest greedy evaluation's mean score
            started = format_time(r.created)[:16]
            cells = (
                str(r.id),
                r.agent,
                _status_text(r, self.live, self.elsewhere, self.sweep_live),
                f"{r.episodes:,}",
                f"{r.steps:,}",
                duration(r.elapsed),
                "" if score is None else f"{score:,.0f}",
                "" if evaluated is None else f"{evaluated:,.0f}",
                format_size(disk[r.id]) if disk.get(r.id) else "",
                f"{sweeps[r.id][0]} #{sweeps[r.id][1]}" if r.id in sweeps else "",
                started,
            )
            for col, text in enumerate(cells):
                item = table.item(row, col)
                if item is None:
                    item = QTableWidgetItem()
                    table.setItem(row, col, item)
                item.setText(text)
                item.setData(Qt.ItemDataRole.UserRole, r.id)
                tip = TIPS.get(col, "")
                b = best.get(r.id)
                if col == 7 and b is not None:
                    tip += f"\nBest: {b.eval_score:,.0f} at episode {b.episode:,} ({b.path.name})"
                item.setToolTip(r.error if col == 2 and r.error else tip)
                if col == 0:
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                    item.setCheckState(
                        Qt.CheckState.Checked if r.id in self.checked else Qt.CheckState.Unchecked
                    )
                    item.setIcon(self._icon(r.id))
                    item.setToolTip("Tick to draw this run's curves beside the others")
        table.blockSignals(False)
        self.select_runs([r.id for r in runs if r.id in selected])

    def update_live_row(self, run_id: int, texts: dict[int, str]) -> None:
        """Replace some cells (column -> text) of run ``run_id``'s row: a live run's figures."""
        table = self.runsTable
        for row in range(table.rowCount()):
            item = table.item(row, 0)
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
            self.elsewhere[rid] = r
            score = r.last_metrics.get("score")
            evaluated = r.last_metrics.get("eval_score")
            self.update_live_row(
                rid,
                {
                    2: _status_text(r, self.live, self.elsewhere, self.sweep_live),
                    3: f"{r.episodes:,}",
                    4: f"{r.steps:,}",
                    5: duration(r.elapsed),
                    6: "" if score is None else f"{score:,.0f}",
                    7: "" if evaluated is None else f"{evaluated:,.0f}",
                },
            )
        return ended

    def selected_run_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.runsTable.selectedIndexes()})
        out = []
        for row in rows:
            item = self.runsTable.item(row, 0)
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
            item = table.item(row, 0)
            if item is not None and int(item.data(Qt.ItemDataRole.UserRole)) in ids:
                table.selectRow(row)
        table.setSelectionMode(mode)
        table.blockSignals(False)
        self._on_selection()

    def _on_selection(self) -> None:
        self.update_buttons()
        self.selectionChanged.emit()

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
