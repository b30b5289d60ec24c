"""The curves' plots: one :class:`_Panel` per metric group (a header over a pyqtgraph plot) and one
:class:`_Curve` per line drawn on it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from agents.metrics import MetricInfo
from studio.widgets.curves.axes import SIAxis, TileAxis, XExtent, YFlat, flat_pad, show_grid
from studio.widgets.curves.decimate import PeakDecimator, points_to_draw
from studio.widgets.curves.legend import _metric_colour
from studio.widgets.curves.lines import metric_lines
from studio.widgets.curves.series import RunSeries
from studio.widgets.curves.xaxis import plot_x_range

#: A raw (unsmoothed, not averaged) series of at most this many points is drawn with a dot on each
#: point: such a series is a few separate measurements (a greedy evaluation every ten minutes), and a
#: bare line through two or three of them reads as a trend that was never measured in between.
MARKER_POINTS = 60
#: Object names of the standard panels; the others are the :func:`_slug` of their group.
STANDARD_PLOTS = {"Score": "scorePlot", "Max tile": "maxTilePlot", "Speed": "speedPlot"}


def _slug(title: str) -> str:
    """Object name of a group's plot: "Loss" -> "lossPlot", "Mean Q" -> "meanQPlot", "TD error" -> "tdErrorPlot"."""
    words = re.findall(r"[A-Za-z0-9]+", title) or ["metric"]
    return words[0].lower() + "".join(w[:1].upper() + w[1:] for w in words[1:]) + "Plot"


@dataclass
class _Panel:
    """One plot: a group of metrics on one axis, with its title and legend in a row above the data."""

    name: str
    title: str
    infos: list[MetricInfo]
    box: QWidget
    header: QLabel
    plot: pg.PlotWidget
    transform: str = ""  # "log2": tiles
    log_y: bool = False
    log_x: bool = False
    legend: list[str] = field(default_factory=list)  # names of the series (see legend_names)
    entries: list[str] = field(default_factory=list)  # what the header lists (see panel_legend)
    shown: bool = True
    extent: XExtent = field(default_factory=XExtent)  # the shared x extent's item in this plot
    flat: YFlat = field(default_factory=YFlat)  # a readable y range while every series is flat

    @property
    def kind(self) -> str:
        return self.infos[0].kind if self.infos else "other"

    def reset(self, infos: list[MetricInfo], x_axis: str, x_title: str) -> None:
        """Empty the plot for curves drawn afresh (same group, maybe another x axis)."""
        self.infos = infos
        self.plot.clear()
        self.plot.addItem(self.extent)  # clear() took it out with the curves
        self.plot.addItem(self.flat)
        bottom = self.plot.getPlotItem().getAxis("bottom")
        if isinstance(bottom, SIAxis):
            bottom.time_axis = x_axis == "elapsed"
            bottom.picture = None
            bottom.update()
        self.plot.setLabel("bottom", x_title)

    def set_log(self, log_x: bool, log_y: bool, x_title: str) -> None:
        """Log axes as asked (nothing done when they already are)."""
        if (log_y, log_x) != (self.log_y, self.log_x):
            self.log_y, self.log_x = log_y, log_x
            self.plot.getPlotItem().setLogMode(x=log_x, y=log_y)
            self.plot.setLabel("bottom", x_title)

    def flatten(self, value: float | None) -> None:
        """Every series of the plot has the one value ``value`` (None: not so): pad its y range."""
        if value is None or self.transform == "log2":  # tiles: the tile axis labels whole tiles
            self.flat.set_range(math.nan, math.nan)
        else:
            self.flat.set_range(*flat_pad(value, self.log_y))

    def span(self, extent: tuple[float, float, float]) -> None:
        """Make the plot's auto range span ``extent`` (see :func:`data_x_extent`) on x."""
        self.extent.set_range(*plot_x_range(extent, self.log_x))

    def push(self, curves: list[_Curve]) -> bool:
        """Give this plot's curves (of ``curves``) their new points; False when none moved.

        While the plot follows the data (auto range), its curves come from incremental decimators,
        so this costs O(plot width) per curve. Once the user zooms or pans, the visible slice is
        decimated afresh (O(visible points)) whenever the range or the data changes.
        """
        vb = self.plot.getPlotItem().getViewBox()
        xr: tuple[float, float] | None = None
        if not vb.autoRangeEnabled()[0]:  # zoomed or panned: not following the data
            lo, hi = vb.viewRange()[0]
            xr = (10.0**lo, 10.0**hi) if self.log_x else (lo, hi)
        changed = False
        for c in curves:
            if c.plot is self.plot:
                changed = c.update(xr, self.log_x) or changed
        return changed

    def settle(self) -> None:
        """Settle the plot's new range now rather than in pyqtgraph's prepare-for-paint: changed
        there, it asks for a second paint of the plot, and every update was painted twice."""
        vb = self.plot.getPlotItem().getViewBox()
        vb.updateAutoRange()
        vb.updateMatrix()


