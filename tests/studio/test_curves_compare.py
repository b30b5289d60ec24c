"""The curves read right by default (issue #33): runs of very different lengths go on a log x axis by
themselves and the panel says so, every panel names its x axis, a log axis's labels never overlap,
a run keeps one colour whether shown alone or compared, and a mean score has one wording."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter

from studio.widgets.curves import AUTO_LOG_X_RATIO, RUN_COLOURS, CurvesPanel, RunSeries
from tests.studio.curves_data import metric_run
from tests.studio.tab_fixtures import shown

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton


@pytest.fixture
def panel(qtbot) -> CurvesPanel:
    p = shown(qtbot, CurvesPanel(), (900, 700))
    return p


def _run(agent: str, run_id: int, n: int, last_step: float, **metrics) -> RunSeries:
    return metric_run(agent, run_id, np.linspace(last_step / n, last_step, n), **metrics)


def _dqn(run_id: int = 1, last_step: float = 2_000.0) -> RunSeries:
    return _run("dqn", run_id, 20, last_step, loss=np.linspace(1, 0.3, 20), epsilon=np.linspace(1, 0.1, 20))


def _ntuple(run_id: int = 2, last_step: float = 3_000_000.0) -> RunSeries:
    rates = {f"rate_{t}": np.linspace(0.0, 0.9, 300) for t in (2048, 8192, 16384, 32768)}
    return _run(
        "ntuple", run_id, 300, last_step, td_error=np.linspace(50, 10, 300), mean_score=5000.0, **rates
    )


# ------------------------------------------------------------------------------ log x by itself
def test_runs_of_very_different_lengths_go_on_a_log_x_axis_and_say_so(qtbot, panel) -> None:
    """A DQN run of 2,000 moves beside an n-tuple run of 3M: on a linear axis the DQN curve is a
    flat line at zero. Compared, the axis is log by itself, the Log x box is ticked, a line says
    why; unticking it keeps the axis linear for these runs."""
    panel.set_runs([(1, _dqn())])
    panel.redraw()
    assert not panel.log_x_on and not panel.autoLogLabel.isVisible()

    panel.set_runs([(1, _dqn()), (2, _ntuple())])
    panel.redraw()
    assert panel.log_x_on and panel.logXCheck.isChecked()
    assert panel.scorePlot.getPlotItem().ctrl.logXCheck.isChecked()  # the plots themselves
    text = panel.autoLogLabel.text()
    assert panel.autoLogLabel.isVisible()
    assert text == "Log x turned on: run 2 is 1,500× as long as run 1 in moves (untick it for a linear axis)"
    # On the log axis (the plot's x are log10 of the moves) the DQN run spans a decade of the four
    # and a half shown, not 1/1500 of the width.
    dqn_x = panel.curve("scorePlot", "run 1 · dqn · Mean score (last 100 games)").item.getData()[0]
    nt_x = panel.curve("scorePlot", "run 2 · ntuple · Mean score (last 100 games)").item.getData()[0]
    assert nt_x.max() == pytest.approx(np.log10(3e6)) and dqn_x.max() == pytest.approx(np.log10(2000))
    assert (dqn_x.max() - dqn_x.min()) / (nt_x.max() - dqn_x.min()) > 0.2

    # The user unticks it: linear again, for these runs; the saved choice stays off.
    qtbot.mouseClick(panel.logXCheck, CLICK)
    panel.redraw()
    assert not panel.log_x_on and not panel.logXCheck.isChecked() and not panel.autoLogLabel.isVisible()
    assert not panel.scorePlot.getPlotItem().ctrl.logXCheck.isChecked()
    # Other runs: a fresh decision.
    panel.set_runs([(1, _dqn()), (3, _ntuple(3))])
    panel.redraw()
    assert panel.log_x_on and panel.autoLogLabel.isVisible()
    # One run again: linear, nothing said.
    panel.set_runs([(1, _dqn())])
    panel.redraw()
    assert not panel.log_x_on and not panel.autoLogLabel.isVisible()


def test_runs_of_like_lengths_stay_linear(panel) -> None:
    ratio = AUTO_LOG_X_RATIO / 2
    panel.set_runs([(1, _dqn(1, 10_000.0)), (2, _dqn(2, 10_000.0 * ratio))])
    panel.redraw()
    assert not panel.log_x_on and not panel.autoLogLabel.isVisible()


# ------------------------------------------------------------------------------ axis titles
def test_every_panel_names_its_x_axis(panel) -> None:
    panel.set_runs([(1, _dqn())])
    panel.redraw()

    def titles() -> set[str]:
        return {p.plot.getPlotItem().getAxis("bottom").labelText for p in panel._panels.values() if p.shown}

    assert titles() == {"moves"}
    panel.set_x_axis("episode")
    assert titles() == {"games"}
    panel.set_x_axis("elapsed")
    assert titles() == {"wall time"}
    panel.set_x_axis("step")
    panel.set_log_x(True)
    assert titles() == {"moves (log scale)"}


# ------------------------------------------------------------------------------ log ticks
def _label_rects(axis) -> list:
    image = QImage(400, 400, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _axis_spec, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _flags, text in texts if text]


def test_a_short_log_axis_labels_never_overlap(qtbot, panel) -> None:
    """The Loss panel (log y) of a loss between 0.3 and 1 in a plot about 100 pixels high read "1 0.9
    0.8 0.7" one on top of the other: labels are left out until each has its room."""
    panel.resize(700, 420)  # three rows of half-width panels: each plot about 100 pixels high
    panel.set_runs([(1, _dqn())])
    panel.redraw()
    qtbot.wait(50)
    plot = panel.lossPlot
    axis = plot.getPlotItem().getAxis("left")
    assert axis.logMode and axis.size().height() < 160
    labels = _label_rects(axis)
    assert len(labels) >= 2, labels  # still says where it is
    for i, (a, ta) in enumerate(labels):
        for b, tb in labels[i + 1 :]:
            assert not a.intersects(b), f"{ta!r} overlaps {tb!r}"
    assert "1" in {t for _r, t in labels}  # the decade is the label kept first


