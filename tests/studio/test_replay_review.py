"""The Replay tab's game review: Review in the background, the summary and the evaluation graph, mistake
navigation by keys, buttons and graph clicks, the played and best move beside the board, and a
cancelled review kept in the store and resumed by the next Review."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from agents.registry import create_agent
from agents.spec import AgentSpec
from engine import Game, Rules
from engine.records import GameTrace, play_recorded
from studio.services.review import Reviewer, review_game

# The window / settings / test-agent fixtures (not a conftest: several people add tests here).
pytest_plugins = ("tests.studio.gui_fixtures",)

LEFT = Qt.MouseButton.LeftButton


def _greedy_game(store, seed: int, moves: int, rules: Rules | None = None) -> int:
    """A game of the greedy agent, cut after ``moves`` moves, stored; its id."""
    agent = create_agent("greedy", seed=seed)
    game = Game(rules=rules or Rules(), seed=seed)
    trace = GameTrace.start(game)
    while not game.game_over and game.moves < moves:
        play_recorded(game, agent.act(game), trace)
    trace.final_board = game.board
    return store.record_trace(trace, source="agent", agent="greedy")


@pytest.fixture
def slow_reviewer(rater_agent, monkeypatch):
    """The slow test agent offered as a reviewer, its values read as points (0.4 s a move)."""
    import studio.services.review as review_service
    from tests.studio.gui_helpers import SlowAgent

    monkeypatch.setattr(SlowAgent, "value_kind", "points")
    real = review_service.reviewer_choices

    def choices(store):
        return [*real(store), ("test_slow", ("test_slow", None)), ("ntuple", ("ntuple", 2))]

    monkeypatch.setattr(review_service, "reviewer_choices", choices)  # what the tabs' combo offers
    return "test_slow"


def _choose(replay, label: str) -> None:
    index = replay.reviewerCombo.findText(label)
    assert index >= 0, label
    replay.reviewerCombo.setCurrentIndex(index)


def test_no_empty_graph_before_a_game_is_picked(qtbot, window):
    """A fresh Replay tab showed an empty graph whose axes read "move (x0.001)" from -400 to 400."""
    _greedy_game(window.store, seed=3, moves=5)
    window.show_tab("Replay")
    assert window.replay.isVisible() and not window.replay.graph.isVisible()


def test_review_grades_the_game_and_finds_its_mistakes(qtbot, window):
    store = window.store
    game_id = _greedy_game(store, seed=3, moves=80)
    n = store.load_game(game_id).n_moves
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(game_id)
    replay.board.animation_ms = 0
    _choose(replay, "expectimax d1")
    assert "Not reviewed" in replay.summaryLabel.text()
    assert not replay.graph.isVisible() and not replay.nextMistakeButton.isEnabled()
    assert replay.verdictLabel.text() == "" and not replay.verdictLabel.isVisible()

    with qtbot.waitSignal(replay.reviewed, timeout=60_000) as blocker:
        qtbot.mouseClick(replay.reviewButton, LEFT)
    replay.wait_review()
    shown = blocker.args[0]
    assert shown.complete and replay.review is shown

    # The same review, straight from the service (stored and complete: it comes back at once).
    expected = review_game(store, game_id, Reviewer(AgentSpec(name="expectimax"), 1))
    assert expected.evaluated == 0 and len(expected.moves) == n
    summary = replay.summaryLabel.text()
    assert f"Accuracy {expected.accuracy:.1f} %" in summary
    for grade, count in expected.counts.items():
        assert f"{count:,} {grade}" in summary
    assert "expectimax depth 1" in summary
    assert not replay.reviewProgress.isVisible() and not replay.cancelReviewButton.isEnabled()

    # The graph: one point per move, the service's curve, a marker on every mistake.
    graph = replay.graph
    assert graph.isVisible() and graph.n_points == n
    xs, ys = graph.valueCurve.getData()
    assert len(xs) == n and np.allclose(ys, expected.curve())
    assert graph.marked_moves == [g.index for g in expected.moves if g.is_mistake]
    assert graph.marked_moves, "a greedy game has mistakes in it"

    # N / ] jump to the next mistake, P / [ back; the verdict names the played and the best move.
    replay.setFocus()
    first = expected.next_mistake(0)
    assert first is not None
    qtbot.keyClick(replay, Qt.Key.Key_N)
    assert replay.position == first and graph.cursors[0].value() == first
    g = expected.moves[first]
    verdict = replay.verdictLabel.text()
    assert f"Next move {first + 1}" in verdict and g.grade in verdict
    assert "played <span style='color:#3a7bd5'>" in verdict and g.played.label in verdict
    assert "best <span style='color:#2e9d57'>" in verdict and g.best.label in verdict
    assert g.best != g.played
    assert replay.board.hint == g.played and replay.board.best_hint == g.best
    assert replay.board.best_arrow_rect() is not None

    second = expected.next_mistake(first)
    if second is not None:
        qtbot.keyClick(replay, Qt.Key.Key_BracketRight)
        assert replay.position == second
        qtbot.keyClick(replay, Qt.Key.Key_P)
        assert replay.position == first
        qtbot.mouseClick(replay.nextMistakeButton, LEFT)
        assert replay.position == second
        qtbot.keyClick(replay, Qt.Key.Key_BracketLeft)
        assert replay.position == first
    before = expected.previous_mistake(first)  # move 0 itself, or none: then P stays
    qtbot.keyClick(replay, Qt.Key.Key_P)
    assert replay.position == (first if before is None else before)

    # A best move: no second arrow, the played arrow alone.
    best = next(g.index for g in expected.moves if g.grade == "best")
    replay.step_to(best)
    assert replay.board.hint == expected.moves[best].played == replay.board.best_hint
    assert "the best move" in replay.verdictLabel.text()

    # A click on the graph jumps to that move.
    target = n // 2
    qtbot.mouseClick(graph.viewport(), LEFT, pos=graph.point_for_move(target))
    assert replay.position == target and replay.replaySlider.value() == target

    # Another reviewer has no review of this game; back to expectimax d1 shows the stored one at once.
    _choose(replay, "expectimax d2")
    assert "Not reviewed" in replay.summaryLabel.text() and replay.review is None
    assert not replay.graph.isVisible() and replay.board.best_hint is None
    _choose(replay, "expectimax d1")
    assert replay.review is not None and replay.review.complete
    assert f"Accuracy {expected.accuracy:.1f} %" in replay.summaryLabel.text()


def test_cancelled_review_is_kept_and_the_next_review_finishes_it(qtbot, slow_reviewer, window):
    store = window.store
    game_id = _greedy_game(store, seed=5, moves=12)
    n = store.load_game(game_id).n_moves
    assert n == 12
    replay = window.replay
    window.show_tab("Replay")
    replay.refresh()
    replay.open_game(game_id)
    _choose(replay, "test_slow")  # 0.4 s a move: a chunk is stored every two moves

    qtbot.mouseClick(replay.reviewButton, LEFT)
    assert replay.reviewing and replay.reviewProgress.isVisible()
    assert not replay.reviewButton.isEnabled() and replay.cancelReviewButton.isEnabled()
    qtbot.waitUntil(lambda: replay.reviewProgress.value() >= 2, timeout=20_000)
    # The graph shows the part reviewed so far while the review runs (its worker hands it over).
    qtbot.waitUntil(lambda: replay.graph.isVisible() and replay.graph.n_points >= 2, timeout=20_000)
    assert replay.reviewing
    assert "first" in replay.summaryLabel.text()
    with qtbot.waitSignal(replay.reviewed, timeout=20_000) as blocker:
        qtbot.mouseClick(replay.cancelReviewButton, LEFT)
    replay.wait_review()
    partial = blocker.args[0]
    done = len(partial.moves)
    assert 2 <= done < n and not partial.complete

    # The finished part is in the store and on screen.
    (info,) = store.list_reviews(game_id)
    assert info.reviewed == done
    assert "first" in replay.summaryLabel.text() and f"of {n} moves" in replay.summaryLabel.text()
    assert replay.graph.n_points == done
    replay.step_to(done - 1)
    assert "Next move" in replay.verdictLabel.text() and replay.board.best_hint is not None
    replay.step_to(done)
    assert "not reviewed yet" in replay.verdictLabel.text() and replay.board.best_hint is None
    replay.step_to(n)
    assert "Final position" in replay.verdictLabel.text()
    assert replay.reviewButton.isEnabled() and not replay.reviewing

    # R reviews again: it goes on from the stored part and completes the review.
    replay.setFocus()
    with qtbot.waitSignal(replay.reviewed, timeout=30_000) as blocker:
        qtbot.keyClick(replay, Qt.Key.Key_R)
    replay.wait_review()
    full = blocker.args[0]
    assert full.complete and full.evaluated == n - done
    (info,) = store.list_reviews(game_id)
    assert info.reviewed == n
    assert replay.graph.n_points == n and "first" not in replay.summaryLabel.text()
    expected = review_game(store, game_id, Reviewer(AgentSpec(name="test_slow")))
    assert f"Accuracy {expected.accuracy:.1f} %" in replay.summaryLabel.text()


def test_opening_another_game_stops_its_review_and_a_failing_reviewer_says_why(qtbot, slow_reviewer, window):
    store = window.store
    first = _greedy_game(store, seed=7, moves=12)
    other = _greedy_game(store, seed=4, moves=30, rules=Rules(rows=3, cols=5))
    replay = window.replay
    window.show_tab("Replay")
    replay.refresh()
    replay.open_game(first)
    _choose(replay, "test_slow")
    qtbot.mouseClick(replay.reviewButton, LEFT)
    qtbot.waitUntil(lambda: replay.reviewProgress.value() >= 2, timeout=20_000)

    # Another game: the review of the first one stops (its part is stored), the new one is not reviewed.
    with qtbot.waitSignal(replay.reviewed, timeout=20_000) as blocker:
        replay.open_game(other)
    replay.wait_review()
    assert blocker.args[0].game_id == first and not blocker.args[0].complete
    (info,) = store.list_reviews(first)
    assert 2 <= info.reviewed < 12
    assert replay.record.id == other and replay.review is None
    assert "Not reviewed" in replay.summaryLabel.text() and replay.graph.n_points == 0
    assert replay.reviewButton.isEnabled()

    # An n-tuple network cannot review a 3x5 game: the reason is shown, nothing is stored.
    _choose(replay, "ntuple")
    qtbot.mouseClick(replay.reviewButton, LEFT)
    qtbot.waitUntil(lambda: not replay.reviewing, timeout=20_000)
    replay.wait_review()
    assert "Review failed" in replay.summaryLabel.text() and "4x4" in replay.summaryLabel.text()
    assert store.list_reviews(other) == [] and replay.reviewButton.isEnabled()
