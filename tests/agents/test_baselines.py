"""Baselines on hand-drawn boards with known choices."""

from __future__ import annotations

import numpy as np
import pytest

from agents.baselines import GreedyAgent, RandomAgent
from engine import Direction, Game, Rules


def game_on(board: list[list[int]]) -> Game:
    b = np.array(board)
    return Game(rules=Rules(rows=b.shape[0], cols=b.shape[1]), board=b, seed=0)


def test_greedy_prefers_more_merges_over_more_score() -> None:
    # left merges two pairs of 2s (gain 8); up merges one pair of 8s (gain 16).
    game = game_on([[2, 2, 2, 2], [8, 0, 0, 0], [8, 0, 0, 0], [0, 0, 0, 0]])
    values = GreedyAgent().move_values(game)
    total = 2 * 4 + 8 * 2
    assert values[Direction.LEFT] == pytest.approx(2 + 8 / (total + 1))
    assert values[Direction.UP] == pytest.approx(1 + 16 / (total + 1))
    assert GreedyAgent().act(game) == Direction.LEFT


def test_greedy_breaks_merge_ties_by_score_then_action_order() -> None:
    # One merge every way: 4+4 across the top row (gain 8) left/right, 2+2 down column 3 (gain 4) up/down.
    game = game_on([[4, 4, 0, 0], [0, 0, 0, 2], [0, 0, 0, 2], [0, 0, 0, 0]])
    values = GreedyAgent().move_values(game)
    assert values[Direction.LEFT] == values[Direction.RIGHT] > values[Direction.UP] == values[Direction.DOWN]
    assert GreedyAgent().act(game) == Direction.LEFT  # left before right in action order
    # No merge anywhere: all equal, the first legal move in action order wins.
    game = game_on([[0, 2, 0, 0], [0, 0, 0, 0], [0, 0, 4, 0], [0, 0, 0, 0]])
    assert set(GreedyAgent().move_values(game).values()) == {0.0}
    assert GreedyAgent().act(game) == Direction.UP


def test_greedy_packed_and_general_paths_agree() -> None:
    rng = np.random.default_rng(0)
    agent = GreedyAgent()
    for _ in range(50):
        board = np.where(rng.random((4, 4)) < 0.3, 0, 2 ** rng.integers(1, 8, (4, 4)))
        fast, slow = Game(board=board, seed=0), Game(board=board, seed=0, fast=False)
        assert fast.packed is not None and slow.packed is None
        assert agent.move_values(fast) == agent.move_values(slow), board


def test_greedy_on_other_shapes() -> None:
    game = game_on([[2, 0, 2], [0, 0, 0]])
    assert GreedyAgent(rules=Rules(rows=2, cols=3)).act(game) == Direction.LEFT


def test_random_is_uniform_over_legal_moves_and_seeded() -> None:
    game = game_on([[0, 2, 4, 8], [0, 4, 8, 2], [0, 2, 4, 8], [0, 4, 8, 2]])
    assert {RandomAgent(seed=s).act(game) for s in range(10)} == {Direction.LEFT}
    game = game_on([[0, 0, 0, 0], [0, 2, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    assert [RandomAgent(seed=3).act(game) for _ in range(5)] == [RandomAgent(seed=3).act(game)] * 5
    agent = RandomAgent(seed=5)
    counts = np.bincount([int(agent.act(game)) for _ in range(4000)], minlength=4)
    assert counts.min() > 900  # ~1000 each
