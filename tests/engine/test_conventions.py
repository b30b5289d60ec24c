"""The conventions of engine/core.py's docstring, checked on every path that implements them:
the general rules, the packed kernels, Game (fast and general), BatchEngine, the Gymnasium env and
the plain-Python reference."""

from __future__ import annotations

import numpy as np
import pytest

from engine import (
    DIRECTIONS,
    BatchEngine,
    Direction,
    Game,
    Game2048Env,
    Rules,
    SpawnRng,
    fast,
    from_exponents,
    slide,
    to_exponents,
)
from engine import _reference as ref
from engine.core import seed_to_state

LONE = [[0, 0, 0, 0], [0, 2, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]  # a 2 at (1, 1)
# where the lone 2 ends up for each action, in action order
ENDS = {0: (0, 1), 1: (1, 0), 2: (3, 1), 3: (1, 3)}


def test_action_order_is_up_left_down_right():
    assert [int(d) for d in DIRECTIONS] == [0, 1, 2, 3]
    assert [d.label for d in DIRECTIONS] == ["up", "left", "down", "right"]
    # seed 003's w/a/s/d order; "d" itself parses as down (the u/d/l/r aliases), so not checked here
    assert [Direction.parse(k) for k in ("w", "a", "s", "right")] == list(DIRECTIONS)
    assert (ref.UP, ref.LEFT, ref.DOWN, ref.RIGHT) == (0, 1, 2, 3)


def _where(board) -> tuple[int, int]:
    (r,), (c,) = np.nonzero(np.asarray(board))
    return int(r), int(c)


@pytest.mark.parametrize("action", [0, 1, 2, 3])
def test_every_path_moves_the_same_way_for_an_action(action):
    end = ENDS[action]
    assert _where(slide(np.array(LONE), action)[0]) == end
    assert _where(ref.move(LONE, action)[0]) == end
    assert _where(fast.unpack(int(fast.move(np.uint64(fast.pack(LONE)), action)[0]))) == end
    for use_fast in (True, False):
        g = Game(board=LONE, seed=0, rules=Rules(spawn_per_move=0), fast=use_fast)
        g.step(action)
        assert _where(g.board) == end
    engine = BatchEngine(1, seed=0, rules=Rules(spawn_per_move=0, start_tiles=1))
    engine.set_game(0, LONE)
    obs, *_ = engine.step(np.array([action]))
    assert _where(obs[0]) == end
    env = Game2048Env(rules=Rules(spawn_per_move=0))
    env.reset(seed=0, options={"board": np.array(LONE)})
    obs, *_ = env.step(action)
    assert _where(obs) == end


def test_exponents_versus_values():
    values = np.array([[0, 2, 4, 2048], [65536, 131072, 0, 8], [0] * 4, [0] * 4])
    exps = np.array([[0, 1, 2, 11], [16, 17, 0, 3], [0] * 4, [0] * 4], dtype=np.uint8)
    assert np.array_equal(to_exponents(values), exps) and to_exponents(values).dtype == np.uint8
    assert np.array_equal(from_exponents(exps), values)
    small = np.array([[0, 2, 4, 2048], [32768, 8, 0, 0], [0] * 4, [0] * 4])
    assert np.array_equal(fast.unpack_exponents(fast.pack(small)), to_exponents(small))  # nibble = exponent
    env = Game2048Env()
    obs, _ = env.reset(seed=0, options={"board": values})
    assert np.array_equal(obs, exps)


def test_reward_is_the_sum_of_merged_values():
    row = [[2, 2, 2, 2], [0] * 4, [0] * 4, [0] * 4]
    assert slide(np.array(row), "left")[1] == 8
    assert ref.move(row, 1)[1] == 8
    assert int(fast.move(np.uint64(fast.pack(row)), 1)[1]) == 8
    assert Game(board=row, seed=0).step("left").reward == 8
    assert Game(board=[[4, 4, 4, 0], [0] * 4, [0] * 4, [0] * 4], seed=0).step("left").reward == 8
    assert Game(board=[[2, 4, 0, 0], [0] * 4, [0] * 4, [0] * 4], seed=0).step("down").reward == 0
    assert slide(np.array([[65536, 65536]]), "left")[1] == 131072


def test_merges_pair_nearest_the_wall_first_once_per_move():
    assert slide(np.array([[2, 2, 2, 2]]), "left")[0].tolist() == [[4, 4, 0, 0]]
    assert slide(np.array([[4, 4, 4, 0]]), "left")[0].tolist() == [[8, 4, 0, 0]]
    assert slide(np.array([[4, 4, 4, 0]]), "right")[0].tolist() == [[0, 0, 4, 8]]
    assert slide(np.array([[4, 4, 8, 0]]), "left")[0].tolist() == [[8, 8, 0, 0]]  # no chain merge


def test_spawn_rule_two_draws_cell_then_value_row_major():
    """The documented draw: cell = (u >> 32) % n_empty over empty cells in row-major order, then a 4
    when (u >> 11) / 2**53 < p4. Written out by hand against Game's start tiles and a move's spawn."""
    seed = 42
    rng = SpawnRng(seed_to_state(seed))
    board = np.zeros((4, 4), dtype=np.int64)
    spawned = []
    for _ in range(2):  # two start tiles
        empty = [(r, c) for r in range(4) for c in range(4) if board[r, c] == 0]
        r, c = empty[(rng.next_u64() >> 32) % len(empty)]
        value = 4 if (rng.next_u64() >> 11) * 2.0**-53 < 0.1 else 2
        board[r, c] = value
        spawned.append((r, c, value))
    for use_fast in (True, False):
        g = Game(seed=seed, fast=use_fast)
        assert np.array_equal(g.board, board) and g.rng_state == rng.state
        assert [(s.row, s.col, s.value) for s in g.last_spawns] == spawned
    # and after a move: one more cell draw over the moved board's empties, one value draw
    g = Game(seed=seed)
    moved, _ = ref.move(board.tolist(), 0)
    empty = [(r, c) for r in range(4) for c in range(4) if moved[r][c] == 0]
    r, c = empty[(rng.next_u64() >> 32) % len(empty)]
    value = 4 if (rng.next_u64() >> 11) * 2.0**-53 < 0.1 else 2
    if ref.legal_moves(board.tolist())[0] == 0:
        assert [(s.row, s.col, s.value) for s in g.step(0).spawns] == [(r, c, value)]


def test_start_tiles_and_spawn_values():
    assert Rules() == Rules(rows=4, cols=4, p4=0.1, start_tiles=2, spawn_per_move=1)
    g = Game(seed=3)
    assert (g.board > 0).sum() == 2
    before = (g.board > 0).sum()
    res = g.step(g.legal_moves()[0])
    assert len(res.spawns) == 1 and res.spawns[0].value in (2, 4)
    assert (g.board > 0).sum() in (before + 1, before)  # +1 spawn, or a merge took one away
    assert Game(seed=3, rules=Rules(p4=1.0)).board.max() == 4
    assert Game(seed=3, rules=Rules(p4=0.0)).board.max() == 2


def test_reference_and_engine_share_the_spawn_stream():
    for seed in (0, 1, 2**40, 2**63 + 5):
        assert ref.seed_state(seed) == seed_to_state(seed)
        g, r = Game(seed=seed), ref.RefGame(seed=seed)
        assert g.board.tolist() == r.grid and g.rng_state == r.state
