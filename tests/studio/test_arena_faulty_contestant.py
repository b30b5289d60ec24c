"""Issue 45: a contestant that plays an illegal move or raises fails alone; the others still play."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from agents.base import Agent
from agents.config import AgentConfig
from engine import Direction, Game
from studio.tabs.arena import ArenaTab
from tests.studio.tab_fixtures import shown_arena

CLICK = Qt.MouseButton.LeftButton

pytest_plugins = ("tests.studio.gui_fixtures",)


class AlwaysDown(Agent):
    """Plays down whatever the board: illegal as soon as down changes nothing."""

    name = "test_always_down"
    config_cls = AgentConfig
    description = "test agent that ignores which moves are legal"

    def act(self, game: Game) -> Direction:
        return Direction.DOWN


class Raiser(Agent):
    """Raises on its fourth move (a plug-in with a bug)."""

    name = "test_raiser"
    config_cls = AgentConfig
    description = "test agent that raises"

    def act(self, game: Game) -> Direction:
        if game.moves >= 3:
            raise RuntimeError("lookup table missing")
        return next(d for d, ok in zip(Direction, game.legal_mask()) if ok)


@pytest.fixture
def faulty_agents() -> Iterator[None]:
    from agents import registry

    with registry.registered(
        {
            AlwaysDown.name: "tests.studio.test_arena_faulty_contestant:AlwaysDown",
            Raiser.name: "tests.studio.test_arena_faulty_contestant:Raiser",
        }
    ):
        yield


@pytest.fixture
def arena(qtbot, store, faulty_agents) -> Iterator[ArenaTab]:
    yield from shown_arena(qtbot, store, (1100, 750))


def _statuses(arena: ArenaTab) -> list[str]:
    t = arena.resultsTable
    return [t.item(r, t.columnCount() - 1).text() for r in range(t.rowCount())]


def test_a_faulty_contestant_fails_alone_and_the_others_play(qtbot, arena, store):
    for name in ("random", AlwaysDown.name, Raiser.name, "greedy"):
        arena._fill_agents()  # the test agents were registered after the tab filled its picker
        arena.agentPicker.setCurrentIndex(arena.agentPicker.findData(name))
        qtbot.mouseClick(arena.addAgentButton, CLICK)
    assert [s.name for s in arena.contestants()] == ["random", AlwaysDown.name, Raiser.name, "greedy"]
    arena.gamesSpin.setValue(2)
    arena.workersSpin.setValue(1)  # the test agents are registered in this process only
    with qtbot.waitSignal(arena.evaluationFinished, timeout=120_000) as fin:
        qtbot.mouseClick(arena.runButton, CLICK)
    assert fin.args == [False]  # not every contestant played its games
    statuses = _statuses(arena)
    assert statuses[0] == "done" and statuses[3] == "done"  # greedy played after the faults
    assert [r.games for r in arena.rows] == [2, 0, 0, 2]
    # the reason, one line naming the contestant, the move and the game: the Status cell's tooltip
    # and a line under the progress bar
    assert statuses[1:3] == ["failed", "failed"]
    tips = [arena.resultsTable.item(r, arena.resultsTable.columnCount() - 1).toolTip() for r in (1, 2)]
    assert tips[0].startswith("test_always_down.act played down, which changes nothing"), tips[0]
    assert tips[0].endswith("of game 0)")
    assert tips[1] == "test_raiser.act raised RuntimeError: lookup table missing (at move 3 of game 0)"
    assert "\n" not in "".join(tips)
    label = arena.progressLabel
    assert label.text().splitlines()[1:] == [f"Failed: {tips[0]}", f"Failed: {tips[1]}"]
    qtbot.wait(50)  # the layout gives the longer summary its height
    assert label.height() >= label.heightForWidth(label.width())
    assert label.geometry().bottom() <= label.parentWidget().height()
    assert arena.progressLabel.text().startswith("Done: 4 games in ")
    # the table still fits its pane: no column pushed out of sight by a long reason
    t = arena.resultsTable
    assert sum(t.horizontalHeader().sectionSize(c) for c in range(t.columnCount())) <= t.viewport().width()
    # no modal dialog: nothing waits for a click
    assert arena.error_box is None
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    assert [r.label for r in arena.results] == ["random", "greedy"]
    assert len(store.list_games(source="evaluation")) == 4
    arena.grab().save("/tmp/shots/arena_faulty.png")


def test_a_checkpoint_that_does_not_load_fails_its_row_only(qtbot, arena, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a checkpoint")
    arena.add_checkpoint(None, bad)
    arena.add_agent("random")
    arena.workersSpin.setValue(1)
    arena.gamesSpin.setValue(2)
    with qtbot.waitSignal(arena.evaluationFinished, timeout=60_000) as fin:
        qtbot.mouseClick(arena.runButton, CLICK)
    assert fin.args == [False] and arena.error_box is None
    statuses = _statuses(arena)
    tip = arena.resultsTable.item(0, arena.resultsTable.columnCount() - 1).toolTip()
    assert statuses[0] == "failed" and "bad.npz" in tip, tip
    assert "not a 2048 Studio checkpoint" in tip
    assert statuses[1] == "done"
