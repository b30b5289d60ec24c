"""Search during n-tuple training (``train_depth``, ``train_search_from``; issue 49).

Self-play may choose its moves by expectimax instead of greedily at 1-ply. The moves are checked
against a plain-Python expectimax over the same weights, the greedy path against the bits it trained
before the knob existed, and the search's caches against leaking values from one move into the next.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from agents.base import Budget
from agents.config import ConfigError
from agents.ntuple import LAYOUTS, NTupleAgent, NTupleConfig, TupleLayout
from agents.ntuple import kernels as K
from engine import DIRECTIONS, slide
from engine.core import seed_to_state, to_exponents
from engine.fast import pack, unpack
from tests.agents.test_ntuple import one_worker_both_ways, ref_value

P4 = 0.1
LAYOUT = TupleLayout("4x4", LAYOUTS["4x4"])

# ----------------------------------------------------------------------------- the slow twin


def twin_move_values(w: np.ndarray, board: np.ndarray, depth: int) -> list[float | None]:
    """reward + expectimax value of each move of ``board`` (tile values), None for an illegal one.

    A max node with plies left values a move by reward + the mean over the afterstate's empty cells
    of (0.9 x the max node with a 2 there + 0.1 x with a 4), with one ply left by reward +
    V(afterstate); a max node without a legal move is worth 0. V is the slow feature reader of
    test_ntuple (every tuple, every symmetry, cell by cell)."""
    memo: dict[bytes, float] = {}

    def value(after: np.ndarray) -> float:
        key = after.tobytes()
        if key not in memo:
            memo[key] = ref_value(w, to_exponents(after), LAYOUT)
        return memo[key]

    def moves(b: np.ndarray, plies: int) -> list[float | None]:
        out: list[float | None] = []
        for d in DIRECTIONS:
            after, reward = slide(b, d)
            if np.array_equal(after, b):
                out.append(None)
            elif plies == 1:
                out.append(reward + value(after))
            else:
                out.append(reward + chance(after, plies - 1))
        return out

    def chance(after: np.ndarray, plies: int) -> float:
        total, cells = 0.0, 0
        for r in range(4):
            for c in range(4):
                if after[r, c]:
                    continue
                cells += 1
                for tile, p in ((2, 1 - P4), (4, P4)):
                    child = after.copy()
                    child[r, c] = tile
                    legal = [v for v in moves(child, plies) if v is not None]
                    total += p * (max(legal) if legal else 0.0)
        return total / cells

    return moves(board, depth)


def chosen_by(vals: list[float | None], board: np.ndarray, after: int) -> bool:
    """Whether the move that made afterstate ``after`` is a best one of ``vals`` (the kernel sums a
    leaf's features in another order than the twin: a few ulps apart, never more)."""
    best = max(v for v in vals if v is not None)
    made = [
        v
        for d, v in zip(DIRECTIONS, vals, strict=True)
        if v is not None and pack(slide(board, d)[0]) == after
    ]
    return bool(made) and max(made) >= best - 1e-9 * max(1.0, abs(best))


def best_after(vals: list[float | None], board: np.ndarray) -> int:
    """The afterstate of the first best move of ``vals``."""
    d = int(np.argmax([-np.inf if v is None else v for v in vals]))
    return pack(slide(board, DIRECTIONS[d])[0])


# ----------------------------------------------------------------------------- the kernel, driven


class Selfplay:
    """One self-play worker of a tiny network (random weights, so moves differ by search), driven
    through the training kernel directly."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.runs, self.tlen, self.toff, self.thr = LAYOUT.arrays()
        self.w = rng.normal(0.0, 200.0, LAYOUT.size).astype(np.float32)
        self.tc = np.zeros(2 * LAYOUT.size, dtype=np.float32)
        self.gu = np.array([0, seed_to_state(seed), seed_to_state(seed + 1)], dtype=np.uint64)
        self.gi = np.zeros(K.I_COLS, dtype=np.int64)
        self.bufs = [np.zeros(20_000, dtype=t) for t in (np.uint64, np.uint64, np.float32)]
        self.acc = np.zeros(2)
        self.live = np.array([1])
        self.games: list[int] = []

    def play(self, steps: int, depth: int, from_exp: int) -> int:
        out = [np.zeros(200, dtype=t) for t in (np.int64, np.int8, np.int64, np.int8)]
        done, made = K.train_steps(
            self.w, self.tc, True, self.runs, self.tlen, self.toff, LAYOUT.stage_size, self.thr,
            1.0, 0.5, 0.5, P4, 2, self.live, self.gu, self.gi, *self.bufs, steps, *out, self.acc,
            depth, from_exp,
        )  # fmt: skip
        self.games += [int(s) for s in out[0][:done]]
        return int(made)

    def last_move(self) -> tuple[np.ndarray, int]:
        """The board of the move just made and its afterstate."""
        n = int(self.gi[K.I_MOVES]) - 1
        return unpack(int(self.bufs[0][n])), int(self.bufs[1][n])

    def state(self) -> list[np.ndarray]:
        return [self.w, self.tc, self.gu, self.gi, self.acc, np.array(self.games)]


def assert_same_state(a: Selfplay, b: Selfplay) -> None:
    for x, y in zip(a.state(), b.state(), strict=True):
        np.testing.assert_array_equal(x, y)


# ----------------------------------------------------------------------------- tests


def _digest(**kw) -> str:
    agent = NTupleAgent(NTupleConfig(layout="4x4", **kw), seed=17)
    list(agent.train(Budget(steps=20_000)))
    h = hashlib.sha256()
    for x in (agent.weights, agent._tc, agent._game_u, agent._game_i):
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:32]


#: the same runs trained by the code before train_depth existed (HEAD 8d52f58)
DIGEST_DEFAULT = "8589751f5aef286b1a936bab3434f1c7"
DIGEST_STAGES = "440bfed919d72efd740a6a5bcc91e957"


def test_greedy_training_keeps_the_bits_it_trained_before_search_existed():
    assert _digest() == DIGEST_DEFAULT
    assert _digest(lam=0.0, restart=0.9, stage_tiles=(64,)) == DIGEST_STAGES
    # the threshold means nothing at depth 1; at depth 2 a tile the run never reaches means no search
    assert _digest(train_depth=1, train_search_from=8) == DIGEST_DEFAULT
    assert _digest(train_depth=2, train_search_from=32768) == DIGEST_DEFAULT


def test_two_ply_self_play_moves_are_the_python_expectimax_moves_and_nothing_leaks_between_moves():
    stepwise, whole = Selfplay(4), Selfplay(4)
    steps = 130  # the first game of this seed ends after 83 moves
    for _ in range(steps):  # one move a call: each search on a fresh scratch, checked as it is made
        assert stepwise.play(1, 2, 0) == 1
        board, after = stepwise.last_move()
        assert chosen_by(twin_move_values(stepwise.w, board, 2), board, after)
    assert len(stepwise.games) >= 1  # a game ended in there: its learning changed the weights
    # the same moves in one call, the scratch kept from move to move: the same bits
    assert whole.play(steps, 2, 0) == steps
    assert_same_state(stepwise, whole)


def test_three_ply_self_play_in_one_call_is_the_same_as_move_by_move():
    # a 3-ply search fills the transposition table too: stamped per move, it must not leak either
    stepwise, whole = Selfplay(5), Selfplay(5)
    for _ in range(200):
        stepwise.play(1, 3, 0)
    whole.play(200, 3, 0)
    assert len(whole.games) >= 2
    assert_same_state(stepwise, whole)


def test_self_play_searches_only_once_its_tile_is_on_the_board():
    run = Selfplay(12)  # its first game reaches 64 after 60 moves and ends after 123
    before = after_tile = differs_before = differs_after = 0
    for _ in range(150):
        run.play(1, 2, 6)  # search from 64 on
        board, after = run.last_move()
        greedy = twin_move_values(run.w, board, 1)
        searched = twin_move_values(run.w, board, 2)
        differ = best_after(greedy, board) != best_after(searched, board)
        if board.max() < 64:
            before += 1
            differs_before += differ
            assert chosen_by(greedy, board, after)
        else:
            after_tile += 1
            differs_after += differ
            assert chosen_by(searched, board, after)
    # both kinds of board were met, and on both the two players disagree somewhere
    assert before > 0 and after_tile > 0 and differs_before > 0 and differs_after > 0


def test_same_seed_same_weights_with_search_and_not_the_greedy_ones():
    def trained(depth: int) -> np.ndarray:
        agent = NTupleAgent(NTupleConfig(layout="4x4", train_depth=depth), seed=9)
        list(agent.train(Budget(steps=3000)))
        assert agent.counters.steps == 3000
        return agent.weights

    first = trained(2)
    np.testing.assert_array_equal(first, trained(2))
    assert not np.array_equal(first, trained(1))


def test_two_workers_search_in_training():
    # the threaded wrapper hands the search settings on: one worker gives the single kernel's bits
    assert one_worker_both_ways(1500, 50, 2, 6) > 3
    # two workers through the agent: the budget's moves exactly, and both workers' games learnt
    agent = NTupleAgent(NTupleConfig(layout="4x4", threads=2, train_depth=2, train_search_from=64), seed=1)
    list(agent.train(Budget(steps=4001)))
    # how the moves split between the workers is the threads' timing (10 games one loaded run, ~20 a
    # quiet one): what holds every time is the budget, exact, and games finished and learnt
    assert agent.counters.steps == 4001 and agent.counters.episodes >= 3
    assert np.abs(agent.weights).sum() > 0


def test_train_search_from_is_a_tile():
    with pytest.raises(ConfigError, match="train_search_from"):
        NTupleConfig(train_search_from=100).validate()
    assert NTupleConfig(train_search_from=8192).train_search_exponent() == 13
    assert NTupleConfig().train_search_exponent() == 0
