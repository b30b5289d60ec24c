"""Curves: growing arrays, incremental min/max decimation, moving averages, 1M points at >= 10 frames/s."""

from __future__ import annotations

import time

import numpy as np
import pytest

from agents.base import MetricEvent
from studio.widgets.curves import CurvesPanel, GrowingArray, PeakDecimator, RunSeries, peak_decimate
from tests.studio.tab_fixtures import shown


def test_growing_array_doubles_and_keeps_values():
    a = GrowingArray(capacity=4)
    caps = set()
    expected = []
    for i in range(1000):
        a.append(i * 0.5)
        expected.append(i * 0.5)
        caps.add(a.capacity)
    a.extend(np.arange(3.0))
    expected += [0.0, 1.0, 2.0]
    np.testing.assert_array_equal(a.view, expected)
    assert caps == {4 * 2**k for k in range(9)}  # doubling: log2(n) reallocations
    a.clear()
    assert len(a) == 0 and a.view.size == 0


@pytest.mark.parametrize("n", [1, 7, 999, 12_345])
def test_peak_decimator_incremental_equals_one_shot_envelope(n):
    rng = np.random.default_rng(n)
    x = np.arange(n, dtype=float)
    y = rng.normal(size=n)
    dec = PeakDecimator(target=50)
    done = 0
    while done < n:  # fed in uneven chunks, as events arrive
        done = min(n, done + int(rng.integers(1, 400)))
        dx, dy = dec.update(x[:done], y[:done])
    assert len(dx) <= 4 * 50 + dec.bucket
    assert dy.max() == y.max() and dy.min() == y.min()  # peaks are never lost
    b, k = dec.bucket, dec.consumed // dec.bucket
    np.testing.assert_array_equal(dy[0 : 2 * k : 2], y[: k * b].reshape(k, b).max(axis=1))
    np.testing.assert_array_equal(dy[1 : 2 * k : 2], y[: k * b].reshape(k, b).min(axis=1))
    np.testing.assert_array_equal(dx[0 : 2 * k : 2], x[: k * b : b])
    np.testing.assert_array_equal(dy[2 * k :], y[k * b :])  # the unfinished bucket, raw


def test_peak_decimate_slice():
    x = np.arange(10_000.0)
    y = np.sin(x / 100)
    dx, dy = peak_decimate(x, y, 100)
    assert len(dx) <= 2 * 100 + 100 and dy.max() == y.max() and dy.min() == y.min()
    _sx, sy = peak_decimate(x[:50], y[:50], 100)
    np.testing.assert_array_equal(sy, y[:50])


def test_moving_averages_match_convolution():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5000, 537).astype(float)
    tiles = 2.0 ** rng.integers(3, 12, 537)
    run = RunSeries("r", ma_window=20)
    events = [
        MetricEvent("episode", i + 1, 10 * i, 0.1 * i, {"score": s, "max_tile": t})
        for i, (s, t) in enumerate(zip(scores, tiles))
    ]
    run.add_events(events[:100])
    run.add_events(events[100:])
    want = np.array([scores[max(0, i - 19) : i + 1].mean() for i in range(len(scores))])
    np.testing.assert_allclose(run.ma["score"].view, want)
    lt = np.log2(tiles)
    np.testing.assert_allclose(
        run.ma["max_tile"].view, [lt[max(0, i - 19) : i + 1].mean() for i in range(len(lt))]
    )


def test_stored_columns_with_nan_become_series():
    run = RunSeries("stored")
    run.add_columns(
        {
            "episode": np.array([0, 1, 1, 2]),
            "step": np.array([5, 10, 12, 20]),
            "elapsed": np.array([0.1, 0.2, 0.3, 0.4]),
            "score": np.array([np.nan, 100.0, np.nan, 300.0]),
            "loss": np.array([0.5, np.nan, 0.25, np.nan]),
        }
    )
    np.testing.assert_array_equal(run.metrics["score"].y.view, [100.0, 300.0])
    np.testing.assert_array_equal(run.metrics["score"].episode.view, [1, 2])
    np.testing.assert_array_equal(run.metrics["loss"].step.view, [5, 12])


def test_x_falls_back_to_the_point_index_when_the_counter_does_not_move():
    run = RunSeries("imitation")
    run.add_events([MetricEvent("update", 0, 0, 0.1 * i, {"loss": 1.0 / (i + 1)}) for i in range(5)])
    np.testing.assert_array_equal(run.metrics["loss"].x("step"), np.arange(5.0))


def _fill(panel: CurvesPanel, n: int) -> RunSeries:
    rng = np.random.default_rng(0)
    run = panel.start_live("live")
    run.add_columns(
        {
            "episode": np.arange(n, dtype=float),
            "step": np.arange(n) * 100.0,
            "elapsed": np.arange(n) * 0.01,
            "score": rng.gamma(4.0, 300.0, n),
            "max_tile": 2.0 ** rng.integers(5, 11, n),
            "loss": rng.random(n),
            "epsilon": np.linspace(1, 0.01, n),
            "steps_per_s": rng.normal(1000, 50, n),
        }
    )
    panel.mark_dirty()
    panel.redraw()
    return run


