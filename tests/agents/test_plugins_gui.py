"""Plug-in agents in the window: the Train form lists a working plug-in (its knobs as fields) and greys a
broken one with its reason; a run of the plug-in starts with a click; Play and Arena offer it too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QStandardItemModel

from agents import registry
from engine.store import GameStore
from studio.tabs.arena import ArenaTab
from studio.tabs.play import AgentPicker
from studio.tabs.train import TrainTab
from tests.agents.test_plugins import MakePlugin, make_plugin, myagent  # noqa: F401  (fixtures)

pytest_plugins = ("tests.studio.gui_fixtures",)

BOOM_REASON = (
    "cannot import boom_mod:BoomAgent: ModuleNotFoundError: No module named 'no_such_module_anywhere'"
)


@pytest.fixture
def store(data_dir: Path, plugins: None) -> Iterator[GameStore]:
    """The store, opened once the plug-ins are installed."""
    with GameStore.open(data_dir) as opened:
        yield opened


@pytest.fixture
def plugins(myagent: Path, make_plugin: MakePlugin) -> None:  # noqa: F811  (the fixture above)
    make_plugin(
        "broken-pkg", {"boom": "boom_mod:BoomAgent"}, {"boom_mod": "import no_such_module_anywhere\n"}
    )
    registry.check_plugins()  # what the window's background preload does once it shows


def test_train_form_offers_the_plugin_and_greys_the_broken_one(
    qtbot, plugins: None, store: GameStore, qsettings: QSettings
) -> None:
    tab = TrainTab(store, None)
    qtbot.addWidget(tab)
    tab.resize(1200, 800)
    tab.show()
    combo = tab.launch.agentCombo
    texts = [combo.itemText(i) for i in range(combo.count())]
    # built-in agents first, then those registered in code (by other tests) and plug-ins, the broken last
    assert texts[: len(registry.BUILTIN_AGENTS)] == list(registry.BUILTIN_AGENTS)
    assert "myagent" in texts and texts[-1] == "boom (cannot load)"
    model = combo.model()
    assert isinstance(model, QStandardItemModel)
    boom = texts.index("boom (cannot load)")
    assert not model.item(boom).isEnabled()
    assert model.item(texts.index("myagent")).isEnabled()
    assert combo.itemData(boom, Qt.ItemDataRole.ToolTipRole) == BOOM_REASON
    assert combo.itemData(boom) is None  # nothing to start

    # the plug-in's knobs are the form's fields; a run starts with a click and finishes
    tab.launch.select_agent("myagent")
    assert combo.currentText() == "myagent"
    assert set(tab.launch.form.values()) == {"step_size", "empty_weight"}
    tab.launch.form.set_values({"step_size": 0.125})
    tab.launch.set_budget(episodes=2)
    with qtbot.waitSignal(tab.trainingFinished, timeout=120_000) as finished:
        qtbot.mouseClick(tab.startButton, Qt.MouseButton.LeftButton)
    assert finished.args[0] == "finished", tab.error_box and tab.error_box.text()
    (run,) = store.list_runs()
    assert run.agent == "myagent" and run.config["step_size"] == 0.125 and run.status == "finished"
    tab.shutdown()


def test_play_and_arena_offer_the_plugin(
    qtbot, plugins: None, store: GameStore, qsettings: QSettings
) -> None:
    picker = AgentPicker(qsettings)
    qtbot.addWidget(picker)
    assert "myagent" in [picker.itemText(i) for i in range(picker.count())]
    assert "boom" not in [picker.itemText(i) for i in range(picker.count())]
    arena = ArenaTab(store, qsettings)
    qtbot.addWidget(arena)
    names = [arena.agentPicker.itemData(i) for i in range(arena.agentPicker.count())]
    assert "myagent" in names and "boom" not in names
