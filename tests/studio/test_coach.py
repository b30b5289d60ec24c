"""The Play tab's live coach (issues #19, #32): with Coach on, each of the person's moves is graded off
the GUI thread by the default reviewer (the same as Replay, Progress and ``review``), in expected points
given up, and a coloured badge under the score says how good it was and which move was better; with
Coach off nothing is shown and nothing is computed."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from PySide6.QtCore import Qt

import studio.services.review as review_service
from agents.base import Agent
from agents.config import AgentConfig
from agents.review import grade_move
from agents.spec import AgentSpec
from engine import Direction, Game, Rules
from engine.store import GameRecorder
from studio.tabs.play import GRADE_COLOURS, PlayTab, coach_text

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton
# A 1024-512-256-128 chain in the top row: Down pulls it out of its corner (a blunder for the default
# reviewer of a store without a network, expectimax depth 2 calibrated to points: about 9,100 of the
# position's 26,400 expected points), Right keeps it (the best move); Up and Left are not legal.
CHAIN = np.array(
    [[1024, 512, 256, 128], [64, 32, 16, 8], [2, 4, 2, 0], [0, 0, 0, 0]],
    dtype=np.int64,
)
DEFAULT_LABEL = "expectimax (calibrated) depth 2"


class NoRater(Agent):
    """Plays the first legal move and does not rate moves (the coach falls back)."""

    name = "test_norater"
    config_cls = AgentConfig
    description = "test agent without move values"

    def act(self, game: Game) -> Direction:
        return game.legal_moves()[0]


@pytest.fixture
def grades_computed(monkeypatch) -> list[Direction]:
    """Every move the coach grades (the real grading runs; this only counts)."""
    calls: list[Direction] = []
    real = review_service.grade_played

    def counting(agent, rules, board, played, score=0, index=0, info=None):
        calls.append(Direction(played))
        return real(agent, rules, board, played, score, index, info)

    monkeypatch.setattr(review_service, "grade_played", counting)
    return calls


@pytest.fixture
def norater() -> Iterator[str]:
    from agents import registry

    with registry.registered({"test_norater": "tests.studio.test_coach:NoRater"}):
        yield "test_norater"


def _hand_drawn(play: PlayTab, board: np.ndarray = CHAIN) -> None:
    play.new_game(Rules())
    play.recorder = GameRecorder(play.store, Game(rules=Rules(), board=board.copy(), seed=7), lazy=True)
    play.board.set_board(play.recorder.board)
    play._update_labels()
    play.board.setFocus()


def test_coach_is_off_by_default_and_remembered(qtbot, window, qsettings):
    play = window.play
    assert not play.coachCheck.isChecked() and play.coachBadge.isHidden()
    qtbot.mouseClick(play.coachCheck, CLICK)
    assert play.coachCheck.isChecked() and qsettings.value("play/coach") in (True, "true")
    again = PlayTab(window.store, qsettings)
    qtbot.addWidget(again)
    assert again.coachCheck.isChecked()
    again.shutdown()
    qtbot.mouseClick(play.coachCheck, CLICK)
    assert qsettings.value("play/coach") in (False, "false")


def test_coach_names_a_blunder_and_the_better_move(qtbot, window, grades_computed):
    play = window.play
    play.set_agent(AgentSpec("expectimax"))
    qtbot.mouseClick(play.coachCheck, CLICK)
    _hand_drawn(play)

    qtbot.keyClick(play.board, Qt.Key.Key_Down)
    assert play.recorder.moves == 1  # the move is made at once; the grade comes later
    qtbot.waitUntil(lambda: play.last_grade is not None, timeout=15000)
    badge = play.coachBadge
    grade = play.last_grade.grade
    assert grade.played is Direction.DOWN and grade.best is Direction.RIGHT and grade.grade == "blunder"
    nb = "\N{NO-BREAK SPACE}"
    assert badge.isVisible() and badge.text() == f"blunder · → right was better (−{grade.loss:,.0f}{nb}pts)"
    assert 5_000 < grade.loss < 15_000  # points, not a share of heuristic values
    assert GRADE_COLOURS["blunder"] in badge.styleSheet()
    assert play.last_grade.index == 0 and DEFAULT_LABEL in badge.toolTip()
    assert "no n-tuple network" in badge.toolTip()  # the reviewer is a fallback, and says so
    assert grades_computed == [Direction.DOWN]
    # the position graded is the one before the move, as the store logged it
    record = window.store.load_game(play.recorder.game_id)
    assert np.array_equal(record.layouts[0], CHAIN)

    # the best move: a green "best", no better move named
    _hand_drawn(play)
    assert play.coachBadge.isHidden()  # a new game clears the badge
    qtbot.keyClick(play.board, Qt.Key.Key_Right)
    qtbot.waitUntil(lambda: play.last_grade is not None, timeout=15000)
    assert badge.text() == "best" and GRADE_COLOURS["best"] in badge.styleSheet()
    assert grades_computed == [Direction.DOWN, Direction.RIGHT]


def test_coach_off_shows_nothing_and_computes_nothing(qtbot, window, grades_computed, monkeypatch):
    play = window.play
    asked: list[Direction] = []
    real_request = play.coach.request_grade

    def request_grade(spec: AgentSpec, game: Game, d: Direction) -> int:
        asked.append(d)
        return real_request(spec, game, d)

    monkeypatch.setattr(play.coach, "request_grade", request_grade)
    play.set_agent(AgentSpec("expectimax"))
    assert not play.coachCheck.isChecked()
    _hand_drawn(play)
    qtbot.keyClick(play.board, Qt.Key.Key_Down)
    assert play.recorder.moves == 1
    qtbot.wait(300)
    assert play.coachBadge.isHidden() and play.coachBadge.text() == ""
    assert asked == [] and play.last_grade is None and grades_computed == []

    # turned off while a grade is on its way: the badge goes and the late verdict is dropped
    qtbot.mouseClick(play.coachCheck, CLICK)
    _hand_drawn(play)
    qtbot.keyClick(play.board, Qt.Key.Key_Down)
    assert asked == [Direction.DOWN]
    qtbot.mouseClick(play.coachCheck, CLICK)
    assert play.coachBadge.isHidden()
    play.coach.pool.waitForDone(15000)
    qtbot.wait(100)
    assert play.coachBadge.isHidden() and play.last_grade is None


def test_the_coach_grades_with_the_default_reviewer_whatever_agent_is_chosen(
    qtbot, window, norater, grades_computed
):
    play = window.play
    play.set_agent(AgentSpec(norater))
    qtbot.mouseClick(play.coachCheck, CLICK)
    _hand_drawn(play)
    qtbot.keyClick(play.board, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: play.last_grade is not None, timeout=15000)
    assert play.last_grade.agent_name == DEFAULT_LABEL == review_service.default_reviewer(window.store).label
    assert play.coachBadge.text().startswith("blunder · → right was better")
    assert DEFAULT_LABEL in play.coachBadge.toolTip()


def test_agent_moves_are_not_graded(qtbot, window, rater_agent, grades_computed):
    play = window.play
    play.set_agent(AgentSpec(rater_agent))
    qtbot.mouseClick(play.coachCheck, CLICK)
    _hand_drawn(play)
    qtbot.mouseClick(play.stepButton, CLICK)
    qtbot.waitUntil(lambda: play.recorder.moves == 1, timeout=5000)
    qtbot.wait(200)
    assert play.coachBadge.isHidden() and grades_computed == []
    # then the person moves: graded by the default reviewer, not by the chosen agent
    before = play.recorder.game.copy()
    move = next(d for d in (Direction.DOWN, Direction.UP, Direction.LEFT) if before.legal_mask()[d])
    key = {Direction.DOWN: Qt.Key.Key_Down, Direction.UP: Qt.Key.Key_Up, Direction.LEFT: Qt.Key.Key_Left}
    qtbot.keyClick(play.board, key[move])
    qtbot.waitUntil(lambda: play.last_grade is not None, timeout=15000)
    assert grades_computed == [move] and play.last_grade.agent_name == DEFAULT_LABEL


def test_the_badge_line_for_points_and_forced_moves():
    # a points reviewer (the n-tuple network): the loss in expected points, as the issue shows it
    values = [np.nan, 20000.0, np.nan, 18760.0]  # up, left, down, right (action order)
    g = grade_move(values, int(Direction.RIGHT))
    assert g.grade == "mistake"  # 1,240 of 20,000 + 500: 6 %
    assert coach_text(g, points=True) == "mistake · ← left was better (−1,240\N{NO-BREAK SPACE}pts)"
    forced = grade_move([np.nan, 5.0, np.nan, np.nan], int(Direction.LEFT))
    assert coach_text(forced, points=True) == "forced · the only move"
