"""DQN (seed 000): the seed preset, determinism, a smoke run, checkpoints, legal play."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents.base import Agent, Budget, Control
from agents.config import load_preset
from agents.dqn import DQNAgent, DQNConfig
from agents.registry import create_agent, get_agent_class
from engine import Direction, Game, Rules, to_exponents
from tests.agents.checkpoint_checks import assert_refused_as, assert_same_moves

ONLY_LEFT = np.array([[0, 2, 4, 2], [0, 4, 2, 4], [0, 2, 4, 2], [0, 4, 2, 4]])
FIXED_BOARDS = [
    ONLY_LEFT,
    np.array([[2, 2, 4, 8], [0, 0, 0, 16], [0, 0, 0, 0], [0, 0, 2, 0]]),
    np.array([[1024, 512, 256, 128], [8, 16, 32, 64], [4, 2, 0, 0], [2, 0, 0, 0]]),
]
#: Small enough to learn within a second or two.
TINY = dict(DQNAgent.smoke_config)  # what check-agent trains it with


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def losses_of(agent: DQNAgent, budget: Budget) -> list[float]:
    return [e.metrics["loss"] for e in agent.train(budget) if e.kind == "episode" and "loss" in e.metrics]


def test_registered():
    assert get_agent_class("dqn") is DQNAgent


@pytest.mark.parametrize(
    ("preset", "network"),
    [("dqn-seed000", "simple"), ("dqn-seed000-dropout", "dropout"), ("dqn-seed000-conv", "conv")],
)
def test_seed000_presets_are_the_notebook(preset, network):
    data = load_preset(preset)
    assert data["agent"] == "dqn" and data["budget"] == {"episodes": 1000}
    cfg = DQNConfig.from_dict(data["config"])
    assert cfg.network == network
    assert (cfg.replay_capacity, cfg.batch_size, cfg.learning_starts, cfg.train_every, cfg.envs) == (
        10_000,
        100,
        1000,
        1,
        1,
    )
    assert (cfg.gamma, cfg.lr, cfg.loss, cfg.reward) == (0.9, 5e-5, "mse", "merges")
    assert (cfg.eps_schedule, cfg.eps_start, cfg.eps_rate, cfg.eps_end, cfg.eps_unit) == (
        "exponential",
        0.9,
        0.998,
        0.0,
        "episode",
    )
    assert cfg.target_update == 0 and not cfg.double and not cfg.semi_gradient and not cfg.mask_targets
    assert not cfg.augment and cfg.grad_clip == 0 and cfg.encoder == "log2"
    assert cfg.head == "q" and not cfg.symmetric_play and cfg.n_step == 1 and cfg.reward_scale == 1.0
    agent = DQNAgent(cfg, seed=0)
    assert agent.target_net is None
    assert agent.epsilon() == 0.9
    agent.counters.episodes = 1000
    assert agent.epsilon() == pytest.approx(0.1216, abs=1e-4)  # the notebook's 0.9 x 0.998^1000


def test_rewards():
    for kind, expected in (("merges", 2.0), ("score", 8.0), ("log2_score", math.log2(9.0))):
        agent = DQNAgent(DQNConfig(reward=kind, reward_scale=1.0, **TINY), seed=0)
        # [2 2 2 2] left: two merges worth 4 + 4
        assert agent._reward(8, 2) == pytest.approx(expected)


def test_config_is_checked():
    with pytest.raises(ValueError, match="cnn"):
        DQNConfig(network="cnn", encoder="log2")
    with pytest.raises(ValueError, match="learning_starts"):
        DQNConfig(batch_size=64, learning_starts=10)


@pytest.mark.parametrize("head", ["q", "afterstate"])
def test_same_seed_same_losses(head):
    cfg = DQNConfig(**TINY, head=head)
    a = losses_of(DQNAgent(cfg, seed=11), Budget(steps=700))
    b = losses_of(DQNAgent(cfg, seed=11), Budget(steps=700))
    assert len(a) >= 3
    assert a == b  # exactly
    c = losses_of(DQNAgent(cfg, seed=12), Budget(steps=700))
    assert c != a


def test_n_step_returns_are_pushed_per_game():
    agent = DQNAgent(
        DQNConfig(**{**TINY, "head": "q", "n_step": 3, "gamma": 0.5, "envs": 1, "reward_scale": 1.0}), seed=0
    )
    from collections import deque

    agent._nstep = [deque()]
    s = np.zeros((4, 4), np.uint8)
    mask = np.ones(4, bool)
    for k, r in enumerate((1.0, 2.0, 4.0, 8.0)):
        agent._store(0, s + k, k % 4, r, s + k + 1, False, mask)
    # Two full windows: 1 + 0.5 * 2 + 0.25 * 4 = 3 from move 0, 2 + 0.5 * 4 + 0.25 * 8 = 6 from move 1.
    assert len(agent.buffer) == 2 and agent.buffer.rewards[:2].tolist() == [3.0, 6.0]
    assert agent.buffer.next_states[0, 0, 0] == 3 and not agent.buffer.dones[:2].any()
    agent._store(0, s + 4, 0, 16.0, s + 5, True, np.zeros(4, bool))
    # The game ended: the three pending moves flush as terminal transitions with shorter returns.
    assert len(agent.buffer) == 5
    assert agent.buffer.rewards[2:5].tolist() == [4.0 + 4.0 + 4.0, 8.0 + 8.0, 16.0]
    assert agent.buffer.dones[2:5].all() and (agent.buffer.next_states[2:5, 0, 0] == 5).all()


def test_afterstate_head_rates_the_boards_moves_lead_to():
    agent = DQNAgent(
        DQNConfig(**TINY, head="afterstate", reward="score", reward_scale=1.0, symmetric_play=False), seed=0
    )
    board = np.array([[2, 2, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 4]])
    q = agent.network_output(to_exponents(board)[None])[0]
    # Q(left) = 4 + gamma V(left board); Q(right) = 4 + gamma V(right board): the reward is exact.
    with torch.no_grad():
        left = to_exponents(np.array([[4, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [4, 0, 0, 0]]))[None]
        v_left = agent.net(agent.encoder.tensor(left)).item()
    assert q[1].item() == pytest.approx(4.0 + agent.config.gamma * v_left, rel=1e-5)
    assert agent.act(Game(board=ONLY_LEFT)) is Direction.LEFT


def test_seed_preset_is_deterministic_too():
    cfg = DQNConfig.from_dict(
        {**load_preset("dqn-seed000-dropout")["config"], "learning_starts": 100, "batch_size": 20}
    )
    a = losses_of(DQNAgent(cfg, seed=5), Budget(steps=600))
    b = losses_of(DQNAgent(cfg, seed=5), Budget(steps=600))
    assert a and a == b


def test_smoke_run_counts_and_reports():
    agent = DQNAgent(DQNConfig(**TINY), seed=1)
    events = list(agent.train(Budget(episodes=4)))
    episodes = [e for e in events if e.kind == "episode"]
    assert len(episodes) >= 4 and agent.counters.episodes == len(episodes)
    # Steps include the moves of the games still running when the budget ran out.
    assert agent.counters.steps >= sum(int(e.metrics["moves"]) for e in episodes)
    assert agent.counters.updates > 0 and agent.counters.seconds > 0
    for e in episodes:
        assert {"score", "max_tile", "moves", "epsilon", "steps_per_s", "lr"} <= set(e.metrics)
        assert e.game is not None
        assert e.game.final_score == e.metrics["score"] and e.game.n_moves == e.metrics["moves"]
        assert e.game.max_tile == e.metrics["max_tile"]
    learned = [e for e in episodes if "loss" in e.metrics]
    assert learned, "no episode ended after learning started"
    for e in learned:
        assert math.isfinite(e.metrics["loss"]) and math.isfinite(e.metrics["mean_q"])
    assert set(DQNAgent.loss_metrics) <= set(learned[-1].metrics)
    assert set(DQNAgent.schedule_metrics) <= set(episodes[0].metrics)
    # episodes count up, progress reaches the budget
    assert [e.episode for e in episodes] == sorted(e.episode for e in episodes)
    assert episodes[-1].progress == 1.0
    # a second call continues the lifetime counters
    before = agent.counters.episodes
    more = [e for e in agent.train(Budget(episodes=1)) if e.kind == "episode"]
    assert more[0].episode == before + 1


def test_stop_ends_training_cleanly():
    control = Control()
    agent = DQNAgent(DQNConfig(**TINY), seed=2)
    seen = 0
    for e in agent.train(Budget(episodes=1000), control):
        if e.kind == "episode":
            seen += 1
            control.stop()
    assert seen >= 1 and agent.counters.episodes < 10


def test_plays_only_legal_moves():
    agent = DQNAgent(DQNConfig(**TINY), seed=3)
    game = Game(board=ONLY_LEFT)
    assert agent.act(game) is Direction.LEFT
    assert set(agent.move_values(game)) == {Direction.LEFT}
    g = Game(seed=4)
    while not g.game_over:
        g.step(agent.act(g))  # an illegal move would raise
    assert g.moves > 10


@pytest.mark.parametrize("head", ["q", "afterstate"])
def test_save_load_same_moves_and_buffer(tmp_path, head):
    agent = DQNAgent(DQNConfig(**TINY, head=head), seed=4)
    list(agent.train(Budget(steps=400)))
    path = agent.save(tmp_path / "dqn")
    loaded = Agent.load(path)
    assert isinstance(loaded, DQNAgent)
    assert loaded.counters == agent.counters
    assert len(loaded.buffer) == len(agent.buffer)
    np.testing.assert_array_equal(
        loaded.buffer.get_arrays()["buffer/states"], agent.buffer.get_arrays()["buffer/states"]
    )
    assert_same_moves(loaded, agent, FIXED_BOARDS)
    # Resuming continues the same random streams: both train one more identical stretch.
    a = losses_of(agent, Budget(steps=300))
    b = losses_of(loaded, Budget(steps=300))
    assert a == b


def test_a_checkpoint_of_another_agent_is_refused(tmp_path):
    other = create_agent("policy", {"max_moves": 5}, seed=0).save(tmp_path / "policy")
    assert_refused_as(DQNAgent, "dqn", other)


def test_a_checkpoint_with_other_network_does_not_load(tmp_path):
    agent = DQNAgent(DQNConfig(**TINY), seed=0)
    arrays, meta = agent.get_state()
    wider = DQNAgent(DQNConfig(**{**TINY, "hidden": (64, 32)}), seed=0)
    with pytest.raises(ValueError, match="shape"):
        wider.set_state(arrays, meta)


@pytest.mark.parametrize("network", ["simple", "dropout", "conv", "cnn"])
def test_every_network_trains_a_little(network):
    cfg = DQNConfig(**{**TINY, "network": network, "hidden": (16,)})
    agent = DQNAgent(cfg, seed=0)
    events = [e for e in agent.train(Budget(steps=200)) if "loss" in e.metrics]
    assert agent.counters.updates > 0
    assert all(math.isfinite(e.metrics["loss"]) for e in events)


def test_other_board_sizes():
    agent = DQNAgent(DQNConfig(**TINY), rules=Rules(rows=3, cols=5), seed=0)
    list(agent.train(Budget(steps=200)))
    assert agent.counters.updates > 0
    game = Game(rules=Rules(rows=3, cols=5), seed=1)
    assert agent.act(game) in game.legal_moves()


@pytest.mark.parametrize("head", ["q", "afterstate"])
def test_symmetric_play_is_symmetric(head):
    from engine.boards import symmetries

    agent = DQNAgent(DQNConfig(**TINY, head=head, symmetric_play=True), seed=6)
    rng = np.random.default_rng(0)
    exps = rng.integers(0, 8, size=(5, 4, 4)).astype(np.uint8)
    q = agent.network_output(exps)
    for sym in symmetries(4, 4):
        q_sym = agent.network_output(sym.apply(exps))
        # Move a on a board is move action_map[a] on its transformed view: same value.
        torch.testing.assert_close(q_sym[:, list(sym.action_map)], q, rtol=1e-5, atol=1e-5)
    plain = DQNAgent(DQNConfig(**TINY, head=head, symmetric_play=False), seed=6)
    assert not torch.allclose(plain.network_output(exps), q)  # averaging changed something
    assert agent.act(Game(board=ONLY_LEFT)) is Direction.LEFT


@pytest.mark.parametrize("shape", [(4, 4), (3, 5)])
@pytest.mark.parametrize("head", ["q", "afterstate"])
def test_batched_symmetric_outputs_match_one_view_at_a_time(shape, head):
    """The one-call batch over all views (the fast path) against a loop over the views (its twin)."""
    from engine.boards import symmetries

    rules = Rules(rows=shape[0], cols=shape[1])
    agent = DQNAgent(DQNConfig(**TINY, head=head, symmetric_play=True), rules=rules, seed=3)
    exps = np.random.default_rng(1).integers(0, 9, size=(6, *shape)).astype(np.uint8)
    with torch.no_grad():
        fast = agent.symmetric_outputs(exps)
        views = [agent.head_outputs(s.apply(exps))[:, list(s.action_map)] for s in symmetries(*shape)]
    assert len(views) == (8 if shape[0] == shape[1] else 4)
    torch.testing.assert_close(fast, torch.stack(views).mean(dim=0), rtol=1e-5, atol=1e-6)
