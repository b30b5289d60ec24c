"""The runs table's toolbar and what a click on a run shows (issue 44): one button per word, the board
says when its run is paused, a single click draws a run, switching the agent keeps it drawn."""

from __future__ import annotations

from PySide6.QtCore import Qt

from agents.base import MetricEvent
from engine import Rules
from tests.studio.tab_fixtures import fake_run

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")

CLICK = Qt.MouseButton.LeftButton


def _stored_run(store, episodes: int = 5) -> int:
    run_id = store.create_run("fake_learner", {}, Rules(), {"episodes": episodes}, status="finished")
    events = [
        MetricEvent(
            "episode", i + 1, 10 * (i + 1), 0.1 * (i + 1), {"score": 100.0 * (i + 1), "max_tile": 64.0}
        )
        for i in range(episodes)
    ]
    store.log_metrics(run_id, events)
    return run_id


def _click_row(qtbot, tab, run_id: int) -> None:
    table = tab.runsTable
    row = next(r for r in range(table.rowCount()) if table.item(r, 0).text() == str(run_id))
    rect = table.visualItemRect(table.item(row, 1))
    qtbot.mouseClick(table.viewport(), CLICK, pos=rect.center())


def test_a_single_click_on_a_run_draws_its_curves(qtbot, tab, store) -> None:
    first, second = _stored_run(store, 5), _stored_run(store, 7)
    tab.refresh_runs()
    tab.launch.select_agent("fake_learner")
    assert tab.curves.emptyLabel.isVisible()  # nothing drawn yet
    _click_row(qtbot, tab, first)
    assert tab.selected_run_ids() == [first]
    tab.curves.redraw()
    assert [k for k, _r in tab.curves.runs] == [first]
    assert tab.curves.data_length("scorePlot") == 5
    assert not tab.curves.emptyLabel.isVisible()
    _click_row(qtbot, tab, second)  # another click: that run instead (it is not ticked)
    tab.curves.redraw()
    assert [k for k, _r in tab.curves.runs] == [second]
    assert tab.curves.data_length("scorePlot") == 7
    tab.curves.grab().save("/tmp/shots/runs_single_click.png")


def test_switching_the_agent_keeps_the_selected_run_drawn(qtbot, tab, store) -> None:
    run_id = _stored_run(store, 5)
    tab.refresh_runs()
    tab.launch.select_agent("fake_learner")
    _click_row(qtbot, tab, run_id)
    combo = tab.launch.agentCombo
    before = combo.currentText()
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_Down)  # another agent, by keyboard
    assert combo.currentText() != before
    tab.curves.redraw()
    assert [k for k, _r in tab.curves.runs] == [run_id]
    assert not tab.curves.emptyLabel.isVisible()
    assert tab.curves.data_length("scorePlot") == 5


def test_paused_run_board_and_one_resume_button(qtbot, tab, store) -> None:
    fake_run(tab, episodes=10**6, delay_ms=2.0)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    run_id = started.args[0]
    qtbot.waitUntil(lambda: tab.livePanel.boardCaption.text() == "Being played now", timeout=10_000)
    qtbot.mouseClick(tab.runsPanel.runPauseButton, CLICK)
    assert tab.livePanel.boardCaption.text() == f"Run {run_id} paused (its game waits)"
    qtbot.wait(600)  # the live refresh must not turn it back
    assert tab.livePanel.boardCaption.text() == f"Run {run_id} paused (its game waits)"
    texts = [b.text() for b in tab.runsPanel.buttons]
    assert texts.count("Resume") == 1 and "Continue" in texts
    tab.livePanel.grab().save("/tmp/shots/runs_paused_board.png")
    tab.runsPanel.grab().save("/tmp/shots/runs_toolbar.png")
    qtbot.mouseClick(tab.runsPanel.runPauseButton, CLICK)
    assert tab.livePanel.boardCaption.text() == "Being played now"
    with qtbot.waitSignal(tab.trainingFinished, timeout=30_000):
        qtbot.mouseClick(tab.stopButton, CLICK)
