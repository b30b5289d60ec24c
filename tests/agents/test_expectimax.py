"""Heuristic expectimax: the two search paths agree, a tiny board by hand, the table changes nothing, heuristics."""

from __future__ import annotations

import numpy as np
import pytest

from agents.config import ConfigError
from agents.expectimax import ExpectimaxAgent, ExpectimaxConfig, GeneralSearch
from agents.heuristics import (
    Heuristic,
    NneonneoWeights,
    Seed004Weights,
    line_tables,
    nneonneo_line,
    seed004_line,
)
from engine import Direction, Game, Rules

BOARDS_4X4 = [
    [[2, 4, 8, 16], [0, 2, 4, 8], [0, 0, 2, 4], [0, 0, 0, 2]],
    [[2, 4, 2, 4], [4, 8, 16, 2], [2, 32, 64, 4], [128, 256, 2, 0]],
    [[1024, 512, 256, 128], [8, 16, 32, 64], [4, 2, 0, 0], [2, 0, 0, 4]],
    [[0, 2, 4, 8], [0, 4, 8, 2], [0, 2, 4, 8], [0, 4, 8, 2]],
    [[32768, 16384, 8, 2], [2, 4, 8, 16], [0, 0, 2, 4], [0, 2, 0, 4]],
]


def agent(**kw: object) -> ExpectimaxAgent:
    return ExpectimaxAgent(ExpectimaxConfig(**kw))  # type: ignore[arg-type]


def general_values(
    a: ExpectimaxAgent, board: list[list[int]], depth: int, *, use_tt: bool = True
) -> np.ndarray:
    cfg = a.config
    search = GeneralSearch(cfg.heuristic_spec(), 0.1, cfg.prob_cutoff, cfg.loss_penalty, use_tt)
    return search.root(np.array(board, dtype=np.int64), depth)


@pytest.mark.parametrize("heuristic", ["nneonneo", "seed004"])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_packed_and_general_paths_give_the_same_values(heuristic: str, depth: int) -> None:
    a = agent(heuristic=heuristic, depth=depth)
    for board in BOARDS_4X4:
        if depth == 3 and np.count_nonzero(np.array(board) == 0) > 4:
            continue  # the Python path is slow on open boards at depth 3
        packed = a.search(Game(board=np.array(board), seed=0))
        assert a.last_stats is not None and a.last_stats.packed
        general = general_values(a, board, depth)
        # Same numbers summed in the same order: bit-identical, NaN (illegal) in the same places.
        np.testing.assert_array_equal(packed, general, err_msg=str(board))


def empty_counter(**kw: object) -> ExpectimaxAgent:
    """Depth 2 on 2x2 boards with H = number of empty cells (seed 004's heuristic, other weights 0)."""
    weights = {
        "s4_smoothness_weight": 0.0,
        "s4_monotonicity_weight": 0.0,
        "s4_empty_weight": 1.0,
        "s4_merge_weight": 0.0,
    }
    config = ExpectimaxConfig(depth=2, heuristic="seed004", **{**weights, **kw})  # type: ignore[arg-type]
    return ExpectimaxAgent(config, Rules(rows=2, cols=2))


def test_a_tiny_board_by_hand() -> None:
    """2x2 board [[2, 2], [0, 0]], H = number of empty cells, depth 2 (move, spawn, move, H).

    Left gives [[4, 0], [0, 0]]; a tile appears on one of 3 cells, then the best move's empty count:
    2 at (0,1): 2, 4 at (0,1): 3 (4+4 merge), 2 at (1,0): 2, 4 at (1,0): 3, 2 or 4 at (1,1): 2.
    So left = ((.9*2 + .1*3) + (.9*2 + .1*3) + (.9*2 + .1*2)) / 3 = 6.2 / 3.
    """
    a = empty_counter()
    values = a.move_values(Game(rules=Rules(rows=2, cols=2), board=np.array([[2, 2], [0, 0]]), seed=0))
    assert set(values) == {Direction.LEFT, Direction.RIGHT, Direction.DOWN}
    assert values[Direction.LEFT] == pytest.approx(6.2 / 3)
    assert values[Direction.RIGHT] == pytest.approx(6.2 / 3)  # the mirror image


