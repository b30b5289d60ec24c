"""Issue 44: the Arena's last results and "Games each" are there again after the window reopens."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt

from agents.arena import evaluate
from agents.spec import AgentSpec
from tests.studio.gui_helpers import open_window

CLICK = Qt.MouseButton.LeftButton

pytest_plugins = ("tests.studio.gui_fixtures",)


def _table(t) -> list[list[str]]:
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def _open(qtbot, data_dir: Path, settings: QSettings):
    win = open_window(qtbot, data_dir, settings)
    win.show_tab("Arena")
    return win, win.tab("Arena")


def test_results_and_games_each_are_there_again_after_reopening(qtbot, data_dir, qsettings):
    first, arena = _open(qtbot, data_dir, qsettings)
    for name in ("random", "greedy"):
        arena.agentPicker.setCurrentIndex(arena.agentPicker.findData(name))
        qtbot.mouseClick(arena.addAgentButton, CLICK)
    arena.gamesSpin.clear()
    qtbot.keyClicks(arena.gamesSpin, "2")
    qtbot.keyClick(arena.gamesSpin, Qt.Key.Key_Return)
    arena.seedSpin.setValue(7)
    arena.workersSpin.setValue(1)
    assert arena.gamesSpin.value() == 2
    with qtbot.waitSignal(arena.evaluationFinished, timeout=120_000) as fin:
        qtbot.mouseClick(arena.runButton, CLICK)
    assert fin.args == [True]
    before = _table(arena.resultsTable)
    tiles_before = _table(arena.tileTable)
    summary = arena.progressLabel.text()
    assert [r[0] for r in before] == ["random", "greedy"] and [r[1] for r in before] == ["2", "2"]
    first.close()
    first.deleteLater()
    qsettings.sync()

    second, again = _open(qtbot, data_dir, QSettings(qsettings.fileName(), QSettings.Format.IniFormat))
    assert again.gamesSpin.value() == 2
    assert again.seedSpin.value() == 7
    assert [s.display for s in again.contestants()] == ["random", "greedy"]
    after = _table(again.resultsTable)
    assert after == before  # every figure, the time and "done" too
    random_2 = evaluate(AgentSpec("random"), 2, 7)
    assert after[0][:5] == [
        "random",
        "2",
        random_2.mean_text,
        f"{random_2.median_score:,.0f}",
        f"{random_2.max_score:,}",
    ]
    assert after[0][-1] == after[1][-1] == "done"
    assert _table(again.tileTable) == tiles_before
    bars = [i for i in again.barChart.getPlotItem().items if i.__class__.__name__ == "BarGraphItem"]
    assert len(bars) == 2
    assert again.progressLabel.text() == summary and again.progressBar.value() == 1000
    assert again.replayButton.isEnabled()
    # the best game still opens in Replay: its id was kept with the figures
    with qtbot.waitSignal(again.openInReplay, timeout=5_000) as opened:
        again.resultsTable.selectRow(0)
        qtbot.mouseClick(again.replayButton, CLICK)
    best = int(random_2.scores.argmax())
    assert opened.args == [again.results[0].game_ids[best]]
    again.grab().save("/tmp/shots/arena_reopened.png")
    second.close()


def test_hand_edited_last_run_does_not_stop_the_tab(qtbot, store, qsettings):
    from studio.tabs.arena import LAST_RUN_KEY, ArenaTab

    for junk in ("not json", '{"rows": 3}', '{"rows": [{"spec": {"name": "random"}}]}', "[]"):
        qsettings.setValue(LAST_RUN_KEY, junk)
        tab = ArenaTab(store, qsettings)
        qtbot.addWidget(tab)
        assert tab.resultsTable.rowCount() == 0, junk
