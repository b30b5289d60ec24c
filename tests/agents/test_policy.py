"""Seed 001's good/bad-game policy learner: weights, targets, determinism, smoke run, checkpoints."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.base import Agent, Budget
from agents.config import load_preset
from agents.policy import PlayedGame, PolicyAgent, PolicyConfig, game_rank_values, game_weights, move_weights
from agents.registry import create_agent, get_agent_class
from engine import Direction, Game, to_exponents
from tests.agents.checkpoint_checks import assert_refused_as, assert_same_moves

ONLY_LEFT = np.array([[0, 2, 4, 2], [0, 4, 2, 4], [0, 2, 4, 2], [0, 4, 2, 4]])
FIXED_BOARDS = [
    ONLY_LEFT,
    np.array([[2, 2, 4, 8], [0, 0, 0, 16], [0, 0, 0, 0], [0, 0, 2, 0]]),
    np.array([[1024, 512, 256, 128], [8, 16, 32, 64], [4, 2, 0, 0], [2, 0, 0, 0]]),
]
TINY = {"batch_size": 4, "forget_interval": 3, "max_moves": 8}


pytest_plugins = ("tests.agents.torch_fixtures",)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def played(
    score: int, moves: list[int], boards: list[np.ndarray] | None = None, max_tile: int = 8
) -> PlayedGame:
    if boards is None:
        boards = [np.zeros((4, 4), np.int64)] * len(moves)
    exps = np.stack([to_exponents(b) for b in boards]) if boards else np.zeros((0, 4, 4), np.uint8)
    return PlayedGame(exps, np.asarray(moves, np.int64), score, max_tile, score // 2, None)


def test_registered():
    assert get_agent_class("policy") is PolicyAgent


def test_game_weights_are_zero_at_the_median_and_one_at_the_extremes():
    np.testing.assert_allclose(game_weights(np.array([1.0, 2, 3, 4, 5])), [-1, -0.5, 0, 0.5, 1])
    # Skewed: the good side and the bad side are scaled separately.
    np.testing.assert_allclose(game_weights(np.array([0.0, 10, 10, 12, 50])), [-1, 0, 0, 0.05, 1])
    np.testing.assert_array_equal(game_weights(np.array([7.0, 7, 7])), [0, 0, 0])


def test_rank_metrics():
    games = [played(100, [0], max_tile=64), played(40, [1], max_tile=128)]
    assert game_rank_values(games, "scores").tolist() == [100, 40]
    assert game_rank_values(games, "max").tolist() == [64, 128]
    assert game_rank_values(games, "log2_max").tolist() == [6, 7]
    assert game_rank_values(games, "tile_sums").tolist() == [50, 20]


def test_move_weights():
    full = np.full((4, 4), 2)
    half = np.where(np.arange(16).reshape(4, 4) < 8, 2, 0)
    games = [played(1, [0, 1, 2], [half, full, half]), played(1, [3, 3], [full, full])]
    assert move_weights(games, "none", 16).tolist() == [1, 1, 1, 1, 1]
    assert move_weights(games, "nonzero", 16).tolist() == [0.5, 1, 0.5, 1, 1]
    assert move_weights(games, "linear_move_num", 16).tolist() == [0, 0.5, 1, 0, 1]
    np.testing.assert_allclose(
        move_weights(games, "exponential_move_num", 16),
        [0, 1 - math.exp(-1.5), 1 - math.exp(-3), 0, 1 - math.exp(-3)],
    )


def test_targets_follow_good_and_bad_games():
    agent = PolicyAgent(PolicyConfig(**TINY), seed=0)
    games = [played(10, [0, 1]), played(20, [2]), played(30, [3])]
    data = agent.targets(games)
    assert data is not None
    _exps, y, w, good_share = data
    # scores 10 / 20 / 30: j = -1, 0, +1
    np.testing.assert_allclose(y[0], [0, 1 / 3, 1 / 3, 1 / 3])  # bad game, move up: anything but up
    np.testing.assert_allclose(y[1], [1 / 3, 0, 1 / 3, 1 / 3])
    np.testing.assert_allclose(y[2], [0, 0, 1, 0])  # the median game: Y = M, weight 0
    np.testing.assert_allclose(y[3], [0, 0, 0, 1])  # good game: do that again
    np.testing.assert_allclose(w, [1, 1, 0, 1])
    assert good_share == pytest.approx(1 / 3)


def test_seed001_presets():
    poc = PolicyConfig.from_dict(load_preset("policy-seed001-20moves")["config"])
    assert (poc.max_moves, poc.lr, poc.forget_interval, poc.game_metric, poc.move_weight) == (
        20,
        1e-3,
        30,
        "scores",
        "none",
    )
    assert (poc.network, poc.encoder, poc.random_games, poc.random_frac) == (
        "policy",
        "log2_norm",
        False,
        0.0,
    )
    full = PolicyConfig.from_dict(load_preset("policy-seed001")["config"])
    assert full.max_moves == 0


def test_same_seed_same_losses():
    def losses(seed: int) -> list[float]:
        agent = PolicyAgent(PolicyConfig(**TINY), seed=seed)
        return [e.metrics["loss"] for e in agent.train(Budget(episodes=24)) if e.kind == "update"]

    a, b = losses(3), losses(3)
    assert len(a) == 6 and a == b
    assert losses(4) != a


def test_smoke_run():
    cfg = PolicyConfig(**{**TINY, "random_games": True, "random_frac": 0.2, "move_weight": "nonzero"})
    agent = PolicyAgent(cfg, seed=1)
    events = list(agent.train(Budget(episodes=12)))
    updates = [e for e in events if e.kind == "update"]
    episodes = [e for e in events if e.kind == "episode"]
    assert len(updates) == 3 and agent.counters.episodes == 12 and agent.counters.updates == 3
    assert len(episodes) == 3  # the first game of each epoch
    for e in updates:
        assert {"loss", "batch_mean_score", "good_share", "window_mean_score", "steps_per_s"} <= set(
            e.metrics
        )
        assert math.isfinite(e.metrics["loss"]) and 0 <= e.metrics["good_share"] <= 1
    for e in episodes:
        assert e.game is not None and 1 <= e.game.n_moves == e.metrics["moves"] <= 8
        assert e.game.final_score == e.metrics["score"]
    # 4 policy games + 4 random ones per epoch, at most 8 moves each
    assert agent.counters.steps <= 3 * 8 * 8
    assert len(agent.window) == 3
    assert set(PolicyAgent.loss_metrics) | set(PolicyAgent.schedule_metrics) <= set(updates[-1].metrics)


def test_minibatches_and_window():
    agent = PolicyAgent(PolicyConfig(**{**TINY, "minibatch": 5, "forget_interval": 2}), seed=2)
    list(agent.train(Budget(episodes=16)))
    assert len(agent.window) == 2
    assert agent.counters.updates > 4  # several minibatch steps per epoch


def test_plays_only_legal_moves():
    agent = PolicyAgent(PolicyConfig(**TINY), seed=3)
    game = Game(board=ONLY_LEFT)
    assert agent.act(game) is Direction.LEFT
    assert agent.move_values(game) == {Direction.LEFT: pytest.approx(1.0)}
    values = agent.move_values(Game(board=FIXED_BOARDS[1]))
    assert sum(values.values()) == pytest.approx(1.0)


def test_save_load_same_moves(tmp_path):
    agent = PolicyAgent(PolicyConfig(**TINY), seed=4)
    list(agent.train(Budget(episodes=8)))
    loaded = Agent.load(agent.save(tmp_path / "p"))
    assert isinstance(loaded, PolicyAgent) and loaded.epochs == agent.epochs == 2
    assert_same_moves(loaded, agent, FIXED_BOARDS)


def test_a_checkpoint_of_another_agent_is_refused(tmp_path):
    other = create_agent("dqn", {"hidden": (8,)}, seed=0).save(tmp_path / "dqn")
    assert_refused_as(PolicyAgent, "policy", other)
