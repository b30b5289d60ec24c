"""The Arena tab's backend choice (issue #20): local processes or Ray, kept in the settings, passed to
``evaluate``, and disabled with the reason when Ray is not installed. ``evaluate`` is stood in for (it
records its backend and plays locally), so these tests need neither Ray nor its start-up time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt

import agents.arena
import studio.tabs.arena as arena_tab
from engine.store import GameStore
from studio.tabs.arena import BACKEND_KEY, ArenaTab

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton


@pytest.fixture
def backends(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What each ``evaluate`` call was given; the games themselves play locally in this process."""
    calls: list[dict[str, Any]] = []
    real = agents.arena.evaluate

    def fake(spec: Any, games: int, seed: int, workers: int = 1, *args: Any, **kw: Any) -> Any:
        calls.append({"backend": kw.pop("backend", "local"), "workers": workers, "spec": spec.name})
        kw.pop("ray_address", None)
        return real(spec, games, seed, 1, *args, **kw)

    # The tab imports evaluate from agents.arena when a run starts: replacing it there reaches the job.
    monkeypatch.setattr(agents.arena, "evaluate", fake)
    return calls


MakeTab = Callable[[QSettings | None, bool], ArenaTab]


@pytest.fixture
def make_tab(qtbot: Any, store: GameStore, monkeypatch: pytest.MonkeyPatch) -> MakeTab:
    """``make_tab(settings, ray)``: an Arena tab on ``settings``, shown, on a machine with Ray or without."""

    def make(settings: QSettings | None, ray: bool) -> ArenaTab:
        monkeypatch.setattr(arena_tab, "have_ray", lambda: ray)
        tab = ArenaTab(store, settings)
        qtbot.addWidget(tab)
        tab.show()
        return tab

    return make


def run_two_games(qtbot: Any, tab: ArenaTab) -> None:
    tab.add_agent("random")
    tab.gamesSpin.setValue(2)
    tab.workersSpin.setValue(min(2, tab.workersSpin.maximum()))
    with qtbot.waitSignal(tab.evaluationFinished, timeout=60_000) as fin:
        qtbot.mouseClick(tab.runButton, CLICK)
        assert not tab.backendCombo.isEnabled()  # no change of backend while games play
    assert fin.args == [True]


def test_ray_choice_is_passed_to_evaluate_and_kept(
    qtbot: Any, qsettings: QSettings, backends: list[dict[str, Any]], make_tab: MakeTab
) -> None:
    tab = make_tab(qsettings, True)
    assert tab.backendCombo.isEnabled()
    assert tab.backend() == "local"  # the default
    assert [tab.backendCombo.itemText(i) for i in range(tab.backendCombo.count())] == [
        "Local processes",
        "Ray",
    ]
    tab.backendCombo.setCurrentIndex(tab.backendCombo.findData("ray"))
    assert qsettings.value(BACKEND_KEY) == "ray"
    run_two_games(qtbot, tab)
    assert backends == [{"backend": "ray", "workers": tab.workersSpin.value(), "spec": "random"}]
    assert tab.results[0].games == 2
    assert tab.backendCombo.isEnabled()

    again = make_tab(qsettings, True)  # the next session starts where this one left off
    assert again.backend() == "ray"
    again.backendCombo.setCurrentIndex(again.backendCombo.findData("local"))
    run_two_games(qtbot, again)
    assert backends[-1]["backend"] == "local"
    assert qsettings.value(BACKEND_KEY) == "local"


def test_without_ray_the_choice_is_disabled_and_says_why(
    qtbot: Any, qsettings: QSettings, backends: list[dict[str, Any]], make_tab: MakeTab
) -> None:
    qsettings.setValue(BACKEND_KEY, "ray")  # chosen on a machine that had Ray
    tab = make_tab(qsettings, False)
    assert not tab.backendCombo.isEnabled()
    assert tab.backend() == "local"
    assert "optional extra" in tab.backendCombo.toolTip() and ".[ray]" in tab.backendCombo.toolTip()
    run_two_games(qtbot, tab)
    assert [c["backend"] for c in backends] == ["local"]
    assert not tab.backendCombo.isEnabled()  # still disabled after the run
    assert qsettings.value(BACKEND_KEY) == "ray"  # not overwritten: that machine keeps its choice


def test_without_settings_the_tab_still_works(
    qtbot: Any, backends: list[dict[str, Any]], make_tab: MakeTab
) -> None:
    tab = make_tab(None, True)
    tab.backendCombo.setCurrentIndex(tab.backendCombo.findData("ray"))
    run_two_games(qtbot, tab)
    assert [c["backend"] for c in backends] == ["ray"]
