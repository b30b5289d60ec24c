"""Curves built from the metric metadata: panels per agent, compact ticks, legends that name runs,
constants as text, smoothing, x axes, log axes, compare by ticking runs, the finished run selected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QEvent, QObject, QSettings, Qt
from PySide6.QtGui import QImage, QPainter

from agents.base import MetricEvent
from studio.services.runs_model import LIVE_KEY
from studio.tabs.train import TrainTab
from studio.widgets.curves import (
    EMPTY_TEXT,
    RUN_COLOURS,
    CurvesPanel,
    RunSeries,
    SIAxis,
    TileAxis,
    format_duration_tick,
    format_si,
)
from tests.studio.curves_data import metric_run
from tests.studio.tab_fixtures import fake_run, shown
from tests.studio.train_fakes import register_fakes

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")

CLICK = Qt.MouseButton.LeftButton


@pytest.fixture
def panel(qtbot) -> CurvesPanel:
    p = shown(qtbot, CurvesPanel(), (900, 700))
    return p


def _run(agent: str, run_id: int, n: int = 20, **metrics: np.ndarray | float) -> RunSeries:
    return metric_run(agent, run_id, np.arange(n) * 10.0, **metrics)


# ------------------------------------------------------------------ ticks
def test_axis_tick_strings_are_compact(qtbot) -> None:
    axis = SIAxis("bottom")
    assert axis.tickStrings([0.0, 2e6, 4e6, 6e6], 1.0, 2e6) == ["0", "2M", "4M", "6M"]
    assert axis.tickStrings([2500.0, 3000.0], 1.0, 500.0) == ["2.5k", "3k"]
    assert format_si(3e5, 1e5) == "300k" and format_si(1e7, 1e6) == "10M"
    assert format_si(0.25, 0.05) == "0.25" and format_si(1e-5, 1e-5) == "1e-5"
    axis.setLogMode(True)
    assert axis.tickStrings([3.0, 6.0], 1.0, 1.0) == ["1k", "1M"]
    wall = SIAxis("bottom", time_axis=True)
    assert wall.tickStrings([45.0, 180.0, 5400.0], 1.0, 45.0) == ["45s", "3m", "1h30m"]
    assert format_duration_tick(172800) == "2d" and format_duration_tick(5400) == "1.5h"
    assert wall.tickStrings([0.0, 0.5, 1.5], 1.0, 0.5) == ["0s", "0.5s", "1.5s"]  # was "2s" for 1.5


def test_time_axis_ticks_fall_on_clock_units(qtbot) -> None:
    # pyqtgraph's decimal steps put a 100-minute run's ticks at 16.7m, 33.3m, 1.1h
    wall = SIAxis("bottom", time_axis=True)
    assert wall.tickSpacing(0.0, 5100.0, 400.0) == [(900.0, 0.0), (300.0, 0.0)]
    assert wall.tickStrings([900.0 * k for k in range(6)], 1.0, 900.0) == [
        "0",
        "15m",
        "30m",
        "45m",
        "1h",
        "1h15m",
    ]
    assert wall.tickSpacing(0.0, 7200.0, 600.0)[0] == (1800.0, 0.0)
    assert wall.tickSpacing(0.0, 60.0, 300.0)[0] == (15.0, 0.0)
    assert wall.tickSpacing(0.0, 3 * 86400.0, 600.0)[0] == (43200.0, 0.0)
    assert wall.tickStrings([86400.0, 129600.0], 1.0, 43200.0) == ["1d", "1d12h"]
    assert wall.tickSpacing(0.0, 40 * 86400.0, 600.0)[0] == (864000.0, 0.0)
    assert wall.tickSpacing(0.0, 3.0, 600.0)[0] == (0.5, 0)  # under a second: decimal steps
    moves = SIAxis("bottom")  # a moves axis keeps pyqtgraph's decimal steps
    assert moves.tickSpacing(0.0, 5100.0, 400.0)[0] == (1000.0, 0)


def test_tile_axis_names_tiles_as_players_do(qtbot) -> None:
    # log2 values in, tiles out: 2048 and 4096 in full, then binary thousands (not "8.19k", "16.4k")
    axis = TileAxis("left")
    assert axis.tickStrings([1.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 20.0], 1.0, 1.0) == [
        "2",
        "2048",
        "4096",
        "8k",
        "16k",
        "32k",
        "64k",
        "128k",
        "1M",
    ]
    assert axis.tickStrings([0.0, 63.0], 1.0, 1.0) == ["", ""]


# ------------------------------------------------------------------ panels per agent
def test_empty_state_says_so_in_words(panel) -> None:
    assert panel.emptyLabel.isVisible() and not panel.gridHost.isVisible()
    assert EMPTY_TEXT in panel.emptyLabel.text()
    assert "Start a run or open one from the runs table" in EMPTY_TEXT


def test_panels_follow_the_agent_and_leave_nothing_of_the_last_one(panel) -> None:
    panel.set_agent("dqn")
    dqn = panel.panel_titles()
    assert dqn[:2] == ["Score", "Max tile"] and dqn[-1] == "Speed"
    assert {"Loss", "Mean Q", "Exploration ε"} <= set(dqn)
    assert "Mean Q" in panel.emptyLabel.text()  # the empty state names what will be drawn
    panel.set_agent("ntuple")
    ntuple = panel.panel_titles()
    assert "Mean Q" not in ntuple and "Exploration ε" not in ntuple
    assert "TD error" in ntuple and "tdErrorPlot" in panel._panels
    with pytest.raises(AttributeError):
        _ = panel.meanQPlot


def test_the_agent_switch_in_the_train_tab_clears_every_panel(qtbot, store, monkeypatch) -> None:
    register_fakes(monkeypatch)
    tab = TrainTab(store, None)
    qtbot.addWidget(tab)
    tab.show()
    tab.launch.ensure_loaded()
    tab.curves.add_run(7, _run("dqn", 7, loss=np.linspace(1, 0.1, 20), mean_q=np.linspace(0, 5, 20)))
    assert "Mean Q" in tab.curves.panel_titles()
    tab.launch.select_agent("dqn")
    tab.launch.select_agent("ntuple")
    assert tab.curves.runs == []  # no old agent's curves in Score / Max tile / Speed
    assert "TD error" in tab.curves.panel_titles() and "Mean Q" not in tab.curves.panel_titles()
    assert tab.curves.emptyLabel.isVisible()
    tab.shutdown()


# ------------------------------------------------------------------ compare
def test_compare_names_runs_and_shows_only_what_each_run_has(panel) -> None:
    dqn = _run(
        "dqn", 1, loss=np.linspace(1, 0.1, 20), mean_q=np.linspace(0, 5, 20), epsilon=np.linspace(1, 0.1, 20)
    )
    ntuple = _run("ntuple", 2, n=300, td_error=np.linspace(50, 10, 300), lr=1.0)
    panel.set_runs([(1, dqn), (2, ntuple)])
    names = panel.legend_names()
    assert "run 2 · ntuple · TD error" in names
    assert "run 1 · dqn · TD error" not in names and "run 2 · ntuple · Mean Q" not in names
    assert "run 1 · dqn · Mean Q" in names and "run 1 · dqn · Loss" in names
    assert "run 1 · dqn · Mean score (last 100 games)" in panel.legend_names("Score")
    # both agents' panels; the losses on their own axes
    assert {"Loss", "Mean Q", "TD error"} <= set(panel.panel_titles())
    # a run keeps its colour whatever else is shown
    with_both = panel.curve("tdErrorPlot", "run 2 · ntuple · TD error").colour
    panel.set_runs([(2, ntuple)])
    alone = panel.curve("tdErrorPlot", "TD error").colour
    assert with_both == alone == RUN_COLOURS[1]


def test_many_panels_scroll_instead_of_growing_the_window(panel) -> None:
    """Comparing a dqn and an n-tuple run makes four rows of panels; at 1280x800 the Train tab once
    grew past the screen's height for them."""
    dqn = _run(
        "dqn", 1, loss=np.linspace(1, 0.1, 20), mean_q=np.linspace(0, 5, 20), epsilon=np.linspace(1, 0.1, 20)
    )
    ntuple = _run("ntuple", 2, n=300, td_error=np.linspace(50, 10, 300), lr=1.0)
    panel.set_runs([(1, dqn), (2, ntuple)])
    panel.redraw()
    assert len(panel.panel_titles()) >= 7
    assert panel.minimumSizeHint().height() < 300
    panel.resize(700, 400)
    panel.redraw()
    assert panel.gridScroll.verticalScrollBar().maximum() > 0  # the panels keep their height and scroll


