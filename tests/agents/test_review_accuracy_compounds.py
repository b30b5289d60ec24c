"""The game accuracy reflects the expected final score given up: losses compound over the moves, so a
hundred small slips that give up 14 % of the expected final score read about 64 %, not the 99.9 %
the old per-move mean of squares gave a mechanical down/left alternator. Hand-built move losses: the
expected final score before each move is 10,000 points (9,500 still to come + FLOOR 500)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.review import FLOOR, POWER, SPAN, accuracy, given_up, given_up_rate, grade_move


def moves(*losses: float) -> list:
    """One graded move per loss (points), each from a position worth 9,500 more points."""
    return [
        grade_move([9_500.0, 9_500.0 - loss, np.nan, np.nan], 1, index=i) for i, loss in enumerate(losses)
    ]


def test_the_denominator_is_ten_thousand_points():
    (g,) = moves(15.0)
    assert 9_500 + FLOOR == 10_000 and g.relative == pytest.approx(0.0015)


@pytest.mark.parametrize(
    "loss, expected_given_up, expected_accuracy",
    [
        (0.0, 0.0, 100.0),
        (1.5, 0.014889, 95.60),  # 0.015 % a move: a strong player's first hundred moves
        (4.5, 0.044012, 87.37),  # 0.045 %: expectimax depth 1's 3-6 %
        (15.0, 0.139389, 63.74),  # 0.15 %: the alternator's 14-16 %, under 70 %
        (50.0, 0.394230, 22.23),  # 0.5 %
    ],
)
def test_a_hundred_equal_slips_compound(loss, expected_given_up, expected_accuracy):
    game = moves(*[loss] * 100)
    assert given_up(game) == pytest.approx(expected_given_up, abs=1e-6)
    assert accuracy(game) == pytest.approx(expected_accuracy, abs=0.01)
    # accuracy is the share kept, cubed
    assert accuracy(game) == pytest.approx(100 * (1 - given_up(game)) ** POWER)


def test_one_game_losing_move_weighs_as_much_as_many_small_ones():
    blunder = moves(*[0.0] * 99, 1_393.89)  # 13.94 % at once
    slips = moves(*[15.0] * 100)  # 0.15 % a hundred times: the same share kept
    assert accuracy(blunder) == pytest.approx(accuracy(slips), abs=0.01)
    assert given_up(blunder) == pytest.approx(0.139389)


def test_more_loss_never_reads_higher():
    previous = math.inf
    for loss in (0.0, 1.0, 5.0, 15.0, 50.0, 200.0, 1_000.0, 5_000.0, 9_500.0):
        figure = accuracy(moves(*[loss] * 40))
        assert figure < previous or figure == previous == 0.0
        previous = figure
    # one more slipping move in a short game: lower; one more best move: the same
    base = moves(*[20.0] * 30)
    assert accuracy([*base, *moves(20.0)]) < accuracy(base)
    assert accuracy([*base, *moves(0.0)]) == pytest.approx(accuracy(base))
    # all that was still to come lost (FLOOR keeps 5 % of the share)
    assert given_up(moves(9_500.0)) == pytest.approx(0.95)
    assert accuracy(moves(9_500.0)) == pytest.approx(100 * 0.05**POWER)


def test_a_long_game_is_judged_per_hundred_moves():
    first = moves(*[15.0] * SPAN)
    whole = moves(*[15.0] * 10 * SPAN)  # the same play ten times as long
    assert accuracy(whole) == pytest.approx(accuracy(first))
    assert given_up_rate(whole) == pytest.approx(given_up(first))
    assert given_up(whole) == pytest.approx(1 - (1 - 0.0015) ** 1000)
    # a short (or unfinished) game: everything it gave up, not scaled up to a hundred moves
    short = moves(*[15.0] * 10)
    assert accuracy(short) == pytest.approx(100 * (1 - 0.0015) ** (10 * POWER))
    assert given_up_rate(short) == given_up(short)


def test_forced_and_uncounted_moves_are_left_out():
    forced = grade_move([9_500.0, np.nan, np.nan, np.nan], 0)
    theirs = grade_move([9_500.0, 8_500.0, np.nan, np.nan], 1, counted=False)
    game = [*moves(15.0), forced, theirs]
    assert accuracy(game) == pytest.approx(accuracy(moves(15.0)))
    assert given_up(game) == pytest.approx(0.0015)
    assert given_up(game, uncounted=True) == pytest.approx(1 - (1 - 0.0015) * (1 - 0.1))
    assert accuracy([]) == 100.0 and given_up([]) == 0.0
