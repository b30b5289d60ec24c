"""The curves' pyqtgraph axis items: SI / wall-time ticks, tile ticks, and the invisible item that
lines the panels' x ranges up."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QFontMetrics, QPen

from studio.widgets.curves.ticks import format_duration_tick, format_si, tile_label, time_tick_spacing

#: The plots' background when a view says none (``pg.setConfigOptions(background="w")``).
_WHITE = QColor("white")


def _opaque(pen: QPen, background: QColor) -> QPen:
    """``pen`` with its translucent colour blended over ``background`` once, here, and made opaque."""
    colour = pen.color()
    a = colour.alphaF()
    if a >= 1.0:
        return pen
    out = QPen(pen)
    out.setColor(
        QColor.fromRgbF(
            colour.redF() * a + background.redF() * (1.0 - a),
            colour.greenF() * a + background.greenF() * (1.0 - a),
            colour.blueF() * a + background.blueF() * (1.0 - a),
        )
    )
    return out


class GridAxis(pg.AxisItem):
    """An axis whose grid lines (and minor ticks) are drawn in opaque colours: the translucent ones
    pyqtgraph draws cost Qt's raster engine a blend per pixel, 0.18 ms a line across a 660-pixel plot,
    and a plot's 20-odd grid lines made its every repaint 8 ms instead of 1 (``show_grid`` puts the
    grid under the curves, where a translucent one would have shown them through)."""

    def generateDrawSpecs(self, p: Any) -> Any:
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return None
        axis_spec, tick_specs, text_specs = specs
        views = self.scene().views() if self.scene() is not None else []
        background = views[0].backgroundBrush().color() if views else _WHITE
        if background.alpha() == 0:
            background = _WHITE
        return axis_spec, [(_opaque(pen, background), a, b) for pen, a, b in tick_specs], text_specs


def show_grid(plot: pg.PlotWidget, x: bool, y: bool, alpha: float) -> None:
    """A plot's grid, as ``showGrid``, under its data: needed with a :class:`GridAxis`, whose opaque
    lines would otherwise cross the curves (pyqtgraph puts axes above the view)."""
    plot.showGrid(x=x, y=y, alpha=alpha)
    below = plot.getPlotItem().getViewBox().zValue() - 1.0  # the view is at -100
    for name in ("left", "bottom"):
        plot.getAxis(name).setZValue(below)


class SIAxis(GridAxis):
    """An axis whose ticks read 10M, 300k, 2.5k (or 45s, 3m, 2h on a wall-time axis), in log mode too."""

    def __init__(self, orientation: str, time_axis: bool = False, **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self.time_axis = time_axis
        self.enableAutoSIPrefix(False)

    def _text(self, value: float, spacing: float | None) -> str:
        return format_duration_tick(value, spacing) if self.time_axis else format_si(value, spacing)

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:
        levels = super().tickSpacing(minVal, maxVal, size)
        # a wall-time axis counts in clock units once a tick step is a second or more
        if (
            not self.time_axis
            or self.logMode
            or self._tickSpacing is not None
            or not levels
            or not 1 <= levels[0][0] < math.inf
        ):
            return levels
        return time_tick_spacing(levels[0][0])

    def tickStrings(self, values: list, scale: float, spacing: float) -> list[str]:
        if self.logMode:
            return self.logTickStrings(values, scale, spacing)
        return [self._text(v * scale, spacing * scale) for v in values]

    def logTickStrings(self, values: list, scale: float, spacing: float) -> list[str]:
        """Decades (1, 10, 100...), and 2 and 5 between them when few decades show (every tick within
        less than a decade); the other minor ticks stay unlabelled (6, 7, 8, 9 ran together)."""
        logs = [float(v) * scale for v in values]
        span = (max(logs) - min(logs)) if logs else 0.0
        keep: tuple[float, ...] = (0.0,) if span > 1.5 else (0.0, math.log10(2), math.log10(5))
        out = []
        if span < 0.7:  # less than a decade: each tick is a candidate (150, 200, 300...)
            keep = tuple(math.log10(k) for k in range(1, 10))
        for lv in logs:
            frac = lv - math.floor(lv + 1e-9)
            if not any(abs(frac - k) < 1e-6 or abs(frac - 1 - k) < 1e-6 for k in keep):
                out.append("")
                continue
            with np.errstate(over="ignore"):
                x = float(10.0**lv)
            out.append(self._text(x, None) if math.isfinite(x) else "")
        return self._thin(logs, out)

    def _thin(self, positions: list[float], texts: list[str]) -> list[str]:
        """Leave out labels that would overlap their neighbours at the axis's size: decades first,
        then 2 and 5, then the rest, each kept only with a label's room to every one kept (the Loss
        panel's log axis read "1 0.9 0.8 0.7" one on top of the other in a 100-pixel plot)."""
        lo, hi = (float(v) for v in self.range)
        vertical = self.orientation in ("left", "right")
        length = self.size().height() if vertical else self.size().width()
        if length <= 0 or not hi > lo or sum(bool(t) for t in texts) < 2:
            return texts  # not laid out yet: nothing to measure against
        fm = QFontMetrics(self.style.get("tickFont") or self.font())
        need = [(fm.height() + 2) if vertical else (fm.horizontalAdvance(t) + 10) if t else 0 for t in texts]
        px = [(v - lo) / (hi - lo) * length for v in positions]

        def rank(v: float) -> int:
            frac = v - math.floor(v + 1e-9)
            if min(abs(frac), abs(frac - 1)) < 1e-6:
                return 0
            return 1 if any(abs(frac - math.log10(k)) < 1e-6 for k in (2, 5)) else 2

        kept: list[int] = []
        for i in sorted((i for i, t in enumerate(texts) if t), key=lambda i: (rank(positions[i]), i)):
            room = all(abs(px[i] - px[j]) >= (need[i] + need[j]) / 2 for j in kept)
            if room:
                kept.append(i)
        return [t if i in kept else "" for i, t in enumerate(texts)]