def test_a_million_points_redraw_at_ten_frames_a_second(qtbot):
    panel = shown(qtbot, CurvesPanel(), (1000, 700))
    _fill(panel, 1_000_000)
    assert panel.data_length("scorePlot") == 1_000_000
    frames = []
    for i in range(10):
        n = 1_000_000 + i
        t0 = time.perf_counter()
        panel.add_events(
            [
                MetricEvent(
                    "episode",
                    n,
                    100 * n,
                    0.01 * n,
                    {"score": 900.0, "max_tile": 256.0, "loss": 0.3, "epsilon": 0.01, "steps_per_s": 1000.0},
                )
            ]
        )
        panel.redraw()
        for name in ("scorePlot", "maxTilePlot", "lossPlot", "explorationPlot", "speedPlot"):
            getattr(panel, name).viewport().repaint()  # paint now, as the event loop would
        frames.append(time.perf_counter() - t0)
    assert panel.data_length("scorePlot") == 1_000_010
    # every plot, a million points each, in well under 100 ms a frame (>= 10 frames/s)
    assert np.median(frames) < 0.1, frames
    drawn = max(len(c.item.xData) for c in panel._curves if c.item.xData is not None)
    assert drawn <= 4 * 400 + 64  # what reaches the painter is bounded by the decimation, not the data


def test_zooming_draws_the_visible_slice_in_detail(qtbot):
    panel = CurvesPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.set_x_axis("episode")
    _fill(panel, 100_000)
    panel.scorePlot.setXRange(1000, 1100, padding=0)
    panel.redraw()
    raw = next(c for c in panel._curves if c.plot is panel.scorePlot and not c.moving_average)
    xs = raw.item.xData
    assert xs.min() >= 998 and xs.max() <= 1102 and len(xs) >= 100  # every point of the slice, nothing else
    panel.scorePlot.enableAutoRange()
    panel.redraw()
    assert raw.item.xData.max() > 90_000


def test_overlaid_runs_each_get_a_line(qtbot):
    panel = CurvesPanel()
    qtbot.addWidget(panel)
    a, b = RunSeries("run 1"), RunSeries("run 2")
    for r, k in ((a, 1.0), (b, 2.0)):
        r.add_events([MetricEvent("episode", i + 1, i, 0.0, {"score": k * i}) for i in range(10)])
    panel.add_run(1, a)
    panel.add_run(2, b)
    assert panel.legend_names("Score") == [
        "run 1 · Mean score (last 100 games)",
        "run 2 · Mean score (last 100 games)",
    ]
    panel.remove_run(1)
    assert [k for k, _ in panel.runs] == [2]


def test_a_sparse_raw_series_is_drawn_with_a_dot_on_each_point(qtbot):
    """Three greedy evaluations are three measurements: dots on them, not a bare line between; a
    series grown past MARKER_POINTS, and the averaged score line, draw no dots."""
    from studio.widgets.curves import MARKER_POINTS

    panel = CurvesPanel()
    qtbot.addWidget(panel)
    run = RunSeries("run 1")
    run.add_events([MetricEvent("episode", i + 1, 100 * i, 0.0, {"score": 10.0 * i}) for i in range(200)])
    run.add_events(
        [MetricEvent("update", 200, 20_000 + i, 0.0, {"eval_score": 1000.0 + i}) for i in range(3)]
    )
    panel.add_run(1, run)
    panel.redraw()
    ev = next(c for c in panel._curves if c.metric == "eval_score" and c.name)
    assert ev.item.opts["symbol"] == "o" and len(ev.item.xData) == 3
    assert ev.item.opts["symbolBrush"].color().name() == ev.colour
    scores = [c for c in panel._curves if c.metric == "score"]
    assert scores and all(c.item.opts["symbol"] is None for c in scores)
    more = MARKER_POINTS - 3 + 1
    run.add_events(
        [MetricEvent("update", 200, 30_000 + i, 0.0, {"eval_score": 2000.0 + i}) for i in range(more)]
    )
    panel.mark_dirty()
    panel.redraw()
    assert len(ev.item.xData) == MARKER_POINTS + 1 and ev.item.opts["symbol"] is None


def _x_span(panel: CurvesPanel, plot_name: str) -> tuple[float, float]:
    lo, hi = panel._panels[plot_name].plot.getPlotItem().getViewBox().viewRange()[0]
    return lo, hi


def test_the_panels_span_the_same_steps_so_they_line_up(qtbot):
    """Greedy evaluations from 4M to 12M moves and scores from 0 to 14M: the evaluation panel's x axis
    still runs from 0 to 14M, as the score panel's does, and follows when the scores go further; on a
    log x axis both start at the first positive step."""
    panel = shown(qtbot, CurvesPanel(), (900, 600))
    run = RunSeries("run 1")
    run.add_events([MetricEvent("episode", i + 1, 10_000 * i, 0.0, {"score": 10.0 * i}) for i in range(1401)])
    run.add_events(
        [MetricEvent("update", 1401, 4_000_000 * k, 0.0, {"eval_score": 1000.0 * k}) for k in (1, 2, 3)]
    )
    panel.add_run(1, run)
    panel.redraw()
    ev = next(c for c in panel._curves if c.metric == "eval_score").panel

    def spans(lo_max: float, hi_min: float, hi_max: float) -> bool:
        # auto range is applied when the plots paint: wait for it
        return all(
            lo <= lo_max and hi_min <= hi < hi_max
            for lo, hi in (_x_span(panel, n) for n in ("scorePlot", ev))
        )

    qtbot.waitUntil(lambda: spans(0.0, 14_000_000, 16_000_000), timeout=5000)
    run.add_events([MetricEvent("episode", 1402, 20_000_000, 0.0, {"score": 1.0})])
    panel.mark_dirty()  # what add_events does in the Train tab
    qtbot.waitUntil(lambda: spans(0.0, 20_000_000, 23_000_000), timeout=5000)
    panel.set_log_x(True)
    qtbot.waitUntil(lambda: spans(4.0, 7.3, 7.6), timeout=5000)  # log10(10,000) .. log10(2e7)