def test_a_constant_series_is_a_line_of_text_not_a_panel(panel) -> None:
    panel.set_runs([(3, _run("ntuple", 3, td_error=np.linspace(50, 10, 20), lr=1.0))])
    assert "Learning rate" not in panel.panel_titles()
    assert panel.constants == ["Learning rate = 1 (constant)"]
    assert panel.constantsLabel.isVisible() and "Learning rate = 1 (constant)" in panel.constantsLabel.text()
    assert "TD error" in panel.panel_titles()


def test_a_live_series_that_starts_moving_gets_its_panel_back(panel) -> None:
    panel.set_agent("dqn")
    panel.add_events(
        [MetricEvent("update", 0, i, 0.1 * i, {"epsilon": 1.0, "loss": 1.0 / (i + 1)}) for i in range(3)]
    )
    panel.redraw()
    assert "Exploration ε" not in panel.panel_titles()
    panel.add_events([MetricEvent("update", 0, 3, 0.3, {"epsilon": 0.9})])
    panel.redraw()
    assert "Exploration ε" in panel.panel_titles() and panel.constants == []


def test_a_run_s_first_value_folds_only_an_evaluation(panel) -> None:
    """A series that comes with every event is not called constant on its first value (folded, then
    back at its second, the grid was laid out twice in a run's first second); an evaluation is."""
    panel.set_agent("ntuple")
    panel.set_runs([(LIVE_KEY, RunSeries("run 1 ntuple", agent="ntuple", run_id=1))])
    panel.redraw()
    placed: list[list[bool]] = []
    place = panel.gridScroll.place

    def counting_place(boxes):  # each laying of the grid, kept: which panels it showed
        placed.append([on for _b, on in boxes])
        return place(boxes)

    panel.gridScroll.place = counting_place
    before = panel.panel_titles()
    # the evaluations' panel waits folded: its first value is a line of text anyway
    assert "Greedy evaluation" not in before and "TD error" in before and "Learning rate" in before
    first = {"td_error": 400.0, "lr": 1.0, "rate_2048": 0.0, "eval_score": 9000.0}
    panel.add_events([MetricEvent("update", 0, 0, 0.0, first)])
    panel.redraw()
    titles = panel.panel_titles()
    assert "TD error" in titles and "Learning rate" in titles and "Tile rates" in titles
    assert "Greedy evaluation" not in titles
    assert panel.constants == ["Greedy evaluation: mean score = 9k (the first value)"]
    second = {"td_error": 300.0, "lr": 1.0, "rate_2048": 0.0}
    panel.add_events([MetricEvent("update", 0, 1000, 1.0, second)])
    panel.redraw()
    titles = panel.panel_titles()
    assert "TD error" in titles and "Learning rate" not in titles
    assert "Tile rates" in titles  # a rate of the recent games is a score: at 0 it is still drawn
    assert panel.constants == [
        "Greedy evaluation: mean score = 9k (the first value)",
        "Learning rate = 1 (constant)",
    ]
    # The grid changed once, when the learning rate folded at the second event.
    changes = [p for k, p in enumerate(placed) if k == 0 or p != placed[k - 1]]
    assert len(changes) == 2
    names = list(panel._panels)
    assert [names[k] for k, (a, b) in enumerate(zip(*changes, strict=True)) if a != b] == ["learningRatePlot"]