def test_a_lost_position_is_worth_minus_the_loss_penalty() -> None:
    """[[4, 2], [4, 0]] right -> [[4, 2], [0, 4]]: a 2 at (1,0) leaves no move (-loss), a 4 allows a
    merge that keeps one cell empty: right = .9 * -100 + .1 * 1."""
    a = empty_counter(loss_penalty=100.0)
    values = a.move_values(Game(rules=Rules(rows=2, cols=2), board=np.array([[4, 2], [4, 0]]), seed=0))
    assert values[Direction.RIGHT] == pytest.approx(0.9 * -100 + 0.1 * 1)


@pytest.mark.parametrize("heuristic", ["nneonneo", "seed004"])
def test_transposition_table_changes_no_value(heuristic: str) -> None:
    with_tt = agent(heuristic=heuristic, depth=3, prob_cutoff=0.0, transposition=True)
    without = agent(heuristic=heuristic, depth=3, prob_cutoff=0.0, transposition=False)
    hits = 0
    for board in BOARDS_4X4:
        game = Game(board=np.array(board), seed=0)
        a, b = with_tt.search(game), without.search(game)
        assert with_tt.last_stats is not None and without.last_stats is not None
        hits += with_tt.last_stats.tt_hits
        assert without.last_stats.tt_hits == 0
        np.testing.assert_array_equal(a, b)  # same sums in the same order: bit-identical
    assert hits > 0  # the table was used, so the equality says something
    board = BOARDS_4X4[1]
    np.testing.assert_array_equal(
        general_values(with_tt, board, 3, use_tt=True), general_values(with_tt, board, 3, use_tt=False)
    )


def test_each_decision_is_independent_of_the_previous_ones() -> None:
    a = agent(depth=3)
    board = BOARDS_4X4[2]
    first = a.search(Game(board=np.array(board), seed=0))
    for other in BOARDS_4X4:
        a.search(Game(board=np.array(other), seed=0))
    np.testing.assert_array_equal(first, a.search(Game(board=np.array(board), seed=0)))


def test_boards_past_32768_use_the_general_path() -> None:
    a = agent(depth=2)
    game = Game(board=np.array([[65536, 2, 0, 0], [4, 0, 0, 0], [0] * 4, [0] * 4]), seed=0)
    values = a.move_values(game)
    assert a.last_stats is not None and not a.last_stats.packed
    assert set(values) == set(game.legal_moves())
    # Two 32768s that a move would merge: a 4-bit cell cannot hold the result.
    game = Game(board=np.array([[32768, 32768, 0, 0], [4, 0, 0, 0], [0] * 4, [0] * 4]), seed=0)
    assert a.act(game) in (Direction.LEFT, Direction.RIGHT)
    assert a.last_stats is not None and not a.last_stats.packed


def test_other_board_shapes() -> None:
    rules = Rules(rows=3, cols=5)
    a = ExpectimaxAgent(ExpectimaxConfig(depth=2), rules, seed=0)
    game = Game(rules=rules, seed=3)
    for _ in range(10):
        game.step(a.act(game))
    assert game.moves == 10