# ------------------------------------------------------------------------------ one colour per run
def test_a_run_keeps_its_colours_alone_and_compared(panel) -> None:
    """Run 3's lines are shades of run 3's colour when it is shown alone too: its second tile rate
    took another run's palette colour alone and a shade of its own compared."""
    run = _ntuple(3)
    panel.set_runs([(3, run)])
    panel.redraw()
    alone = {c.label: c.colour for c in panel._curves if c.name and c.run is run}
    panel.set_runs([(1, _dqn()), (3, run)])
    panel.redraw()
    compared = {c.label: c.colour for c in panel._curves if c.name and c.run is run}
    assert alone == compared
    assert alone["TD error"] == RUN_COLOURS[2]
    others = set(RUN_COLOURS) - {RUN_COLOURS[2]}
    assert not set(alone.values()) & others  # never another run's colour


# ------------------------------------------------------------------------------ one wording
def test_a_mean_score_has_one_wording(panel) -> None:
    """The window's moving average and an agent's own mean score read alike: "Mean score (last N
    games)", N the agent's window when its settings say (it read "Score (mean of 100)" beside "Mean
    score (recent games)")."""
    dqn = _dqn()
    ntuple = _ntuple()
    ntuple.set_config({"window": 1000, "lr": 1.0})
    panel.set_runs([(1, dqn)])
    panel.redraw()
    assert panel.panel_legend("Score") == ["Mean score (last 100 games)"]
    panel.set_runs([(2, ntuple)])
    panel.redraw()
    assert panel.panel_legend("Score") == ["Mean score (last 1,000 games)"]
    panel.set_runs([(1, dqn), (2, ntuple)])
    panel.redraw()
    assert set(panel.legend_names("Score")) == {
        "run 1 · dqn · Mean score (last 100 games)",
        "run 2 · ntuple · Mean score (last 1,000 games)",
    }
    # Compared, the header says the shared words once: "Mean score (last 1,000 games) · (last 100 games)".
    header = panel._panels["scorePlot"].header.text()
    assert header.count("Mean&nbsp;score") == 1 and "(last&nbsp;1,000&nbsp;games)" in header
    assert "shades" not in header  # both runs' lines of it are their first shade
