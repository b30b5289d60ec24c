"""Issue 49 (the preset's network as the studio's hint engine): the Play tab's agent box offers the
store's trained n-tuple networks above the untrained agents of the registry, strongest first, and on
a fresh profile takes its hints from the strongest one when it is strong (as the coach's default
reviewer is: the hint and the coach then read one network). Before, "ntuple" in the box was an
untrained network whose hint was the next merge's points, and a trained one had to be found by file."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from agents.base import Budget
from agents.registry import create_agent
from engine import Rules
from engine.store import GameStore
from tests.studio.gui_helpers import open_window

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton


def _network_run(store: GameStore, path: Path, seed: int, score: float) -> int:
    """An n-tuple run whose best checkpoint (a small network) evaluated at ``score``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    agent = create_agent("ntuple", {"layout": "4x4"}, seed=seed)
    list(agent.train(Budget(episodes=30)))  # a network with preferences (an empty one has few)
    agent.save(path)
    run = store.create_run("ntuple", {"layout": "4x4"}, Rules(), {"episodes": 1})
    store.set_checkpoint_eval(store.add_checkpoint(run, path, 1, 1), score)
    return run


def _items(combo) -> list[str]:
    return [combo.itemText(i) for i in range(combo.count())]


def _click_item(qtbot, combo, text: str) -> None:
    """Open the box with the mouse and click the item ``text`` in its list."""
    qtbot.mouseClick(combo, CLICK)
    view = combo.view()
    qtbot.waitUntil(view.isVisible, timeout=2000)
    index = combo.model().index(combo.findText(text), 0)
    assert index.row() >= 0, f"{text!r} is not in the list: {_items(combo)}"
    view.scrollTo(index)
    qtbot.wait(QApplication.doubleClickInterval() + 50)  # the box ignores a release right after opening
    qtbot.mouseClick(view.viewport(), CLICK, pos=view.visualRect(index).center())
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)


def _hint_by(qtbot, play, run: int, path: Path) -> None:
    """Hint (the button) is answered by run ``run``'s network in ``path``, and says so by name: "n-tuple
    run 2: ← left; …", or "n-tuple run 2 has no preference here" on a board (the game's start is
    random) where its moves tie."""
    play.last_hint = None
    qtbot.mouseClick(play.hintButton, CLICK)
    qtbot.waitUntil(lambda: play.last_hint is not None, timeout=30000)
    assert play.last_hint.spec.checkpoint == str(path.resolve()) and play.last_hint.error is None
    assert re.match(rf"n-tuple run {run}(: | has no preference here )", play.hintStatus.text())


def test_a_fresh_profile_takes_hints_from_the_strongest_network(qtbot, data_dir, qsettings, tmp_path):
    store = GameStore.open(data_dir)
    weak = _network_run(store, tmp_path / "weak" / "best.npz", 1, 5_000.0)
    strong = _network_run(store, tmp_path / "strong" / "best.npz", 2, 30_000.0)
    store.close()

    win = open_window(qtbot, data_dir, qsettings)
    play = win.play
    combo = play.agentCombo
    # strongest first, above the registry's agents; the strong one is the choice
    assert _items(combo)[:3] == [
        f"n-tuple run {strong} · avg 30,000",
        f"n-tuple run {weak} · avg 5,000",
        "expectimax",
    ]
    assert combo.currentText() == f"n-tuple run {strong} · avg 30,000"
    assert play.agent_spec.checkpoint == str((tmp_path / "strong" / "best.npz").resolve())
    _hint_by(qtbot, play, strong, tmp_path / "strong" / "best.npz")
    # the coach's reviewer is the same network
    assert play.coach_reviewer.spec.checkpoint == play.agent_spec.checkpoint
    play.grab().save("/tmp/shots/play_offers_trained_networks.png")
    win.close()


