"""Masked PPO on the batched engine: GAE, a smoke run, determinism, checkpoints, greedy play, the twin."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents.base import Agent, Budget
from agents.nn.batch_games import BatchedGames, LoopGames, TrainingGames, training_games
from agents.ppo import PPOAgent, PPOConfig, Rollout, gae
from agents.registry import get_agent_class
from engine import Direction, Game, Rules
from tests.agents.checkpoint_checks import assert_same_moves

ONLY_LEFT = np.array([[0, 2, 4, 2], [0, 4, 2, 4], [0, 2, 4, 2], [0, 4, 2, 4]])
FIXED_BOARDS = [
    ONLY_LEFT,
    np.array([[2, 2, 4, 8], [0, 0, 0, 16], [0, 0, 0, 0], [0, 0, 2, 0]]),
    np.array([[1024, 512, 256, 128], [8, 16, 32, 64], [4, 2, 0, 0], [2, 0, 0, 0]]),
]
TINY = dict(PPOAgent.smoke_config)


def episodes_of(agent: PPOAgent, budget: Budget) -> list[tuple[float, ...]]:
    """(score, moves, loss or nan) of every episode event."""
    return [
        (e.metrics["score"], e.metrics["moves"], e.metrics.get("loss", math.nan))
        for e in agent.train(budget)
        if e.kind == "episode"
    ]


def test_registered():
    assert get_agent_class("ppo") is PPOAgent


def test_gae_cuts_at_game_ends():
    rewards = np.array([[1.0], [2.0], [4.0]], np.float32)
    values = np.array([[0.5], [0.25], [1.0]], np.float32)
    dones = np.array([[False], [True], [False]])
    adv, ret = gae(rewards, values, dones, np.array([8.0], np.float32), gamma=0.5, lam=0.5)
    # t=2: 4 + 0.5*8 - 1 = 7. t=1 (game over): 2 - 0.25 = 1.75, nothing from t=2.
    # t=0: delta 1 + 0.5*0.25 - 0.5 = 0.625, plus 0.5*0.5*1.75 = 0.4375 -> 1.0625.
    np.testing.assert_allclose(adv[:, 0], [1.0625, 1.75, 7.0])
    np.testing.assert_allclose(ret[:, 0], [1.5625, 2.0, 8.0])


def test_smoke_run_counts_and_reports():
    torch.set_num_threads(1)
    agent = PPOAgent(PPOConfig(**TINY), seed=1)
    events = list(agent.train(Budget(steps=1200)))
    episodes = [e for e in events if e.kind == "episode"]
    assert len(episodes) >= 4 and agent.counters.episodes == len(episodes)
    # 4 games x 16 moves per rollout; 1200 moves = 18 full rollouts (the 19th is cut short)
    assert agent.counters.steps == 1200
    assert agent.counters.updates == 18 * 2 * 2  # rollouts x epochs x (64 moves / 32 per minibatch)
    for e in episodes:
        assert e.game is not None and e.game.seed is not None
        assert e.game.final_score == e.metrics["score"] and e.game.n_moves == e.metrics["moves"]
        assert e.game.max_tile == e.metrics["max_tile"]
        # The trace is the game: replaying its moves from its seed gives its boards, scores and spawns.
        g = Game(seed=e.game.seed)
        np.testing.assert_array_equal(g.board, e.game.initial_board)
        for k, move in enumerate(e.game.moves):
            np.testing.assert_array_equal(g.board, e.game.layouts[k])
            result = g.step(move)  # an illegal move would raise
            assert result.spawns == e.game.spawns[k] and g.score == e.game.scores[k]
        assert g.game_over
        np.testing.assert_array_equal(g.board, e.game.final_board)
    learned = [e for e in episodes if "loss" in e.metrics]
    assert learned
    assert {"loss", "value_loss", "entropy", "clip_frac"} <= set(learned[0].metrics)
    assert all(math.isfinite(e.metrics["loss"]) for e in learned)
    # the x axis counts moves
    assert [e.step for e in episodes] == sorted(e.step for e in episodes) and episodes[-1].step <= 1200


def test_same_seed_same_numbers():
    a = episodes_of(PPOAgent(PPOConfig(**TINY), seed=11), Budget(steps=1500))
    b = episodes_of(PPOAgent(PPOConfig(**TINY), seed=11), Budget(steps=1500))
    assert len(a) >= 5 and any(not math.isnan(x[2]) for x in a)
    assert repr(a) == repr(b)  # exactly (repr: nan, before the first update, equals itself there)
    c = episodes_of(PPOAgent(PPOConfig(**TINY), seed=12), Budget(steps=1500))
    assert [x[:2] for x in c] != [x[:2] for x in a]


def test_greedy_play_is_the_most_probable_legal_move():
    agent = PPOAgent(PPOConfig(**TINY), seed=3)
    assert agent.act(Game(board=ONLY_LEFT)) is Direction.LEFT
    assert set(agent.move_values(Game(board=ONLY_LEFT))) == {Direction.LEFT}
    game = Game(board=FIXED_BOARDS[1])
    values = agent.move_values(game)
    assert sum(values.values()) == pytest.approx(1.0)
    assert agent.act(game) == max(values, key=lambda d: values[d])


def test_save_load_same_moves_and_resume(tmp_path):
    agent = PPOAgent(PPOConfig(**TINY), seed=4)
    list(agent.train(Budget(steps=300)))
    loaded = Agent.load(agent.save(tmp_path / "ppo"))
    assert isinstance(loaded, PPOAgent) and loaded.counters == agent.counters
    assert_same_moves(loaded, agent, FIXED_BOARDS)
    a = episodes_of(agent, Budget(steps=400))
    b = episodes_of(loaded, Budget(steps=400))
    assert a and repr(a) == repr(b)


def test_other_board_sizes_train_on_the_game_loop():
    rules = Rules(rows=3, cols=5)
    assert isinstance(training_games(2, rules, np.random.default_rng(0)), LoopGames)
    agent = PPOAgent(PPOConfig(**TINY), rules=rules, seed=0)
    list(agent.train(Budget(steps=200)))
    assert agent.counters.updates > 0
    game = Game(rules=rules, seed=1)
    assert agent.act(game) in game.legal_moves()


def _collect(agent: PPOAgent, games: TrainingGames, steps: int) -> list:
    roll = Rollout()
    finished = []
    for _ in range(steps):
        finished += agent._collect_step(games, roll).finished
    return finished


def test_batched_collection_is_the_game_loop():
    """The slow twin: the same network and seeds on the batched engine and on engine.Game one game
    after another give the same games: moves, scores, boards and spawns."""
    n = 6
    fast_agent, slow_agent = PPOAgent(PPOConfig(**TINY), seed=9), PPOAgent(PPOConfig(**TINY), seed=9)
    fast = BatchedGames(n, fast_agent.rules, fast_agent.rng)
    slow = LoopGames(n, slow_agent.rules, slow_agent.rng)
    got, want = _collect(fast_agent, fast, 400), _collect(slow_agent, slow, 400)
    assert len(got) >= 8 and len(got) == len(want)
    for f, s in zip(got, want):
        assert (f.index, f.score, f.max_tile, f.moves) == (s.index, s.score, s.max_tile, s.moves)
        tf, ts = f.trace, s.trace
        assert tf.seed == ts.seed and tf.moves == ts.moves and tf.rewards == ts.rewards
        assert tf.scores == ts.scores and tf.spawns == ts.spawns
        np.testing.assert_array_equal(np.stack(tf.layouts), np.stack(ts.layouts))
        np.testing.assert_array_equal(tf.initial_board, ts.initial_board)
        np.testing.assert_array_equal(tf.final_board, ts.final_board)
    np.testing.assert_array_equal(fast.obs, slow.obs)
    np.testing.assert_array_equal(fast.mask, slow.mask)
