"""The evaluation graph of a reviewed game (pyqtgraph): the Replay tab draws it under the board.

Two panels sharing the move axis: on top the position's value after each move as the reviewer sees it
(:meth:`studio.services.review.GameReview.curve`: the expected final score for a points reviewer,
else 0..1 over the game), with a marker on every inaccuracy, mistake and blunder in its grade's
colour; below, what each move gave up against the reviewer's best move (expected points for a points
reviewer, else the percentage of the best value), as bars coloured by grade. A vertical line marks the
position shown; a click anywhere on either panel asks for that move (:attr:`ReviewGraph.moveClicked`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPoint, QPointF, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QWidget

from agents.review import BEST, BLUNDER, FORCED, GOOD, INACCURACY, MISTAKE

#: One colour per grade, shared with the Replay tab's verdict line and summary.
GRADE_COLOURS: dict[str, str] = {
    FORCED: "#9e9e9e",
    BEST: "#2e9d57",
    GOOD: "#7cb66b",
    INACCURACY: "#e0a526",
    MISTAKE: "#e8702a",
    BLUNDER: "#d0312d",
}
#: Grades marked on the value curve, and their marker sizes.
MARKED: dict[str, int] = {INACCURACY: 7, MISTAKE: 9, BLUNDER: 11}
CURVE_COLOUR = "#3a7bd5"


class ReviewGraph(pg.GraphicsLayoutWidget):
    """Value per move and the loss per move of one game's review; ``moveClicked(move)`` on a click."""

    moveClicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reviewGraph")
        self.setBackground("w")
        self.setMinimumHeight(150)
        self.n_moves = 0
        self.points = False
        self.values = np.zeros(0)
        self.losses = np.zeros(0)
        self.grades: list[str] = []
        self.valuePlot: Any = self.addPlot(row=0, col=0)
        self.lossPlot: Any = self.addPlot(row=1, col=0)
        self.ci.layout.setRowStretchFactor(0, 3)
        self.ci.layout.setRowStretchFactor(1, 2)
        self.lossPlot.setXLink(self.valuePlot)
        for plot in (self.valuePlot, self.lossPlot):
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.setMouseEnabled(x=False, y=False)
            plot.showGrid(x=True, y=True, alpha=0.15)
            plot.getAxis("left").setWidth(56)
        self.valuePlot.getAxis("bottom").setStyle(showValues=False)
        self.lossPlot.setLabel("bottom", "move")
        self.valueCurve = self.valuePlot.plot([], [], pen=pg.mkPen(CURVE_COLOUR, width=1.5))
        self.markers = pg.ScatterPlotItem(pen=pg.mkPen("#444", width=0.6))
        self.valuePlot.addItem(self.markers)
        self.lossBars = pg.BarGraphItem(x=[], height=[], width=0.8, pen=pg.mkPen(None))
        self.lossPlot.addItem(self.lossBars)
        self.cursors = [
            pg.InfiniteLine(
                pos=0, angle=90, movable=False, pen=pg.mkPen("#555", width=1, style=Qt.PenStyle.DashLine)
            )
            for _ in range(2)
        ]
        self.valuePlot.addItem(self.cursors[0], ignoreBounds=True)
        self.lossPlot.addItem(self.cursors[1], ignoreBounds=True)
        self.position = 0
        self.scene().sigMouseClicked.connect(self._on_click)
        self.set_review(None)

    # ------------------------------------------------------------------ data
    @property
    def n_points(self) -> int:
        """Reviewed moves drawn (the value curve's points)."""
        return len(self.values)

    def set_review(self, review: Any, n_moves: int | None = None) -> None:
        """Draw ``review`` (a :class:`~studio.services.review.GameReview`, maybe unfinished; None: empty)
        over a game of ``n_moves`` moves (default: the review's)."""
        moves = list(review.moves) if review is not None else []
        self.n_moves = int(n_moves if n_moves is not None else (review.n_moves if review is not None else 0))
        self.points = bool(review is not None and review.points)
        self.values = np.asarray(review.curve() if review is not None else [], dtype=np.float64)
        self.grades = [g.grade for g in moves]
        if self.points:
            losses = [g.loss for g in moves]
        else:
            losses = [100.0 * g.relative for g in moves]
        self.losses = np.nan_to_num(np.asarray(losses, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        x = np.arange(len(self.values), dtype=np.float64)
        self.valueCurve.setData(x, self.values)
        marked = [i for i, g in enumerate(self.grades) if g in MARKED]
        self.markers.setData(
            x=[float(i) for i in marked],
            y=[float(self.values[i]) for i in marked],
            size=[MARKED[self.grades[i]] for i in marked],
            brush=[QBrush(QColor(GRADE_COLOURS[self.grades[i]])) for i in marked],
            data=marked,
        )
        self.lossBars.setOpts(
            x=x,
            height=self.losses,
            width=0.8,
            brushes=[QBrush(QColor(GRADE_COLOURS.get(g, "#999"))) for g in self.grades],
        )
        self.valuePlot.setLabel("left", "expected score" if self.points else "value (0..1)")
        self.lossPlot.setLabel("left", "loss (pts)" if self.points else "loss (%)")
        span = max(self.n_moves, 1)
        self.valuePlot.setXRange(-0.5, span - 0.5, padding=0.01)
        self.valuePlot.enableAutoRange(axis="y")
        self.lossPlot.enableAutoRange(axis="y")
        self.set_position(self.position)

    def set_position(self, i: int) -> None:
        """Move the vertical line to position ``i`` (the board before move ``i``)."""
        self.position = int(i)
        for line in self.cursors:
            line.setValue(self.position)

    @property
    def marked_moves(self) -> list[int]:
        """The moves with a marker on the curve (inaccuracies, mistakes, blunders)."""
        return [i for i, g in enumerate(self.grades) if g in MARKED]

    # ------------------------------------------------------------------ clicks
    def point_for_move(self, move: int) -> QPoint:
        """Where, in this widget's coordinates, the value panel shows move ``move`` (a click there
        selects it)."""
        vb = self.valuePlot.getViewBox()
        y = vb.viewRange()[1]
        scene = vb.mapViewToScene(QPointF(float(move), (y[0] + y[1]) / 2))
        return self.mapFromScene(scene)

    def _on_click(self, event: Any) -> None:
        if self.n_moves <= 0:
            return
        pos = event.scenePos()
        for plot in (self.valuePlot, self.lossPlot):
            vb = plot.getViewBox()
            if vb.sceneBoundingRect().contains(pos):
                x = vb.mapSceneToView(pos).x()
                move = max(0, min(round(x), self.n_moves))
                self.moveClicked.emit(move)
                event.accept()
                return