def test_depths_policy_picks_depth_by_free_cells() -> None:
    cfg = ExpectimaxConfig(depth=2, depths_policy=(3, 3, 2, 2, 1))
    assert [cfg.depth_for(n) for n in (0, 1, 2, 3, 4, 15)] == [3, 3, 2, 2, 1, 1]
    assert ExpectimaxConfig(depth=2).depth_for(0) == 2
    a = agent(depths_policy=(3, 3, 2, 2, 1))
    a.search(Game(board=np.array(BOARDS_4X4[1]), seed=0))  # 1 empty cell
    assert a.last_stats is not None and a.last_stats.depth == 3
    a.search(Game(board=np.array(BOARDS_4X4[0]), seed=0))  # 6 empty cells
    assert a.last_stats is not None and a.last_stats.depth == 1


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"depth: must be in \[1, 8\]; got 9"):
        ExpectimaxConfig(depth=9)
    with pytest.raises(ConfigError, match="prob_cutoff: must be below 1"):
        ExpectimaxConfig(prob_cutoff=1.0)
    with pytest.raises(ConfigError, match="heuristic: must be one of nneonneo, seed004"):
        ExpectimaxConfig(heuristic="magic")
    with pytest.raises(ValueError, match="one new tile per move"):
        ExpectimaxAgent(rules=Rules(spawn_per_move=2))


def test_heuristic_lines_by_hand() -> None:
    w = NneonneoWeights()  # nneonneo's own constants
    # [2, 2, 0, 0] = exponents [1, 1, 0, 0]: 2 empty, one run of two equal tiles (merges 2),
    # sum 1 + 1, monotonicity: left-decreasing part 1**4 - 0, increasing part 0 -> min 0.
    assert nneonneo_line([1, 1, 0, 0], w) == 2 * 270 + 2 * 700 - 11 * 2.0
    assert nneonneo_line([0, 0, 0, 0], w) == 4 * 270
    s4 = Seed004Weights()
    # [2, 8, 4, 4]: roughness |1-3| + |3-2| + 0 = 3; ups 2, downs 1 -> monotonicity -1; one merge.
    assert seed004_line([1, 3, 2, 2], s4, count_empty=True) == pytest.approx(-0.1 * 3 + 1.0 * -1 + 3.5 * 1)
    assert seed004_line([1, 0, 1, 0], s4, count_empty=True) == pytest.approx(2.7 * 2 + 3.5 * 1)
    assert seed004_line([1, 0, 1, 0], s4, count_empty=False) == pytest.approx(3.5 * 1)


def test_row_tables_match_the_line_functions() -> None:
    h = Heuristic("seed004", Seed004Weights())
    rows, cols = line_tables(h)
    for x in (0, 0x0011, 0x4321, 0xF0F0, 0xFFFF):
        line = [x & 15, (x >> 4) & 15, (x >> 8) & 15, (x >> 12) & 15]
        assert rows[x] == h.row_fn(line) and cols[x] == h.col_fn(line)


def test_expectimax_plays_a_decent_game() -> None:
    """A smoke test with an expected level: depth 2 reaches 512 on this seed (random play: ~128)."""
    a = agent(depth=2)
    game = Game(seed=11)
    while not game.game_over and game.max_tile < 512:
        game.step(a.act(game))
    assert game.max_tile >= 512


@pytest.mark.parametrize(
    "settings",
    [
        {"depth": 1},
        {"depth": 2, "prob_cutoff": 0.01},
        {"depths_policy": (2, 2, 1), "heuristic": "seed004"},
    ],
)
def test_play_fast_is_the_game_played_through_act(settings: dict) -> None:
    # the jitted game loop against its slow twin: Game(seed) stepped with agent.act, move for move
    agent = ExpectimaxAgent(ExpectimaxConfig(**settings))
    fast = agent.play_fast(2, seed=31)
    for i in range(2):
        game = Game(seed=31 + i)
        slow = ExpectimaxAgent(ExpectimaxConfig(**settings))
        while not game.game_over:
            game.step(slow.act(game))
        assert fast["score"][i] == game.score
        assert fast["moves"][i] == game.moves
        assert fast["max_tile"][i] == game.max_tile


def test_play_fast_refuses_other_rules() -> None:
    with pytest.raises(ValueError, match="4x4"):
        ExpectimaxAgent(ExpectimaxConfig(), rules=Rules(rows=3, cols=3)).play_fast(1)
