"""DQN on the batched engine: the same games as the engine.Game loop, and the backend training picks."""

from __future__ import annotations

import numpy as np
import pytest

import agents.dqn
from agents.base import Budget
from agents.dqn import DQNAgent, DQNConfig
from agents.nn.batch_games import BatchedGames, LoopGames, TrainingGames
from engine import Game, Rules

TINY = dict(DQNAgent.smoke_config)


def _play(agent: DQNAgent, games: TrainingGames, steps: int, eps: float) -> list:
    finished = []
    for _ in range(steps):
        finished += games.step(agent._select_moves(games.obs, games.mask, eps)).finished
    return finished


@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_batched_collection_is_the_game_loop(eps):
    """The slow twin: a fixed network and the same seeds give the same games (moves, scores, boards,
    spawns) on the batched engine as on engine.Game one game after another, greedy or exploring."""
    n = 5
    fast_agent, slow_agent = DQNAgent(DQNConfig(**TINY), seed=7), DQNAgent(DQNConfig(**TINY), seed=7)
    fast = BatchedGames(n, fast_agent.rules, fast_agent.rng)
    slow = LoopGames(n, slow_agent.rules, slow_agent.rng)
    got, want = _play(fast_agent, fast, 300, eps), _play(slow_agent, slow, 300, eps)
    assert len(got) >= 3 and len(got) == len(want)
    for f, s in zip(got, want):
        assert (f.index, f.score, f.max_tile, f.moves) == (s.index, s.score, s.max_tile, s.moves)
        assert f.trace.seed == s.trace.seed and f.trace.moves == s.trace.moves
        assert f.trace.scores == s.trace.scores and f.trace.spawns == s.trace.spawns
        np.testing.assert_array_equal(np.stack(f.trace.layouts), np.stack(s.trace.layouts))
        np.testing.assert_array_equal(f.trace.final_board, s.trace.final_board)
    np.testing.assert_array_equal(fast.obs, slow.obs)


@pytest.mark.parametrize(("rules", "backend"), [(Rules(), BatchedGames), (Rules(rows=3, cols=5), LoopGames)])
def test_training_runs_classic_rules_on_the_batched_engine(monkeypatch, rules, backend):
    made: list[TrainingGames] = []
    original = agents.dqn.training_games

    def spy(*args, **kwargs):
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(agents.dqn, "training_games", spy)
    agent = DQNAgent(DQNConfig(**TINY), rules=rules, seed=2)
    episodes = [e for e in agent.train(Budget(episodes=3)) if e.kind == "episode"]
    assert [type(g) for g in made] == [backend]
    assert len(episodes) >= 3 and agent.counters.updates > 0
    for e in episodes:
        # Every finished game's trace replays from its seed to its recorded end.
        assert e.game is not None
        g = Game(seed=e.game.seed, rules=rules)
        for move in e.game.moves:
            g.step(move)
        assert g.game_over and g.score == e.metrics["score"] == e.game.final_score
        assert g.moves == e.metrics["moves"]
        np.testing.assert_array_equal(g.board, e.game.final_board)


def test_batched_defaults_for_a_laptop():
    cfg = DQNConfig()
    assert (cfg.envs, cfg.batch_size, cfg.train_every, cfg.target_update) == (64, 512, 16, 250)
    # the tuned replay ratio: 32 sampled transitions per move
    assert cfg.batch_size / cfg.train_every == 32
