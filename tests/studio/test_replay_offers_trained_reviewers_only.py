"""The Replay reviewer box offers reviewers that can grade (issue 45): trained checkpoints and the agents
that need no training, never an untrained learner.

Before, a plug-in learner whose values are points ("tdlin", a table of zeros until trained) was offered
as "tdlin (plug-in)" next to trained runs: reviewing with it graded every move "best" (all values 0);
its trained runs were not offered at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

from engine import Rules
from tests.agents.test_plugins import GOOD, MakePlugin, make_plugin  # noqa: F401  (the fixture)

pytest_plugins = ("tests.studio.gui_fixtures",)

#: a learner in points: a weight per empty cell, zero until trained
LEARNER = (
    GOOD.format(name="tdlin")
    .replace('description = "', 'value_kind = "points"\n    trainable = True\n    description = "')
    .replace("self.config.gain_weight * gain", "self.config.gain_weight * gain * 0.0")
    + """
    def train(self, budget, control=None, context=None):
        return iter(())
"""
)
#: an agent in points that needs no training
FIXED = GOOD.format(name="pointy").replace('description = "', 'value_kind = "points"\n    description = "')


def _items(combo: QComboBox) -> list[str]:
    return [combo.itemText(i) for i in range(combo.count())]


@pytest.fixture
def installed(make_plugin: MakePlugin) -> None:  # noqa: F811  (the imported fixture)
    """The two plug-ins, installed before the window opens (as pip leaves them)."""
    make_plugin("tdlin-pkg", {"tdlin": "tdlin_mod:EmptiestAgent"}, {"tdlin_mod": LEARNER})
    make_plugin("pointy-pkg", {"pointy": "pointy_mod:EmptiestAgent"}, {"pointy_mod": FIXED})


def test_the_reviewer_box_offers_a_learner_by_its_trained_runs_not_untrained(
    qtbot, installed: None, window, tmp_path: Path
) -> None:
    from agents.registry import get_agent_class, loaded_plugins

    # what the app's background preload (studio.app.preload_agents) does after start: the box lists the
    # plug-ins imported so far, never importing one on the window's thread
    for name in ("tdlin", "pointy"):
        get_agent_class(name)
    assert {n for n, _ in loaded_plugins()} == {"tdlin", "pointy"}
    window.show_tab("Replay")
    qtbot.mouseClick(window.replay.refreshButton, Qt.MouseButton.LeftButton)
    items = _items(window.replay.reviewerCombo)
    assert "tdlin (plug-in)" not in items  # untrained: nothing to grade with
    assert items == ["default", "expectimax d1", "expectimax d2", "expectimax d3", "pointy (plug-in)"]

    # a trained run of it: its checkpoint is offered, named by the run
    from agents.registry import create_agent

    store = window.store
    run = store.create_run("tdlin", {}, Rules(), {"episodes": 1}, status="finished")
    path = create_agent("tdlin").save(tmp_path / "tdlin.npz")
    store.add_checkpoint(run, path, episode=1, step=10, final=True)
    qtbot.mouseClick(window.replay.refreshButton, Qt.MouseButton.LeftButton)
    items = _items(window.replay.reviewerCombo)
    assert items == [
        "default",
        "expectimax d1",
        "expectimax d2",
        "expectimax d3",
        f"tdlin run {run}",
        "pointy (plug-in)",
    ]
    combo = window.replay.reviewerCombo
    combo.setFocus()
    qtbot.keyClick(combo, "t")  # a person types the first letter to pick it
    assert combo.currentText() == f"tdlin run {run}"
    chosen = window.replay.current_reviewer()
    assert chosen.spec.checkpoint == str(Path(path).resolve()) and chosen.label == f"tdlin run {run}"
    Path("/tmp/shots").mkdir(exist_ok=True)
    window.replay.grab().save("/tmp/shots/replay_reviewer_box.png")