def make_panel(
    title: str,
    infos: list[MetricInfo],
    x_axis: str,
    x_title: str,
    parent: QWidget,
    range_changed: Callable[[str], None],
) -> _Panel:
    """The panel of a metric group; ``range_changed(name)`` when its view is zoomed, panned or fitted."""
    name = STANDARD_PLOTS.get(title, _slug(title))
    tile = title == "Max tile"
    left: pg.AxisItem = TileAxis("left") if tile else SIAxis("left")
    bottom = SIAxis("bottom", time_axis=x_axis == "elapsed")
    w = pg.PlotWidget(axisItems={"left": left, "bottom": bottom})
    w.setObjectName(name)
    show_grid(w, x=False, y=True, alpha=0.15)
    # 60 px: a lone Speed panel's half-height row (toolbar.LONE_ROW_PX) keeps its header and a plot
    w.setMinimumSize(160, 60)
    unit = next((m.unit for m in infos if m.unit), "")
    if unit:
        w.setLabel("left", unit)
    w.setLabel("bottom", x_title)
    # Decimation is ours (PeakDecimator / peak_decimate), not pyqtgraph's: its automatic
    # downsampling picks a factor from the view range, which moves the data bounds, which moves
    # the auto range... and the plots repainted themselves continuously while training.
    w.getPlotItem().setDownsampling(ds=1, auto=False, mode="peak")
    w.getPlotItem().setClipToView(False)
    w.getPlotItem().hideButtons()
    vb = w.getPlotItem().getViewBox()
    vb.sigXRangeChanged.connect(lambda *_a: range_changed(name))
    # Back to auto range (the menu, Fit): draw the whole history again at once, or the auto
    # range would fit the zoomed slice that is drawn now.
    vb.sigStateChanged.connect(lambda *_a: range_changed(name))
    header = QLabel()
    header.setObjectName(name.removesuffix("Plot") + "Legend")
    header.setTextFormat(Qt.TextFormat.RichText)
    header.setWordWrap(True)
    # Parented from the start: a parentless box made visible before the grid takes it would be a
    # window of its own for a moment (it flashes, and the main window loses focus and shortcuts).
    box = QWidget(parent)
    box.setVisible(False)
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(0)
    lay.addWidget(header)
    lay.addWidget(w, 1)
    panel = _Panel(name, title, infos, box, header, w, transform="log2" if tile else "")
    w.addItem(panel.extent)
    w.addItem(panel.flat)
    return panel


