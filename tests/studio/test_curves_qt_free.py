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

QT_FREE = ("series", "decimate", "xaxis", "ticks", "names", "lines")
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


def test_an_agent_whose_class_fails_to_load_is_logged_once(monkeypatch, caplog) -> None:
    from agents import registry

    broken = {"broken-plugin": "no_such_module_for_curves:Agent"}
    monkeypatch.setattr(registry, "_default", registry.default_registry().with_agents(broken))
    with caplog.at_level("ERROR", logger="studio.widgets.curves.series"):
        assert declared_metrics("broken-plugin") is None
        assert RunSeries("run 9 broken-plugin").infos is None  # the curves still draw the standard panels
    logged = [r for r in caplog.records if "broken-plugin" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert logged[0].exc_info[0] is ModuleNotFoundError


def test_auto_log_x_stays_for_these_runs_and_is_declined_for_them() -> None:
    from studio.widgets.curves.xaxis import AutoLogX

    short, long = _run(1, np.linspace(0, 100, 5)), _run(2, np.linspace(0, 100_000, 5))
    auto = AutoLogX()
    auto.update((1, 2), [short, long], "step")
    assert auto.active and "run 2 is 1,000× as long as run 1" in auto.reason
    auto.decline()
    auto.update((1, 2), [short, long], "step")
    assert auto.on and not auto.active  # declined for these runs
    auto.update((1,), [short], "step")
    assert not auto.on and auto.reason == ""  # other runs: a fresh decision
    auto.decline()
    assert not auto.declined  # nothing to decline while off


def test_the_lines_a_metric_draws() -> None:
    from agents.metrics import LOSS, LR, MAX_TILE, SCORE
    from studio.widgets.curves.lines import Line, metric_lines

    run = RunSeries("run 3 dqn", agent="dqn", run_id=3)
    assert metric_lines(run, SCORE, 0, many=False, smoothing=0.5) == [
        Line("score", "faint"),
        Line(
            "score",
            "strong",
            "Mean score (last 100 games)",
            "Mean score (last 100 games)",
            moving_average=True,
        ),
    ]
    # compared: no raw games (they would hide each other), the run named, its shade kept
    assert metric_lines(run, MAX_TILE, 1, many=True, smoothing=0.0, transform="log2") == [
        Line(
            "max_tile",
            "strong",
            "run 3 · dqn · Max tile (geo. mean of 100)",
            "Max tile (geo. mean of 100)",
            True,
            shade=1,
        )
    ]
    assert metric_lines(run, LOSS, 2, many=False, smoothing=0.6) == [
        Line("loss", "faint"),
        Line("loss", "strong", "Loss", "Loss", smooth=0.6, shade=2),
    ]
    assert metric_lines(run, LR, 0, many=False, smoothing=0.6) == [
        Line("lr", "plain", "Learning rate", "Learning rate")
    ]
    own = RunSeries("run 4 ntuple", agent="ntuple", run_id=4)
    assert own.has_own_mean and metric_lines(own, SCORE, 0, many=True, smoothing=0.0) == []


def test_tile_labels_of_the_curves_and_of_the_games_histogram() -> None:
    from studio.widgets.curves.ticks import tile_label

    assert [tile_label(e) for e in (1, 11, 12, 13, 14, 17, 20, 21)] == [
        "2", "2048", "4096", "8k", "16k", "128k", "1M", "2M"
    ]  # fmt: skip
    # the Games tab's bars have room for 8192 whole
    assert [tile_label(e, whole_below=14) for e in (5, 13, 14, 17)] == ["32", "8192", "16k", "128k"]
