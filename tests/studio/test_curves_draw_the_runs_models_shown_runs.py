"""The curves are a view of the runs model (issue #46 item 1): what the model shows is drawn, what is
done to the panel is done to the model, and the panel keeps no keyed list of its own to fall out of
step; live runs are keyed as the model keys them."""

from __future__ import annotations

import numpy as np
import pytest

from agents.base import MetricEvent
from studio.services.runs_model import LIVE_KEY, RunsModel, ShownChanged
from studio.widgets.curves import CurvesPanel, RunSeries
from tests.studio.curves_data import metric_run
from tests.studio.tab_fixtures import shown

pytest_plugins = ("tests.studio.gui_fixtures",)


def _dqn(run_id: int) -> RunSeries:
    return metric_run("dqn", run_id, np.linspace(100, 2_000, 20), loss=np.linspace(1, 0.3, 20))


@pytest.fixture
def model() -> RunsModel:
    return RunsModel()


@pytest.fixture
def panel(qtbot, model: RunsModel) -> CurvesPanel:
    return shown(qtbot, CurvesPanel(model=model), (900, 700))


def test_what_the_model_shows_is_drawn(qtbot, model: RunsModel, panel: CurvesPanel) -> None:
    assert panel.emptyLabel.isVisible()
    model.show([(1, _dqn(1)), (2, _dqn(2))])
    assert panel.runs is model.shown  # one list: nothing to keep in step
    assert panel.run_legend == ["run 1", "run 2"]
    assert not panel.emptyLabel.isVisible()
    assert panel.data_length("lossPlot") == 20
    model.remove(1)
    assert panel.run_legend == []  # one run alone: no shared legend
    assert panel.legend_names("Loss") == ["Loss"]
    model.show([])
    assert panel.emptyLabel.isVisible() and panel.runs == []


def test_what_is_done_to_the_panel_is_done_to_the_model(qtbot, model: RunsModel, panel: CurvesPanel) -> None:
    said: list[object] = []
    model.subscribe(said.append)
    panel.set_runs([(3, _dqn(3))])
    panel.add_run(4, _dqn(4))
    assert [k for k, _r in model.shown] == [3, 4]
    panel.remove_run(3)
    assert [k for k, _r in model.shown] == [4]
    panel.clear()
    assert model.shown == []
    assert said == [ShownChanged((3,)), ShownChanged((3, 4)), ShownChanged((4,)), ShownChanged(())]


def test_a_live_run_fed_to_the_panel_is_keyed_as_the_model_keys_runs(qtbot, model, panel) -> None:
    model.show([(7, _dqn(7))])
    panel.add_events([MetricEvent("episode", i + 1, 10 * i, 0.1 * i, {"score": 100.0 * i}) for i in range(5)])
    assert [k for k, _r in model.shown] == [LIVE_KEY, 7]
    assert LIVE_KEY == ("live", 0)
    assert panel.live is model.series(LIVE_KEY)
    assert panel.live is not None and panel.live.count("score") == 5
    assert len(panel.run_legend) == 2  # both drawn, compared
