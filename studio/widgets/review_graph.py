"""The evaluation graph of a reviewed game (pyqtgraph): the Replay tab draws it under the board.

Two panels sharing the move axis, both in the review's one unit (points): on top the expected final
score of each position as the reviewer sees it (:meth:`studio.services.review.GameReview.curve`),
with a marker on every inaccuracy, mistake and blunder in its grade's colour; below, the expected
points each move gave up against the reviewer's best move, as bars coloured by grade. In a game the
person shared with agents, the agents' stretches of moves are shaded grey and named (their markers
and bars are grey: they are not the person's). A vertical line marks the position shown; a click
anywhere on either panel asks for that move (:attr:`ReviewGraph.moveClicked`).
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
#: Markers and bars of moves that are not the person's (an agent's, under Watch).
OTHER_COLOUR = "#b5b5b5"
SHADE_COLOUR = (120, 120, 120, 40)
#: The axes' titles: what they show, in the review's unit.
VALUE_AXIS = "expected final score (pts)"
LOSS_AXIS = "points given up"


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
        self.counted: list[bool] = []
        self.players: list[str] = []
        self.shades: list[Any] = []
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
        self.counted = [bool(getattr(g, "counted", True)) for g in moves]
        self.players = [str(getattr(g, "player", "")) for g in moves]
        losses = [g.loss for g in moves]
        self.losses = np.nan_to_num(np.asarray(losses, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        x = np.arange(len(self.values), dtype=np.float64)
        self.valueCurve.setData(x, self.values)
        marked = [i for i, g in enumerate(self.grades) if g in MARKED]
        self.markers.setData(
            x=[float(i) for i in marked],
            y=[float(self.values[i]) for i in marked],
            size=[MARKED[self.grades[i]] for i in marked],
            brush=[QBrush(QColor(self._colour(i))) for i in marked],
            data=marked,
        )
        self.lossBars.setOpts(
            x=x,
            height=self.losses,
            width=0.8,
            brushes=[QBrush(QColor(self._colour(i))) for i in range(len(self.grades))],
        )
        self._shade_others()
        self.valuePlot.setLabel("left", VALUE_AXIS)
        self.lossPlot.setLabel("left", LOSS_AXIS)
        span = max(self.n_moves, 1)
        self.valuePlot.setXRange(-0.5, span - 0.5, padding=0.01)
        self.valuePlot.enableAutoRange(axis="y")
        self.lossPlot.enableAutoRange(axis="y")
        self.set_position(self.position)

    def _colour(self, i: int) -> str:
        if i < len(self.counted) and not self.counted[i]:
            return OTHER_COLOUR
        return GRADE_COLOURS.get(self.grades[i], "#999")

    def _shade_others(self) -> None:
        """Grey bands over the stretches of moves that are not the person's, each named by its player."""
        for item in self.shades:
            self.valuePlot.removeItem(item)
        self.shades = []
        i, n = 0, len(self.counted)
        while i < n:
            if self.counted[i]:
                i += 1
                continue
            j = i
            while j < n and not self.counted[j] and self.players[j] == self.players[i]:
                j += 1
            band = pg.LinearRegionItem(
                (i - 0.5, j - 0.5), movable=False, brush=pg.mkBrush(*SHADE_COLOUR), pen=pg.mkPen(None)
            )
            band.setZValue(-10)
            label = pg.TextItem(self.players[i], color="#666", anchor=(0, 0))
            self.valuePlot.addItem(band, ignoreBounds=True)
            self.valuePlot.addItem(label, ignoreBounds=True)
            top = float(np.nanmax(self.values)) if len(self.values) else 0.0
            label.setPos(i - 0.5, top)
            self.shades += [band, label]
            i = j

    @property
    def shaded(self) -> list[tuple[int, int, str]]:
        """The grey stretches drawn: (first move, last move + 1, player)."""
        out = []
        for band, label in zip(self.shades[::2], self.shades[1::2]):
            lo, hi = band.getRegion()
            out.append((round(lo + 0.5), round(hi + 0.5), label.toPlainText()))
        return out

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
