"""Live training curves (pyqtgraph): loss, schedules (epsilon...), score (+ moving average), max tile, speed.

Data lives in :class:`GrowingArray` buffers (amortised doubling: appending n points costs O(n) in all,
and a plot gets a view of the buffer, never a copy of a Python list). Events only append and mark
the plots dirty; a QTimer redraws the dirty plots (one per tick, at most 10 frames a second each), so
the cost of drawing does not grow with the event rate. Curves are min/max decimated incrementally
(:class:`PeakDecimator`), so a plot of a million points redraws as fast as one of a thousand.

Several runs can be shown at once (the live one and runs re-opened from the store to compare), each
in its own colour.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QGridLayout, QWidget

from agents.base import MetricEvent

#: Colours of runs, in the order they are added (the live run takes the first).
RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
#: Object names of the plots, in the timer's round-robin order.
PLOT_NAMES = ("scorePlot", "maxTilePlot", "lossPlot", "epsilonPlot", "speedPlot")
#: Metrics the score / max tile / speed plots read (agents.base.STANDARD_METRICS).
SCORE, MAX_TILE, SPEED = "score", "max_tile", "steps_per_s"


class GrowingArray:
    """An append-only float64 array with amortised doubling; ``view`` is the filled part (no copy)."""

    __slots__ = ("_buf", "_n")

    def __init__(self, capacity: int = 1024, dtype: Any = np.float64) -> None:
        self._buf = np.empty(max(1, capacity), dtype=dtype)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _reserve(self, extra: int) -> None:
        need = self._n + extra
        if need > len(self._buf):
            cap = len(self._buf)
            while cap < need:
                cap *= 2
            new = np.empty(cap, dtype=self._buf.dtype)
            new[: self._n] = self._buf[: self._n]
            self._buf = new

    def append(self, value: float) -> None:
        self._reserve(1)
        self._buf[self._n] = value
        self._n += 1

    def extend(self, values: Sequence[float] | np.ndarray) -> None:
        arr = np.asarray(values, dtype=self._buf.dtype)
        self._reserve(len(arr))
        self._buf[self._n : self._n + len(arr)] = arr
        self._n += len(arr)

    @property
    def view(self) -> np.ndarray:
        """The data so far; valid until the next append (which may move the buffer)."""
        return self._buf[: self._n]

    @property
    def capacity(self) -> int:
        return len(self._buf)

    def clear(self) -> None:
        self._n = 0


@dataclass
class MetricSeries:
    """One metric of one run: its values and the three x candidates (episode, step, elapsed)."""

    episode: GrowingArray = field(default_factory=GrowingArray)
    step: GrowingArray = field(default_factory=GrowingArray)
    elapsed: GrowingArray = field(default_factory=GrowingArray)
    y: GrowingArray = field(default_factory=GrowingArray)

    def __len__(self) -> int:
        return len(self.y)

    def x(self, axis: str) -> np.ndarray:
        """x values for ``axis`` ("episode" / "step" / "elapsed"); the point index when that counter does
        not move (an imitation epoch has no games and no moves)."""
        if self.uses_index(axis):
            return np.arange(len(self.y), dtype=np.float64)
        return getattr(self, axis).view

    def uses_index(self, axis: str) -> bool:
        xs = getattr(self, axis).view
        return len(xs) > 1 and xs[-1] == xs[0]


class RunSeries:
    """Every metric of one run, growing as events arrive; the score's moving average kept incrementally."""

    def __init__(self, label: str, ma_window: int = 100) -> None:
        self.label = label
        self.ma_window = max(1, ma_window)
        self.metrics: dict[str, MetricSeries] = {}
        # Moving averages, kept incrementally: of the score, and of log2(max tile) (a geometric mean of
        # tiles reads better than an arithmetic one on a doubling scale).
        self.ma: dict[str, GrowingArray] = {SCORE: GrowingArray(), MAX_TILE: GrowingArray()}
        self._cumsum: dict[str, GrowingArray] = {SCORE: GrowingArray(), MAX_TILE: GrowingArray()}
        self.events = 0
        self.last_board: np.ndarray | None = None

    def series(self, name: str) -> MetricSeries:
        s = self.metrics.get(name)
        if s is None:
            s = self.metrics[name] = MetricSeries()
        return s

    def count(self, name: str) -> int:
        s = self.metrics.get(name)
        return len(s) if s is not None else 0

    @property
    def score_ma(self) -> GrowingArray:
        return self.ma[SCORE]

    def add_events(self, events: Iterable[MetricEvent]) -> None:
        before = {m: self.count(m) for m in self.ma}
        for ev in events:
            self.events += 1
            for name, value in ev.metrics.items():
                s = self.series(name)
                s.episode.append(ev.episode)
                s.step.append(ev.step)
                s.elapsed.append(ev.elapsed)
                s.y.append(value)
            if ev.board is not None:
                self.last_board = ev.board
        self._extend_ma(before)

    def add_columns(self, columns: Mapping[str, np.ndarray]) -> None:
        """Add the store's ``run_metrics`` columns (episode, step, elapsed + one per metric, NaN = absent)."""
        n = len(next(iter(columns.values()))) if columns else 0
        ep = np.asarray(columns.get("episode", np.zeros(n)), dtype=np.float64)
        st = np.asarray(columns.get("step", np.zeros(n)), dtype=np.float64)
        el = np.asarray(columns.get("elapsed", np.zeros(n)), dtype=np.float64)
        before = {m: self.count(m) for m in self.ma}
        for name, col in columns.items():
            if name in ("episode", "step", "elapsed", "kind", "id", "run_id"):
                continue
            col = np.asarray(col)
            if col.dtype.kind not in "fiu":
                continue
            col = col.astype(np.float64)
            keep = ~np.isnan(col)
            s = self.series(name)
            s.episode.extend(ep[keep])
            s.step.extend(st[keep])
            s.elapsed.extend(el[keep])
            s.y.extend(col[keep])
        self.events += n
        self._extend_ma(before)

    def _extend_ma(self, before: Mapping[str, int]) -> None:
        """Moving averages for the points added since ``before`` (O(new points), via running sums)."""
        for name, start in before.items():
            s = self.metrics.get(name)
            if s is None or len(s) == start:
                continue
            new = s.y.view[start:]
            if name == MAX_TILE:
                new = np.log2(np.maximum(new, 1.0))
            csum = self._cumsum[name]
            base = csum.view[-1] if len(csum) else 0.0
            csum.extend(base + np.cumsum(new))
            cs = csum.view
            idx = np.arange(start, len(cs))
            w = self.ma_window
            lo = idx - w
            prev = np.where(lo >= 0, cs[np.maximum(lo, 0)], 0.0)
            self.ma[name].extend((cs[idx] - prev) / np.minimum(idx + 1, w))


