"""The Arena tab: N games of each chosen agent or checkpoint, side by side.

The games are played by :func:`agents.arena.evaluate` (several processes) from a
:class:`studio.worker.CallWorker` thread, so the window stays live; each game lands in the store
(``source="evaluation"``) as it finishes. Results: a table of mean / median / max score, a max-tile
distribution table laid out like seed 004's (rows: max tile; columns: agents; cells: games) and a
bar chart of the same distribution. Double-click a result to replay that agent's best game.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio.tabs.common import button, panes, spin
from studio.widgets.curves import RUN_COLOURS
from studio.worker import CallWorker

RESULT_COLUMNS = (
    "Agent",
    "Games",
    "Mean score",
    "Median score",
    "Max score",
    "Moves / game",
    "Best tile",
    "Time",
)
SPEC_ROLE = Qt.ItemDataRole.UserRole


class Cancelled(Exception):
    """Raised from the progress callback to end an evaluation early (the pool is terminated)."""


class ArenaTab(QWidget):
    """Pick contestants and a number of games, run, compare. Signals: ``status(str)``, ``gamesChanged()``,
    ``openInReplay(game_id)``, ``evaluationFinished(ok)``."""

    status = Signal(str)
    gamesChanged = Signal()
    openInReplay = Signal(int)
    evaluationFinished = Signal(bool)

    def __init__(self, store: Any, settings: QSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("arenaTab")
        self.store = store
        self.settings = settings
        self.worker: CallWorker | None = None
        self.results: list[Any] = []  # agents.arena.EvalResult, in contestant order
        self.error_box: QMessageBox | None = None
        self._cancel = False
        self._build()
        self._fill_agents()
        self._update_buttons()

    # ================================================================== building
    def _build(self) -> None:
        panes(self, self._build_left(), self._build_right(), left_width=300)

    def _build_left(self) -> QWidget:
        """Contestants, the games settings, Run / Cancel and the progress."""
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        box = QGroupBox("Contestants")
        bl = QVBoxLayout(box)
        self.entryList = QListWidget()
        self.entryList.setObjectName("entryList")
        self.entryList.setToolTip("Ticked entries play; untick to leave one out")
        self.entryList.itemSelectionChanged.connect(self._update_buttons)
        self.entryList.itemChanged.connect(lambda _i: self._update_buttons())
        bl.addWidget(self.entryList)
        add_row = QHBoxLayout()
        self.agentPicker = QComboBox()
        self.agentPicker.setObjectName("agentPicker")
        add_row.addWidget(self.agentPicker, 1)
        self.addAgentButton = button(
            "Add", "addAgentButton", self._add_picked, "Add this agent (default settings)"
        )
        add_row.addWidget(self.addAgentButton)
        bl.addLayout(add_row)
        row2 = QHBoxLayout()
        self.addCheckpointButton = button(
            "Add checkpoint…",
            "addCheckpointButton",
            self._add_checkpoint_dialog,
            "Add a trained agent from its file",
        )
        self.removeButton = button(
            "Remove", "removeButton", self.remove_selected, "Remove the selected entries"
        )
        row2.addWidget(self.addCheckpointButton)
        row2.addWidget(self.removeButton)
        bl.addLayout(row2)
        ll.addWidget(box, 1)

        settings_box = QGroupBox("Games")
        fl = QFormLayout(settings_box)
        self.gamesSpin = spin("gamesSpin", 1, 1_000_000, 100, "Games per contestant")
        self.seedSpin = spin("seedSpin", 0, 2**31 - 1, 0, "Seed: game i gets the same spawns for every agent")
        self.workersSpin = spin(
            "workersSpin",
            1,
            max(1, os.cpu_count() or 1),
            min(4, os.cpu_count() or 1),
            "Processes playing in parallel",
        )
        fl.addRow("Games each", self.gamesSpin)
        fl.addRow("Seed", self.seedSpin)
        fl.addRow("Processes", self.workersSpin)
        ll.addWidget(settings_box)

        buttons = QHBoxLayout()
        self.runButton = button("Run", "runButton", self.run, "Play the games (in the background)")
        self.cancelButton = button("Cancel", "cancelButton", self.cancel, "Stop after the games in flight")
        buttons.addWidget(self.runButton)
        buttons.addWidget(self.cancelButton)
        ll.addLayout(buttons)
        self.progressBar = QProgressBar()
        self.progressBar.setObjectName("arenaProgress")
        self.progressBar.setRange(0, 1000)
        ll.addWidget(self.progressBar)
        self.progressLabel = QLabel("")
        self.progressLabel.setObjectName("arenaProgressLabel")
        self.progressLabel.setWordWrap(True)
        ll.addWidget(self.progressLabel)
        left.setMinimumWidth(280)
        return left

    def _build_right(self) -> QSplitter:
        """Results table above; seed 004's max-tile table beside its bar chart below."""
        right = QSplitter(Qt.Orientation.Vertical)
        self.resultsTable = self._table("resultsTable", list(RESULT_COLUMNS))
        self.resultsTable.setToolTip("Double-click: replay this agent's best game")
        self.resultsTable.itemDoubleClicked.connect(lambda item: self.open_best_game(item.row()))
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(QLabel("<b>Results</b>"))
        head.addStretch(1)
        self.replayButton = button(
            "Replay best game",
            "replayButton",
            lambda: self.open_best_game(self.resultsTable.currentRow()),
            "Open the selected agent's highest-scoring game in Replay",
        )
        head.addWidget(self.replayButton)
        tl.addLayout(head)
        tl.addWidget(self.resultsTable)
        right.addWidget(top)
        # Below: seed 004's table beside its bar chart.
        bottom = QSplitter(Qt.Orientation.Horizontal)
        self.tileTable = self._table("tileTable", ["Max tile"])
        self.tileTable.setToolTip("Games whose largest tile was this one (seed 004's table)")
        self.tileTable.horizontalHeader().setStretchLastSection(False)
        mid = QWidget()
        ml = QVBoxLayout(mid)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.addWidget(QLabel("<b>Max tile reached</b> (games)"))
        ml.addWidget(self.tileTable)
        bottom.addWidget(mid)
        self.barChart = pg.PlotWidget()
        self.barChart.setObjectName("barChart")
        self.barChart.setBackground("w")
        self.barChart.setTitle("Max tile reached (% of games)", size="9pt")
        self.barChart.setLabel("left", "% of games")
        self.barChart.showGrid(y=True, alpha=0.2)
        self.barChart.setMouseEnabled(x=False, y=False)
        self.barChart.addLegend(offset=(10, 5), labelTextSize="8pt")
        self.barChart.setMinimumHeight(180)
        bottom.addWidget(self.barChart)
        bottom.setStretchFactor(0, 2)
        bottom.setStretchFactor(1, 3)
        bottom.setSizes([380, 560])
        right.addWidget(bottom)
        right.setStretchFactor(0, 1)
        right.setStretchFactor(1, 3)
        right.setSizes([200, 520])
        return right

    def _table(self, name: str, headers: list[str]) -> QTableWidget:
        t = QTableWidget(0, len(headers))
        t.setObjectName(name)
        t.setHorizontalHeaderLabels(headers)
        t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        t.verticalHeader().hide()
        t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        t.horizontalHeader().setStretchLastSection(True)
        return t

    def _fill_agents(self) -> None:
        from agents.registry import agent_names

        self.agentPicker.clear()
        for name in agent_names():
            self.agentPicker.addItem(name, name)
        idx = self.agentPicker.findData("random")
        self.agentPicker.setCurrentIndex(max(0, idx))

    # ================================================================== contestants
    def _add_entry(self, spec: Any) -> QListWidgetItem:
        for i in range(self.entryList.count()):
            item = self.entryList.item(i)
            if item.data(SPEC_ROLE) == spec:
                item.setCheckState(Qt.CheckState.Checked)
                return item
        item = QListWidgetItem(spec.display)
        item.setData(SPEC_ROLE, spec)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked)
        item.setToolTip(spec.checkpoint or f"registered agent {spec.name} with its default settings")
        self.entryList.addItem(item)
        self._update_buttons()
        return item

    def add_agent(self, name: str, config: dict[str, Any] | None = None) -> None:
        """Add registered agent ``name`` (default config unless given)."""
        from agents.spec import AgentSpec

        self._add_entry(AgentSpec(name=name, config=dict(config or {})))

    def add_checkpoint(self, agent: str | None, path: str | Path) -> None:
        """Add a checkpoint file (what Train's "Use in Arena" sends)."""
        from agents.spec import AgentSpec

        p = Path(path)
        # Shown as "ntuple (run-2)" for a run's checkpoint (AgentSpec.display); the full path is in the tooltip.
        self._add_entry(AgentSpec.from_checkpoint(p, agent))
        self.status.emit(f"{p.name} added to the arena")

    def use_agent(self, agent: str, checkpoint: str = "") -> None:
        """Train's "Use in Arena" (routed by the main window): add the run's checkpoint and come forward."""
        if checkpoint:
            self.add_checkpoint(agent, checkpoint)
        else:
            self.add_agent(agent)
        # Bring this tab to the front of whichever QTabWidget holds it (the main window's).
        w = self.parentWidget()
        while w is not None:
            if isinstance(w, QTabWidget):
                w.setCurrentWidget(self)
                break
            w = w.parentWidget()

    def _add_picked(self) -> None:
        name = self.agentPicker.currentData()
        if name:
            self.add_agent(str(name))

    def _add_checkpoint_dialog(self) -> None:
        from engine.paths import checkpoints_dir

        start = str(checkpoints_dir(self.store.path.parent)) if hasattr(self.store, "path") else ""
        path, _ = QFileDialog.getOpenFileName(self, "Add a checkpoint", start, "Checkpoints (*.npz)")
        if path:
            self.add_checkpoint(None, path)

    def remove_selected(self) -> None:
        for item in self.entryList.selectedItems():
            self.entryList.takeItem(self.entryList.row(item))
        self._update_buttons()

    def contestants(self) -> list[Any]:
        """The ticked entries' AgentSpecs, in list order."""
        out = []
        for i in range(self.entryList.count()):
            item = self.entryList.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(item.data(SPEC_ROLE))
        return out

    # ================================================================== running
    @property
    def is_running(self) -> bool:
        return self.worker is not None and not self.worker.done

    def run(self) -> bool:
        """Evaluate every ticked contestant in the background; False when there is nothing to run."""
        specs = self.contestants()
        if self.is_running or not specs:
            return False
        games, seed, workers = self.gamesSpin.value(), self.seedSpin.value(), self.workersSpin.value()
        db_path = self.store.path
        self._cancel = False
        total = games * len(specs)

        def job(report: Callable[..., None]) -> list[Any]:
            from agents.arena import evaluate
            from engine.store import GameStore

            results = []
            with GameStore(db_path) as store:  # the worker thread's own connection
                for k, spec in enumerate(specs):

                    def progress(done: int, n: int, outcome: Any, k: int = k, spec: Any = spec) -> None:
                        if self._cancel:
                            raise Cancelled()
                        report(
                            k * games + done,
                            total,
                            f"{spec.display}: game {done}/{n}, score {outcome.score:,}",
                        )

                    try:
                        results.append(evaluate(spec, games, seed, workers, store=store, progress=progress))
                    except Cancelled:
                        break
            return results

        self.results = []
        self._show_results()
        if self.worker is not None:
            self.worker.deleteLater()  # the previous evaluation's (finished) worker
        self.worker = CallWorker(job, parent=self)
        self.worker.progress.connect(self._on_progress)
        self.worker.result.connect(self._on_result)
        self.worker.error.connect(self._on_error)
        self.worker.finished.connect(self._on_finished)
        self.worker.start()
        self.progressBar.setValue(0)
        self.progressLabel.setText(f"Starting {workers} process{'es' if workers > 1 else ''}…")
        self.status.emit(f"arena: {len(specs)} contestant(s) × {games} games")
        self._update_buttons()
        return True

    def cancel(self) -> None:
        """End early: the games in flight finish, the rest are skipped (what finished is shown)."""
        if self.is_running:
            self._cancel = True
            self.progressLabel.setText("Cancelling…")

    def wait_finished(self, timeout_ms: int = 120_000) -> bool:
        from PySide6.QtWidgets import QApplication

        if self.worker is None:
            return True
        ok = self.worker.wait(timeout_ms)
        QApplication.processEvents()
        return ok

    def mark_dirty(self) -> None:
        """Nothing to re-read: the arena lists its own contestants and results."""

    def shutdown(self) -> None:
        if self.is_running:
            self.cancel()
            self.wait_finished(60_000)

    def _on_progress(self, done: float, total: float, text: str) -> None:
        if total > 0:
            self.progressBar.setValue(round(1000 * done / total))
        self.progressLabel.setText(text)

    def _on_result(self, results: object) -> None:
        self.results = list(results)  # type: ignore[call-overload]
        self._show_results()

    def _on_error(self, message: str) -> None:
        if self.error_box is not None:
            self.error_box.close()
        box = QMessageBox(
            QMessageBox.Icon.Critical, "Arena failed", message, QMessageBox.StandardButton.Ok, self
        )
        box.setObjectName("arenaErrorBox")
        if self.worker is not None and self.worker.traceback:
            box.setDetailedText(self.worker.traceback)
        self.error_box = box
        box.open()
        self.status.emit(f"arena failed: {message}")

    def _on_finished(self) -> None:
        ok = not (self.worker is not None and self.worker.error_message)
        n = sum(r.games for r in self.results)
        if ok:
            self.progressBar.setValue(1000 if not self._cancel else self.progressBar.value())
            self.progressLabel.setText(
                f"{'Cancelled after' if self._cancel else 'Done:'} {n:,} games"
                + (" (in the store)" if n else "")
            )
        if n:
            self.gamesChanged.emit()
        self._update_buttons()
        self.evaluationFinished.emit(ok)

    # ================================================================== results
    def _show_results(self) -> None:
        results = self.results
        t = self.resultsTable
        t.setRowCount(len(results))
        for row, r in enumerate(results):
            cells = (
                r.label,
                f"{r.games:,}",
                f"{r.mean_score:,.1f}",
                f"{r.median_score:,.1f}",
                f"{r.max_score:,}",
                f"{r.moves_per_game:,.1f}",
                f"{int(r.max_tiles.max()):,}",
                f"{r.wall_seconds:.1f} s",
            )
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                t.setItem(row, col, item)
        # Seed 004's layout: one row per max tile, one column per agent, games in the cells.
        tiles = sorted({int(v) for r in results for v in np.unique(r.max_tiles)})
        tt = self.tileTable
        tt.setColumnCount(1 + len(results))
        tt.setHorizontalHeaderLabels(["Max tile"] + [r.label for r in results])
        tt.setRowCount(len(tiles))
        for row, tile in enumerate(tiles):
            item = QTableWidgetItem(f"{tile:,}")
            tt.setItem(row, 0, item)
            for col, r in enumerate(results, start=1):
                count = int(np.sum(r.max_tiles == tile))
                cell = QTableWidgetItem(f"{count:,}  ({100.0 * count / r.games:.0f}%)" if count else "0")
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                tt.setItem(row, col, cell)
        self._draw_bars(tiles)
        self._update_buttons()

    def tile_counts(self) -> dict[str, dict[int, int]]:
        """What the distribution table shows: label -> {max tile: games}."""
        out: dict[str, dict[int, int]] = {}
        for r in self.results:
            values, counts = np.unique(r.max_tiles, return_counts=True)
            out[r.label] = {int(v): int(c) for v, c in zip(values, counts)}
        return out

    def _draw_bars(self, tiles: Sequence[int]) -> None:
        chart = self.barChart
        chart.clear()
        legend = chart.getPlotItem().legend
        if legend is not None:
            legend.clear()
        n = len(self.results)
        if not n or not tiles:
            return
        width = 0.8 / n
        x = np.arange(len(tiles), dtype=float)
        for k, r in enumerate(self.results):
            share = np.array([100.0 * np.mean(r.max_tiles == t) for t in tiles])
            colour = RUN_COLOURS[k % len(RUN_COLOURS)]
            bars = pg.BarGraphItem(
                x=x - 0.4 + width * (k + 0.5),
                height=share,
                width=width * 0.95,
                brush=colour,
                pen=pg.mkPen(colour),
                name=r.label,  # the plot's legend picks the name up by itself
            )
            chart.addItem(bars)
        chart.getAxis("bottom").setTicks([[(i, f"{t:,}") for i, t in enumerate(tiles)]])
        chart.setXRange(-0.6, len(tiles) - 0.4, padding=0)
        chart.setYRange(
            0, 100 * max(float(np.mean(r.max_tiles == t)) for r in self.results for t in tiles) * 1.1 + 1
        )

    def open_best_game(self, row: int) -> int | None:
        """Emit ``openInReplay`` with the highest-scoring stored game of result ``row``."""
        if not (0 <= row < len(self.results)):
            return None
        r = self.results[row]
        if not r.game_ids:
            self.status.emit("these games were not stored")
            return None
        best = int(r.game_ids[int(np.argmax(r.scores))])
        self.openInReplay.emit(best)
        return best

    def _update_buttons(self) -> None:
        running = self.is_running
        self.runButton.setEnabled(not running and bool(self.contestants()))
        self.cancelButton.setEnabled(running)
        self.removeButton.setEnabled(not running and bool(self.entryList.selectedItems()))
        for w in (
            self.addAgentButton,
            self.addCheckpointButton,
            self.agentPicker,
            self.gamesSpin,
            self.seedSpin,
            self.workersSpin,
            self.entryList,
        ):
            w.setEnabled(not running)
        self.replayButton.setEnabled(bool(self.results))
