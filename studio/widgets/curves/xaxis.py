"""The curves' x axis (Qt-free): which counter x is, how far each run reaches on it, when runs of very
different lengths want a log axis by themselves, and the x extent that lines the panels up."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from studio.widgets.curves.names import _short_name
from studio.widgets.curves.series import MetricSeries, RunSeries

#: The x axes offered: key -> what the toolbar says.
X_AXES = {"step": "Step (moves)", "episode": "Episode (games)", "elapsed": "Wall time"}
#: Each panel's x-axis title, by x axis.
X_TITLES = {"step": "moves", "episode": "games", "elapsed": "wall time"}
#: Runs compared whose lengths on the x axis differ more than this many times are drawn on a log x
#: axis by themselves (a DQN run of 50k moves beside an n-tuple run of 50M is a flat line at zero on
#: a linear axis); the panel says so, and unticking Log x keeps them linear.
AUTO_LOG_X_RATIO = 20.0


def x_title(axis: str, log_x: bool) -> str:
    """A panel's x-axis title: "moves", "games (log scale)"."""
    return X_TITLES[axis] + (" (log scale)" if log_x else "")


def run_x_extents(runs: Iterable[RunSeries], axis: str) -> list[tuple[RunSeries, float]]:
    """(run, its greatest x on ``axis``) of every run that has data."""
    out = []
    for run in runs:
        ends = [
            float(len(s) - 1) if s.uses_index(axis) else float(s.x(axis)[len(s) - 1])
            for s in run.metrics.values()
            if len(s)
        ]
        if ends:
            out.append((run, max(ends)))
    return out


def auto_log_x_reason(runs: Sequence[RunSeries], axis: str) -> str:
    """Why the x axis goes log by itself for these runs ("Log x turned on: run 2 is 40× as long as
    run 1 in moves..."), or "" when their lengths differ no more than AUTO_LOG_X_RATIO times."""
    if len(runs) < 2:
        return ""
    ext = [(run, x) for run, x in run_x_extents(runs, axis) if x > 0]
    if len(ext) < 2:
        return ""
    (short, lo), (long, hi) = min(ext, key=lambda e: e[1]), max(ext, key=lambda e: e[1])
    if hi <= AUTO_LOG_X_RATIO * lo:
        return ""
    unit = X_TITLES[axis] if axis != "elapsed" else "time"
    return (
        f"Log x turned on: {_short_name(long)} is {hi / lo:,.0f}× as long as "
        f"{_short_name(short)} in {unit} (untick it for a linear axis)"
    )


def data_x_extent(shown: Iterable[tuple[MetricSeries | None, str]]) -> tuple[float, float, float]:
    """(least x, least positive x, greatest x) over the (series, x axis) pairs drawn; nan where there
    is none. Series grow at the end only, so their ends are their extremes."""
    firsts: list[float] = []
    positives: list[float] = []
    lasts: list[float] = []
    for s, axis in shown:
        n = len(s) if s is not None else 0
        if s is None or n == 0:
            continue
        if s.uses_index(axis):  # x is the point index: 0 .. n - 1
            firsts.append(0.0)
            lasts.append(float(n - 1))
            if n > 1:
                positives.append(1.0)
            continue
        x = s.x(axis)[:n]
        firsts.append(float(x[0]))
        lasts.append(float(x[-1]))
        k = int(np.searchsorted(x, 0.0, "right"))
        if k < n:
            positives.append(float(x[k]))
    return min(firsts, default=math.nan), min(positives, default=math.nan), max(lasts, default=math.nan)


def plot_x_range(extent: tuple[float, float, float], log_x: bool) -> tuple[float, float]:
    """The x range of ``extent`` in a plot's own coordinates (log10(x) on a log axis: from the least
    positive x); nan, nan where there is nothing to span."""
    lo, lo_pos, hi = extent
    if not log_x:
        return lo, hi
    if math.isfinite(lo_pos) and hi > 0:
        return math.log10(lo_pos), math.log10(hi)
    return math.nan, math.nan


class AutoLogX:
    """Log x switched on by itself for the runs shown (see :func:`auto_log_x_reason`).

    Once on, it stays on for these runs (a live run growing does not flip the axis back and forth);
    unticked by the user while on, it stays off for these runs; other runs shown: a fresh decision.
    """

    def __init__(self) -> None:
        self.on = False
        self.declined = False
        self.reason = ""
        self._key: tuple[object, ...] = ()

    @property
    def active(self) -> bool:
        """On, and not declined."""
        return self.on and not self.declined

    def decline(self) -> None:
        """The user unticked Log x: while on by itself, it stays off for these runs."""
        if self.on:
            self.declined = True

    def update(self, key: tuple[object, ...], runs: Sequence[RunSeries], axis: str) -> None:
        """Decide for the runs of ``key`` (their keys, in order) as they are now."""
        if key != self._key:  # other runs: a fresh decision
            self._key = key
            self.on = self.declined = False
            self.reason = ""
        if not self.on:
            self.reason = auto_log_x_reason(runs, axis)
            self.on = bool(self.reason)
