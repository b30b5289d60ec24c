"""Arrows / WASD reach the Play game wherever a menu, a dialog or a click left the focus (issue 44).

Each test closes something the way a person does (Esc on a menu opened with the mouse or the keyboard,
OK on the shortcuts box, Esc on New game…) and then presses keys on whatever has the focus, as the
keyboard would: the game must make exactly the moves a replica of it makes.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMenu, QMessageBox

from engine import Direction, Game, Rules
from studio.tabs.play import NewGameDialog
from tests.studio.gui_helpers import ARROW_KEYS

pytest_plugins = ("tests.studio.gui_fixtures",)

SEED = 7
ARROWS = ARROW_KEYS
WASD = {
    Direction.UP: Qt.Key.Key_W,
    Direction.LEFT: Qt.Key.Key_A,
    Direction.DOWN: Qt.Key.Key_S,
    Direction.RIGHT: Qt.Key.Key_D,
}


def _fresh_game(window) -> Game:
    """A seeded game on the Play tab and its replica (what the keys should do to it)."""
    window.play.new_game(Rules(), seed=SEED)
    return Game(rules=Rules(), seed=SEED)


def _press_moves(qtbot, window, replica: Game, keys: dict[Direction, Qt.Key], n: int = 4) -> None:
    """Press ``n`` legal moves on the focused widget (the window when none) and check each one landed."""
    play = window.play
    for i in range(n):
        d = replica.legal_moves()[i % len(replica.legal_moves())]
        replica.step(d)
        qtbot.keyClick(QApplication.focusWidget() or window, keys[d])
        assert play.recorder.moves == i + 1, f"press {i + 1} ({d.label}) was lost"
        assert np.array_equal(play.recorder.board, replica.board)
    play.board.finish_animations()
    assert np.array_equal(play.board.board, replica.board)
    assert window.store.get_game(play.recorder.game_id).n_moves == n


def test_arrows_move_after_a_menu_opened_with_the_mouse_is_closed_with_esc(qtbot, window):
    replica = _fresh_game(window)
    bar = window.menuBar()
    file_action = bar.actions()[0]
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.actionGeometry(file_action).center())
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is not None, timeout=2000)
    qtbot.keyClick(QApplication.activePopupWidget(), Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None, timeout=2000)
    _press_moves(qtbot, window, replica, ARROWS)


def test_wasd_move_after_a_menu_opened_with_the_keyboard_is_closed_with_esc(qtbot, window):
    replica = _fresh_game(window)
    qtbot.keyClick(window, Qt.Key.Key_G, Qt.KeyboardModifier.AltModifier)  # &Game
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is not None, timeout=2000)
    popup = QApplication.activePopupWidget()
    assert isinstance(popup, QMenu) and popup.title() == "&Game"
    qtbot.keyClick(QApplication.activePopupWidget(), Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None, timeout=2000)
    _press_moves(qtbot, window, replica, WASD)


def test_arrows_move_after_the_shortcuts_box_is_closed_with_ok(qtbot, window):
    replica = _fresh_game(window)
    qtbot.keyClick(window, Qt.Key.Key_F1)
    box = window.findChild(QMessageBox, "shortcutsBox")
    qtbot.waitUntil(lambda: box.isVisible(), timeout=2000)
    ok = box.button(QMessageBox.StandardButton.Ok)
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not box.isVisible(), timeout=2000)
    _press_moves(qtbot, window, replica, ARROWS)


def test_new_game_cancelled_with_esc_keeps_the_game_and_its_keys(qtbot, window):
    replica = _fresh_game(window)
    seen: list[bool] = []

    def in_dialog() -> None:
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, NewGameDialog)
        seed_edit = dialog.seed
        seed_edit.setFocus()
        # Keys typed in the dialog's text field are text there, never moves of the game behind it.
        qtbot.keyClicks(seed_edit, "12")
        qtbot.keyClick(seed_edit, Qt.Key.Key_Left)
        qtbot.keyClick(seed_edit, Qt.Key.Key_A)
        seen.append(window.play.recorder.moves == 0 and seed_edit.text() == "1a2")
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)

    QTimer.singleShot(0, in_dialog)
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert seen == [True]
    assert window.play.recorder.seed == SEED  # Esc: the same game goes on
    _press_moves(qtbot, window, replica, ARROWS)


def test_arrows_move_after_the_agent_box_popup_is_closed_with_esc(qtbot, window):
    replica = _fresh_game(window)
    combo = window.play.agentCombo
    chosen = combo.currentText()
    qtbot.mouseClick(combo, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: combo.view().isVisible(), timeout=2000)
    qtbot.keyClick(combo.view(), Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not combo.view().isVisible(), timeout=2000)
    _press_moves(qtbot, window, replica, ARROWS)
    assert combo.currentText() == chosen  # the arrows moved tiles, not the agent choice


def test_arrows_on_another_tab_leave_the_play_game_alone(qtbot, window):
    _fresh_game(window)
    qtbot.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)  # Replay
    assert window.tabs.currentWidget() is window.replay
    for key in (Qt.Key.Key_Left, Qt.Key.Key_Up, Qt.Key.Key_A, Qt.Key.Key_W):
        qtbot.keyClick(QApplication.focusWidget() or window, key)
    assert window.play.recorder.moves == 0
    qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)  # back to Play
    replica = Game(rules=Rules(), seed=SEED)
    _press_moves(qtbot, window, replica, ARROWS, n=2)
