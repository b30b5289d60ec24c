"""Live training curves (pyqtgraph), one panel per metric group that the agents shown declare.

Panels come from the metric metadata (:mod:`agents.metrics`): Score (+ moving average), Max tile
(log2 axis), one panel per group of the agent's own metrics (loss, mean Q, exploration...), Speed. A
series whose values are all equal is a line of text ("Learning rate = 1 (constant)"), not a panel.
A toolbar over the panels sets the smoothing (an EMA as TensorBoard's, the raw series faint behind),
the x axis (step / episode / wall time), log axes, and fits every panel to its data.

Data lives in :class:`GrowingArray` buffers (amortised doubling: appending n points costs O(n) in all,
and a plot gets a view of the buffer, never a copy of a Python list). Events only append and mark
the plots dirty; a QTimer redraws the dirty plots (one per tick, at most 10 frames a second each), so
the cost of drawing does not grow with the event rate. Curves are min/max decimated incrementally
(:class:`PeakDecimator`), so a plot of a million points redraws as fast as one of a thousand.

Several runs can be shown at once (the live ones and runs re-opened from the store to compare); a run
keeps its colour (chosen by its run id) whatever else is shown. With several runs, colours say which run
a line is: one shared run legend above the grid names the runs ("run 5"), each panel's legend names
only its metrics (a run's metrics on a shared axis are shades of its colour), and the constants are one
line per metric ("Learning rate (constant): 1 in runs 1, 2 · 0.3 in runs 3, 4"), elided to the width,
the whole text in the tooltip, so that a sweep of eight trials leaves the plots their height. Each
series is still named "run N · agent · metric" (:meth:`CurvesPanel.legend_names`, :meth:`CurvesPanel.curve`).
"""

from __future__ import annotations

import contextlib
import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QRectF, QSettings, Qt, QTimer
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from agents.base import MetricEvent
from agents.metrics import EPSILON, LOSS, MEAN_SCORE, STANDARD, MetricInfo, groups, metrics_of

#: The least height a row of plots gets before the panels scroll (two runs of different agents
#: compared make four rows, which do not fit above the runs table of a 1280x800 window).
MIN_ROW_PX = 150
#: Colours of runs: run N takes RUN_COLOURS[(N - 1) % 8], whatever else is shown.
RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
#: Games in an agent's own mean score when its settings do not say (td-afterstate keeps 100).
DEFAULT_MEAN_WINDOW = 100
#: Metrics with a moving average kept (agents.metrics.STANDARD).
SCORE, MAX_TILE, SPEED = "score", "max_tile", "steps_per_s"
#: The x axes offered: key -> what the toolbar says.
X_AXES = {"step": "Step (moves)", "episode": "Episode (games)", "elapsed": "Wall time"}
#: Each panel's x-axis title, by x axis.
X_TITLES = {"step": "moves", "episode": "games", "elapsed": "wall time"}
#: Runs compared whose lengths on the x axis differ more than this many times are drawn on a log x
#: axis by themselves (a DQN run of 50k moves beside an n-tuple run of 50M is a flat line at zero on
#: a linear axis); the panel says so, and unticking Log x keeps them linear.
AUTO_LOG_X_RATIO = 20.0
#: What the panel says when nothing is shown.
EMPTY_TEXT = "No run yet. Start a run or open one from the runs table."
#: A panel's metrics when no agent said which (an agent unknown to this build).
DEFAULT_AGENT_METRICS: tuple[MetricInfo, ...] = (LOSS, EPSILON)
#: Rows the shared run legend takes at most before the rest is "+N more" (in its tooltip).
RUN_LEGEND_ROWS = 2
#: Lines of constants under the grid at most, whatever the number of runs (the rest: the tooltip).
CONSTANT_LINES = 3
#: Swatch colour of a panel's metrics when runs are compared: the runs own the colours then, so a
#: metric's swatch is a neutral grey, shaded as each run's j-th metric is (see _metric_colour).
NEUTRAL = "#a0a0a0"
#: A raw (unsmoothed, not averaged) series of at most this many points is drawn with a dot on each
#: point: such a series is a few separate measurements (a greedy evaluation every ten minutes), and a
#: bare line through two or three of them reads as a trend that was never measured in between.
MARKER_POINTS = 60


def mean_score_label(games: int | None) -> str:
    """The one wording of a mean score, the window's own or an agent's: "Mean score (last 100 games)"."""
    return f"Mean score (last {games:,} games)" if games else "Mean score (recent games)"


def format_si(value: float, spacing: float | None = None) -> str:
    """A compact tick string: 2e6 -> "2M", 3e5 -> "300k", 2500 -> "2.5k", 0.25 -> "0.25", 1e-5 -> "1e-5".

    ``spacing`` (the distance between neighbouring ticks) sets the decimals, so neighbours differ.
    """
    if not math.isfinite(value):
        return ""
    if value == 0:
        return "0"
    mag = abs(value)
    units = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
    unit, suffix = next(((u, x) for u, x in units if mag >= u * 0.9995), (1.0, ""))
    if unit == 1.0 and mag < 1e-3:
        digits = 0 if spacing is None or spacing <= 0 else max(0, math.ceil(math.log10(mag / spacing) - 1e-9))
        text = f"{value:.{min(digits, 3)}e}"
        mant, exp = text.split("e")
        mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
        return f"{mant}e{int(exp)}"
    step = (spacing if spacing and spacing > 0 else mag / 100) / unit
    decimals = min(6, max(0, math.ceil(-math.log10(step) - 1e-9)))
    text = f"{value / unit:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text + suffix


def format_duration_tick(seconds: float, spacing: float | None = None) -> str:
    """Wall-time ticks: "45s", "3m", "1.5h", "2d".

    With the ticks' ``spacing`` in whole seconds, the value is written in clock units down to the
    spacing's own unit: "1h10m" on a 10-minute axis, "1m30s" on a 30-second one (a decimal hour,
    "1.2h", cannot say where between 1h and 1h30m a tick is).
    """
    if not math.isfinite(seconds):
        return ""
    if (
        spacing is not None
        and math.isfinite(spacing)
        and spacing >= 1
        and abs(spacing - round(spacing)) < 1e-6
    ):
        whole = round(spacing)
        unit = next(u for u in (86400, 3600, 60, 1) if whole % u == 0)
        left = round(abs(seconds) / unit) * unit
        parts = []
        for size, suffix in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
            if size >= unit and left >= size:
                parts.append(f"{left // size}{suffix}")
                left %= size
        text = "".join(parts) or "0"
        return ("-" + text) if seconds < 0 and text != "0" else text
    mag = abs(seconds)
    for unit, suffix in ((86400, "d"), (3600, "h"), (60, "m")):
        if mag >= unit:
            return format_si(seconds / unit, None if mag / unit >= 10 else 0.1).rstrip("kMGT") + suffix
    step = (
        spacing
        if spacing is not None and math.isfinite(spacing) and spacing > 0
        else (1 if mag >= 1 else None)
    )
    return format_si(seconds, step) + "s"