@dataclass
class _Curve:
    """One line on a panel: a metric of a run (raw, smoothed or its moving average)."""

    item: pg.PlotDataItem
    plot: pg.PlotWidget
    panel: str
    run: RunSeries
    metric: str
    axis: str
    name: str = ""  # legend name ("" for the faint raw line behind a smoothed one)
    colour: str = ""
    moving_average: bool = False
    smooth: float = 0.0  # EMA weight (0: the raw values)
    transform: str = ""
    decimator: PeakDecimator = field(default_factory=PeakDecimator)
    drawn: int = -1  # raw points behind what is drawn now
    index_x: bool = False  # x is the point index (the counter does not move)
    zoomed_range: tuple[float, float] | None = None
    label: str = ""  # the metric part of ``name`` ("Score (mean of 100)"): what a compare legend lists
    shade: int = 0  # the run's j-th metric on this axis (its colour's shade when runs are compared)
    markers: bool = False  # drawn with a dot on each point (see MARKER_POINTS)

    def show_markers(self, on: bool) -> None:
        """Dots on the curve's points, or none; pyqtgraph redraws its symbols only when this changes."""
        if on == self.markers:
            return
        self.markers = on
        if on:
            self.item.setSymbol("o")
            self.item.setSymbolSize(6)
            self.item.setSymbolPen(None)
            self.item.setSymbolBrush(pg.mkBrush(self.colour))
        else:
            self.item.setSymbol(None)

    def update(self, xr: tuple[float, float] | None, log_x: bool) -> bool:
        """Give the curve its points if its data or the range shown (``xr``: None while the plot
        follows the data) moved; False when nothing did."""
        s = self.run.metrics.get(self.metric)
        n = len(s) if s is not None else 0
        if n == self.drawn and xr == self.zoomed_range:
            return False
        self.drawn, self.zoomed_range = n, xr
        if s is None or n == 0:
            self.item.setData([], [])
            return True
        index_x = s.uses_index(self.axis)
        if index_x != self.index_x:
            self.index_x = index_x
            self.decimator.reset()
        y = self.run.values(self.metric, self.moving_average, self.smooth)
        dx, dy = points_to_draw(s.x(self.axis), y, self.decimator, xr, self.transform, log_x)
        self.show_markers(
            bool(self.name) and not self.moving_average and self.smooth == 0 and n <= MARKER_POINTS
        )
        self.item.setData(dx, dy)
        return True


def metric_curves(
    p: _Panel,
    run: RunSeries,
    info: MetricInfo,
    colour: str,
    j: int,
    many: bool,
    count: int,
    smoothing: float,
    x_axis: str,
) -> list[_Curve]:
    """The lines of one metric of a run on panel ``p`` (the ``j``-th of its ``count`` there), added
    to the plot: raw, smoothed or averaged as ``smoothing`` and the metric ask."""
    transform = "log2" if p.transform == "log2" else ""
    lines = metric_lines(run, info, j, many, smoothing, transform)
    mc = _metric_colour(colour, j, many, count)
    pens = {
        "faint": pg.mkPen(pg.mkColor(mc).lighter(175), width=1),
        "strong": pg.mkPen(mc, width=2),
        "plain": pg.mkPen(mc, width=1.5),
    }
    curves = []
    for line in lines:
        item = pg.PlotDataItem(pen=pens[line.pen])
        # addItem applies the plot's downsampling / clip settings (set in make_panel) to the item.
        p.plot.addItem(item)
        curves.append(
            _Curve(
                item,
                p.plot,
                p.name,
                run,
                line.metric,
                x_axis,
                line.name,
                pens[line.pen].color().name(),
                line.moving_average,
                line.smooth,
                line.transform,
                label=line.label,
                shade=line.shade,
            )
        )
    return curves


def flat_value(curves: list[_Curve], name: str) -> float | None:
    """The one value of every named series drawn on plot ``name`` when they are all flat, else None."""
    series = [c.run.metrics.get(c.metric) for c in curves if c.panel == name and c.name]
    values = {(s.lo, s.hi) for s in series if s is not None and len(s)}
    if len(values) == 1:
        lo, hi = next(iter(values))
        return lo if lo == hi else None
    return None
