"""Start refuses a second identical run while the form's run is still starting (issue 44)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.studio.tab_fixtures import fake_run

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")

CLICK = Qt.MouseButton.LeftButton


def test_three_quick_clicks_on_start_make_one_run(qtbot, tab, store) -> None:
    """Three clicks before the child says it trains: one run; Start reads "Starting…" and is off
    meanwhile, then back as "Start" (another run may train beside it)."""
    fake_run(tab, episodes=10**6, delay_ms=2.0)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000):
        for _ in range(3):
            qtbot.mouseClick(tab.startButton, CLICK)
        assert len(tab.live) == 1
        assert not tab.startButton.isEnabled() and tab.startButton.text() == "Starting…"
        # the shortcut clicks the button: refused the same way
        qtbot.keyClick(tab, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert len(tab.live) == 1
    assert tab.startButton.isEnabled() and tab.startButton.text() == "Start"
    assert len(store.list_runs()) == 1
    with qtbot.waitSignal(tab.trainingFinished, timeout=30_000):
        qtbot.mouseClick(tab.stopButton, CLICK)
    assert len(store.list_runs()) == 1