class PeakDecimator:
    """Incremental min/max decimation of an append-only (x, y) series to at most ~4 * ``target`` points.

    Complete buckets of ``bucket`` points become two points (the bucket's max and min at its first
    x, as pyqtgraph's "peak" method draws them); when there are more than 2 * ``target`` buckets,
    neighbours merge and the bucket size doubles. Each new point is looked at once (plus O(log n)
    merges), so a redraw costs O(target), not O(points), however long the run.
    """

    def __init__(self, target: int = 400) -> None:
        self.target = target
        self.bucket = 1
        self.consumed = 0  # raw points folded into complete buckets
        self.bx = GrowingArray()
        self.lo = GrowingArray()
        self.hi = GrowingArray()

    def reset(self) -> None:
        self.__init__(self.target)  # type: ignore[misc]

    def update(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = min(len(x), len(y))
        b = self.bucket
        complete = (n // b) * b
        if complete > self.consumed:
            yy = y[self.consumed : complete].reshape(-1, b)
            self.bx.extend(x[self.consumed : complete : b])
            # fmin/fmax skip NaN (a diverged loss) unless the whole bucket is NaN.
            self.lo.extend(np.fmin.reduce(yy, axis=1))
            self.hi.extend(np.fmax.reduce(yy, axis=1))
            self.consumed = complete
        while len(self.bx) > 2 * self.target:
            self._merge()
        tail_x, tail_y = x[self.consumed : n], y[self.consumed : n]
        k = len(self.bx)
        out_x = np.empty(2 * k + len(tail_x))
        out_y = np.empty(2 * k + len(tail_x))
        out_x[0 : 2 * k : 2] = self.bx.view
        out_x[1 : 2 * k : 2] = self.bx.view
        out_y[0 : 2 * k : 2] = self.hi.view
        out_y[1 : 2 * k : 2] = self.lo.view
        out_x[2 * k :] = tail_x
        out_y[2 * k :] = tail_y
        return out_x, out_y

    def _merge(self) -> None:
        k = len(self.bx) // 2 * 2  # an odd last bucket is dropped and rebuilt from the raw data
        bx, lo, hi = self.bx.view[:k:2].copy(), self.lo.view[:k], self.hi.view[:k]
        lo2 = np.fmin(lo[0::2], lo[1::2])
        hi2 = np.fmax(hi[0::2], hi[1::2])
        for arr, new in ((self.bx, bx), (self.lo, lo2), (self.hi, hi2)):
            arr.clear()
            arr.extend(new)
        self.bucket *= 2
        self.consumed = (k // 2) * self.bucket


def peak_decimate(x: np.ndarray, y: np.ndarray, target: int) -> tuple[np.ndarray, np.ndarray]:
    """One-shot min/max decimation of a slice (the visible part of a zoomed plot)."""
    n = min(len(x), len(y))
    if n <= 2 * target:
        return x[:n], y[:n]
    b = -(-n // target)
    m = n // b
    yy = y[: m * b].reshape(m, b)
    out_x = np.repeat(x[: m * b : b], 2)
    out_y = np.empty(2 * m)
    out_y[0::2] = np.fmax.reduce(yy, axis=1)
    out_y[1::2] = np.fmin.reduce(yy, axis=1)
    return np.concatenate([out_x, x[m * b : n]]), np.concatenate([out_y, y[m * b : n]])


def _metric_colour(run_colour: str, j: int, many_runs: bool) -> Any:
    """Colour of a run's j-th metric on a shared plot (loss + value loss, epsilon + lr...).

    Solid lines only: Qt strokes a dashed pen along the whole zigzag of a noisy curve, which took
    most of a second per repaint on a long run. One run: a palette colour per metric; several runs:
    shades of the run's colour.
    """
    if not many_runs:
        return RUN_COLOURS[j % len(RUN_COLOURS)]
    return pg.mkColor(run_colour).darker(100 + 60 * j)


class TileAxis(pg.AxisItem):
    """y axis of log2(tile) values labelled with the tiles themselves (..., 512, 1024, 2048)."""

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:
        lo, hi = math.floor(minVal), math.ceil(maxVal)
        if hi - lo > 40 or hi < lo:
            return super().tickValues(minVal, maxVal, size)
        every = max(1, (hi - lo) // 8)
        return [(float(every), [float(v) for v in range(max(lo, 0), hi + 1, every)])]

    def tickStrings(self, values: list, scale: float, spacing: float) -> list[str]:
        return [str(2 ** round(v)) if 0 < v < 63 else "" for v in values]


@dataclass
class _Curve:
    item: pg.PlotDataItem
    plot: pg.PlotWidget
    run: RunSeries
    metric: str
    axis: str
    moving_average: bool = False
    transform: str = ""
    decimator: PeakDecimator = field(default_factory=PeakDecimator)
    drawn: int = -1  # raw points behind what is drawn now
    index_x: bool = False  # x is the point index (the counter does not move)
    zoomed_range: tuple[float, float] | None = None


class CurvesPanel(QWidget):
    """The Train tab's plots. ``add_events`` feeds the live run; ``add_run`` overlays stored runs.

    Plots (object names): ``lossPlot``, ``epsilonPlot`` (the agent's schedule metrics), ``scorePlot``
    (raw + moving average), ``maxTilePlot``, ``speedPlot``.
    """

    def __init__(self, parent: QWidget | None = None, tick_ms: int = 20) -> None:
        super().__init__(parent)
        self.setObjectName("curvesPanel")
        pg.setConfigOptions(antialias=False, foreground="#333", background="w")
        self.loss_metrics: tuple[str, ...] = ("loss",)
        self.schedule_metrics: tuple[str, ...] = ("epsilon",)
        self.runs: list[tuple[object, RunSeries]] = []  # (key, series); key "live" or a run id
        self._curves: list[_Curve] = []
        self._dirty: set[str] = set()  # names of plots with something new to draw
        self._next = 0  # round-robin position of the timer
        self.redraws = 0  # plot updates made (a plot's curves given new data)

        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(4)
        self.scorePlot = self._plot("scorePlot", "Score", "episode", "score")
        self.maxTilePlot = self._plot(
            "maxTilePlot", "Max tile", "episode", "tile", axis_items={"left": TileAxis("left")}
        )
        self.lossPlot = self._plot("lossPlot", "Loss", "step", "loss")
        self.epsilonPlot = self._plot("epsilonPlot", "Schedule", "step", "value")
        self.speedPlot = self._plot("speedPlot", "Speed", "elapsed (s)", "moves/s")
        grid.addWidget(self.scorePlot, 0, 0)
        grid.addWidget(self.maxTilePlot, 0, 1)
        grid.addWidget(self.lossPlot, 1, 0)
        grid.addWidget(self.epsilonPlot, 1, 1)
        grid.addWidget(self.speedPlot, 2, 0, 1, 2)
        grid.setRowStretch(0, 3)
        grid.setRowStretch(1, 3)
        grid.setRowStretch(2, 2)
        self._plots = {name: getattr(self, name) for name in PLOT_NAMES}
        for name, plot in self._plots.items():
            vb = plot.getPlotItem().getViewBox()
            vb.sigXRangeChanged.connect(lambda *_a, name=name: self._range_changed(name))
            # Back to auto range (the "A" button, the menu): draw the whole history again at once,
            # or the auto range would fit the zoomed slice that is drawn now.
            vb.sigStateChanged.connect(lambda *_a, name=name: self._range_changed(name))

        # One dirty plot per tick, in turn: a tick's work (and the repaint after it) is one plot, so
        # the GUI thread never stalls for all five at once; each plot still gets 1000 / (5 x tick_ms)
        # frames a second at most (10 at the default 20 ms).
        self.timer = QTimer(self)
        self.timer.setInterval(tick_ms)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.timer.start()  # catch up with what arrived while hidden, one plot per tick

    def hideEvent(self, event: Any) -> None:
        # Hidden (another tab in front): events still append, nothing is drawn, so the window's thread
        # stays free for what the user looks at.
        self.timer.stop()
        super().hideEvent(event)

    def _plot(
        self, name: str, title: str, xlabel: str, ylabel: str, axis_items: dict[str, Any] | None = None
    ) -> pg.PlotWidget:
        w = pg.PlotWidget(axisItems=axis_items)
        w.setObjectName(name)
        w.setTitle(title, size="9pt")
        w.setLabel("bottom", xlabel)
        w.setLabel("left", ylabel)
        w.showGrid(x=False, y=False)
        w.addLegend(offset=(5, 5), labelTextSize="8pt")
        w.setMinimumSize(160, 110)
        # Decimation is ours (PeakDecimator / peak_decimate below), not pyqtgraph's: its automatic
        # downsampling picks a factor from the view range, which moves the data bounds, which moves
        # the auto range... and the plots repainted themselves continuously while training.
        w.getPlotItem().setDownsampling(ds=1, auto=False, mode="peak")
        w.getPlotItem().setClipToView(False)
        return w

    # ------------------------------------------------------------------ runs
    @property
    def live(self) -> RunSeries | None:
        """The first live run (key ``"live"`` or ``("live", n)``: several may train at once)."""
        for key, run in self.runs:
            if key == "live" or (isinstance(key, tuple) and key and key[0] == "live"):
                return run
        return None

    def set_agent_metrics(self, loss_metrics: Sequence[str], schedule_metrics: Sequence[str]) -> None:
        """Which metrics go on the loss plot and on the schedule plot (the agent's class attributes)."""
        self.loss_metrics = tuple(loss_metrics)
        self.schedule_metrics = tuple(schedule_metrics)
        # The titles stay "Loss" / "Schedule"; the legends name the agent's metrics.
        self._rebuild()

    def start_live(self, label: str = "live") -> RunSeries:
        """Begin a fresh live run (replacing the previous live one); overlays stay."""
        self.runs = [(k, r) for k, r in self.runs if k != "live"]
        run = RunSeries(label)
        self.runs.insert(0, ("live", run))
        self._rebuild()
        return run

    def add_run(self, key: object, run: RunSeries) -> None:
        """Show ``run`` (e.g. a stored run re-opened) beside the others; same key replaces."""
        self.runs = [(k, r) for k, r in self.runs if k != key]
        self.runs.append((key, run))
        self._rebuild()

    def remove_run(self, key: object) -> None:
        self.runs = [(k, r) for k, r in self.runs if k != key]
        self._rebuild()

    def clear(self) -> None:
        self.runs = []
        self._rebuild()

    def add_events(self, events: Iterable[MetricEvent], key: object = "live") -> None:
        """Feed live run ``key`` (cheap: appends and marks dirty; the timer redraws)."""
        run = next((r for k, r in self.runs if k == key), None)
        if run is None:
            if key != "live":
                return  # a run no longer shown (the user re-opened others meanwhile)
            run = self.start_live()
        run.add_events(events)
        self._dirty.update(PLOT_NAMES)

    def mark_dirty(self) -> None:
        self._dirty.update(PLOT_NAMES)

    # ------------------------------------------------------------------ drawing
    def _rebuild(self) -> None:
        for w in (self.scorePlot, self.maxTilePlot, self.lossPlot, self.epsilonPlot, self.speedPlot):
            w.clear()
            legend = w.getPlotItem().legend
            if legend is not None:
                legend.clear()
        self._curves = []
        many = len(self.runs) > 1
        for i, (_key, run) in enumerate(self.runs):
            colour = RUN_COLOURS[i % len(RUN_COLOURS)]
            prefix = f"{run.label} " if many else ""
            raw_pen = pg.mkPen(pg.mkColor(colour).lighter(170), width=1)
            if not many:
                # Raw per-game values only for a single run: with several, they would hide each other.
                self._add(self.scorePlot, run, SCORE, "episode", raw_pen, "score")
                self._add(self.maxTilePlot, run, MAX_TILE, "episode", raw_pen, "max tile", "log2")
            self._add(
                self.scorePlot,
                run,
                SCORE,
                "episode",
                pg.mkPen(colour, width=2),
                prefix + f"mean of {run.ma_window}",
                moving_average=True,
            )
            self._add(
                self.maxTilePlot,
                run,
                MAX_TILE,
                "episode",
                pg.mkPen(colour, width=2),
                prefix + f"geo. mean of {run.ma_window}",
                moving_average=True,
            )
            for j, m in enumerate(self.loss_metrics):
                pen = pg.mkPen(_metric_colour(colour, j, many), width=1)
                self._add(self.lossPlot, run, m, "step", pen, prefix + m)
            for j, m in enumerate(self.schedule_metrics):
                pen = pg.mkPen(_metric_colour(colour, j, many), width=1)
                self._add(self.epsilonPlot, run, m, "step", pen, prefix + m)
            self._add(self.speedPlot, run, SPEED, "elapsed", pg.mkPen(colour, width=1), prefix + "moves/s")
        self.mark_dirty()
        self.redraw()

    def _add(
        self,
        plot: pg.PlotWidget,
        run: RunSeries,
        metric: str,
        axis: str,
        pen: Any,
        name: str,
        transform: str = "",
        moving_average: bool = False,
    ) -> None:
        item = pg.PlotDataItem(pen=pen, name=name)
        # addItem applies the plot's downsampling / clip settings (set in _plot) to the item.
        plot.addItem(item)
        self._curves.append(_Curve(item, plot, run, metric, axis, moving_average, transform))

    def redraw(self) -> None:
        """Bring every dirty plot up to date now (tests, a re-opened run); the timer does one per tick."""
        for name in PLOT_NAMES:
            if name in self._dirty:
                self._update_plot(name)

    def _tick(self) -> None:
        for k in range(len(PLOT_NAMES)):
            name = PLOT_NAMES[(self._next + k) % len(PLOT_NAMES)]
            if name in self._dirty:
                self._next = (self._next + k + 1) % len(PLOT_NAMES)
                self._update_plot(name)
                return

    def _update_plot(self, name: str) -> None:
        """Push new data to one plot's curves.

        While a plot follows the data (auto range), its curves come from incremental decimators, so
        this costs O(plot width) per curve. Once the user zooms or pans, the visible slice is
        decimated afresh (O(visible points)) whenever the range or the data changes.
        """
        self._dirty.discard(name)
        plot = self._plots[name]
        vb = plot.getPlotItem().getViewBox()
        following = bool(vb.autoRangeEnabled()[0])
        xr = None if following else tuple(vb.viewRange()[0])
        changed = False
        for c in self._curves:
            if c.plot is not plot:
                continue
            s = c.run.metrics.get(c.metric)
            n = len(s) if s is not None else 0
            if n == c.drawn and xr == c.zoomed_range:
                continue
            changed = True
            c.drawn, c.zoomed_range = n, xr
            if s is None or n == 0:
                c.item.setData([], [])
                continue
            x = s.x(c.axis)
            index_x = s.uses_index(c.axis)
            if index_x != c.index_x:
                c.index_x = index_x
                c.decimator.reset()
            y = c.run.ma[c.metric].view if c.moving_average else s.y.view
            if xr is None:
                dx, dy = c.decimator.update(x, y)
            else:
                lo = max(0, int(np.searchsorted(x, xr[0], "left")) - 1)
                hi = int(np.searchsorted(x, xr[1], "right")) + 1
                dx, dy = peak_decimate(x[lo:hi], y[lo:hi], c.decimator.target)
            if c.transform == "log2":
                dy = np.log2(np.maximum(dy, 1.0))
            c.item.setData(dx, dy)
        if changed:
            self.redraws += 1

    def _range_changed(self, name: str) -> None:
        # A zoom or pan needs the visible slice decimated again (a no-op while following the data).
        self._dirty.add(name)

    def data_length(self, plot_name: str) -> int:
        """Raw points behind the fullest curve of a plot (``"scorePlot"`` ...): for tests and status lines."""
        plot = getattr(self, plot_name)
        return max((c.drawn for c in self._curves if c.plot is plot), default=0)