def test_grid_lines_are_opaque_and_lie_under_the_curves(panel) -> None:
    """Translucent lines cost Qt's raster engine a blend per pixel (a plot's repaint 8 ms instead of 1):
    the grid is drawn in the colours it showed, blended over the white background once, under the data."""
    panel.set_runs([(3, _run("ntuple", 3, td_error=np.linspace(50, 10, 20)))])
    plot = panel._panels["scorePlot"].plot
    axis = plot.getAxis("left")
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _line, ticks, _texts = axis.generateDrawSpecs(painter)
        _line, translucent, _texts = pg.AxisItem.generateDrawSpecs(axis, painter)
    finally:
        painter.end()
    view_width = plot.getPlotItem().getViewBox().width()
    grid = [
        (pen, t)
        for (pen, a, b), (t, _a, _b) in zip(ticks, translucent)
        if abs(a.x() - b.x()) > view_width / 2
    ]
    assert grid and all(pen.color().alpha() == 255 for pen, _t in grid)
    for pen, t in grid:
        a = t.color().alphaF()
        assert a < 1.0  # pyqtgraph's own grid line is translucent ...
        for got, fg in ((pen.color().red(), t.color().red()), (pen.color().blue(), t.color().blue())):
            assert abs(got - (fg * a + 255 * (1 - a))) <= 1  # ... and ours is that colour over white
    assert axis.zValue() < plot.getPlotItem().getViewBox().zValue()


