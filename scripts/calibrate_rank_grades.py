"""Calibrate the review grades of "rank" reviewers (heuristic expectimax) against a points reviewer.

    python scripts/calibrate_rank_grades.py CHECKPOINT --games 24 --seed 1

A review by the heuristic expectimax (values that only order the moves) grades a move by its relative
gap to the best one, with thresholds of its own (``agents.review.THRESHOLDS["rank"]``); a review by an
n-tuple network grades it by the expected points it gives up. Both should call the same move a
mistake. This script plays games that mix good and bad moves (expectimax depth 1, a random move one
time in ``--eps``), lets the n-tuple checkpoint at 2-ply (the default reviewer) grade every legal move
of every position in points, and the expectimax reviewer at depth 2 rate the same moves; then it fits
the three relative-gap thresholds (good / inaccuracy / mistake) on half of the positions (those at
which the most moves get the same grade from both, over the gaps' percentiles), and
reports how often the two reviewers give the same grade on the other half, with the thresholds in
use and with the fitted ones. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.base import Agent
from agents.expectimax import ExpectimaxAgent, ExpectimaxConfig
from agents.hints import relative_gap
from agents.review import BEST, BLUNDER, GOOD, INACCURACY, MISTAKE, THRESHOLDS, death_risk, grade_move
from engine import Direction, Game, Rules
from studio.services.review import position_values

#: Grades as ordinals (best and good share 1: a move the points reviewer calls best but the rank
#: reviewer does not is on the "good" side of every boundary).
LEVEL = {BEST: 1, GOOD: 1, INACCURACY: 2, MISTAKE: 3, BLUNDER: 4}


def fit_thresholds(
    gaps: npt.NDArray[np.float64], levels: npt.NDArray[np.int64], steps: int = 100
) -> tuple[float, float, float]:
    """Good / inaccuracy / mistake thresholds of the relative gap at which the most moves get the
    points reviewer's grade (``levels`` 1..4), searched over the gaps' percentiles (``steps`` of them,
    plus 0 and 1), in order."""
    cands = np.unique(np.concatenate([[0.0, 1.0], np.quantile(gaps, np.linspace(0, 1, steps + 1))]))
    # at[i, k]: moves of level k with a gap <= cands[i] (cumulative counts: any split is read off them)
    at = np.stack([np.searchsorted(np.sort(gaps[levels == k]), cands, side="right") for k in (1, 2, 3, 4)], 1)
    total = at[-1] if len(cands) else np.zeros(4, dtype=np.int64)
    best, out = -1, (0.0, 0.0, 0.0)
    for i in range(len(cands)):
        for j in range(i, len(cands)):
            # level 1 at or below t1, level 2 in (t1, t2], then the best t3 from j on, vectorised
            head = at[i, 0] + at[j, 1] - at[i, 1]
            tail = at[j:, 2] - at[j, 2] + total[3] - at[j:, 3]
            m = int(np.argmax(tail))
            if head + tail[m] > best:
                best, out = int(head + tail[m]), (float(cands[i]), float(cands[j]), float(cands[j + m]))
    return out


def spearman(x: npt.NDArray[np.float64], y: npt.NDArray[np.int64]) -> float:
    """Rank correlation (ties get their mean rank)."""

    def ranks(a: npt.NDArray) -> npt.NDArray[np.float64]:
        order = np.argsort(a, kind="stable")
        r = np.empty(len(a))
        r[order] = np.arange(len(a), dtype=np.float64)
        for v in np.unique(a):  # ties: the mean of their ranks
            tie = a == v
            r[tie] = r[tie].mean()
        return r

    rx, ry = ranks(x), ranks(y)
    return float(np.corrcoef(rx, ry)[0, 1]) if len(x) > 1 else 0.0


def level_of(gap: float, thresholds: tuple[float, float, float]) -> int:
    good, inaccurate, mistaken = thresholds
    return 1 if gap <= good else 2 if gap <= inaccurate else 3 if gap <= mistaken else 4


def positions(games: int, seed: int, eps: float) -> list[npt.NDArray[np.int64]]:
    """Boards from games of expectimax depth 1 that plays a random legal move with probability ``eps``."""
    player = ExpectimaxAgent(ExpectimaxConfig(depth=1))
    rng = np.random.default_rng(seed)
    out = []
    for k in range(games):
        game = Game(rules=Rules(), seed=seed + k)
        while not game.game_over:
            out.append(game.board.copy())
            legal = game.legal_moves()
            move = legal[int(rng.integers(len(legal)))] if rng.random() < eps else player.act(game)
            game.step(move)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", help="an n-tuple checkpoint: the points reviewer (at 2-ply)")
    parser.add_argument("--games", type=int, default=24, help="games that give the positions (default 24)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--eps", type=float, default=0.2, help="share of random moves (default 0.2)")
    parser.add_argument("--every", type=int, default=3, help="grade one position in N (default 3)")
    args = parser.parse_args(argv)
    points = Agent.load(args.checkpoint)
    if points.value_kind != "points":
        parser.error(f"{args.checkpoint} does not rate moves in points")
    points.config = points.config.replace(search_depth=2, depths_policy=())
    rank = ExpectimaxAgent(ExpectimaxConfig(depth=2))
    gaps: list[float] = []
    levels: list[int] = []
    half: list[int] = []
    boards = positions(args.games, args.seed, args.eps)[:: args.every]
    for n, board in enumerate(boards):
        pv, rv = position_values(points, Rules(), board), position_values(rank, Rules(), board)
        legal = np.flatnonzero(np.isfinite(pv))
        if len(legal) < 2 or not np.isfinite(rv[legal]).all():
            continue  # forced, or a move the heuristic does not rate
        top_r = float(np.nanmax(rv))
        for d in legal:
            if rv[d] >= top_r or death_risk(board, Direction(int(d))):
                continue  # the rank reviewer's best (graded best either way), or a blunder by rule
            grade = grade_move(pv, int(d), "points", board=board).grade
            gaps.append(min(1.0, relative_gap(top_r, rv[d])))
            levels.append(LEVEL[grade])
            half.append(n % 2)
    g, lv, h = np.array(gaps), np.array(levels, dtype=np.int64), np.array(half)
    fitted = fit_thresholds(g[h == 0], lv[h == 0])
    test = h == 1

    def agreement(ts: tuple[float, float, float]) -> dict[str, float]:
        mine = np.array([level_of(x, ts) for x in g[test]])
        return {
            "same_grade": round(float(np.mean(mine == lv[test])), 4),
            "within_one": round(float(np.mean(np.abs(mine - lv[test]) <= 1)), 4),
        }

    current = THRESHOLDS["rank"]
    print(
        json.dumps(
            {
                "positions": len(boards),
                "moves_graded": len(g),
                # how well the heuristic's gap orders the moves as the network's grades do
                "spearman": round(spearman(g, lv), 3),
                "points_grades": {
                    name: int(np.sum(lv == k))
                    for name, k in (("good", 1), ("inaccuracy", 2), ("mistake", 3), ("blunder", 4))
                },
                "current": {"thresholds": list(current), **agreement(current)},
                "fitted": {"thresholds": [round(t, 4) for t in fitted], **agreement(fitted)},
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
