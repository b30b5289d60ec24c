"""The Arena tab: contestants, background evaluation in processes, results equal to agents.arena's."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from PySide6.QtCore import Qt

from agents.arena import evaluate
from agents.base import Budget
from agents.registry import create_agent
from agents.spec import AgentSpec
from studio.tabs.arena import ArenaTab
from tests.studio.tab_fixtures import shown_arena
from tests.studio.train_fakes import register_fakes

CLICK = Qt.MouseButton.LeftButton

# The settings fixtures (not a conftest: several people add tests here).
pytest_plugins = ("tests.studio.gui_fixtures",)


@pytest.fixture
def arena(qtbot, store) -> Iterator[ArenaTab]:
    yield from shown_arena(qtbot, store, (1100, 750))


def _table(t) -> list[list[str]]:
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def test_random_agent_results_match_agents_arena(qtbot, arena, store):
    arena.agentPicker.setCurrentIndex(arena.agentPicker.findData("random"))
    qtbot.mouseClick(arena.addAgentButton, CLICK)
    assert [s.name for s in arena.contestants()] == ["random"]
    arena.gamesSpin.setValue(6)
    arena.seedSpin.setValue(11)
    arena.workersSpin.setValue(min(2, arena.workersSpin.maximum()))
    with qtbot.waitSignal(arena.evaluationFinished, timeout=180_000) as fin:
        qtbot.mouseClick(arena.runButton, CLICK)
        assert arena.is_running and not arena.runButton.isEnabled()
    assert fin.args == [True]

    expected = evaluate(AgentSpec("random"), 6, 11, workers=1)  # same seed: same games whatever the processes
    got = arena.results[0]
    np.testing.assert_array_equal(got.scores, expected.scores)
    np.testing.assert_array_equal(got.max_tiles, expected.max_tiles)
    row = _table(arena.resultsTable)[0]
    assert row == [
        "random",
        "6",
        expected.mean_text,
        f"{expected.median_score:,.0f}",
        f"{expected.max_score:,}",
        f"{expected.moves_per_game:,.1f}",
        f"{int(expected.max_tiles.max()):,}",
        row[7],  # wall time
        "done",
    ]
    assert " ± " in row[2]
    # seed 004's layout: one row per tile from 32, games that reached at least it in the cells
    tiles = _table(arena.tileTable)
    top = int(expected.max_tiles.max())
    thresholds = [t for t in (2**k for k in range(5, 17)) if t <= top]
    want = {t: int(np.sum(expected.max_tiles >= t)) for t in thresholds}
    assert [int(r[0].removeprefix("≥ ").replace(",", "")) for r in tiles] == thresholds
    assert [int(r[1].split()[0]) for r in tiles] == [want[t] for t in thresholds]
    assert arena.reached_counts() == {"random": want}
    assert arena.progressBar.value() == 1000
    # the bar chart has one bar per threshold, heights in % of games reaching it
    bars = [i for i in arena.barChart.getPlotItem().items if i.__class__.__name__ == "BarGraphItem"]
    assert len(bars) == 1
    np.testing.assert_allclose(bars[0].opts["height"], [100 * want[t] / 6 for t in thresholds])

    # the games are in the store and the best one opens in Replay
    stored = store.list_games(source="evaluation")
    assert len(stored) == 6 and sorted(g.score for g in stored) == sorted(expected.scores.tolist())
    where = arena.resultsTable.visualItemRect(arena.resultsTable.item(0, 0)).center()
    with qtbot.waitSignal(arena.openInReplay, timeout=2000) as sig:
        # a double-click is a press/release, then the double-click event
        qtbot.mouseClick(arena.resultsTable.viewport(), CLICK, pos=where)
        qtbot.mouseDClick(arena.resultsTable.viewport(), CLICK, pos=where)
    assert store.get_game(sig.args[0]).score == expected.max_score


def test_two_contestants_and_a_checkpoint(qtbot, arena, store, tmp_path, monkeypatch):
    register_fakes(monkeypatch)
    agent = create_agent("fake_learner", {"delay_ms": 0.0}, seed=3)
    for _ in agent.train(Budget(episodes=1)):
        pass
    path = agent.save(tmp_path / "fake.npz")
    arena.add_agent("random")
    arena.add_checkpoint("fake_learner", path)
    arena.add_checkpoint("fake_learner", path)  # the same one twice is one entry
    assert arena.entryList.count() == 2
    arena.gamesSpin.setValue(3)
    arena.workersSpin.setValue(1)  # the fake agent is registered in this process only
    with qtbot.waitSignal(arena.evaluationFinished, timeout=120_000) as fin:
        arena.run()
    assert fin.args == [True]
    labels = [r.label for r in arena.results]
    assert labels == ["random", "fake_learner (fake.npz)"]
    assert arena.tileTable.columnCount() == 3
    assert len(store.list_games(source="evaluation")) == 6


def test_untick_and_remove(qtbot, arena):
    arena.add_agent("random")
    item = arena.entryList.item(0)
    item.setCheckState(Qt.CheckState.Unchecked)
    assert arena.contestants() == [] and not arena.runButton.isEnabled() and not arena.run()
    arena.entryList.setCurrentRow(0)
    qtbot.mouseClick(arena.removeButton, CLICK)
    assert arena.entryList.count() == 0


def test_a_bad_checkpoint_shows_an_error_and_the_tab_lives(qtbot, arena, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a checkpoint")
    arena.add_checkpoint(None, bad)
    arena.workersSpin.setValue(1)
    arena.gamesSpin.setValue(2)
    with qtbot.waitSignal(arena.evaluationFinished, timeout=60_000) as fin:
        arena.run()
    assert fin.args == [False]
    # the contestant's row fails, saying why (issue 45: no modal dialog)
    assert arena.error_box is None
    status = arena.resultsTable.item(0, arena.resultsTable.columnCount() - 1)
    assert status.text() == "failed" and "not a 2048 Studio checkpoint" in status.toolTip()
    arena.entryList.clear()
    arena.add_agent("random")
    with qtbot.waitSignal(arena.evaluationFinished, timeout=60_000) as fin2:
        arena.run()
    assert fin2.args == [True]


def test_the_contestants_are_there_again_after_a_restart(qtbot, store, tmp_path, qsettings):
    """Issue #33: the contestants were forgotten when the app restarted."""
    from agents.spec import AgentSpec

    def open_tab() -> ArenaTab:
        tab = ArenaTab(store, qsettings)
        qtbot.addWidget(tab)
        tab.show()
        return tab

    first = open_tab()
    for name in ("random", "greedy"):
        first.agentPicker.setCurrentIndex(first.agentPicker.findData(name))
        qtbot.mouseClick(first.addAgentButton, CLICK)
    kept, gone = tmp_path / "kept.npz", tmp_path / "gone.npz"
    for p in (kept, gone):
        p.write_bytes(b"a checkpoint")  # only its path matters until a run
    first.add_checkpoint("ntuple", kept)
    first.add_checkpoint("ntuple", gone)
    first.add_spec(AgentSpec("expectimax", {"depth": 1}, label="expectimax d1"))
    first.entryList.item(1).setCheckState(Qt.CheckState.Unchecked)  # greedy sits this one out
    first.entryList.setCurrentRow(0)
    qtbot.mouseClick(first.removeButton, CLICK)  # random goes
    before = [first.entryList.item(i).data(Qt.ItemDataRole.UserRole) for i in range(first.entryList.count())]
    first.shutdown()
    first.deleteLater()
    gone.unlink()

    again = open_tab()
    entries = [again.entryList.item(i) for i in range(again.entryList.count())]
    assert [e.data(Qt.ItemDataRole.UserRole) for e in entries] == before
    assert [e.text() for e in entries] == [
        "greedy",
        "ntuple (kept.npz)",
        "ntuple (gone.npz) (file missing)",
        "expectimax d1",
    ]
    ticked = [e.checkState() == Qt.CheckState.Checked for e in entries]
    assert ticked == [False, True, False, True]  # a checkpoint whose file is gone is not ticked
    assert [s.display for s in again.contestants()] == ["ntuple (kept.npz)", "expectimax d1"]
    again.shutdown()


def test_hand_edited_contestants_do_not_stop_the_tab(qtbot, store, qsettings):
    from studio.tabs.arena import CONTESTANTS_KEY

    for junk in ("not json", '{"a": 1}', '[1, {"spec": 5}, {"spec": {"config": {}}}]'):
        qsettings.setValue(CONTESTANTS_KEY, junk)
        tab = ArenaTab(store, qsettings)
        qtbot.addWidget(tab)
        assert tab.entryList.count() == 0, junk