def test_an_update_paints_its_plot_once(panel, qtbot) -> None:
    """pyqtgraph settles an auto range in its prepare-for-paint, and the range it changes there asks for
    a second paint: the panel settles it before, so one new point is one paint."""
    panel.set_agent("ntuple")
    panel.add_events([MetricEvent("episode", i, 100 * i, 0.1 * i, {"score": 1000.0 * i}) for i in range(5)])
    panel.redraw()
    qtbot.wait(50)
    viewport = panel._panels["scorePlot"].plot.viewport()
    paints = []

    class Count(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                paints.append(event.type())
            return False

    counter = Count()
    viewport.installEventFilter(counter)
    for i in range(5, 10):
        panel.add_events([MetricEvent("episode", i, 100 * i, 0.1 * i, {"score": 1000.0 * i})])
        panel.redraw()
        qtbot.wait(30)
    viewport.removeEventFilter(counter)
    assert len(paints) == 5


# ------------------------------------------------------------------ toolbar
def test_smoothing_draws_an_ema_over_the_faint_raw_series(panel) -> None:
    run = RunSeries("run 1 dqn", agent="dqn", run_id=1)
    run.add_events(
        [MetricEvent("update", 0, 10 * i, float(i), {"loss": v}) for i, v in enumerate((1.0, 2.0, 3.0))]
    )
    panel.set_runs([(1, run)])
    np.testing.assert_allclose(panel.curve("lossPlot", "Loss").item.yData, [1.0, 2.0, 3.0])
    panel.smoothingSlider.setValue(50)
    assert panel.smoothing == 0.5
    # last = 0.5 last + 0.5 v, over 1 - 0.5^(i+1): 0.5/0.5, 1.25/0.75, 2.125/0.875
    np.testing.assert_allclose(panel.curve("lossPlot", "Loss").item.yData, [1.0, 1.25 / 0.75, 2.125 / 0.875])
    faint = [c for c in panel._curves if c.panel == "lossPlot" and not c.name]
    assert len(faint) == 1 and list(faint[0].item.yData) == [1.0, 2.0, 3.0]
    # new points extend the EMA where it stopped
    run.add_events([MetricEvent("update", 0, 30, 3.0, {"loss": 4.0})])
    panel.mark_dirty()
    panel.redraw()
    assert panel.curve("lossPlot", "Loss").item.yData[-1] == pytest.approx((2.125 * 0.5 + 2.0) / (1 - 0.5**4))


def test_the_x_axis_choice_changes_the_x_data(panel) -> None:
    run = _run("dqn", 1, loss=np.linspace(1, 0.1, 20))
    panel.set_runs([(1, run)])
    np.testing.assert_array_equal(panel.curve("lossPlot", "Loss").item.xData, np.arange(20) * 10.0)
    panel.xAxisCombo.setCurrentIndex(panel.xAxisCombo.findData("episode"))
    assert panel.x_axis == "episode"
    np.testing.assert_array_equal(panel.curve("lossPlot", "Loss").item.xData, np.arange(20.0))
    panel.set_x_axis("elapsed")
    np.testing.assert_array_equal(panel.curve("lossPlot", "Loss").item.xData, np.arange(20) * 0.5)
    assert panel.lossPlot.getPlotItem().getAxis("bottom").time_axis


def test_log_axes_and_fit(panel) -> None:
    panel.set_runs([(1, _run("dqn", 1, loss=np.linspace(1, 0.1, 20), mean_q=np.linspace(-1, 5, 20)))])
    assert panel._panels["lossPlot"].log_y  # the metadata asks for log
    assert not panel._panels["meanQPlot"].log_y
    panel.logYCheck.setChecked(True)
    assert panel._panels["speedPlot"].log_y and not panel._panels["meanQPlot"].log_y  # negative values
    assert not panel._panels["maxTilePlot"].log_y  # tiles are on their log2 axis already
    panel.logXCheck.setChecked(True)
    assert panel.scorePlot.getPlotItem().ctrl.logXCheck.isChecked()
    assert 0.0 not in panel.curve("lossPlot", "Loss").item.xData  # x = 0 has no place on a log axis
    panel.scorePlot.setXRange(2, 3, padding=0)
    qtbot_range = panel.scorePlot.getPlotItem().getViewBox().viewRange()[0]
    assert qtbot_range[1] <= 3.01
    assert panel.fitButton.isEnabled()  # a panel left its auto range: Fit has something to do
    panel.fitButton.click()
    assert panel.scorePlot.getPlotItem().getViewBox().autoRangeEnabled()[0]
    assert not panel.fitButton.isEnabled()  # every panel fitted: greyed until the next zoom


def test_toolbar_settings_persist(qtbot, tmp_path) -> None:
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    a = CurvesPanel(settings=settings)
    qtbot.addWidget(a)
    a.smoothingSlider.setValue(60)
    a.set_x_axis("episode")
    a.logXCheck.setChecked(True)
    b = CurvesPanel(settings=settings)
    qtbot.addWidget(b)
    assert b.smoothing == 0.6 and b.smoothingSlider.value() == 60
    assert b.x_axis == "episode" and b.xAxisCombo.currentData() == "episode"
    assert b.log_x and b.logXCheck.isChecked()


# ------------------------------------------------------------------ the Train tab
def test_a_finished_run_is_selected_and_ticks_compare(qtbot, tab, store) -> None:
    fake_run(tab, episodes=3)
    with qtbot.waitSignal(tab.trainingFinished, timeout=60_000):
        qtbot.mouseClick(tab.startButton, CLICK)
    first = store.list_runs()[0].id
    fake_run(tab, episodes=3, delay_ms=2.0)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    second = started.args[0]
    tab.select_runs([first])  # the person looks at the other run meanwhile
    with qtbot.waitSignal(tab.trainingFinished, timeout=60_000):
        pass
    assert tab.selected_run_ids() == [second]  # "Use in Play" acts on the run that just ended
    with qtbot.waitSignal(tab.useInPlay, timeout=2000) as sig:
        qtbot.mouseClick(tab.useInPlayButton, CLICK)
    assert Path(sig.args[1]) == store.last_checkpoint(second)

    # tick both runs' boxes: both drawn, named by run, each in its run's colour
    tab.curves.clear()
    table = tab.runsTable
    for row in range(table.rowCount()):
        table.item(row, 0).setCheckState(Qt.CheckState.Checked)
    assert sorted(k for k, _ in tab.curves.runs) == sorted([first, second])
    names = tab.curves.legend_names("Score")
    assert f"run {first} · fake_learner · Mean score (last 100 games)" in names
    assert f"run {second} · fake_learner · Mean score (last 100 games)" in names
    # untick one: it leaves the curves
    for row in range(table.rowCount()):
        if int(table.item(row, 0).data(Qt.ItemDataRole.UserRole)) == first:
            table.item(row, 0).setCheckState(Qt.CheckState.Unchecked)
    assert [k for k, _ in tab.curves.runs] == [second]
