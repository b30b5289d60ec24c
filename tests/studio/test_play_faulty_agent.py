"""A plug-in agent that breaks the contract in Play (issue 45): an illegal move, an exception or values
that are not numbers is shown in place as one line naming the agent and the fault, Watch stops, no move
is made, and the log has it (an exception with its traceback)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pytest
from PySide6.QtCore import Qt

from agents.spec import AgentSpec
from engine import Direction, Game, Rules
from engine.store import GameRecorder
from tests.studio.faulty_agents import AGENTS

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton
U, L, D, R = Direction.UP, Direction.LEFT, Direction.DOWN, Direction.RIGHT
# Tiles in the top-left corner: up and left are illegal, down and right legal.
CORNER = [[4, 2, 0, 0], [2, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
RED = "#c0392b"


@pytest.fixture
def faulty() -> Iterator[None]:
    from agents import registry

    with registry.registered(AGENTS):
        yield


def _corner(play, agent: str) -> None:
    play.new_game(Rules(), seed=1)
    game = Game(rules=Rules(), seed=1, board=np.array(CORNER))
    assert list(game.legal_mask()) == [False, False, True, True]
    play.recorder = GameRecorder(play.store, game, lazy=True)
    play.board.set_board(game.board)
    play.set_agent(AgentSpec(agent))


def _wait_fault(qtbot, play) -> str:
    qtbot.waitUntil(lambda: RED in play.hintStatus.styleSheet(), timeout=10000)
    return play.hintStatus.text()


def test_an_illegal_move_is_named_on_step_watch_and_hint(qtbot, window, faulty, caplog):
    play = window.play
    statuses: list[str] = []
    play.status.connect(statuses.append)
    _corner(play, "test_illegal")
    fault = "test_illegal chose ↑ up, which is illegal here"

    with caplog.at_level(logging.ERROR, "studio.thinking"):
        qtbot.mouseClick(play.stepButton, CLICK)
        assert _wait_fault(qtbot, play) == fault
    assert play.recorder.moves == 0 and statuses[-1] == fault
    assert any(fault in r.getMessage() for r in caplog.records)

    # Watch stops at once (it used to sit in "Pause", asking again and again), no move made.
    play._set_hint_status("")
    qtbot.mouseClick(play.autoplayButton, CLICK)
    assert _wait_fault(qtbot, play) == fault
    qtbot.waitUntil(lambda: not play.autoplayButton.isChecked(), timeout=5000)
    assert play.autoplayButton.text() == "▶ Watch" and play.recorder.moves == 0

    # A hint names the fault rather than "its choice: ↑ up", and points at nothing.
    play._set_hint_status("")
    qtbot.mouseClick(play.hintButton, CLICK)
    assert _wait_fault(qtbot, play) == fault
    assert play.board.hint is None and play.hint_best is None
    window.play.grab().save("/tmp/shots/faulty_illegal.png")


def test_an_agent_that_raises_stops_watch_and_logs_its_traceback(qtbot, window, faulty, caplog):
    play = window.play
    _corner(play, "test_raising")
    with caplog.at_level(logging.ERROR, "studio.thinking"):
        qtbot.mouseClick(play.autoplayButton, CLICK)
        assert _wait_fault(qtbot, play) == "test_raising failed: bad weights"
    qtbot.waitUntil(lambda: not play.autoplayButton.isChecked(), timeout=5000)
    assert play.recorder.moves == 0
    (record,) = [r for r in caplog.records if "test_raising" in r.getMessage()]
    assert record.exc_info is not None and "RuntimeError: bad weights" in caplog.text
    assert "Traceback" in caplog.text


def test_values_that_are_not_numbers_are_a_fault_not_a_move(qtbot, window, faulty, caplog):
    play = window.play
    _corner(play, "test_nan")
    fault = "test_nan gave values that are not numbers: nan for ↓ down"
    with caplog.at_level(logging.ERROR, "studio.thinking"):
        qtbot.mouseClick(play.hintButton, CLICK)
        assert _wait_fault(qtbot, play) == fault
    # what it said is still shown: its number for right, "n/a" for down; no arrow
    assert play.hintLabels[D][1].text() == "n/a" and play.hintLabels[R][1].text() == "best"
    assert play.board.hint is None
    assert any(fault in r.getMessage() for r in caplog.records)
    window.play.grab().save("/tmp/shots/faulty_nan.png")

    play._set_hint_status("")
    qtbot.mouseClick(play.stepButton, CLICK)
    assert _wait_fault(qtbot, play) == fault
    assert play.recorder.moves == 0


def test_a_sound_answer_after_a_fault_clears_the_red_line(qtbot, window, faulty, rater_agent):
    play = window.play
    _corner(play, "test_illegal")
    qtbot.mouseClick(play.hintButton, CLICK)
    _wait_fault(qtbot, play)
    play.set_agent(AgentSpec(rater_agent))
    play.last_hint = None
    qtbot.mouseClick(play.hintButton, CLICK)
    qtbot.waitUntil(lambda: play.last_hint is not None, timeout=10000)
    assert play.hintStatus.text().startswith("test_rater: → right")
    assert RED not in play.hintStatus.styleSheet() and play.board.hint is R
