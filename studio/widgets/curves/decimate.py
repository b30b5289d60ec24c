"""Min/max decimation of a curve to a plot's width (Qt-free), incremental while a plot follows the data.

A plot of a million points redraws as fast as one of a thousand: while it follows the data, each
curve's :class:`PeakDecimator` folds new points into buckets once; a zoomed slice is decimated afresh
(:func:`peak_decimate`). :func:`points_to_draw` is what one curve hands its plot item.
"""

from __future__ import annotations

import numpy as np

from studio.widgets.curves.series import GrowingArray


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


def points_to_draw(
    x: np.ndarray,
    y: np.ndarray,
    decimator: PeakDecimator,
    zoomed: tuple[float, float] | None = None,
    transform: str = "",
    log_x: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) a curve hands its plot item: a few points as they are, the decimator's output while
    the plot follows the data (``zoomed`` None), the visible slice decimated afresh once zoomed (the x
    range shown, in data units); "log2" values as exponents (tiles); no x <= 0 on a log x axis."""
    n = len(y)
    if zoomed is None and n <= 2 * decimator.target:
        dx, dy = x[:n].copy(), y[:n].copy()  # few points: each as it is
        decimator.update(x, y)  # kept in step for when the series grows
    elif zoomed is None:
        dx, dy = decimator.update(x, y)
    else:
        lo_i = max(0, int(np.searchsorted(x, zoomed[0], "left")) - 1)
        hi_i = int(np.searchsorted(x, zoomed[1], "right")) + 1
        dx, dy = peak_decimate(x[lo_i:hi_i], y[lo_i:hi_i], decimator.target)
    if transform == "log2":
        dy = np.log2(np.maximum(dy, 1.0))
    if log_x:
        keep = dx > 0  # x = 0 has no place on a log axis
        dx, dy = dx[keep], dy[keep]
    return dx, dy
