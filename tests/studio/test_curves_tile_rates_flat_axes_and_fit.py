"""The Train tab's curves (issue 44): every tile rate that occurs (4096 included) in clearly distinct
colours, a flat series on readable ticks, the Speed panel inside the window at its default size, and
the evaluation panel's wait said in words (when the first evaluation comes, or that none comes)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from agents.base import Budget, MetricEvent
from engine import Rules
from studio.services.runs_model import LIVE_KEY
from studio.widgets.curves import CurvesPanel, RunSeries
from tests.studio.tab_fixtures import shown

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton
RATES = {"rate_2048": 0.9, "rate_4096": 0.6, "rate_8192": 0.3, "rate_16384": 0.05}


def _ntuple_events(n: int = 40) -> list[MetricEvent]:
    """An n-tuple run's events: scores, tiles, its own metrics, the rates of the tiles it reached."""
    out = []
    for i in range(n):
        f = (i + 1) / n
        metrics = {
            "score": 20_000 + 1000.0 * i,
            "max_tile": 4096.0 if i % 2 else 8192.0,
            "mean_score": 20_000 + 900.0 * i,
            "td_error": 300.0 + i,
            "lr": 1.0,
            "steps_per_s": 400_000.0 + 1000 * (i % 5),
            **{k: v * f for k, v in RATES.items()},
        }
        out.append(MetricEvent("episode", 100 * (i + 1), 100_000 * (i + 1), 0.5 * (i + 1), metrics))
    return out


def test_tile_rates_list_the_tiles_reached_4096_included_in_distinct_hues(qtbot) -> None:
    panel = shown(qtbot, CurvesPanel(), (900, 700))
    run = RunSeries("run 1 ntuple", agent="ntuple", run_id=1)
    panel.set_runs([(1, run)])
    panel.add_events(_ntuple_events(), key=1)
    panel.redraw()
    names = [f"Reached {t}" for t in (2048, 4096, 8192, 16384)]
    # the tiles reached, no "Reached 32768" or "Reached 65536" that never came
    assert panel.panel_legend("Tile rates") == names
    hues = [QColor(panel.curve("tileRatesPlot", n).colour).hsvHueF() for n in names]
    gaps = [min(abs(a - b), 1 - abs(a - b)) for k, a in enumerate(hues) for b in hues[k + 1 :]]
    assert min(gaps) > 0.08, hues  # four hues, not four shades of one blue
    header = panel._panels["tileRatesPlot"].header.text()
    assert "Reached" in header and header.count("Reached") == 1  # "Reached ■ 2048 ■ 4096 ..."
    assert header.count("&#9632;") == 4


def test_a_flat_series_gets_a_padded_range_and_readable_ticks(qtbot) -> None:
    panel = shown(qtbot, CurvesPanel(), (900, 700))
    run = RunSeries("run 1 random", agent="random", run_id=1)
    panel.set_runs([(1, run)])
    events = [
        MetricEvent("episode", i + 1, 100 * (i + 1), 0.1 * (i + 1), {"score": 1020.0, "max_tile": 128.0})
        for i in range(5)
    ]
    panel.add_events(events, key=1)
    panel.redraw()
    plot = panel.scorePlot.getPlotItem()
    lo, hi = plot.getViewBox().viewRange()[1]
    assert lo <= 1020 * 0.9 + 1 and hi >= 1020 * 1.1 - 1  # 10 % either side, not a fraction of a point
    axis = plot.getAxis("left")
    spacing, values = axis.tickValues(lo, hi, 200)[0]  # the labelled (major) ticks
    texts = axis.tickStrings(values, 1, spacing)
    assert texts == ["950", "1k", "1.05k", "1.1k"]  # not "1.0196k", "1.0204k"


def test_the_speed_panel_fits_the_train_tab_at_the_windows_default_size(qtbot, window) -> None:
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    train = window.tab("Train")
    assert window.tabs.currentWidget() is train
    store = window.store
    run_id = store.create_run("ntuple", {}, Rules(), {"seconds": 120.0}, status="finished")
    store.log_metrics(run_id, _ntuple_events())
    train.refresh_runs()
    train.select_runs([run_id])
    qtbot.mouseClick(train.showRunsButton, CLICK)
    curves = train.curves
    curves.redraw()
    qtbot.wait(50)
    assert curves.panel_titles() == ["Score", "Max tile", "Tile rates", "TD error", "Speed"]
    view = curves.gridScroll.viewport()
    speed = curves._panels["speedPlot"].box
    bottom = speed.mapTo(curves.gridScroll.widget(), speed.rect().bottomLeft()).y()
    assert curves.gridScroll.widget().height() <= view.height()  # nothing to scroll to
    assert bottom < view.height()  # the Speed panel whole inside the view
    assert speed.height() >= 80 and curves._panels["scorePlot"].box.height() > speed.height()


def test_a_run_too_short_for_an_evaluation_says_so_instead_of_listing_its_panel(qtbot) -> None:
    panel = shown(qtbot, CurvesPanel(), (900, 700))
    run = RunSeries("ntuple (new run)", agent="ntuple")
    run.set_evaluation(20, 600.0, None, Budget(seconds=120.0))
    panel.set_runs([(LIVE_KEY, run)])
    panel.add_events(_ntuple_events(5))
    panel.redraw()
    said = "Greedy evaluation: none in this run (one every 10 minutes of training; the budget is 2 minutes)"
    assert said in panel.constants
    assert "Greedy evaluation" not in panel.panel_titles(shown_only=False)
    assert said in panel.constantsLabel.toolTip() or said in panel.constantsLabel.text()

    longer = RunSeries("ntuple (new run)", agent="ntuple")
    longer.set_evaluation(20, 600.0, None, Budget(seconds=3600.0))
    panel.set_runs([(LIVE_KEY, longer)])
    panel.add_events(_ntuple_events(5))
    panel.redraw()
    assert "Greedy evaluation: the first after 10 minutes of training" in panel.constants
    # its first value comes: the wait is over, the value is what is said
    panel.add_events([MetricEvent("evaluation", 500, 500_000, 3.0, {"eval_score": 9000.0})])
    panel.redraw()
    assert not any(c.startswith("Greedy evaluation: the first") for c in panel.constants)
    assert np.isclose(longer.metrics["eval_score"].y.view[-1], 9000.0)
