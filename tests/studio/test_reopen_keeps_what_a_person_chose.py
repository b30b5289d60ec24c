"""Close and reopen: what a person chose in every tab is there again (issue 44).

One person's session through the controls (Play's agent picked from its box, Train's budget ticked
and typed, the Arena's contestants added and "Games each" typed, the Games filters chosen, a game
played), the window closed with File > Quit, a new window on the same data dir and settings file. The
tabs' own tests go deeper (the Arena's results: test_arena_kept_after_restart; the Sweep dialog:
test_sweep_dialog_keeps_what_was_typed; a chosen checkpoint: test_play_agent_choice_remembered).
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from tests.studio.gui_helpers import open_window

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton


def _tab(qtbot, win, index: int):
    # what a window manager does once a popup is gone (the offscreen platform has none)
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=3000)
    qtbot.keyClick(
        QApplication.focusWidget() or win, Qt.Key(Qt.Key.Key_1 + index), Qt.KeyboardModifier.ControlModifier
    )
    assert win.tabs.currentIndex() == index
    return win.tabs.currentWidget()


def _pick(qtbot, combo, text: str) -> None:
    """Open the box with the mouse and click the item, as a person does."""
    qtbot.mouseClick(combo, CLICK)
    view = combo.view()
    qtbot.waitUntil(view.isVisible, timeout=3000)
    index = combo.model().index(combo.findText(text), 0)
    assert index.isValid(), f"{text!r} not in {combo.objectName()}"
    view.scrollTo(index)
    qtbot.wait(QApplication.doubleClickInterval() + 50)  # the box ignores a release right after opening
    qtbot.mouseClick(view.viewport(), CLICK, pos=view.visualRect(index).center())
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=3000)
    assert combo.currentText() == text


def _type(qtbot, spin, text: str) -> None:
    qtbot.mouseClick(spin, CLICK)
    qtbot.keyClick(spin, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(spin, text)
    qtbot.keyClick(spin, Qt.Key.Key_Tab)


def test_every_tab_keeps_what_a_person_chose(qtbot, data_dir, qsettings) -> None:
    win = open_window(qtbot, data_dir, qsettings, active=True)
    # Play: a few moves (a game in the store) and the greedy agent for hints
    play = _tab(qtbot, win, 0)
    before = play.board.board.copy()
    for key in (Qt.Key.Key_Left, Qt.Key.Key_Down, Qt.Key.Key_Right, Qt.Key.Key_Up):
        qtbot.keyClick(QApplication.focusWidget() or win, key)
    qtbot.waitUntil(lambda: (play.board.board != before).any(), timeout=3000)
    _pick(qtbot, play.agentCombo, "greedy")
    # Train: a budget of 2 minutes instead of 1000 episodes
    train = _tab(qtbot, win, 1)
    form = train.launch
    qtbot.mouseClick(form.minutesCheck, CLICK, pos=form.minutesCheck.rect().center())
    qtbot.mouseClick(form.episodesCheck, CLICK, pos=form.episodesCheck.rect().center())
    _type(qtbot, form.minutesSpin, "2")
    assert (form.budget().episodes, form.budget().seconds) == (None, 120.0)
    # Arena: two contestants, 3 games each
    arena = _tab(qtbot, win, 3)
    for name in ("random", "greedy"):
        _pick(qtbot, arena.agentPicker, arena.agentPicker.itemText(arena.agentPicker.findData(name)))
        qtbot.mouseClick(arena.addAgentButton, CLICK)
    _type(qtbot, arena.gamesSpin, "3")
    # Games: only your games, at least a 4 tile
    games = _tab(qtbot, win, 4)
    _pick(qtbot, games.filterBar.source, "your games")
    _pick(qtbot, games.filterBar.minTile, "max tile ≥ 32")
    chosen = games.filterBar.game_filter()
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=3000)
    # File > Quit by keyboard (Ctrl+Q is the platform's Quit key: the offscreen platform has none)
    qtbot.keyClick(win, Qt.Key.Key_F, Qt.KeyboardModifier.AltModifier)
    qtbot.keyClick(QApplication.activePopupWidget(), Qt.Key.Key_Q)
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=10_000)
    qsettings.sync()

    again = open_window(
        qtbot, data_dir, active=True, settings=QSettings(qsettings.fileName(), QSettings.Format.IniFormat)
    )
    assert again.tabs.currentIndex() == 4  # the tab in front when it closed
    assert again.play.agentCombo.currentText() == "greedy"
    form2 = again.tab("Train").launch
    assert not form2.episodesCheck.isChecked() and form2.minutesCheck.isChecked()
    assert (form2.budget().episodes, form2.budget().seconds) == (None, 120.0)
    arena2 = again.tab("Arena")
    assert [s.display for s in arena2.contestants()] == ["random", "greedy"]
    assert arena2.gamesSpin.value() == 3
    bar = again.games.filterBar
    assert bar.source.currentText() == "your games" and bar.minTile.currentText() == "max tile ≥ 32"
    assert bar.game_filter() == chosen
    again.close()
