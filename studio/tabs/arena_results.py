"""The Arena tab's results: a table of each contestant's figures above, seed 004's "max tile reached at
least" table beside its bar chart below. A view of the run's rows: :meth:`ResultsView.show_rows`
draws them as they come (cells change in place, so the selection stays while rows update live)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from agents.arena import tile_thresholds
from studio.services.arena import ContestantRow
from studio.tabs.common import button, table, titled_row
from studio.text import duration
from studio.widgets.curves import RUN_COLOURS, GridAxis, show_grid

RESULT_COLUMNS = (
    "Agent",
    "Games",
    "Mean ± 95% CI",
    "Median",
    "Max score",
    "Moves / game",
    "Best tile",
    "Time",
    "Status",
)


def _tile_tick(tile: int) -> str:
    """Axis labels that fit under grouped bars: 1024 -> 1k, 65536 -> 64k."""
    return f"{tile // 1024}k" if tile >= 1024 else str(tile)


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else duration(s)


def _set_cell(t: QTableWidget, row: int, col: int, text: str, right: bool = False) -> QTableWidgetItem:
    """Change a cell's text in place (no flicker, the selection stays while rows update live)."""
    item = t.item(row, col)
    if item is None:
        item = QTableWidgetItem(text)
        if right:
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        t.setItem(row, col, item)
    elif item.text() != text:
        item.setText(text)
    return item


def _figures(state: ContestantRow) -> tuple[str, ...]:
    """A row's figures, Games to Time (blank before its first finished game)."""
    r = state.result
    if r is None or not r.games:
        return ("",) * 7
    return (
        f"{r.games:,}",
        r.mean_text,
        f"{r.median_score:,.0f}",
        f"{r.max_score:,}",
        f"{r.moves_per_game:,.1f}",
        f"{r.best_tile:,}",
        _seconds(state.elapsed),
    )