def test_a_weak_network_is_offered_but_expectimax_stays_the_default(qtbot, data_dir, qsettings, tmp_path):
    store = GameStore.open(data_dir)
    weak = _network_run(store, tmp_path / "weak" / "best.npz", 1, 5_000.0)
    store.close()
    win = open_window(qtbot, data_dir, qsettings)
    combo = win.play.agentCombo
    assert _items(combo)[:2] == [f"n-tuple run {weak} · avg 5,000", "expectimax"]
    assert combo.currentText() == "expectimax"
    win.close()


def test_a_network_trained_while_the_window_is_open_is_listed_when_the_box_opens(
    qtbot, data_dir, qsettings, tmp_path
):
    win = open_window(qtbot, data_dir, qsettings)
    play = win.play
    assert play.agentCombo.currentText() == "expectimax"
    run = _network_run(play.store, tmp_path / "new" / "best.npz", 3, 25_000.0)
    label = f"n-tuple run {run} · avg 25,000"
    assert label not in _items(play.agentCombo)
    _click_item(qtbot, play.agentCombo, label)  # listed once the box opens; the person picks it
    assert play.agentCombo.currentText() == label
    _hint_by(qtbot, play, run, tmp_path / "new" / "best.npz")
    assert _items(play.agentCombo).count(label) == 1
    win.close()

    again = open_window(qtbot, data_dir, qsettings)  # the choice comes back, under its label
    assert again.play.agentCombo.currentText() == label
    again.close()


def test_a_choice_the_person_made_is_kept_when_a_stronger_network_appears(
    qtbot, data_dir, qsettings, tmp_path
):
    win = open_window(qtbot, data_dir, qsettings)
    combo = win.play.agentCombo
    combo.setFocus()
    qtbot.keyClicks(combo, "gr")  # type-ahead: greedy
    assert combo.currentText() == "greedy"
    _network_run(win.play.store, tmp_path / "s" / "best.npz", 4, 40_000.0)
    win.close()
    again = open_window(qtbot, data_dir, qsettings)
    assert again.play.agentCombo.currentText() == "greedy"
    again.close()


def test_a_network_used_in_play_from_a_file_is_listed_once(qtbot, data_dir, qsettings, tmp_path):
    # "Use in Play" (or "Checkpoint file…") with a path written another way than the store's
    store = GameStore.open(data_dir)
    path = tmp_path / "a" / "best.npz"
    run = _network_run(store, path, 5, 30_000.0)
    store.close()
    win = open_window(qtbot, data_dir, qsettings)
    play = win.play
    play.agentCombo.use_checkpoint(tmp_path / "a" / ".." / "a" / "best.npz", "ntuple")
    win.close()
    again = open_window(qtbot, data_dir, qsettings)
    combo = again.play.agentCombo
    labels = _items(combo)
    assert labels.count(f"n-tuple run {run} · avg 30,000") == 1 and "best.npz (checkpoint)" not in labels
    assert combo.currentText() == f"n-tuple run {run} · avg 30,000"
    again.close()


def test_the_choice_stays_when_its_run_leaves_the_store(qtbot, data_dir, qsettings, tmp_path):
    store = GameStore.open(data_dir)
    path = tmp_path / "a" / "best.npz"
    run = _network_run(store, path, 6, 30_000.0)
    store.close()
    win = open_window(qtbot, data_dir, qsettings)
    play = win.play
    assert play.agent_spec.checkpoint == str(path.resolve())
    play.store.delete_run(run)  # e.g. deleted in the Train tab (its checkpoint file kept here)
    qtbot.mouseClick(play.agentCombo, CLICK)  # the box opens: the list is read again
    qtbot.waitUntil(play.agentCombo.view().isVisible, timeout=2000)
    qtbot.keyClick(play.agentCombo.view(), Qt.Key.Key_Escape)
    assert f"n-tuple run {run} · avg 30,000" not in _items(play.agentCombo)
    assert play.agent_spec.checkpoint == str(path.resolve())  # not silently another agent
    assert play.agentCombo.currentText() == "best.npz (checkpoint)"
    win.close()
