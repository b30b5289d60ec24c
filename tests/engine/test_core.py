"""Hand-drawn boards with known results for the general rules path."""

import numpy as np
import pytest

from engine import Direction, Game, IllegalMoveError, Rules, slide, slide_row_left
from engine.core import from_left_frame, to_left_frame


@pytest.mark.parametrize(
    ("row", "expected", "reward"),
    [
        ([2, 2, 2, 2], [4, 4, 0, 0], 8),
        ([2, 0, 2, 4], [4, 4, 0, 0], 4),
        ([4, 4, 4, 0], [8, 4, 0, 0], 8),
        ([2, 4, 8, 16], [2, 4, 8, 16], 0),
        ([0, 0, 0, 2], [2, 0, 0, 0], 0),
        ([65536, 65536, 0, 0], [131072, 0, 0, 0], 131072),
    ],
)
def test_slide_row_left(row, expected, reward):
    assert slide_row_left(row) == (expected, reward)


def test_slide_each_direction_3x3():
    b = np.array([[2, 0, 0], [2, 4, 0], [4, 4, 8]])
    up, r = slide(b, "up")
    assert r == 12 and up.tolist() == [[4, 8, 8], [4, 0, 0], [0, 0, 0]]
    left, r = slide(b, Direction.LEFT)
    assert r == 8 and left.tolist() == [[2, 0, 0], [2, 4, 0], [8, 8, 0]]
    down, r = slide(b, 2)
    assert r == 12 and down.tolist() == [[0, 0, 0], [4, 0, 0], [4, 8, 8]]
    right, r = slide(b, "r")
    assert r == 8 and right.tolist() == [[0, 0, 2], [0, 2, 4], [0, 8, 8]]
    assert b.tolist() == [[2, 0, 0], [2, 4, 0], [4, 4, 8]]  # input untouched


@pytest.mark.parametrize(
    ("board", "message"),
    [
        ([2, 2], "2-D"),
        ([[3, 0], [0, 0]], "power of two"),
        ([[1, 0], [0, 0]], "power of two"),
        ([[-2, 0], [0, 0]], "power of two"),
    ],
)
def test_bad_boards(board, message):
    with pytest.raises(ValueError, match=message):
        slide(board, "up")


def test_unknown_direction_lists_valid_ones():
    with pytest.raises(ValueError, match="up, left, down, right"):
        slide([[2, 2]], "sideways")


@pytest.mark.parametrize(
    "kwargs", [dict(rows=0), dict(p4=1.5), dict(p4=-0.1), dict(rows=2, cols=2, start_tiles=5)]
)
def test_bad_rules(kwargs):
    with pytest.raises(ValueError, match="Rules"):
        Rules(**kwargs)


def test_illegal_move_leaves_game_unchanged():
    g = Game(board=[[2, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], seed=3)
    before = (g.board.copy(), g.score, g.moves, g.rng_state)
    with pytest.raises(IllegalMoveError, match="left"):
        g.step("left")
    assert np.array_equal(g.board, before[0]) and (g.score, g.moves, g.rng_state) == before[1:]


def test_seeded_games_reproduce():
    def play(seed):
        g = Game(seed=seed)
        out = []
        while not g.game_over and g.moves < 200:
            d = g.legal_moves()[g.moves % len(g.legal_moves())]
            out.append((int(d), g.step(d).reward))
        return out, g.board.tolist(), g.score

    assert play(7) == play(7)
    assert play(7) != play(8)


@pytest.mark.parametrize("d", list(Direction))
def test_the_left_frame_of_a_stack_is_each_boards_frame_and_from_left_frame_undoes_it(d):
    boards = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    view = to_left_frame(boards, d)
    for b, v in zip(boards, view):
        assert np.array_equal(to_left_frame(b, d), v)
    assert np.array_equal(from_left_frame(view, d), boards)
    assert np.array_equal(from_left_frame(to_left_frame(boards[0], d), d), boards[0])
    # each line of the view starts at the wall the move slides towards
    walls = {
        Direction.LEFT: boards[0, :, 0],
        Direction.RIGHT: boards[0, :, -1],
        Direction.UP: boards[0, 0, :],
        Direction.DOWN: boards[0, -1, :],
    }
    assert np.array_equal(view[0, :, 0], walls[d])
