"""Grading a move against a reviewer's values: the loss in units a person reads, and its grade.

Pure functions (numpy and the engine only, no store, no Qt): the game review
(:mod:`studio.services.review`) grades every move of a logged game with them, and a live coach can
grade one Play move the same way. The reviewer is any agent; its move values
(:meth:`agents.base.Agent.move_values`, in action order, NaN for an illegal move) are read according
to its :attr:`~agents.base.Agent.value_kind`:

``"points"`` (expected future score: the n-tuple network, 1-ply or with search)
    ``loss`` = best value − played value, in expected points. ``relative`` = loss / max(|best value|, 1):
    the share of what the position is still worth (the points expected from here on) that the move
    gives up. Grades: **best** loss 0 (a tie with the best counts); **good** loss <= 20 pts or
    relative <= 1 %; **inaccuracy** relative <= 3 %; **mistake** relative <= 10 %; **blunder** beyond
    (a trained network rates pulling a 1024-512-256 chain out of its corner at 11-13 % of what the
    position is worth: a blunder).
    The position's value (for a graph) is the expected *final* score: score so far + best value.
``"rank"`` / ``"share"`` (heuristic sums, Q-values, probabilities: only the order means something)
    ``loss`` = best value − played value in the reviewer's own units, ``relative`` = that gap relative
    to the larger magnitude of the two values, clipped to 0..1 (as the hints' "3 % worse"), plus the
    played move's ``rank`` (1 = best). Grades: **best** 0; **good** <= 2 %; **inaccuracy** <= 5 %;
    **mistake** <= 15 %; **blunder** beyond. The position's value is the best value (a curve maker
    normalises it over the game: :func:`normalised_curve`).

Whatever the kind: a move that is the only legal move is **forced** (counts as best, and is left out
of the accuracy); a move that may end the game with the next tile (some spawn leaves no legal move)
when another legal move cannot is a **blunder** whatever its loss, unless the reviewer itself prefers
it (a reviewer never blunders against itself). A position where every legal value is equal grades
every move best.

Accuracy of a game: the mean over the moves that were not forced of a per-move score
``100 · (1 − min(relative / B, 1))`` with B the kind's blunder threshold (10 % for points, 15 % for
rank): 100 for a best move, at least 99 for a good one, 0 for any blunder; 100 when every
move was forced or there were none. A game played by the reviewer itself, at the same depth, scores
100 %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agents.hints import rank_of, relative_gap, same
from engine import DIRECTIONS, Direction
from engine.core import legal_mask, slide_unchecked

FORCED = "forced"
BEST = "best"
GOOD = "good"
INACCURACY = "inaccuracy"
MISTAKE = "mistake"
BLUNDER = "blunder"
#: Every grade, best first (a summary counts moves per grade in this order).
GRADES: tuple[str, ...] = (FORCED, BEST, GOOD, INACCURACY, MISTAKE, BLUNDER)
#: Grades a "next mistake" navigation stops at.
MISTAKES: tuple[str, ...] = (INACCURACY, MISTAKE, BLUNDER)

#: points reviewers: a loss up to this many expected points is "good" whatever its share
GOOD_POINTS = 20.0
#: upper bounds of ``relative`` for good, inaccuracy, mistake (beyond: blunder), by kind of values
THRESHOLDS: dict[str, tuple[float, float, float]] = {
    "points": (0.01, 0.03, 0.10),
    "rank": (0.02, 0.05, 0.15),
}


@dataclass(frozen=True)
class MoveGrade:
    """One move judged: the reviewer's ``values`` (legal moves only), the ``played`` and ``best`` move,
    the ``loss`` (expected points for a points reviewer, else the reviewer's units), ``relative``
    (0..1, see the module docstring), the played move's ``rank`` among the legal ones (1 = best),
    ``grade``, the per-move accuracy ``score`` (0..100), the position's ``value`` (expected final
    score for points reviewers, else the best value) and ``risky`` (the move may lose the game at once
    while another may not)."""

    index: int
    played: Direction
    best: Direction
    values: dict[Direction, float]
    loss: float
    relative: float
    rank: int
    grade: str
    score: float
    value: float
    risky: bool = False

    @property
    def forced(self) -> bool:
        return self.grade == FORCED

    @property
    def is_mistake(self) -> bool:
        return self.grade in MISTAKES


def death_risk(board: npt.NDArray[np.int64], d: Direction) -> bool:
    """True when move ``d`` (legal on ``board``) may end the game: some tile spawned after it leaves
    no legal move. Only an afterstate with one empty cell can; checked on it alone."""
    after, _ = slide_unchecked(board, d)
    empty = np.flatnonzero(after.ravel() == 0)
    if empty.size != 1:
        return False
    for tile in (2, 4):
        s = after.copy()
        s.flat[int(empty[0])] = tile
        if not legal_mask(s).any():
            return True
    return False


def grade_move(
    values: Sequence[float] | npt.NDArray[np.float64],
    played: int,
    kind: str,
    *,
    index: int = 0,
    score_before: float = 0.0,
    board: npt.NDArray[np.int64] | None = None,
) -> MoveGrade:
    """Grade move ``played`` given the reviewer's ``values`` in action order (NaN: illegal).

    ``kind`` is the reviewer's ``value_kind``; ``score_before`` the score before the move (for the
    expected final score); ``board`` (the position, optional) lets a move that may lose the game at
    once be found. A played move the reviewer rated illegal or not finite is graded against the
    worst legal value (a damaged record or a diverged network, never a crash).
    """
    points = kind == "points"
    vals = np.asarray(values, dtype=np.float64)
    legal = [d for d in DIRECTIONS if math.isfinite(float(vals[d]))]
    pd = DIRECTIONS[int(played)]
    if not legal:  # nothing rated: a neutral verdict
        return MoveGrade(index, pd, pd, {}, 0.0, 0.0, 1, BEST, 100.0, float(score_before), False)
    by_dir = {d: float(vals[d]) for d in legal}
    top = max(by_dir.values())
    tied = [d for d in legal if same(by_dir[d], top)]
    best = pd if pd in tied else tied[0]
    mine = by_dir.get(pd, min(by_dir.values()))
    value = float(score_before) + top if points else top
    if len(legal) == 1 and pd in by_dir:
        return MoveGrade(index, pd, pd, by_dir, 0.0, 0.0, 1, FORCED, 100.0, value, False)
    loss = 0.0 if pd in tied else max(0.0, top - mine)
    relative = loss / max(abs(top), 1.0) if points else (min(1.0, relative_gap(top, mine)) if loss else 0.0)
    rank = rank_of(by_dir.values(), mine)
    good, inaccurate, mistaken = THRESHOLDS["points" if points else "rank"]
    if loss == 0.0:
        grade = BEST
    elif relative <= good or (points and loss <= GOOD_POINTS):
        grade = GOOD
    elif relative <= inaccurate:
        grade = INACCURACY
    elif relative <= mistaken:
        grade = MISTAKE
    else:
        grade = BLUNDER
    risky = (
        board is not None
        and loss > 0.0
        and int(np.count_nonzero(board == 0)) <= 1
        and death_risk(board, pd)
        and any(not death_risk(board, d) for d in legal if d != pd)
    )
    if risky:
        grade = BLUNDER
    if grade == BEST:
        score = 100.0
    elif risky:
        score = 0.0
    else:
        score = 100.0 * (1.0 - min(1.0, relative / mistaken))
        if grade == GOOD:
            score = max(score, 99.0)  # within the "good" allowance: at most a point off
    return MoveGrade(index, pd, best, by_dir, loss, relative, rank, grade, score, value, risky)


def accuracy(grades: Sequence[MoveGrade]) -> float:
    """Mean per-move score over the moves that were not forced, in percent (100 with none)."""
    scored = [g.score for g in grades if not g.forced]
    return float(sum(scored) / len(scored)) if scored else 100.0


def grade_counts(grades: Sequence[MoveGrade]) -> dict[str, int]:
    """Moves per grade, every grade present (in :data:`GRADES` order)."""
    counts = dict.fromkeys(GRADES, 0)
    for g in grades:
        counts[g.grade] += 1
    return counts


def normalised_curve(grades: Sequence[MoveGrade]) -> list[float]:
    """The positions' values scaled to 0..1 over the game (all 0.5 when they are all equal)."""
    vals = [g.value for g in grades]
    if not vals:
        return []
    low, high = min(vals), max(vals)
    if high - low <= 0:
        return [0.5] * len(vals)
    return [(v - low) / (high - low) for v in vals]
