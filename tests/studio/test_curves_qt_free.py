"""The curves' series maths (buffers, smoothing, decimation, the x axis, tick text, run names) import
no Qt: a headless script or a lower layer can use them without PySide6 or pyqtgraph."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from studio.widgets.curves.decimate import PeakDecimator, peak_decimate, points_to_draw
from studio.widgets.curves.series import MetricSeries, RunSeries, declared_metrics
from studio.widgets.curves.xaxis import AUTO_LOG_X_RATIO, auto_log_x_reason, data_x_extent, plot_x_range

QT_FREE = ("series", "decimate", "xaxis", "ticks", "names")
PACKAGE = Path(__file__).resolve().parents[2] / "studio" / "widgets" / "curves"

# The package's __init__ gathers the Qt parts too, so the modules are loaded under a bare package
# object standing in for it: what they import themselves is all that comes in.
SCRIPT = f"""
import importlib, sys, types
pkg = types.ModuleType("studio.widgets.curves")
pkg.__path__ = [{str(PACKAGE)!r}]
sys.modules["studio.widgets.curves"] = pkg
for name in {QT_FREE!r}:
    importlib.import_module("studio.widgets.curves." + name)
qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph"))
print("QT", qt)
"""


def test_the_series_maths_modules_import_no_qt() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "QT []", out.stdout + out.stderr
    assert {p.stem for p in PACKAGE.glob("*.py")} >= set(QT_FREE)


def _run(run_id: int, steps: np.ndarray) -> RunSeries:
    run = RunSeries(f"run {run_id} dqn", agent="dqn", run_id=run_id)
    n = len(steps)
    run.add_columns(
        {"episode": np.arange(n, dtype=float), "step": steps, "elapsed": steps / 10, "score": steps}
    )
    return run


def test_log_x_by_itself_only_past_the_ratio() -> None:
    short = _run(1, np.linspace(0, 1000, 11))
    assert auto_log_x_reason([short, _run(2, np.linspace(0, 1000 * AUTO_LOG_X_RATIO, 11))], "step") == ""
    long = _run(2, np.linspace(0, 1000 * AUTO_LOG_X_RATIO * 2, 11))
    reason = auto_log_x_reason([short, long], "step")
    assert reason.startswith("Log x turned on: run 2 is 40× as long as run 1 in moves")
    assert auto_log_x_reason([long], "step") == ""  # one run: nothing to compare
    by_games = auto_log_x_reason([_run(3, np.arange(3.0)), _run(4, np.arange(60.0))], "episode")
    assert by_games.startswith("Log x turned on: run 4 is 30× as long as run 3 in games")


def test_the_x_extent_spans_every_series_and_skips_zero_on_a_log_axis() -> None:
    a, b = MetricSeries(), MetricSeries()
    for s, xs in ((a, (0.0, 10.0, 20.0)), (b, (5.0, 50.0))):
        for x in xs:
            s.step.append(x)
            s.episode.append(1.0)  # a counter that does not move: x is the point index
            s.elapsed.append(x)
            s.y.append(1.0)
    assert data_x_extent([(a, "step"), (b, "step"), (None, "step")]) == (0.0, 5.0, 50.0)
    assert data_x_extent([(a, "episode")]) == (0.0, 1.0, 2.0)
    lo, hi = plot_x_range((0.0, 10.0, 1000.0), log_x=True)
    assert (lo, hi) == (1.0, 3.0)
    assert all(np.isnan(plot_x_range((0.0, float("nan"), 0.0), log_x=True)))


def test_points_to_draw_matches_the_plain_slices() -> None:
    x = np.arange(5000, dtype=float)
    y = np.sin(x / 50) * 100 + 200
    few_x, few_y = points_to_draw(x[:100], y[:100], PeakDecimator(target=400))
    assert np.array_equal(few_x, x[:100]) and np.array_equal(few_y, y[:100])  # few points: as they are
    dx, dy = points_to_draw(x, y, PeakDecimator(target=100))
    assert len(dx) <= 4 * 100 + 2 * 100 and dy.max() == y.max() and dy.min() == y.min()
    zx, zy = points_to_draw(x, y, PeakDecimator(target=100), zoomed=(1000.0, 2000.0))
    sx, sy = peak_decimate(x[999:2002], y[999:2002], 100)
    assert np.array_equal(zx, sx) and np.array_equal(zy, sy)
    tx, ty = points_to_draw(
        x[:4], np.array([1.0, 2.0, 2048.0, 0.0]), PeakDecimator(), transform="log2", log_x=True
    )
    assert tx.tolist() == [1.0, 2.0, 3.0] and ty.tolist() == [1.0, 11.0, 0.0]


def test_an_agent_this_build_lacks_declares_nothing() -> None:
    assert declared_metrics("no-such-agent") is None
    infos = declared_metrics("dqn")
    assert infos is not None and "loss" in {m.name for m in infos}
    assert RunSeries("run 4 no-such-agent").infos is None
