"""td-afterstate (seed 002): expectimax targets by hand, switching-ply search, training, checkpoints."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents.base import Agent, Budget, Control
from agents.config import load_preset
from agents.registry import create_agent
from agents.td_afterstate import TDAfterstateAgent, TDAfterstateConfig, expand, expectimax_targets
from engine import Direction, Game, Rules, to_exponents
from engine.records import GameTrace

TINY = {"hidden": (16,), "states_per_round": 64, "batch_size": 16, "envs": 2, "gamma_rounds": 4}


pytest_plugins = ("tests.agents.torch_fixtures",)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def exps(rows: list[list[int]]) -> np.ndarray:
    return to_exponents(np.array(rows))


def zero(boards: np.ndarray) -> np.ndarray:
    return np.zeros(len(boards))


# ------------------------------------------------------------------------------------------ targets


def test_expand_one_and_two_empty_cells():
    ex = expand(exps([[2, 4], [0, 8]])[None], 0.1)
    assert ex.children.tolist() == [[[1, 2], [1, 3]], [[1, 2], [2, 3]]]
    np.testing.assert_allclose(ex.prob, [0.9, 0.1])
    ex = expand(exps([[0, 4], [0, 8]])[None], 0.1)
    np.testing.assert_allclose(sorted(ex.prob), [0.05, 0.05, 0.45, 0.45])
    assert ex.prob.sum() == pytest.approx(1.0)
    # p4 = 0: the 4s are left out
    assert len(expand(exps([[0, 4], [0, 8]])[None], 0.0).prob) == 2


STAIRS_ONE_EMPTY = [[2, 4, 8, 16], [4, 8, 16, 32], [8, 16, 32, 64], [16, 32, 2, 0]]


def test_em_target_by_hand_one_empty_cell():
    s = exps(STAIRS_ONE_EMPTY)

    # A 2 at the corner: [16 32 2 2] merges left or right (raw 4, r = log2(5)/2); nothing else moves.
    # A 4 there: the board is full and nothing merges, a terminal position: it adds 0.
    # V(b) = exponent in the bottom-right corner: left leaves it empty (0), right puts the 4 there (2).
    def corner(boards: np.ndarray) -> np.ndarray:
        return boards[:, 3, 3].astype(float)

    r = math.log2(5) / 2
    got = expectimax_targets(s[None], corner, 0.5, 0.1, "log2")
    assert got[0] == pytest.approx(0.9 * (r + 0.5 * 2.0))  # 1.944868...
    assert got[0] == pytest.approx(1.9448681, abs=1e-6)
    # raw rewards: 0.9 * (4 + 0.5 * 2)
    assert expectimax_targets(s[None], corner, 0.5, 0.1, "raw")[0] == pytest.approx(4.5)


def test_em_target_by_hand_two_empty_cells():
    s = exps([[0, 4, 8, 16], [4, 8, 16, 32], [8, 16, 32, 64], [16, 32, 2, 0]])
    # V = 0, so each spawn is worth its best immediate reward:
    #   2 at (0,0): nothing merges (slides only)                  -> 0       (p 0.45)
    #   4 at (0,0): row 0 = [4 4 8 16] merges 4+4 (raw 8)         -> log2(9)/2 (p 0.05)
    #   2 at (3,3): row 3 = [16 32 2 2] merges 2+2 (raw 4)        -> log2(5)/2 (p 0.45)
    #   4 at (3,3): only slides                                   -> 0       (p 0.05)
    want = 0.05 * math.log2(9) / 2 + 0.45 * math.log2(5) / 2
    got = expectimax_targets(s[None], zero, 0.9, 0.1, "log2")
    assert got[0] == pytest.approx(want)
    assert got[0] == pytest.approx(0.60168195, abs=1e-7)


def test_em_target_of_a_dead_end_is_zero():
    s = exps([[2, 4, 8, 16], [4, 8, 16, 32], [8, 16, 32, 64], [16, 32, 64, 0]])
    # Whatever spawns, the full board has no move: V(terminal) = 0, whatever V says elsewhere.
    assert expectimax_targets(s[None], lambda b: np.full(len(b), 99.0), 0.9, 0.1, "log2")[0] == 0.0


def test_em_targets_batch_equals_one_by_one():
    rng = np.random.default_rng(0)
    boards = rng.integers(0, 6, size=(12, 4, 4)).astype(np.uint8)
    boards[:, 0, 0] = 0  # at least one empty cell each

    def v(b: np.ndarray) -> np.ndarray:
        return b.reshape(len(b), -1).sum(axis=1) / 10.0

    batch = expectimax_targets(boards, v, 0.8, 0.1, "log2")
    single = [expectimax_targets(b[None], v, 0.8, 0.1, "log2")[0] for b in boards]
    np.testing.assert_allclose(batch, single)


# ------------------------------------------------------------------------------------------ search


def test_switching_ply_depth_one_is_one_ply_and_depth_two_is_the_em_target():
    agent = TDAfterstateAgent(TDAfterstateConfig(**TINY, depths_policy=(1,)), seed=0)
    list(agent.train(Budget(episodes=3)))
    g = Game(seed=4)
    for _ in range(40):
        g.step(agent.act(g))
    e = to_exponents(g.board)
    one = agent.one_ply(e[None])[0][0]
    np.testing.assert_allclose(agent.search(e), one)
    # depth 2 everywhere: each move is worth r + gamma * EM(its afterstate)
    agent.config = agent.config.replace(depths_policy=(2,))
    deep = agent.search(e)
    from engine.boards import afterstates

    after, raw, _ = afterstates(e[None])
    for d in range(4):
        if np.isfinite(deep[d]):
            em = expectimax_targets(after[0, d][None], agent.values, agent.gamma, 0.1, "log2")[0]
            assert deep[d] == pytest.approx(math.log2(raw[0, d] + 1) / 2 + agent.gamma * em, rel=1e-5)
        else:
            assert not np.isfinite(one[d])


def test_switching_ply_reads_the_policy_by_free_cells():
    agent = TDAfterstateAgent(TDAfterstateConfig(**TINY, depths_policy=(2, 2, 1)), seed=0)
    roomy = to_exponents(np.array([[2, 4, 0, 0], [0, 0, 0, 0], [0, 0, 8, 0], [0, 0, 0, 0]]))
    np.testing.assert_allclose(agent.search(roomy), agent.one_ply(roomy[None])[0][0])  # 13 free: depth 1
    full = to_exponents(np.array(STAIRS_ONE_EMPTY))  # one free cell: depth 2 at the root
    deep = agent.search(full)
    assert not np.allclose(deep[np.isfinite(deep)], agent.one_ply(full[None])[0][0][np.isfinite(deep)])
    agent.config = agent.config.replace(play="switching-ply")
    vals = agent.move_values(Game(board=np.array(STAIRS_ONE_EMPTY)))
    assert set(vals) == {Direction.RIGHT, Direction.DOWN}
    assert vals[Direction.RIGHT] == pytest.approx(deep[Direction.RIGHT])


# ------------------------------------------------------------------------------------------ training


def weights(agent: TDAfterstateAgent) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in agent.net.parameters()]


def test_determinism_same_seed_same_numbers():
    runs = []
    for _ in range(2):
        agent = TDAfterstateAgent(TDAfterstateConfig(**TINY), seed=3)
        events = list(agent.train(Budget(steps=300)))
        runs.append(
            (weights(agent), [dict(e.metrics) for e in events if e.kind == "update"], agent.counters.steps)
        )
    for a, b in zip(runs[0][0], runs[1][0]):
        np.testing.assert_array_equal(a, b)
    assert runs[0][1] == runs[1][1] and runs[0][1]
    other = TDAfterstateAgent(TDAfterstateConfig(**TINY), seed=4)
    list(other.train(Budget(steps=300)))
    assert not all(np.array_equal(a, b) for a, b in zip(weights(other), runs[0][0]))


def test_smoke_rounds_schedules_and_events():
    agent = TDAfterstateAgent(TDAfterstateConfig(**TINY), seed=1)
    threads = torch.get_num_threads()
    events = list(agent.train(Budget(steps=64 * 5 + 8)))
    assert torch.get_num_threads() == threads
    updates = [e for e in events if e.kind == "update"]
    games = [e for e in events if e.kind == "episode"]
    assert agent.round == len(updates) == 5
    assert agent.counters.updates == 5 * 4  # 64 states / batch 16
    for e in updates:
        assert np.isfinite(e.metrics["loss"]) and e.metrics["loss"] >= 0
    lrs = [e.metrics["lr"] for e in updates]
    gammas = [e.metrics["gamma"] for e in updates]
    eps = [e.metrics["epsilon"] for e in updates]
    assert lrs == sorted(lrs, reverse=True) and lrs[0] < 1e-3
    assert gammas == sorted(gammas) and gammas[-1] == pytest.approx(0.99)  # gamma_rounds = 4
    assert eps == sorted(eps, reverse=True) and eps[0] < 0.3
    assert games, "some games finish in 328 moves"
    for e in games:
        assert e.metrics["score"] > 0 and e.metrics["max_tile"] >= 8
        assert isinstance(e.game, GameTrace) and e.game.final_score == e.metrics["score"]
    assert agent.counters.steps >= 64 * 5


def test_random_starts_after_the_configured_round():
    agent = TDAfterstateAgent(TDAfterstateConfig(**TINY, random_start_round=1, random_start_prob=1.0), seed=2)
    events = list(agent.train(Budget(steps=2000)))
    starts = [e.metrics["random_start"] for e in events if e.kind == "episode"]
    assert starts[0] == 0.0 and 1.0 in starts
    assert len(agent._pool) > 0 and agent._pool.shape[1:] == (4, 4)
    # pool positions are boards a move was played from: none is a dead end
    assert all(not Game(board=2 ** b.astype(np.int64) * (b > 0)).game_over for b in agent._pool[:50])


def test_other_board_shapes():
    rules = Rules(rows=3, cols=3)
    agent = TDAfterstateAgent(TDAfterstateConfig(**TINY, play="switching-ply"), rules, seed=0)
    list(agent.train(Budget(steps=200)))
    g = Game(rules=rules, seed=1)
    vals = agent.move_values(g)
    assert set(vals) == set(g.legal_moves())
    assert TDAfterstateAgent.unsupported_reason(Rules(spawn_per_move=2)) is not None


def test_save_load_round_trip(tmp_path):
    agent = TDAfterstateAgent(TDAfterstateConfig(**TINY, play="switching-ply"), seed=5)
    list(agent.train(Budget(steps=200)))
    path = agent.save(tmp_path / "td")
    loaded = Agent.load(path)
    assert isinstance(loaded, TDAfterstateAgent)
    assert loaded.round == agent.round and loaded.gamma == agent.gamma
    g = Game(seed=2)
    for _ in range(20):
        if g.game_over:
            break
        assert loaded.move_values(g) == pytest.approx(agent.move_values(g))
        g.step(agent.act(g))


def test_act_plays_the_best_move_value():
    agent = TDAfterstateAgent(TDAfterstateConfig(**TINY), seed=6)
    list(agent.train(Budget(steps=200)))
    g = Game(seed=3)
    for _ in range(60):
        if g.game_over:
            break
        vals = agent.move_values(g)
        best = max(vals.values())
        assert agent.act(g) == min(d for d, v in vals.items() if v == best)
        g.step(agent.act(g))


class StopAfter(Control):
    """Lets ``n`` loop iterations through, then asks the loop to stop."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def checkpoint(self) -> bool:
        self.n -= 1
        return self.n >= 0


def test_a_round_fit_carries_over_between_calls():
    agent = TDAfterstateAgent(TDAfterstateConfig(**TINY, epochs=3), seed=7)
    # 32 iterations of self-play (2 games x 32 moves = 64 states), then 4 of the 12 fit steps
    list(agent.train(Budget(steps=10_000), StopAfter(36)))
    assert agent.round == 0 and agent.counters.updates == 4 and agent._fit is not None
    for event in agent.train(Budget(steps=10_000)):
        if event.kind == "update":
            break
    assert agent.round == 1 and agent.counters.updates == 12  # the fit went on, it did not start again


def test_registry_and_preset():
    preset = load_preset("td-afterstate-seed002")
    assert preset["agent"] == "td-afterstate"
    agent = create_agent("td-afterstate", preset["config"], seed=0)
    cfg = agent.config
    assert isinstance(agent, TDAfterstateAgent)
    assert (cfg.planes, cfg.batch_size, cfg.epsilon, cfg.reward) == (18, 128, 0.3, "log2")
    assert (cfg.random_start_round, cfg.random_start_prob) == (50, 0.7)
    assert cfg.depths_policy == (3, 3, 2, 2) + (1,) * 12