class TileAxis(GridAxis):
    """y axis of log2(tile) values labelled with the tiles themselves (..., 1024, 2048, 4096, 8k, 16k)."""

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:
        lo, hi = math.floor(minVal), math.ceil(maxVal)
        if hi - lo > 40 or hi < lo:
            return super().tickValues(minVal, maxVal, size)
        every = max(1, (hi - lo) // 8)
        return [(float(every), [float(v) for v in range(max(lo, 0), hi + 1, every)])]

    def tickStrings(self, values: list, scale: float, spacing: float) -> list[str]:
        return [tile_label(round(v)) if 0 < v < 63 else "" for v in values]


class XExtent(pg.GraphicsObject):
    """An invisible item whose only data bounds are an x range: added to every plot with the x extent
    of all the panels' data, it makes each plot's auto range span the same steps, so the panels line
    up one above the other (an evaluation panel whose first point is at 4M moves still starts at 0,
    as the score panel does) while each can still be zoomed and panned on its own.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lo = self.hi = math.nan

    def set_range(self, lo: float, hi: float) -> None:
        if (lo, hi) == (self.lo, self.hi):
            return
        self.lo, self.hi = lo, hi
        self.informViewBoundsChanged()

    def dataBounds(self, ax: int, frac: float = 1.0, orthoRange: Any = None) -> tuple[float, float] | None:
        if ax != 0 or not (math.isfinite(self.lo) and math.isfinite(self.hi)):
            return None  # no say on y, and none on x before there is data
        return (self.lo, self.hi)

    def boundingRect(self) -> QRectF:
        return QRectF()

    def paint(self, *_args: Any) -> None:
        pass


def flat_pad(value: float, log_y: bool) -> tuple[float, float]:
    """The y range a flat series (every value ``value``) is drawn in: 10 % either side (1 around 0;
    a quarter of a decade on a log axis), so its ticks read "950 1k 1.05k". pyqtgraph's own range
    around a single value is a fraction of a unit wide, and its ticks read "1.0196k 1.0204k"."""
    if log_y and value > 0:
        centre = math.log10(value)
        return centre - 0.1, centre + 0.1
    pad = abs(value) * 0.1 or 1.0
    return value - pad, value + pad


class YFlat(pg.GraphicsObject):
    """An invisible item whose only data bounds are a y range: set while every series of a plot is
    flat, it gives the auto range a readable height (see :func:`flat_pad`); cleared, it has no say."""

    def __init__(self) -> None:
        super().__init__()
        self.lo = self.hi = math.nan

    def set_range(self, lo: float, hi: float) -> None:
        if (lo, hi) == (self.lo, self.hi) or (math.isnan(lo) and math.isnan(self.lo)):
            return
        self.lo, self.hi = lo, hi
        self.informViewBoundsChanged()

    def dataBounds(self, ax: int, frac: float = 1.0, orthoRange: Any = None) -> tuple[float, float] | None:
        if ax != 1 or not (math.isfinite(self.lo) and math.isfinite(self.hi)):
            return None
        return (self.lo, self.hi)

    def boundingRect(self) -> QRectF:
        return QRectF()

    def paint(self, *_args: Any) -> None:
        pass