class ResultsView(QSplitter):
    """Results table above; seed 004's max-tile table beside its bar chart below.
    ``bestGameAsked(row)``: a result was double-clicked, or Replay best game pressed on it."""

    bestGameAsked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self.resultsTable = table("resultsTable", list(RESULT_COLUMNS))
        self.resultsTable.setToolTip(
            "Mean ± 95% CI: the mean score and its 95% confidence interval (1.96·s/√n).\n"
            "Double-click: replay this agent's best game"
        )
        header = self.resultsTable.horizontalHeader()
        header.setStretchLastSection(False)
        # Every figure as wide as it needs; the agent's name takes what is left (elided, full in its tooltip).
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(40)
        self.resultsTable.itemDoubleClicked.connect(lambda item: self.bestGameAsked.emit(item.row()))
        self.replayButton = button(
            "Replay best game",
            "replayButton",
            lambda: self.bestGameAsked.emit(self.resultsTable.currentRow()),
            "Open the selected agent's highest-scoring game in Replay",
        )
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addLayout(titled_row("Results", self.replayButton))
        tl.addWidget(self.resultsTable)
        self.addWidget(top)
        self.addWidget(self._build_bottom())
        self.setStretchFactor(0, 1)
        self.setStretchFactor(1, 3)
        self.setSizes([200, 520])

    def _build_bottom(self) -> QSplitter:
        """Seed 004's table beside its bar chart."""
        bottom = QSplitter(Qt.Orientation.Horizontal)
        self.bottomSplitter = bottom
        self.tileTable = table("tileTable", ["Max tile"])
        self.tileTable.setToolTip(
            "Games whose largest tile was at least this one (seed 004's table): a game that made 4096 reached 2048"
        )
        self.tileTable.horizontalHeader().setStretchLastSection(False)
        mid = QWidget()
        ml = QVBoxLayout(mid)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.addWidget(QLabel("<b>Max tile reached at least</b> (games)"))
        ml.addWidget(self.tileTable)
        bottom.addWidget(mid)
        self.barChart = pg.PlotWidget(axisItems={"left": GridAxis("left"), "bottom": GridAxis("bottom")})
        self.barChart.setObjectName("barChart")
        self.barChart.setBackground("w")
        self.barChart.setTitle("Max tile reached at least (% of games)", size="9pt")
        self.barChart.setLabel("left", "% of games")
        show_grid(self.barChart, x=False, y=True, alpha=0.2)
        self.barChart.setMouseEnabled(x=False, y=False)
        self.barChart.setLabel("bottom", "max tile reached at least")
        # One line of names across the top, above the 100 % line (bars reach it on the left).
        self.barChart.addLegend(offset=(10, 2), labelTextSize="8pt", colCount=6)
        self.barChart.setMinimumHeight(180)
        bottom.addWidget(self.barChart)
        bottom.setStretchFactor(0, 2)
        bottom.setStretchFactor(1, 3)
        bottom.setSizes([380, 560])
        return bottom

    def show_rows(self, rows: Sequence[ContestantRow], results: Sequence[Any]) -> None:
        """Draw the run's ``rows`` in the table and the ``results`` with finished games in the tile
        table and the chart."""
        t = self.resultsTable
        t.setRowCount(len(rows))
        last = len(RESULT_COLUMNS) - 1
        for row, state in enumerate(rows):
            for col, text in enumerate((state.spec.display, *_figures(state), state.status_text)):
                item = _set_cell(t, row, col, text, right=0 < col < last)
                if col == 0:
                    item.setToolTip(state.spec.checkpoint or state.spec.display)
                elif col == last:
                    item.setToolTip(state.reason)  # the whole reason where the column cuts it
        thresholds = tile_thresholds(*(r.max_tiles for r in results))
        self._fill_tile_table(results, thresholds)
        self._fit_tile_table()
        self._draw_bars(results, thresholds)

    def _fill_tile_table(self, results: Sequence[Any], thresholds: Sequence[int]) -> None:
        """Seed 004's layout: one row per tile, one column per agent, games that reached at least it."""
        tt = self.tileTable
        tt.setColumnCount(1 + len(results))
        tt.setHorizontalHeaderLabels(["Max tile"] + [r.label for r in results])
        tt.setRowCount(len(thresholds))
        shares = [r.tile_at_least(thresholds) for r in results]
        for row, tile in enumerate(thresholds):
            _set_cell(tt, row, 0, f"≥ {tile:,}")
            for col, (r, share) in enumerate(zip(results, shares), start=1):
                count = round(share[tile] * r.games)
                text = f"{count:,}  ({100.0 * share[tile]:.0f}%)" if count else "0"
                _set_cell(tt, row, col, text, right=True)

    def _fit_tile_table(self) -> None:
        """Give the tile table the width its columns need (up to 60 % of the pane), the chart the rest."""
        tt = self.tileTable
        tt.resizeColumnsToContents()
        need = sum(tt.horizontalHeader().sectionSize(c) for c in range(tt.columnCount()))
        need += (
            2 * tt.frameWidth() + (tt.verticalScrollBar().sizeHint().width() if tt.rowCount() > 8 else 0) + 4
        )
        sizes = self.bottomSplitter.sizes()
        total = sum(sizes)
        if total > 0 and sizes[0] < need:
            left = min(need, int(total * 0.6))
            self.bottomSplitter.setSizes([left, total - left])

    def _draw_bars(self, results: Sequence[Any], thresholds: Sequence[int]) -> None:
        chart = self.barChart
        chart.clear()
        legend = chart.getPlotItem().legend
        if legend is not None:
            legend.clear()
        n = len(results)
        if not n or not thresholds:
            return
        width = 0.8 / n
        x = np.arange(len(thresholds), dtype=float)
        for k, r in enumerate(results):
            shares = r.tile_at_least(thresholds)
            colour = RUN_COLOURS[k % len(RUN_COLOURS)]
            bars = pg.BarGraphItem(
                x=x - 0.4 + width * (k + 0.5),
                height=np.array([100.0 * shares[t] for t in thresholds]),
                width=width * 0.95,
                brush=colour,
                pen=pg.mkPen(colour),
                name=r.label,  # the plot's legend picks the name up by itself
            )
            chart.addItem(bars)
        chart.getAxis("bottom").setTicks([[(i, _tile_tick(t)) for i, t in enumerate(thresholds)]])
        chart.getAxis("left").setTicks([[(v, str(v)) for v in range(0, 101, 20)]])
        chart.setXRange(-0.6, len(thresholds) - 0.4, padding=0)
        chart.setYRange(0, 100 + 24 * (1 + (n - 1) // 6), padding=0)  # room for the legend above 100 %
