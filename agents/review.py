"""Grading a move in one unit a player understands: the expected final score it gives up, in points.

Pure functions (numpy and the engine only, no store, no Qt): the game review
(:mod:`studio.services.review`) grades every move of a logged game with them, and the live coach grades
one Play move the same way. Every reviewer's move values are first brought to **points**, the score a
player can still expect from the position if the reviewer played on from there:

* an n-tuple network (1-ply or with search) already gives points: reward + expected future score;
* heuristic expectimax gives sums of board features that are not points; they go through a
  :class:`Calibration` (a monotone map from its raw value of a move to the score still to come, fitted
  on games it played out to the end: ``python main.py review --calibrate``);
* a reviewer with neither (probabilities, Q-values of other learners) does not grade.

For one position: ``V`` = the best move's value (the expected score still to come with the best move),
``loss`` = ``V`` − the played move's value, in points, and ``Δ`` = ``100 · loss / (score + V + FLOOR)``
the share (in percent) of the expected *final* score that the move gave up (``score``: the score
before the move; ``FLOOR`` keeps a position worth next to nothing from turning a few points into a
large share). The position's value on a graph is that expected final score, ``score + V``.

Grades (from ``loss`` and ``Δ``): **forced** the only legal move (counts as best and is left out of the
accuracy); **best** loss 0 (a tie counts); **good** loss <= 20 pts or Δ <= 1 %; **inaccuracy** Δ <= 3 %;
**mistake** Δ <= 10 %; **blunder** beyond, and any move that may end the game with the next tile while
another move may not (``risky``), whatever its share. A move that ends the game for sure loses the whole
remaining expected score. Values that cannot see a game's end (a 1-ply network, depth-1 expectimax)
are first corrected for it: a move whose afterstate dies with probability ``p`` keeps its reward and
``1 − p`` of the rest.

Accuracy: how much of the expected final score the moves kept. A move that gives up ``Δ`` percent
keeps ``1 − Δ/100`` of it, and losses compound: over the graded moves the share kept is
``kept = Π (1 − Δ/100)``, the share given up ``1 − kept`` (what every summary shows beside the
accuracy, with the points). The figures::

    move accuracy  = 100 · (1 − Δ/100) ** POWER                            POWER = 3
    game accuracy  = 100 · kept ** (POWER · SPAN / max(n, SPAN))           SPAN = 100 moves
                   = the product of the moves' accuracies, over every SPAN moves

``n``: the graded moves (those that count and were not forced; with none, 100 %). A game of up to
SPAN moves (a short or unfinished one) is judged on everything it gave up; a longer one on what it
gives up per SPAN moves (the geometric rate), so a long game and its first hundred moves read on one
scale. POWER spreads the figure where players differ: giving up 1 % of the expected final score in a
hundred moves reads 97 %, 5 % 86 %, 15 % 61 %, 26 % 41 %, 50 % 12.5 %. It was chosen from a strong
reviewer's values of the first hundred moves of fixed-seed games: a down/left alternator gave up
14-16 % of the expected final score (so it reads at most 70 %), expectimax depth 1 3-6 % (83-91 %);
expectimax depth 2 reads 95 % while it gives up at most 1.7 %. ``python main.py bench review -o
accuracy=1`` measures it with the data dir's reviewer: a reviewer whose values of near-equal moves
differ by noise (a network trained for minutes) charges that noise to every player, and every figure
reads lower. A reviewer grading its own moves at its own depth scores 100 %. The same formula gives
the accuracy of one phase of a game or of one player's moves.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from engine import DIRECTIONS, Direction
from engine.core import legal_mask, slide_unchecked

if TYPE_CHECKING:
    from engine.store.model import GameRecord

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

#: a loss up to this many expected points is "good" whatever its share
GOOD_POINTS = 20.0
#: upper bounds of Δ (percent of the position's remaining expected score) for good, inaccuracy, mistake
THRESHOLDS: tuple[float, float, float] = (1.0, 3.0, 10.0)
#: points added to a position's expected final score before the share is taken (module docstring)
FLOOR = 500.0
#: accuracy = (share of the expected final score kept) ** POWER (module docstring: why 3)
POWER = 3.0
#: a game longer than this many graded moves is judged per this many moves (module docstring)
SPAN = 100
#: How far a probability computed from a tile spawn (0.9 / 0.1) may be from 0 to count as "may die".
_EPS = 1e-12


def move_accuracy(delta: float) -> float:
    """Per-move accuracy (0..100) of a move that gave up ``delta`` percent of the expected final score:
    ``100 · (1 − Δ/100) ** POWER`` (a non-finite or whole loss: 0)."""
    return 100.0 * _kept(delta) ** POWER


def _kept(delta: float) -> float:
    """The share of the expected final score a move giving up ``delta`` percent keeps (0..1)."""
    if not math.isfinite(delta):
        return 0.0
    return 1.0 - min(max(delta, 0.0), 100.0) / 100.0


@dataclass(frozen=True)
class MoveGrade:
    """One move judged: the reviewer's ``values`` in points (legal moves only), the ``played`` and
    ``best`` move, the ``loss`` (expected points), ``relative`` (Δ / 100: the share of the expected
    final score given up), the played move's ``rank`` among the legal ones (1 = best), ``grade``,
    the per-move accuracy ``score`` (0..100), the position's ``value`` (expected final score),
    ``risky`` (the move may lose the game at once while another may not), who made it (``player``,
    a label such as "you" or "expectimax") and whether it counts in the accuracy (``counted``: the
    person's moves in a game several players shared)."""

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
    player: str = ""
    counted: bool = True

    @property
    def forced(self) -> bool:
        return self.grade == FORCED

    @property
    def graded(self) -> bool:
        """True when the move counts in its player's accuracy (not forced)."""
        return self.counted and not self.forced

    @property
    def is_mistake(self) -> bool:
        return self.grade in MISTAKES

    @property
    def remaining(self) -> float:
        """The position's remaining expected score with the best move (points)."""
        return max(self.values.values()) if self.values else 0.0


def death_chance(board: npt.NDArray[np.int64], d: Direction, p4: float = 0.1) -> float:
    """Probability that move ``d`` (legal on ``board``) ends the game: the tile spawned after it leaves
    no legal move. Only an afterstate with one empty cell can; checked on it alone."""
    after, _ = slide_unchecked(board, d)
    empty = np.flatnonzero(after.ravel() == 0)
    if empty.size != 1:
        return 0.0
    p = 0.0
    for tile, chance in ((2, 1.0 - p4), (4, p4)):
        s = after.copy()
        s.flat[int(empty[0])] = tile
        if not legal_mask(s).any():
            p += chance
    return p


def death_risk(board: npt.NDArray[np.int64], d: Direction) -> bool:
    """True when move ``d`` (legal on ``board``) may end the game with the next tile."""
    return death_chance(board, d) > _EPS


def grade_move(
    values: Sequence[float] | npt.NDArray[np.float64],
    played: int,
    *,
    index: int = 0,
    score_before: float = 0.0,
    board: npt.NDArray[np.int64] | None = None,
    sees_death: bool = True,
    player: str = "",
    counted: bool = True,
) -> MoveGrade:
    """Grade move ``played`` given the reviewer's ``values`` in points, in action order (NaN: illegal).

    ``score_before`` is the score before the move (for the expected final score); ``board`` (the
    position, optional) lets a move that may lose the game at once be found, and, when the values do
    not see a game's end (``sees_death`` False: a 1-ply network), corrects them for it. A played move
    the reviewer rated illegal or not finite is graded against the worst legal value (a damaged record
    or a diverged network, never a crash).
    """
    vals = np.asarray(values, dtype=np.float64)
    legal = [d for d in DIRECTIONS if math.isfinite(float(vals[d]))]
    pd = DIRECTIONS[int(played)]
    if not legal:  # nothing rated: a neutral verdict
        return MoveGrade(
            index, pd, pd, {}, 0.0, 0.0, 1, BEST, 100.0, float(score_before), False, player, counted
        )
    by_dir = {d: float(vals[d]) for d in legal}
    risky = False
    if board is not None and len(legal) > 1 and int(np.count_nonzero(board == 0)) <= 1:
        deaths = {d: death_chance(board, d) for d in legal}
        if not sees_death:
            for d, p in deaths.items():
                if p > _EPS:
                    reward = float(slide_unchecked(board, d)[1])
                    by_dir[d] = reward + (1.0 - p) * (by_dir[d] - reward)
        risky = deaths.get(pd, 0.0) > _EPS and any(p <= _EPS for d, p in deaths.items() if d != pd)
    top = max(by_dir.values())
    tied = [d for d in legal if _same(by_dir[d], top)]
    best = pd if pd in tied else tied[0]
    mine = by_dir.get(pd, min(by_dir.values()))
    value = float(score_before) + top
    if len(legal) == 1 and pd in by_dir:
        return MoveGrade(index, pd, pd, by_dir, 0.0, 0.0, 1, FORCED, 100.0, value, False, player, counted)
    loss = 0.0 if pd in tied else max(0.0, top - mine)
    delta = 100.0 * loss / (max(value, 0.0) + FLOOR)
    rank = 1 + sum(1 for v in by_dir.values() if v > mine and not _same(v, mine))
    good, inaccurate, mistaken = THRESHOLDS
    if loss == 0.0:
        grade = BEST
    elif delta <= good or loss <= GOOD_POINTS:
        grade = GOOD
    elif delta <= inaccurate:
        grade = INACCURACY
    elif delta <= mistaken:
        grade = MISTAKE
    else:
        grade = BLUNDER
    if risky and loss > 0.0:
        grade = BLUNDER  # it may end the game while another move may not: never a small slip
    score = 100.0 if loss == 0.0 else move_accuracy(delta)
    return MoveGrade(
        index, pd, best, by_dir, loss, delta / 100.0, rank, grade, score, value, risky, player, counted
    )


def _same(a: float, b: float) -> bool:
    """Equal up to float noise (a tie between two moves the reviewer values the same)."""
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _graded(grades: Sequence[MoveGrade], uncounted: bool) -> list[MoveGrade]:
    return [g for g in grades if not g.forced and (uncounted or g.counted)]


def _log_kept(grades: Sequence[MoveGrade]) -> float:
    """ln of the share of the expected final score ``grades`` kept, compounded (−inf: all given up)."""
    total = 0.0
    for g in grades:
        kept = _kept(100.0 * g.relative)
        if kept <= 0.0:
            return -math.inf
        total += math.log(kept)
    return total


def accuracy(grades: Sequence[MoveGrade], *, uncounted: bool = False) -> float:
    """The accuracy in percent of the moves that count and were not forced (module docstring):
    ``100 · kept ** (POWER · SPAN / max(n, SPAN))``, ``kept`` the share of the expected final score
    they kept, compounded (100 with none). ``uncounted``: every move that was not forced, whoever
    played it (one player's figure in a shared game, where only the subject's moves count)."""
    picked = _graded(grades, uncounted)
    if not picked:
        return 100.0
    log_kept = _log_kept(picked)
    if log_kept == -math.inf:
        return 0.0
    return float(100.0 * math.exp(POWER * log_kept * SPAN / max(len(picked), SPAN)))


def given_up(grades: Sequence[MoveGrade], *, uncounted: bool = False) -> float:
    """The share (0..1) of the expected final score that the moves that count and were not forced
    gave up, compounded: ``1 − Π (1 − Δ/100)`` (0 with none)."""
    return float(1.0 - math.exp(_log_kept(_graded(grades, uncounted))))


def given_up_rate(grades: Sequence[MoveGrade], *, uncounted: bool = False) -> float:
    """The share (0..1) given up per :data:`SPAN` graded moves (the whole share for a shorter game):
    what the accuracy is the POWER-th power of (``accuracy = 100 · (1 − rate) ** POWER``)."""
    picked = _graded(grades, uncounted)
    if not picked:
        return 0.0
    return float(1.0 - math.exp(_log_kept(picked) * SPAN / max(len(picked), SPAN)))


def grade_counts(grades: Sequence[MoveGrade]) -> dict[str, int]:
    """Moves per grade among those that count, every grade present (in :data:`GRADES` order)."""
    counts = dict.fromkeys(GRADES, 0)
    for g in grades:
        if g.counted:
            counts[g.grade] += 1
    return counts


# ------------------------------------------------------------------------------------ logged games


def review_subject(rec: GameRecord) -> tuple[str, npt.NDArray[np.bool_]]:
    """Whose accuracy a review of ``rec`` is, and which moves count: the person's when the person
    played in the game, else every move."""
    if any(p.is_human for p in rec.summary.players):
        return "you", rec.moves_by(kind="human")
    return "every player", np.ones(rec.n_moves, dtype=bool)


def grade_record(rec: GameRecord, values: npt.ArrayLike, reviewer: Mapping[str, Any]) -> list[MoveGrade]:
    """Each move of logged game ``rec`` graded from a stored review's raw values (one row of four per
    move, as many as were reviewed; ``reviewer``: what the review's reviewer said about itself, see
    :func:`values_in_points`). Grades are derived, never stored: the game review and imitation's
    ``skip_graded`` filter both grade a stored review with this."""
    raw = np.asarray(values, dtype=np.float64).reshape(-1, 4)
    n = min(len(raw), rec.n_moves)
    points = values_in_points(raw[:n], reviewer)
    sees_death = bool(reviewer.get("sees_death", False))
    _, counted = review_subject(rec)
    labels = [p.label for p in rec.summary.players] or ["?"]
    out = []
    for i in range(n):
        who = int(rec.move_players[i])
        out.append(
            grade_move(
                points[i],
                int(rec.moves[i]),
                index=i,
                score_before=int(rec.scores[i] - rec.rewards[i]),
                board=rec.layouts[i],
                sees_death=sees_death,
                player=labels[who] if 0 <= who < len(labels) else "?",
                counted=bool(counted[i]),
            )
        )
    return out


# ------------------------------------------------------------------------------------ calibration


def values_in_points(values: npt.ArrayLike, reviewer: Mapping[str, Any]) -> npt.NDArray[np.float64]:
    """A stored review's raw values in points, from what its reviewer said about itself (``value_kind``
    and, for a calibrated one, ``calibration``: its knots, as JSON text as stored or as an object, both
    read by :func:`parse_calibration`). A reviewer with neither, or
    whose calibration :func:`parse_calibration` refuses, grades nothing: every value NaN (the game
    review says why with :func:`grading_refusal`; imitation's filter then keeps every move)."""
    raw = np.asarray(values, dtype=np.float64)
    if reviewer.get("value_kind") == "points":
        return raw
    try:
        return parse_calibration(reviewer.get("calibration")).points(raw)
    except ValueError:
        return np.full(raw.shape, np.nan)


def grading_refusal(reviewer: Mapping[str, Any]) -> str | None:
    """Why a stored review's values cannot become points (one line), or None when they can."""
    if reviewer.get("value_kind") == "points":
        return None
    try:
        parse_calibration(reviewer.get("calibration"))
    except ValueError as e:
        return str(e)
    return None


#: Ranges of a calibration's fields (:func:`parse_calibration`): knots per calibration, the games and
#: positions it was fitted on, a raw value's magnitude and a knot's points (a game's score to come).
MAX_KNOTS = 10_000
MAX_COUNT = 10**12
MAX_RAW = 1e15
MAX_POINTS = 1e12
#: search depths a calibration file may hold (the keys of its ``depths``)
MAX_DEPTH = 20


def _real(value: object, name: str, low: float, high: float) -> float:
    """``value`` as a float when it is a JSON number (not a bool, not text) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"calibration {name} must be a number, got {_shown(value)}")
    try:
        x = float(value)
    except OverflowError:  # an int with hundreds of digits
        x = math.inf if value > 0 else -math.inf
    if not (math.isfinite(x) and low <= x <= high):
        raise ValueError(
            f"calibration {name} must be a finite number in [{low:g}, {high:g}], got {_shown(value)}"
        )
    return x


def _count(value: object, name: str) -> int:
    """A count (games, positions): a whole JSON number in [0, MAX_COUNT]."""
    x = _real(value, name, 0.0, float(MAX_COUNT))
    if not x.is_integer():
        raise ValueError(f"calibration {name} must be a whole number, got {_shown(value)}")
    return int(x)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_calibration(obj: object) -> Calibration:
    """**The** parser of a calibration (a dict as :meth:`Calibration.to_json` writes it, or that as JSON
    text): every value that becomes a count, an index, a knot or a weight is finite and in range, or
    it is refused with a one-line ValueError naming the field. Knots: 2..MAX_KNOTS, ``xs`` strictly
    increasing in ±MAX_RAW, ``ys`` non-decreasing in [0, MAX_POINTS], the slope past the last knot
    finite; ``floor`` (None: none) below the first knot; ``games`` / ``positions`` whole, 0..MAX_COUNT."""
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except (ValueError, RecursionError):
            raise ValueError("calibration is not JSON") from None
    if not isinstance(obj, Mapping):
        raise ValueError("no calibration" if obj is None else "calibration must be an object")
    xs_in, ys_in = obj.get("xs"), obj.get("ys")
    for name, seq in (("xs", xs_in), ("ys", ys_in)):
        if not isinstance(seq, list):
            raise ValueError(f"calibration {name} must be a list of numbers")
        if not 2 <= len(seq) <= MAX_KNOTS:
            raise ValueError(f"calibration {name} needs 2+ knots (at most {MAX_KNOTS}), got {len(seq)}")
    assert isinstance(xs_in, list) and isinstance(ys_in, list)
    if len(xs_in) != len(ys_in):
        raise ValueError(f"calibration xs and ys differ in length ({len(xs_in)} and {len(ys_in)})")
    xs = tuple(_real(x, f"xs[{i}]", -MAX_RAW, MAX_RAW) for i, x in enumerate(xs_in))
    ys = tuple(_real(y, f"ys[{i}]", 0.0, MAX_POINTS) for i, y in enumerate(ys_in))
    for i, (a, b) in enumerate(itertools.pairwise(xs)):
        if not b > a:
            raise ValueError(f"calibration xs must increase, xs[{i + 1}] = {b!r} is not above {a!r}")
    for i, (a, b) in enumerate(itertools.pairwise(ys)):
        if b < a:
            raise ValueError(f"calibration ys must not decrease, ys[{i + 1}] = {b!r} is below {a!r}")
    slope = (ys[-1] - ys[0]) / (xs[-1] - xs[0])
    if not math.isfinite(slope):  # knots a subnormal apart: the map past the last knot would overflow
        raise ValueError("calibration xs are too close together for a finite slope")
    floor_in = obj.get("floor")
    floor = -math.inf if floor_in is None else _real(floor_in, "floor", -MAX_RAW, MAX_RAW)
    if not floor < xs[0]:  # at or above the first knot, every fitted value would be worth 0 points
        raise ValueError(f"calibration floor must be below the first knot xs[0] = {xs[0]!r}, got {floor!r}")
    games = _count(obj.get("games", 0), "games")
    positions = _count(obj.get("positions", 0), "positions")
    return Calibration(xs, ys, floor, games, positions)


def parse_depths(obj: object, where: str = "calibration") -> dict[int, Calibration]:
    """A reviewer's calibrations by search depth (``{"1": {...}, "2": {...}}``, the ``depths`` of a
    calibration file), each through :func:`parse_calibration`; a depth key is 1..MAX_DEPTH in ASCII
    digits. A one-line ValueError starting with ``where`` for anything else."""
    if not isinstance(obj, Mapping):
        raise ValueError(f"{where}: depths must be an object")
    out: dict[int, Calibration] = {}
    for key, cal in obj.items():
        text = str(key)
        # str.isdigit() is True for "²", which int() refuses: ASCII digits only
        if not (text.isascii() and text.isdigit() and len(text) <= 2 and 1 <= int(text) <= MAX_DEPTH):
            raise ValueError(f"{where}: depth {_shown(key)} must be a whole number 1..{MAX_DEPTH}")
        try:
            out[int(text)] = parse_calibration(cal)
        except ValueError as e:
            raise ValueError(f"{where}, depth {text}: {e}") from None
    return out


@dataclass(frozen=True)
class Calibration:
    """A monotone map from a reviewer's raw move value to points (the score still to come), as knots
    ``xs`` (increasing raw values) and ``ys`` (non-decreasing points), read by linear interpolation,
    continued past the highest knot at the fit's mean slope; ``floor``: raw values at or below it (a lost position's penalty) are worth
    0 points. ``games`` / ``positions``: what it was fitted on. Read one from JSON with
    :func:`parse_calibration` (the one parser; :meth:`from_json` is it)."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]
    floor: float = -math.inf
    games: int = 0
    positions: int = 0

    def points(self, raw: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``raw`` mapped to points (NaN stays NaN)."""
        r = np.asarray(raw, dtype=np.float64)
        out = np.interp(r, self.xs, self.ys)
        # past the highest knot: on at the fit's mean slope, so moves valued above every fitted
        # position (a near-empty opening board) still differ, in order
        slope = (self.ys[-1] - self.ys[0]) / (self.xs[-1] - self.xs[0])
        high = r > self.xs[-1]
        with np.errstate(over="ignore"):  # a raw value past any knot: inf, refused by the review
            out[high] = self.ys[-1] + slope * (r[high] - self.xs[-1])
        if math.isfinite(self.floor):
            # between the lost-position penalty and the lowest knot: a straight line down to 0 points
            low = (r < self.xs[0]) & (r > self.floor)
            share = (r[low] - self.floor) / (self.xs[0] - self.floor)
            out[low] = share * self.ys[0]
            out[r <= self.floor] = 0.0
        out[~np.isfinite(r)] = np.nan
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "xs": list(self.xs),
            "ys": list(self.ys),
            "floor": self.floor if math.isfinite(self.floor) else None,
            "games": self.games,
            "positions": self.positions,
        }

    @classmethod
    def from_json(cls, obj: object) -> Calibration:
        """The inverse of :meth:`to_json`: :func:`parse_calibration` (one-line ValueError)."""
        return parse_calibration(obj)


def fit_calibration(
    raw: npt.ArrayLike, remaining: npt.ArrayLike, *, bins: int = 24, floor: float = -math.inf, games: int = 0
) -> Calibration:
    """Fit a :class:`Calibration`: ``raw[i]`` a reviewer's value of the move played from position ``i``
    of games it played to the end, ``remaining[i]`` the score those games still made from there.

    Positions are sorted by raw value and cut into ``bins`` equal-count bins; each bin's mean raw value
    and mean remaining score are a knot; pooling adjacent violators (weighted by bin size) makes the
    knots' points non-decreasing, as a move valued higher is never worth fewer expected points.
    """
    r = np.asarray(raw, dtype=np.float64)
    y = np.asarray(remaining, dtype=np.float64)
    ok = np.isfinite(r) & np.isfinite(y) & (r > floor)
    r, y = r[ok], y[ok]
    if r.size < 2 * bins:
        raise ValueError(f"too few positions to calibrate: {r.size} (need {2 * bins})")
    order = np.argsort(r, kind="stable")
    parts = np.array_split(order, bins)
    blocks = [[float(r[p].mean()), float(y[p].mean()), float(p.size)] for p in parts]
    pooled: list[list[float]] = []
    for b in blocks:  # pool adjacent violators
        pooled.append(b)
        while len(pooled) > 1 and pooled[-2][1] > pooled[-1][1]:
            b2, b1 = pooled.pop(), pooled.pop()
            n = b1[2] + b2[2]
            pooled.append([(b1[0] * b1[2] + b2[0] * b2[2]) / n, (b1[1] * b1[2] + b2[1] * b2[2]) / n, n])
    xs, ys = [pooled[0][0]], [pooled[0][1]]
    for x, v, _ in pooled[1:]:
        if x > xs[-1]:
            xs.append(x)
            ys.append(max(v, ys[-1]))
    if len(xs) < 2:
        xs, ys = [xs[0], xs[0] + 1.0], [ys[0], ys[0]]
    return Calibration(tuple(xs), tuple(ys), floor, games, int(r.size))
