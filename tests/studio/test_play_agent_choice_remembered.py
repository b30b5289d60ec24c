"""The Play tab's agent box comes back as it was left after the window is closed and opened again
(issue 44): a checkpoint picked with "Checkpoint file…" (an n-tuple network), a registered agent."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog

from engine import Rules
from studio.tabs.play import CHECKPOINT_ITEM
from tests.studio.gui_helpers import open_window

pytest_plugins = ("tests.studio.gui_fixtures",)


def _ntuple_checkpoint(path: Path) -> Path:
    from agents.registry import create_agent

    path.parent.mkdir(parents=True, exist_ok=True)
    return Path(create_agent("ntuple", rules=Rules()).save(path))


def _click_item(qtbot, combo, text: str) -> None:
    """Open the box with the mouse and click the item ``text`` in its list."""
    qtbot.mouseClick(combo, Qt.MouseButton.LeftButton)
    view = combo.view()
    qtbot.waitUntil(view.isVisible, timeout=2000)
    index = combo.model().index(combo.findText(text), 0)
    view.scrollTo(index)
    qtbot.wait(QApplication.doubleClickInterval() + 50)  # the box ignores a release right after opening
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visualRect(index).center())
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)


def test_a_checkpoint_chosen_in_the_box_is_back_after_reopening(
    qtbot, data_dir, qsettings, tmp_path, monkeypatch
):
    # Two runs' networks with the same file name: the one chosen must come back, not its namesake.
    first = _ntuple_checkpoint(tmp_path / "run-1" / "best.npz")
    chosen = _ntuple_checkpoint(tmp_path / "run-2" / "best.npz")
    picks = iter([str(first), str(chosen)])
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (next(picks), "Checkpoints (*.npz)"))

    win = open_window(qtbot, data_dir, qsettings)
    combo = win.play.agentCombo
    assert combo.currentText() == "expectimax"
    _click_item(qtbot, combo, CHECKPOINT_ITEM)
    _click_item(qtbot, combo, CHECKPOINT_ITEM)
    assert win.play.agent_spec.checkpoint == str(chosen)
    win.close()

    again = open_window(qtbot, data_dir, qsettings)
    combo = again.play.agentCombo
    assert combo.currentText() == "best.npz (checkpoint)"
    assert again.play.agent_spec.checkpoint == str(chosen)
    # Both stay listed as recent checkpoints, each once.
    files = [combo.itemData(i).checkpoint for i in range(combo.count()) if combo.itemData(i) is not None]
    assert files.count(str(chosen)) == 1 and files.count(str(first)) == 1
    # ... and a key press still plays (the box did not keep the focus).
    again.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is again, timeout=2000)
    before = again.play.recorder.moves
    for key in (Qt.Key.Key_Left, Qt.Key.Key_Up, Qt.Key.Key_Right, Qt.Key.Key_Down):
        qtbot.keyClick(QApplication.focusWidget() or again, key)
    assert again.play.recorder.moves > before
    again.close()


def test_a_registered_agent_chosen_by_keyboard_is_back_after_reopening(qtbot, data_dir, qsettings):
    win = open_window(qtbot, data_dir, qsettings)
    combo = win.play.agentCombo
    combo.setFocus()
    qtbot.keyClicks(combo, "ntu")  # type-ahead in the focused box
    assert combo.currentText() == "ntuple"
    win.close()
    again = open_window(qtbot, data_dir, qsettings)
    assert again.play.agentCombo.currentText() == "ntuple"
    assert again.play.agent_spec.name == "ntuple" and again.play.agent_spec.checkpoint is None
    again.close()


def test_a_remembered_checkpoint_that_is_gone_falls_back_to_the_first_agent(
    qtbot, data_dir, qsettings, tmp_path, monkeypatch
):
    path = _ntuple_checkpoint(tmp_path / "gone" / "ntuple.npz")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))
    win = open_window(qtbot, data_dir, qsettings)
    _click_item(qtbot, win.play.agentCombo, CHECKPOINT_ITEM)
    assert win.play.agent_spec.checkpoint == str(path)
    win.close()
    path.unlink()
    again = open_window(qtbot, data_dir, qsettings)
    # Not the untrained "ntuple" of the same kind: the box's first agent.
    assert again.play.agentCombo.currentText() == "expectimax"
    again.close()