# Tick steps of a wall-time axis, in seconds: clock units a reader counts in (5, 10, 15, 30 minutes;
# 1, 2, 3, 6, 12 hours), where pyqtgraph's decimal steps gave ticks at 16.7m, 33.3m and 1.1h.
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def time_tick_spacing(decimal_major: float) -> list[tuple[float, float]]:
    """Major and minor tick spacing in clock units, close (in ratio) to pyqtgraph's decimal choice."""
    if decimal_major >= 1.5 * 86400:
        days = decimal_major / 86400
        mag = 10 ** math.floor(math.log10(days))
        major = min((k * mag for k in (1, 2, 5, 10)), key=lambda d: abs(math.log(d / days))) * 86400
        return [(major, 0.0), (major / (5 if major / 86400 % 5 == 0 else 2), 0.0)]
    major = min(_TIME_STEPS, key=lambda s: abs(math.log(s / decimal_major)))
    minors = [s for s in _TIME_STEPS if s < major and major % s == 0 and major / s <= 6]
    levels = [(float(major), 0.0)]
    if minors:
        levels.append((float(minors[0]), 0.0))
    return levels


def ema(values: np.ndarray, weight: float, start: int = 0, carry: float = 0.0) -> tuple[np.ndarray, float]:
    """TensorBoard's smoothing: ``last = last * w + (1 - w) * v``, divided by ``1 - w ** (i + 1)``.

    ``start`` / ``carry`` continue a series (the index of ``values[0]`` and the biased ``last`` so far),
    so a growing series is smoothed in O(new points). Returns (smoothed, new carry). NaN points repeat
    the last value. Vectorised in blocks (a matrix product per block, a short loop across blocks).
    """
    y = np.asarray(values, dtype=np.float64)
    n = len(y)
    out = np.empty(n)
    if n == 0:
        return out, carry
    if np.isnan(y).any():
        y = y.copy()
        ok = ~np.isnan(y)
        idx = np.where(ok, np.arange(n), -1)
        np.maximum.accumulate(idx, out=idx)
        first = y[ok][0] if ok.any() else 0.0
        y = np.where(idx >= 0, y[np.maximum(idx, 0)], first)
    w = float(weight)
    block = 256
    k = np.arange(block)
    diff = np.subtract.outer(k, k)
    mat = np.where(diff >= 0, w ** np.maximum(diff, 0), 0.0) * (1.0 - w)
    pow_k = w ** (k + 1)
    full = (n // block) * block
    if full:
        local = y[:full].reshape(-1, block) @ mat.T
        for b in range(len(local)):
            local[b] += pow_k * carry
            carry = float(local[b, -1])
        out[:full] = local.ravel()
    for i in range(full, n):
        carry = carry * w + (1.0 - w) * y[i]
        out[i] = carry
    with np.errstate(under="ignore"):
        debias = 1.0 - w ** (np.arange(start, start + n, dtype=np.float64) + 1.0)
    return out / np.where(debias > 0, debias, 1.0), carry


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
    lo: float = math.inf  # smallest / largest value so far (NaN left out): constants, log axes
    hi: float = -math.inf

    def __len__(self) -> int:
        return len(self.y)

    def note(self, values: np.ndarray | float) -> None:
        if isinstance(values, (float, int)):
            v = float(values)
            if v == v:  # not NaN
                self.lo = v if v < self.lo else self.lo
                self.hi = v if v > self.hi else self.hi
            return
        arr = np.asarray(values, dtype=np.float64)
        if arr.size and not np.isnan(arr).all():
            self.lo = min(self.lo, float(np.nanmin(arr)))
            self.hi = max(self.hi, float(np.nanmax(arr)))

    @property
    def constant(self) -> bool:
        """Every value so far equal (and at least one)."""
        return len(self.y) > 0 and self.lo == self.hi

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

    def __init__(
        self,
        label: str,
        ma_window: int = 100,
        agent: str = "",
        run_id: int | None = None,
        infos: Sequence[MetricInfo] | None = None,
    ) -> None:
        self.label = label
        found = re.match(r"run (\d+) ([\w.+-]+)", label)
        self.agent = agent or (found.group(2) if found else "")
        self.run_id = run_id if run_id is not None else (int(found.group(1)) if found else None)
        #: what the run's agent declares (agents.metrics); None: looked up from ``agent``
        self._infos = tuple(infos) if infos is not None else None
        self.ma_window = max(1, ma_window)
        self.metrics: dict[str, MetricSeries] = {}
        self._smoothed: dict[tuple[str, float], tuple[GrowingArray, float]] = {}
        # Moving averages, kept incrementally: of the score, and of log2(max tile) (a geometric mean of
        # tiles reads better than an arithmetic one on a doubling scale).
        self.ma: dict[str, GrowingArray] = {SCORE: GrowingArray(), MAX_TILE: GrowingArray()}
        self._cumsum: dict[str, GrowingArray] = {SCORE: GrowingArray(), MAX_TILE: GrowingArray()}
        self.events = 0
        self.last_board: np.ndarray | None = None
        #: games in the agent's own rolling mean score (its ``window`` knob; an agent without one
        #: keeps its last 100), see :meth:`set_config`
        self.mean_window: int | None = DEFAULT_MEAN_WINDOW

    def set_config(self, config: Mapping[str, Any] | None) -> None:
        """What of the run's settings the curves say: the games in the agent's mean score."""
        window = (config or {}).get("window")
        if isinstance(window, int) and not isinstance(window, bool) and window > 0:
            self.mean_window = window

    @property
    def has_own_mean(self) -> bool:
        """Whether the run's agent reports its own mean score over its last games (``mean_score``)."""
        return any(m.name == MEAN_SCORE.name for m in (self.infos or ()))

    @property
    def title(self) -> str:
        """How legends name the run: "run 3 · dqn" (its label until it has a run id)."""
        if self.run_id is not None and self.agent:
            return f"run {self.run_id} · {self.agent}"
        return self.label

    @property
    def infos(self) -> tuple[MetricInfo, ...] | None:
        """The metric metadata of the run's agent; None when the agent is unknown here."""
        if self._infos is None and self.agent:
            with contextlib.suppress(Exception):
                from agents.registry import get_agent_class

                self._infos = metrics_of(get_agent_class(self.agent))
        return self._infos

    def set_agent(self, agent: str, run_id: int | None = None) -> None:
        if agent != self.agent:
            self._infos = None
        self.agent = agent
        if run_id is not None:
            self.run_id = run_id

    def smoothed(self, name: str, weight: float) -> np.ndarray:
        """The EMA of metric ``name`` (see :func:`ema`), brought up to date incrementally."""
        s = self.metrics.get(name)
        if s is None:
            return np.empty(0)
        key = (name, round(float(weight), 4))
        for other in [k for k in self._smoothed if k[0] == name and k != key]:
            del self._smoothed[other]  # the slider moved: the old weight is not coming back soon
        buf, carry = self._smoothed.get(key, (GrowingArray(), 0.0))
        if len(buf) < len(s):
            new, carry = ema(s.y.view[len(buf) :], key[1], len(buf), carry)
            buf.extend(new)
        self._smoothed[key] = (buf, carry)
        return buf.view

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
                s.note(value)
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
            s.note(col[keep])
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


def _slug(title: str) -> str:
    """Object name of a group's plot: "Loss" -> "lossPlot", "Mean Q" -> "meanQPlot", "TD error" -> "tdErrorPlot"."""
    words = re.findall(r"[A-Za-z0-9]+", title) or ["metric"]
    return words[0].lower() + "".join(w[:1].upper() + w[1:] for w in words[1:]) + "Plot"


def run_colour(run: RunSeries, fallback: int = 0) -> str:
    """A run's colour, chosen by its run id so that it stays the same whatever else is shown."""
    if run.run_id is not None:
        return RUN_COLOURS[(run.run_id - 1) % len(RUN_COLOURS)]
    return RUN_COLOURS[fallback % len(RUN_COLOURS)]


def _short_name(run: RunSeries, with_agent: bool = False) -> str:
    """How the shared run legend and the compared constants name a run: "run 5" ("run 5 · dqn" when
    the runs shown are of several agents); its label until it has a run id."""
    if run.run_id is None:
        return run.label
    return f"run {run.run_id} · {run.agent}" if with_agent and run.agent else f"run {run.run_id}"


def _runs_phrase(names: Sequence[str]) -> str:
    """ "run 1", "runs 1, 2" (run names of the shared legend, said once)."""
    if len(names) == 1:
        return names[0]
    if all(n.startswith("run ") and " · " not in n for n in names):
        return "runs " + ", ".join(n.removeprefix("run ") for n in names)
    return ", ".join(names)


def _compared_constants(found: Sequence[tuple[str, str, str, str]], runs: int) -> list[str]:
    """One line per metric of the constants of compared runs, from (label, note, run name, value):
    "Learning rate (constant): 1 in runs 1, 2 · 0.3 in runs 3, 4", or "Learning rate = 1 (constant)
    in every run". Runs with the same value are named together (a sweep's seeds of one point)."""
    by_metric: dict[tuple[str, str], dict[str, list[str]]] = {}
    for label, note, who, value in found:
        by_metric.setdefault((label, note), {}).setdefault(value, []).append(who)
    lines = []
    for (label, note), values in by_metric.items():
        if len(values) == 1 and len(next(iter(values.values()))) == runs:
            lines.append(f"{label} = {next(iter(values))} ({note}) in every run")
            continue
        parts = [f"{value} in {_runs_phrase(who)}" for value, who in values.items()]
        lines.append(f"{label} ({note}): " + " · ".join(parts))
    return lines


def _metric_colour(run_colour: str, j: int, many_runs: bool) -> Any:
    """Colour of a run's j-th metric on a shared plot (loss + validation loss...).

    Solid lines only: Qt strokes a dashed pen along the whole zigzag of a noisy curve, which took
    most of a second per repaint on a long run. Shades of the run's colour, alone or compared
    (``many_runs`` no longer matters): a run's second metric took another run's palette colour
    when it was shown alone, so its line changed colour between the single-run and the compare view.
    """
    # Gentle steps: past a few, darker(100 + 60 j) made every run's line near black, and the colour
    # is what tells the runs apart.
    return pg.mkColor(run_colour).darker(100 + 40 * min(j, 4))


def _unbroken(text: str) -> str:
    """``text`` as HTML that a word-wrapped label does not break ("Tile rates" stays one piece)."""
    return html.escape(text, quote=False).replace(" ", "&nbsp;")


def _panel_header(title: str, curves: Sequence[_Curve], many_runs: bool) -> tuple[list[str], str]:
    """A panel's legend: (its entries, the header's HTML).

    One run: every series in its colour ("Score (mean of 100)"). Runs compared: the colours belong to
    the runs (the shared legend above the grid), so the header lists the panel's metrics once each,
    with a grey swatch shaded as each run's line of that metric is, and says so once
    ("shades per run": each run draws its metrics in shades of its colour, in this order); a lone metric
    needs no swatch, and what its name repeats of the title is left out ("Max tile (geo. mean of
    100)" under "Max tile" reads "(geo. mean of 100)").
    """
    head = f"<b>{_unbroken(title)}</b>"
    sep = "&nbsp;&nbsp; "  # the only place a header line may break: between entries, not inside one
    if not many_runs:
        entries = list(dict.fromkeys(c.name for c in curves))
        colour = {c.name: c.colour for c in reversed(curves)}  # the first curve's colour of a name
        parts = [f"<span style='color:{colour[n]}'>&#9632;</span>&nbsp;{_unbroken(n)}" for n in entries]
        return entries, sep.join([head, *parts])
    shade: dict[str, int] = {}
    for c in curves:
        shade.setdefault(c.label or c.name, c.shade)
    entries = list(shade)
    if not entries:
        return entries, head
    if len(entries) == 1:
        only = entries[0]
        # "Greedy evaluation: mean score" under "Greedy evaluation" reads "mean score", not ": mean score"
        rest = only[len(title) :].lstrip(" :·-–").strip() if only.startswith(title) else only
        if not rest:
            return entries, head
        return entries, f"{head}{sep}<span style='color:#555'>{_unbroken(rest)}</span>"
    # A first word all entries share is said once ("Reached ■ 2048 ■ 8192"): four tile rates and the
    # hint then fit one line of a half-width panel, and every line of header is a line less of plot.
    # The leading words all entries share are said once: "Mean score (last 1,000 games) · (last 100
    # games)", two runs' means of different windows, not "Mean ■ score (last 1,000...)".
    words = [e.split(" ") for e in entries]
    k = 0
    # (up to a parenthesis: "(last 100 games)" stays whole)
    while all(len(w) > k + 1 for w in words) and len({w[k] for w in words}) == 1 and words[0][k][:1] != "(":
        k += 1
    common = " ".join(words[0][:k]) + " " if k else ""
    if len(set(shade.values())) == 1:
        # One shade for all (each run's first metric of this axis): swatches would tell nothing apart.
        rest = " · ".join(_unbroken(e.removeprefix(common)) for e in entries)
        body = f"<span style='color:#555'>{_unbroken(common.strip())}&nbsp;{rest}</span>"
        return entries, sep.join([head, body])
    parts = [
        f"<span style='color:{_metric_colour(NEUTRAL, j, True).name()}'>&#9632;</span>"
        f"&nbsp;{_unbroken(e.removeprefix(common))}"
        for e, j in shade.items()
    ]
    if common:
        parts.insert(0, _unbroken(common.strip()))
    # Said once, short: in a half-width panel of the Train tab a longer hint took a line of plot.
    hint = "<span style='color:#888'>(shades&nbsp;per&nbsp;run)</span>"
    return entries, sep.join([head, *parts, hint])


class SIAxis(pg.AxisItem):
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


def tile_label(exponent: int) -> str:
    """A tile as players name it on an axis: 2048 and 4096 in full, then 8k, 16k, 32k, 64k, 128k.

    Binary thousands, so a power of two reads as one: an SI prefix made 8192 "8.19k" and 16384 "16.4k".
    """
    if exponent < 13:
        return str(2**exponent)
    if exponent < 20:
        return f"{2 ** (exponent - 10)}k"
    return f"{2 ** (exponent - 20)}M"


class TileAxis(pg.AxisItem):
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

    @property
    def kind(self) -> str:
        return self.infos[0].kind if self.infos else "other"


@dataclass
class _Curve:
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


class CurvesPanel(QWidget):
    """The Train tab's plots. ``add_events`` feeds a live run; ``add_run`` overlays stored runs.

    Panels (object names): ``scorePlot`` (raw + moving average), ``maxTilePlot``, one per metric group
    of the agents shown (``lossPlot``, ``meanQPlot``, ``tdErrorPlot``...; :func:`_slug` of the group),
    ``speedPlot``. With nothing shown, the panel says so in words and :meth:`panel_titles` lists what
    the agent picked in the launch form will draw.
    """

    def __init__(
        self, parent: QWidget | None = None, tick_ms: int = 20, settings: QSettings | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("curvesPanel")
        pg.setConfigOptions(antialias=False, foreground="#333", background="w")
        self.settings = settings
        self.agent_name = ""
        self.agent_infos: tuple[MetricInfo, ...] = metrics_of(
            type("Default", (), {"metrics": DEFAULT_AGENT_METRICS})
        )
        self.runs: list[tuple[object, RunSeries]] = []  # (key, series); key ("live", n), a run id...
        self._panels: dict[str, _Panel] = {}
        self._curves: list[_Curve] = []
        self._dirty: set[str] = set()  # names of plots with something new to draw
        self._x_extent = (math.nan, math.nan, math.nan)  # see _data_x_extent
        self._layout_dirty = True
        self._next = 0  # round-robin position of the timer
        self.redraws = 0  # plot updates made (a plot's curves given new data)
        self.constants: list[str] = []  # "Learning rate = 1 (constant)" lines
        #: the shared run legend's entries ("run 5"), one per run shown; empty with one run or none
        self.run_legend: list[str] = []
        self._run_legend_key: tuple[tuple[str, str, str], ...] = ()  # (label, colour, title) per run

        from studio.settings import get_bool, get_int

        s = settings
        self.smoothing = min(0.99, max(0.0, (get_int(s, "curves/smoothing", 0) if s else 0) / 100))
        x_axis = str(s.value("curves/xAxis", "step")) if s else "step"
        self.x_axis = x_axis if x_axis in X_AXES else "step"
        self.log_y = get_bool(s, "curves/logY", False) if s else False
        self.log_x = get_bool(s, "curves/logX", False) if s else False
        #: log x switched on by itself for the runs shown (AUTO_LOG_X_RATIO), unless declined
        self.auto_log_x = False
        self._auto_declined = False
        self._auto_key: tuple[object, ...] = ()
        self._auto_reason = ""
        self._log_x_drawn = self.log_x  # what the panels were last drawn with

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(2)
        outer.addLayout(self._build_toolbar())
        # Said on screen when the x axis went log by itself (runs of very different lengths).
        self.autoLogLabel = QLabel()
        self.autoLogLabel.setObjectName("autoLogXLabel")
        self.autoLogLabel.setWordWrap(True)
        self.autoLogLabel.setStyleSheet("color: #a15c00;")
        self.autoLogLabel.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.autoLogLabel.setVisible(False)
        outer.addWidget(self.autoLogLabel)
        # One legend for the runs when several are compared: colours say which run a line is, so the
        # panels' legends need not repeat eight run names each (they pushed the plots to a sliver).
        # Its rows are packed by hand (_pack_run_legend) to stay within RUN_LEGEND_ROWS; the Ignored
        # width keeps a long row from holding the window wide before it is packed again.
        self.runLegend = QLabel()
        self.runLegend.setObjectName("runLegend")
        self.runLegend.setTextFormat(Qt.TextFormat.RichText)
        self.runLegend.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.runLegend.setContentsMargins(2, 0, 2, 0)
        self.runLegend.setVisible(False)
        outer.addWidget(self.runLegend)
        self.emptyLabel = QLabel()
        self.emptyLabel.setObjectName("curvesEmptyLabel")
        self.emptyLabel.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.emptyLabel.setWordWrap(True)
        self.emptyLabel.setStyleSheet("color: #666; font-size: 11pt;")
        outer.addWidget(self.emptyLabel, 1)
        self.gridHost = QWidget()
        self._rows = 0  # rows of panels in the grid (see _fit_grid)
        self.gridHost.setObjectName("curvesGrid")
        self.grid = QGridLayout(self.gridHost)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(4)
        # Many panels (two runs of different agents compared) scroll instead of pushing the window
        # past the screen: on a 1280x800 screen four rows of plots do not fit above the runs table.
        # The grid is sized by hand (_fit_grid): the scroll area's own resizing asks the word-wrapped
        # legends for their height at the preferred size of every plot, which made each row as tall
        # as the whole view. Rows share the view when each gets MIN_ROW_PX; below that they scroll.
        self.gridScroll = QScrollArea()
        self.gridScroll.setObjectName("curvesScroll")
        self.gridScroll.setWidgetResizable(False)
        self.gridScroll.viewport().installEventFilter(self)
        self.gridScroll.setFrameShape(QFrame.Shape.NoFrame)
        self.gridScroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.gridScroll.setWidget(self.gridHost)
        outer.addWidget(self.gridScroll, 1)
        self.constantsLabel = QLabel("")
        self.constantsLabel.setObjectName("constantsLabel")
        self.constantsLabel.setTextFormat(Qt.TextFormat.PlainText)
        self.constantsLabel.setWordWrap(True)
        self.constantsLabel.setStyleSheet("color: #555;")
        # Compared runs: one elided line per metric (_elide_constants); Ignored width, or the longest
        # line would set the window's least width until the next resize elided it again.
        self.constantsLabel.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        outer.addWidget(self.constantsLabel)
        self._constant_lines: list[str] = []  # compared runs: a line per metric, before eliding
        self._constants_shown: tuple[list[str], bool] = ([], False)  # what the label says now, and how

        # One dirty plot per tick, in turn: a tick's work (and the repaint after it) is one plot, so
        # the GUI thread never stalls for all of them at once.
        self.timer = QTimer(self)
        self.timer.setInterval(tick_ms)
        self.timer.timeout.connect(self._tick)
        self._rebuild()
        self.timer.start()

    # ------------------------------------------------------------------ the toolbar
    def _build_toolbar(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.setContentsMargins(2, 0, 2, 0)
        row.addWidget(QLabel("Smoothing"))
        self.smoothingValue = QLabel(f"{self.smoothing:.2f}")
        self.smoothingValue.setObjectName("smoothingValue")
        self.smoothingValue.setFixedWidth(30)
        self.smoothingSlider = QSlider(Qt.Orientation.Horizontal)
        self.smoothingSlider.setObjectName("smoothingSlider")
        self.smoothingSlider.setRange(0, 99)
        self.smoothingSlider.setValue(round(self.smoothing * 100))
        self.smoothingSlider.setFixedWidth(120)
        self.smoothingSlider.setTracking(False)  # smooth again when the handle is let go
        self.smoothingSlider.setToolTip("Exponential moving average, as TensorBoard's (0: raw values)")
        self.smoothingSlider.valueChanged.connect(lambda v: self.set_smoothing(v / 100))
        self.smoothingSlider.sliderMoved.connect(lambda v: self.smoothingValue.setText(f"{v / 100:.2f}"))
        row.addWidget(self.smoothingSlider)
        row.addWidget(self.smoothingValue)
        row.addSpacing(10)
        row.addWidget(QLabel("x axis"))
        self.xAxisCombo = QComboBox()
        self.xAxisCombo.setObjectName("xAxisCombo")
        for key, text in X_AXES.items():
            self.xAxisCombo.addItem(text, key)
        self.xAxisCombo.setCurrentIndex(list(X_AXES).index(self.x_axis))
        self.xAxisCombo.currentIndexChanged.connect(lambda _i: self.set_x_axis(self.xAxisCombo.currentData()))
        row.addWidget(self.xAxisCombo)
        self.logXCheck = QCheckBox("Log x")
        self.logXCheck.setObjectName("logXCheck")
        self.logXCheck.setToolTip("A log x axis: a run of 100 games reads beside one of 40,000")
        self.logXCheck.setChecked(self.log_x)
        self.logXCheck.toggled.connect(self.set_log_x)
        row.addWidget(self.logXCheck)
        self.logYCheck = QCheckBox("Log y")
        self.logYCheck.setObjectName("logYCheck")
        self.logYCheck.setToolTip("Log y on every panel whose values are positive (losses are log anyway)")
        self.logYCheck.setChecked(self.log_y)
        self.logYCheck.toggled.connect(self.set_log_y)
        row.addWidget(self.logYCheck)
        self.fitButton = QPushButton("Fit")
        self.fitButton.setObjectName("fitButton")
        self.fitButton.setToolTip("Fit every panel to its data (after a zoom or a pan)")
        self.fitButton.clicked.connect(self.fit)
        row.addWidget(self.fitButton)
        row.addStretch(1)
        return row

    def _save(self, key: str, value: Any) -> None:
        if self.settings is not None:
            self.settings.setValue(key, value)

    def set_smoothing(self, weight: float) -> None:
        """EMA weight 0..0.99 (0: raw values): smoothable series are drawn smoothed, raw faint behind."""
        weight = min(0.99, max(0.0, float(weight)))
        self.smoothingValue.setText(f"{weight:.2f}")
        if round(weight * 100) != self.smoothingSlider.value():
            self.smoothingSlider.blockSignals(True)
            self.smoothingSlider.setValue(round(weight * 100))
            self.smoothingSlider.blockSignals(False)
        if weight == self.smoothing:
            return
        self.smoothing = weight
        self._save("curves/smoothing", round(weight * 100))
        self._rebuild()

    def set_x_axis(self, axis: str) -> None:
        """ "step", "episode" or "elapsed" (wall time): every panel, every run."""
        if axis not in X_AXES:
            raise ValueError(f"no x axis {axis!r}")
        if self.xAxisCombo.currentData() != axis:
            self.xAxisCombo.setCurrentIndex(list(X_AXES).index(axis))  # comes back here
            return
        if axis == self.x_axis:
            return
        self.x_axis = axis
        self._save("curves/xAxis", axis)
        self._rebuild()
        self.fit()

    def set_log_x(self, on: bool) -> None:
        """Log x on every panel (the saved choice). Unticked while it was on by itself (runs of very
        different lengths), it stays off for these runs."""
        if self.logXCheck.isChecked() != on:
            self.logXCheck.setChecked(on)
            return
        if not on and self.auto_log_x:
            self._auto_declined = True
        self.log_x = bool(on)
        self._save("curves/logX", self.log_x)
        self._update_auto_log_x()
        self._rebuild()
        self.fit()

    @property
    def log_x_on(self) -> bool:
        """Whether the panels' x axes are log now: the user's choice, or by themselves (see
        :data:`AUTO_LOG_X_RATIO`) unless the user unticked it for these runs."""
        return self.log_x or (self.auto_log_x and not self._auto_declined)

    @property
    def x_title(self) -> str:
        return X_TITLES[self.x_axis] + (" (log scale)" if self.log_x_on else "")

    def run_x_extents(self) -> list[tuple[RunSeries, float]]:
        """(run, its greatest x on the current x axis) of every shown run that has data."""
        out = []
        for _k, run in self.runs:
            ends = [
                float(len(s) - 1) if s.uses_index(self.x_axis) else float(s.x(self.x_axis)[len(s) - 1])
                for s in run.metrics.values()
                if len(s)
            ]
            if ends:
                out.append((run, max(ends)))
        return out

    def _update_auto_log_x(self) -> bool:
        """Switch log x on by itself when the runs compared differ in length more than
        AUTO_LOG_X_RATIO times (once on, it stays on for these runs: a live run does not flip the
        axis back and forth), and say so; True when the axes must be drawn again."""
        key = tuple(k for k, _r in self.runs)
        if key != self._auto_key:  # other runs: a fresh decision
            self._auto_key = key
            self.auto_log_x = self._auto_declined = False
            self._auto_reason = ""
        if not self.auto_log_x and len(self.runs) > 1:
            ext = [(run, x) for run, x in self.run_x_extents() if x > 0]
            if len(ext) > 1:
                (short, lo), (long, hi) = min(ext, key=lambda e: e[1]), max(ext, key=lambda e: e[1])
                if hi > AUTO_LOG_X_RATIO * lo:
                    self.auto_log_x = True
                    unit = X_TITLES[self.x_axis] if self.x_axis != "elapsed" else "time"
                    self._auto_reason = (
                        f"Log x turned on: {_short_name(long)} is {hi / lo:,.0f}× as long as "
                        f"{_short_name(short)} in {unit} (untick it for a linear axis)"
                    )
        showing = self.auto_log_x and not self._auto_declined and not self.log_x
        self.autoLogLabel.setText(self._auto_reason if showing else "")
        self.autoLogLabel.setVisible(showing)
        if self.logXCheck.isChecked() != self.log_x_on:
            self.logXCheck.blockSignals(True)
            self.logXCheck.setChecked(self.log_x_on)
            self.logXCheck.blockSignals(False)
        changed = self.log_x_on != self._log_x_drawn
        self._log_x_drawn = self.log_x_on
        return changed

    def set_log_y(self, on: bool) -> None:
        if self.logYCheck.isChecked() != on:
            self.logYCheck.setChecked(on)
            return
        self.log_y = bool(on)
        self._save("curves/logY", self.log_y)
        self._layout_dirty = True
        self._relayout()
        self.fit()

    def fit(self) -> None:
        """Every panel back to auto range (its whole data)."""
        for p in self._panels.values():
            p.plot.getPlotItem().enableAutoRange()
        self.mark_dirty()
        self.redraw()

    def eventFilter(self, watched: Any, event: Any) -> bool:
        if watched is self.gridScroll.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_grid()
        return super().eventFilter(watched, event)

    def _fit_grid(self) -> None:
        """The grid as wide as the view, and as tall as the view or MIN_ROW_PX a row, whichever is more."""
        view = self.gridScroll.viewport().size()
        self.gridHost.resize(view.width(), max(view.height(), self._rows * MIN_ROW_PX))

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        # Both depend on the width only: a few font measurements per resize, nothing per redraw.
        self._pack_run_legend()
        self._elide_constants()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.timer.start()  # catch up with what arrived while hidden, one plot per tick

    def hideEvent(self, event: Any) -> None:
        # Hidden (another tab in front): events still append, nothing is drawn, so the window's thread
        # stays free for what the user looks at.
        self.timer.stop()
        super().hideEvent(event)

    # ------------------------------------------------------------------ panels
    def __getattr__(self, name: str) -> Any:
        # ``panel.scorePlot``, ``panel.lossPlot``...: the plots of the panels built now.
        panels = self.__dict__.get("_panels")
        if panels is not None and name.endswith("Plot") and name in panels:
            return panels[name].plot
        raise AttributeError(name)

    def _make_panel(self, title: str, infos: list[MetricInfo]) -> _Panel:
        name = {"Score": "scorePlot", "Max tile": "maxTilePlot", "Speed": "speedPlot"}.get(
            title, _slug(title)
        )
        tile = title == "Max tile"
        left: pg.AxisItem = TileAxis("left") if tile else SIAxis("left")
        bottom = SIAxis("bottom", time_axis=self.x_axis == "elapsed")
        w = pg.PlotWidget(axisItems={"left": left, "bottom": bottom})
        w.setObjectName(name)
        w.showGrid(x=False, y=True, alpha=0.15)
        w.setMinimumSize(160, 100)
        unit = next((m.unit for m in infos if m.unit), "")
        if unit:
            w.setLabel("left", unit)
        w.setLabel("bottom", self.x_title)
        # Decimation is ours (PeakDecimator / peak_decimate), not pyqtgraph's: its automatic
        # downsampling picks a factor from the view range, which moves the data bounds, which moves
        # the auto range... and the plots repainted themselves continuously while training.
        w.getPlotItem().setDownsampling(ds=1, auto=False, mode="peak")
        w.getPlotItem().setClipToView(False)
        w.getPlotItem().hideButtons()
        vb = w.getPlotItem().getViewBox()
        vb.sigXRangeChanged.connect(lambda *_a, name=name: self._range_changed(name))
        # Back to auto range (the menu, Fit): draw the whole history again at once, or the auto
        # range would fit the zoomed slice that is drawn now.
        vb.sigStateChanged.connect(lambda *_a, name=name: self._range_changed(name))
        header = QLabel()
        header.setObjectName(name.removesuffix("Plot") + "Legend")
        header.setTextFormat(Qt.TextFormat.RichText)
        header.setWordWrap(True)
        # Parented from the start: a parentless box made visible before the grid takes it would be a
        # window of its own for a moment (it flashes, and the main window loses focus and shortcuts).
        box = QWidget(self.gridHost)
        box.setVisible(False)
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(header)
        lay.addWidget(w, 1)
        panel = _Panel(name, title, infos, box, header, w, transform="log2" if tile else "")
        w.addItem(panel.extent)
        return panel

    def _wanted_groups(self) -> list[tuple[str, list[MetricInfo]]]:
        infos: dict[str, MetricInfo] = {}
        sources = [run.infos or self._fallback_infos(run) for _k, run in self.runs] or [self.agent_infos]
        for src in sources:
            for m in src:
                infos.setdefault(m.name, m)
        return groups(infos.values())

    def _fallback_infos(self, run: RunSeries) -> tuple[MetricInfo, ...]:
        return self.agent_infos if self.agent_infos else STANDARD

    def panel_titles(self, shown_only: bool = True) -> list[str]:
        """Titles of the panels, in order: those drawn now (with no run shown: what the agent picked
        would draw), or all that are built."""
        return [p.title for p in self._panels.values() if p.shown or not shown_only or not self.runs]

    def legend_names(self, title: str | None = None) -> list[str]:
        """Names of the series drawn, one per line with a legend entry ("run 1 · dqn · Loss" when runs
        are compared, "Loss" alone), of one panel (by title or object name) or of all."""
        out: list[str] = []
        for p in self._panels.values():
            if title is None or title in (p.title, p.name):
                out += p.legend
        return out

    def panel_legend(self, title: str) -> list[str]:
        """What a panel's header lists after its title (by title or object name): its series when one
        run is shown, its metrics only when runs are compared (the shared run legend names the runs)."""
        return next((list(p.entries) for p in self._panels.values() if title in (p.title, p.name)), [])

    # ------------------------------------------------------------------ the shared run legend
    def _update_run_legend(self) -> None:
        """The run legend's entries, rebuilt only when the runs shown (or their names) change."""
        many = len(self.runs) > 1
        agents = {run.agent for _k, run in self.runs}
        key = tuple(
            (_short_name(run, len(agents) > 1), run_colour(run, i), run.title)
            for i, (_k, run) in enumerate(self.runs)
        )
        if not many:
            key = ()
        if key == self._run_legend_key:
            return
        self._run_legend_key = key
        self.run_legend = [label for label, _c, _t in key]
        self.runLegend.setToolTip(
            "<br>".join(
                f"<span style='color:{c}'>&#9632;</span>&nbsp;{html.escape(t, quote=False)}"
                for _l, c, t in key
            )
        )
        self.runLegend.setVisible(bool(key))
        self._pack_run_legend()

    def _pack_run_legend(self) -> None:
        """Lay the run entries in at most RUN_LEGEND_ROWS rows of the width, then "+N more"."""
        key = self._run_legend_key
        if not key:
            self.runLegend.setText("")
            return
        fm = QFontMetrics(self.runLegend.font())
        width = max(200, self.contentsRect().width() - 8)
        gap = fm.horizontalAdvance("    ")
        sizes = [fm.horizontalAdvance(f"\u25a0 {label}") + gap for label, _c, _t in key]
        more = fm.horizontalAdvance(f"+{len(key)} more") + gap
        rows: list[list[int]] = [[]]
        used = 0
        placed = 0
        for i, size in enumerate(sizes):
            # The last row keeps room for "+N more" unless this entry is the last of all.
            room = width - (more if len(rows) == RUN_LEGEND_ROWS and i < len(sizes) - 1 else 0)
            if rows[-1] and used + size > room:
                if len(rows) == RUN_LEGEND_ROWS:
                    break
                rows.append([])
                used = 0
            rows[-1].append(i)
            used += size
            placed += 1
        sep = "&nbsp;&nbsp;&nbsp;&nbsp;"
        lines = [
            sep.join(
                f"<span style='color:{key[i][1]}'>&#9632;</span>&nbsp;{html.escape(key[i][0], quote=False)}"
                for i in row
            )
            for row in rows
        ]
        if placed < len(key):
            lines[-1] += f"{sep}<span style='color:#666'>+{len(key) - placed} more</span>"
        self.runLegend.setText("<br>".join(lines))

    def set_agent(self, agent: Any, infos: Sequence[MetricInfo] | None = None) -> None:
        """The agent picked in the launch form (a class, a registered name, or None): with no run
        shown, the panels are that agent's (empty, with their titles) and nothing else is left."""
        if infos is None:
            cls = agent
            if isinstance(agent, str):
                from agents.registry import get_agent_class

                try:
                    cls = get_agent_class(agent)
                except Exception:
                    cls = None
            infos = metrics_of(cls) if cls is not None else STANDARD
        self.agent_name = getattr(agent, "name", agent) or ""
        self.agent_infos = tuple(infos)
        self._rebuild()

    # ------------------------------------------------------------------ runs
    @property
    def live(self) -> RunSeries | None:
        """The first live run (key ``"live"`` or ``("live", n)``: several may train at once)."""
        for key, run in self.runs:
            if key == "live" or (isinstance(key, tuple) and key and key[0] == "live"):
                return run
        return None

    def start_live(self, label: str = "live", agent: str = "") -> RunSeries:
        """Begin a fresh live run (replacing the previous live one); overlays stay."""
        self.runs = [(k, r) for k, r in self.runs if k != "live"]
        run = RunSeries(label, agent=agent)
        self.runs.insert(0, ("live", run))
        self._rebuild()
        return run

    def add_run(self, key: object, run: RunSeries) -> None:
        """Show ``run`` (e.g. a stored run re-opened) beside the others; same key replaces."""
        self.runs = [(k, r) for k, r in self.runs if k != key]
        self.runs.append((key, run))
        self._rebuild()

    def set_runs(self, runs: Sequence[tuple[object, RunSeries]]) -> None:
        """Show exactly these runs."""
        self.runs = list(runs)
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
        self.mark_dirty()

    def mark_dirty(self) -> None:
        self._dirty.update(self._panels)
        self._layout_dirty = True

    # ------------------------------------------------------------------ building
    def _rebuild(self) -> None:
        wanted = self._wanted_groups()
        if [t for t, _ in wanted] != [p.title for p in self._panels.values()]:
            for p in self._panels.values():
                self.grid.removeWidget(p.box)
                p.box.setParent(None)
                p.box.deleteLater()
            self._panels = {}
            for title, infos in wanted:
                p = self._make_panel(title, infos)
                self._panels[p.name] = p
        else:
            for p, (_t, infos) in zip(self._panels.values(), wanted, strict=True):
                p.infos = infos
                p.plot.clear()
                p.plot.addItem(p.extent)  # clear() took it out with the curves
                bottom = p.plot.getPlotItem().getAxis("bottom")
                if isinstance(bottom, SIAxis):
                    bottom.time_axis = self.x_axis == "elapsed"
                    bottom.picture = None
                    bottom.update()
                p.plot.setLabel("bottom", self.x_title)
        for p in self._panels.values():
            p.legend = []
        self._curves = []
        many = len(self.runs) > 1
        for i, (_key, run) in enumerate(self.runs):
            colour = run_colour(run, i)
            declared = {m.name for m in (run.infos or self._fallback_infos(run))}
            for p in self._panels.values():
                j = 0
                for info in p.infos:
                    if info.name not in declared:
                        continue  # only what this run's agent has: no "run 1 · dqn · TD error"
                    if self._add_metric(p, run, info, colour, j, many):
                        j += 1
        self._layout_dirty = True
        self._relayout()
        self.mark_dirty()
        self.redraw()

    def _add_metric(
        self, p: _Panel, run: RunSeries, info: MetricInfo, colour: str, j: int, many: bool
    ) -> bool:
        """Draw one metric of a run on a panel; False when it draws no named line (no shade used)."""
        prefix = f"{run.title} · " if many else ""
        tile = p.transform == "log2"
        mc = _metric_colour(colour, j, many)
        faint = pg.mkPen(pg.mkColor(mc).lighter(175), width=1)
        strong = pg.mkPen(mc, width=2)
        if info.name in (SCORE, MAX_TILE):
            if not many:
                # Raw per-game values only for a single run: with several, they would hide each other.
                self._add(p, run, info.name, faint, "", transform="log2" if tile else "")
            if info.name == SCORE and run.has_own_mean:
                # The agent's own mean over its last games is the mean drawn: an average of its
                # events (each the mean of a slice of games) would be a second "mean" of other games.
                return False
            label = (
                f"{info.label} (geo. mean of {run.ma_window})"
                if info.name == MAX_TILE
                else mean_score_label(run.ma_window)
            )
            self._add(p, run, info.name, strong, prefix + label, moving_average=True, label=label, shade=j)
            return True
        smooth = self.smoothing if info.smoothable else 0.0
        transform = "log2" if tile else ""
        label = mean_score_label(run.mean_window) if info.name == MEAN_SCORE.name else info.label
        name = prefix + label
        if smooth > 0:
            self._add(p, run, info.name, faint, "", transform=transform)
            self._add(p, run, info.name, strong, name, transform, smooth=smooth, label=label, shade=j)
        else:
            self._add(p, run, info.name, pg.mkPen(mc, width=1.5), name, transform, label=label, shade=j)
        return True

    def _add(
        self,
        p: _Panel,
        run: RunSeries,
        metric: str,
        pen: Any,
        name: str,
        transform: str = "",
        moving_average: bool = False,
        smooth: float = 0.0,
        label: str = "",
        shade: int = 0,
    ) -> None:
        item = pg.PlotDataItem(pen=pen)
        # addItem applies the plot's downsampling / clip settings (set in _make_panel) to the item.
        p.plot.addItem(item)
        colour = pen.color().name()
        self._curves.append(
            _Curve(
                item,
                p.plot,
                p.name,
                run,
                metric,
                self.x_axis,
                name,
                colour,
                moving_average,
                smooth,
                transform,
                label=label,
                shade=shade,
            )
        )

    # ------------------------------------------------------------------ layout: constants, log axes
    def _relayout(self) -> None:
        """Which panels show (a group whose series are all constant is a line of text), their log axes,
        their legends, the grid; the words instead of plots when no run is shown."""
        if not self._layout_dirty:
            return
        self._layout_dirty = False
        if self._update_auto_log_x():
            # The x axis changed to (or from) log by itself: the curves are drawn again on it.
            self._rebuild()
            self.fit()
            return
        any_events = any(run.events for _k, run in self.runs)
        constants: list[str] = []
        compared: list[tuple[str, str, str, str]] = []  # (label, note, run, value) when runs are compared
        many = len(self.runs) > 1
        with_agent = many and len({run.agent for _k, run in self.runs}) > 1
        self._update_run_legend()
        for p in self._panels.values():
            mine = [c for c in self._curves if c.panel == p.name and c.name]
            with_data = [(c, c.run.metrics[c.metric]) for c in mine if c.run.count(c.metric)]
            collapsible = p.kind not in ("score", "speed")
            all_const = bool(with_data) and collapsible and all(s.constant for _c, s in with_data)
            # A panel of the agent's own metrics stays up before its data comes (DQN's losses start after
            # its first thousand moves): showing it then would re-lay the grid and paint new plots in one
            # frame, the window's longest stall. A standard panel no run fills (imitation plays no
            # games, so it has no score) goes once events flow.
            own = any(m not in STANDARD for m in p.infos)
            p.shown = bool(self.runs) and not all_const and (bool(with_data) or not any_events or own)
            if all_const:
                info_of = {m.name: m for m in p.infos}
                for c, s in with_data:
                    label = info_of[c.metric].label
                    note = "constant" if len(s) > 1 else "the first value"  # one evaluation is no trend yet
                    value = format_si(s.lo, abs(s.lo) / 1000 or None)
                    if many:
                        compared.append((label, note, _short_name(c.run, with_agent), value))
                    else:
                        constants.append(f"{label} = {value} ({note})")
            log_pref = self.log_y or any(m.scale == "log" for m in p.infos)
            # No data yet counts as positive: the axis then needs no switch (a re-layout) when it comes.
            positive = all(s.lo > 0 for _c, s in with_data)
            log_y = log_pref and positive and p.transform != "log2"
            if (log_y, self.log_x_on) != (p.log_y, p.log_x):
                p.log_y, p.log_x = log_y, self.log_x_on
                p.plot.getPlotItem().setLogMode(x=self.log_x_on, y=log_y)
                p.plot.setLabel("bottom", self.x_title)
            legend: list[str] = []
            # An agent's declared series are named before their data comes, so the header keeps
            # its height then (a header that grows shrinks and repaints every plot in its row).
            named = [c for c in mine if c.run.count(c.metric) or own]
            for c in named:
                if c.name not in legend:
                    legend.append(c.name)
            if legend != p.legend or not p.header.text():
                p.legend = legend
                p.entries, text = _panel_header(p.title, named, many)
                p.header.setText(text)
        if many:
            constants = _compared_constants(compared, len(self.runs))
        if (constants, many) != self._constants_shown:
            self._constants_shown = (constants, many)
            self.constants = constants
            self._constant_lines = list(constants) if many else []
            full = "<br>".join(html.escape(line, quote=False) for line in constants)
            self.constantsLabel.setToolTip(f"<qt>{full}</qt>" if constants else "")
            self.constantsLabel.setWordWrap(not many)
            if many:
                self._elide_constants()
            else:
                # One run has a few constants: they wrap as they are (a tooltip for the same words).
                self.constantsLabel.setText(" · ".join(constants))
        self.constantsLabel.setVisible(bool(constants))
        shown = [p for p in self._panels.values() if p.shown]
        placed = [
            item.widget() for i in range(self.grid.count()) if (item := self.grid.itemAt(i)) is not None
        ]
        if placed != [p.box for p in shown]:
            while self.grid.count():
                self.grid.takeAt(0)
            for p in self._panels.values():
                p.box.setVisible(p.shown)
            for k, p in enumerate(shown):
                last_alone = k == len(shown) - 1 and len(shown) % 2 == 1
                self.grid.addWidget(p.box, k // 2, k % 2, 1, 2 if last_alone else 1)
            for r in range(self.grid.rowCount()):
                self.grid.setRowStretch(r, 1 if r < (len(shown) + 1) // 2 else 0)
            self._rows = (len(shown) + 1) // 2
            self._fit_grid()
        empty = not self.runs
        if empty:
            titles = " · ".join(p.title for p in self._panels.values())
            who = f"{self.agent_name} draws" if self.agent_name else "Panels"
            self.emptyLabel.setText(f"{EMPTY_TEXT}<br><br><small>{who}: {titles}</small>")
        self.emptyLabel.setVisible(empty)
        self.gridHost.setVisible(not empty)
        self.gridScroll.setVisible(not empty)

    def _elide_constants(self) -> None:
        """Compared runs' constants: a line per metric, at most CONSTANT_LINES (the rest joined on the
        last), each elided with "…" to the width; the tooltip has them whole."""
        lines = self._constant_lines
        if not lines:
            return
        if len(lines) > CONSTANT_LINES:
            lines = [*lines[: CONSTANT_LINES - 1], " · ".join(lines[CONSTANT_LINES - 1 :])]
        fm = QFontMetrics(self.constantsLabel.font())
        width = max(100, self.contentsRect().width() - 8)
        elide = Qt.TextElideMode.ElideRight
        self.constantsLabel.setText("\n".join(fm.elidedText(line, elide, width) for line in lines))

    # ------------------------------------------------------------------ drawing
    def redraw(self) -> None:
        """Bring every dirty plot up to date now (tests, a re-opened run); the timer does one per tick."""
        for name in list(self._panels):
            if name in self._dirty:
                self._update_plot(name)
        self._relayout()

    def _tick(self) -> None:
        names = list(self._panels)
        self._relayout()
        for k in range(len(names)):
            name = names[(self._next + k) % len(names)]
            if name in self._dirty:
                self._next = (self._next + k + 1) % len(names)
                self._update_plot(name)
                return

    def _update_plot(self, name: str) -> None:
        """Push new data to one plot's curves.

        While a plot follows the data (auto range), its curves come from incremental decimators, so
        this costs O(plot width) per curve. Once the user zooms or pans, the visible slice is
        decimated afresh (O(visible points)) whenever the range or the data changes.
        """
        self._dirty.discard(name)
        panel = self._panels.get(name)
        if panel is None:
            return
        plot = panel.plot
        vb = plot.getPlotItem().getViewBox()
        following = bool(vb.autoRangeEnabled()[0])
        xr: tuple[float, float] | None = None
        if not following:
            lo, hi = vb.viewRange()[0]
            xr = (10.0**lo, 10.0**hi) if panel.log_x else (lo, hi)
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
            if c.moving_average:
                y = c.run.ma[c.metric].view
            elif c.smooth > 0:
                y = c.run.smoothed(c.metric, c.smooth)
            else:
                y = s.y.view
            if xr is None and n <= 2 * c.decimator.target:
                dx, dy = x[:n].copy(), y[:n].copy()  # few points: each as it is
                c.decimator.update(x, y)  # kept in step for when the series grows
            elif xr is None:
                dx, dy = c.decimator.update(x, y)
            else:
                lo_i = max(0, int(np.searchsorted(x, xr[0], "left")) - 1)
                hi_i = int(np.searchsorted(x, xr[1], "right")) + 1
                dx, dy = peak_decimate(x[lo_i:hi_i], y[lo_i:hi_i], c.decimator.target)
            if c.transform == "log2":
                dy = np.log2(np.maximum(dy, 1.0))
            if panel.log_x:
                keep = dx > 0  # x = 0 has no place on a log axis
                dx, dy = dx[keep], dy[keep]
            self._set_markers(
                c, bool(c.name) and not c.moving_average and c.smooth == 0 and n <= MARKER_POINTS
            )
            c.item.setData(dx, dy)
        if changed:
            self.redraws += 1
        extent = self._data_x_extent()
        if extent != self._x_extent:
            self._x_extent = extent
            self._dirty.update(n for n in self._panels if n != name)  # the others line up next ticks
        self._apply_extent(panel, extent)

    def _data_x_extent(self) -> tuple[float, float, float]:
        """(least x, least positive x, greatest x) over every shown series on the current x axis; nan
        where there is none. Series grow at the end only, so their ends are their extremes."""
        firsts: list[float] = []
        positives: list[float] = []
        lasts: list[float] = []
        for c in self._curves:
            s = c.run.metrics.get(c.metric)
            n = len(s) if s is not None else 0
            if s is None or n == 0:
                continue
            if s.uses_index(c.axis):  # x is the point index: 0 .. n - 1
                firsts.append(0.0)
                lasts.append(float(n - 1))
                if n > 1:
                    positives.append(1.0)
                continue
            x = s.x(c.axis)[:n]
            firsts.append(float(x[0]))
            lasts.append(float(x[-1]))
            k = int(np.searchsorted(x, 0.0, "right"))
            if k < n:
                positives.append(float(x[k]))
        return min(firsts, default=math.nan), min(positives, default=math.nan), max(lasts, default=math.nan)

    @staticmethod
    def _apply_extent(panel: _Panel, extent: tuple[float, float, float]) -> None:
        lo, lo_pos, hi = extent
        if panel.log_x:  # the plot's own coordinates are log10(x) then
            ok = math.isfinite(lo_pos) and hi > 0
            panel.extent.set_range(*((math.log10(lo_pos), math.log10(hi)) if ok else (math.nan, math.nan)))
        else:
            panel.extent.set_range(lo, hi)

    @staticmethod
    def _set_markers(c: _Curve, on: bool) -> None:
        """Dots on a curve's points, or none; pyqtgraph redraws its symbols only when this changes."""
        if on == c.markers:
            return
        c.markers = on
        if on:
            c.item.setSymbol("o")
            c.item.setSymbolSize(6)
            c.item.setSymbolPen(None)
            c.item.setSymbolBrush(pg.mkBrush(c.colour))
        else:
            c.item.setSymbol(None)

    def _range_changed(self, name: str) -> None:
        # A zoom or pan needs the visible slice decimated again (a no-op while following the data).
        self._dirty.add(name)

    def data_length(self, plot_name: str) -> int:
        """Raw points behind the fullest curve of a plot (``"scorePlot"`` ...): for tests and status lines."""
        return max((c.drawn for c in self._curves if c.panel == plot_name), default=0)

    def curve(self, plot_name: str, name: str) -> _Curve:
        """The curve named ``name`` in a plot's legend (tests)."""
        return next(c for c in self._curves if c.panel == plot_name and c.name == name)
