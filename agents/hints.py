"""Hints a player reads: an agent's move values turned into what each move gives up against the best.

Agents rate moves in their own units (:meth:`agents.base.Agent.move_values`): expected future score for
the n-tuple network, a heuristic sum in the hundred-thousands for expectimax, Q-values near 10 for a
trained DQN, probabilities for a policy. Raw, those numbers say little to a person ("−91,591 /
−73,897"), so each agent class declares what its values are (:attr:`Agent.value_kind`) and
:func:`hint_texts` writes one short line per legal move:

``"points"`` (values are expected future score)
    the best move says ``best``; the others what they are expected to cost: ``−240 pts``.
``"rank"`` (values only order the moves: heuristics, Q-values, logits)
    ``best``; the others their place only: ``2nd``, ``3rd`` (moves of the same value share it); a
    move as good as the best says ``tied best``. No gap: a ratio of such values means nothing (a
    heuristic sum can be negative, and a gap relative to each move's own magnitude even put a 3rd
    move "less worse" than the 2nd when the signs differed), and a person would read it as a cost.
``"share"`` (values are probabilities or visit shares, summing to 1)
    each move's share of the rated moves' total (so still 100 % in all when the agent's shares
    include moves that are not legal here): ``best · 62 %``, ``21 %``. Values that cannot be shares
    (a negative one, or a total of 0) are ranked instead.

Whatever the kind, when every legal move has the same value each says ``all equal`` (there is no best:
the agent has no preference), a lone legal move says ``only move``, and a value that is not a finite
number (a diverged network) says ``n/a`` and never counts as the best. Pure Python, no Qt: the CLI can
use it as well as the studio.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine import DIRECTIONS, Direction

#: The kinds of move values an agent may declare (``Agent.value_kind``).
VALUE_KINDS = ("points", "rank", "share")

MINUS = "\u2212"  # a real minus sign: "−240 pts" reads better than "-240 pts"
BEST = "best"
TIED = "tied best"
ALL_EQUAL = "all equal"
ONLY = "only move"
NOT_A_NUMBER = "n/a"


@dataclass(frozen=True)
class Hints:
    """One line per rated move (``texts``), the best move (None when there is none: all equal, or no
    finite value) and a one-line ``summary`` of the position ("" when there is nothing to add)."""

    texts: dict[Direction, str]
    best: Direction | None
    summary: str = ""


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def same(a: float, b: float) -> bool:
    """Two move values an agent means as equal (float noise aside)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def rank_of(values: Iterable[float], v: float) -> int:
    """1 + how many of ``values`` are strictly better than ``v`` (ties share a rank)."""
    return 1 + sum(1 for e in values if e > v and not same(e, v))


def _percent(fraction: float) -> str:
    """A fraction as a short percentage: ``62 %``, ``3 %``, ``0.5 %``, ``<0.1 %``."""
    pct = 100.0 * fraction
    if pct >= 9.95:
        return f"{pct:,.0f} %"
    if pct >= 0.95:
        return f"{pct:.0f} %"
    if pct >= 0.05:
        return f"{pct:.1f} %"
    return "<0.1 %"


def _points(gap: float) -> str:
    if gap < 0.5:
        return f"{MINUS}<1 pt"
    n = round(gap)
    return f"{MINUS}{n:,} pt{'' if n == 1 else 's'}"


def hint_texts(values: Mapping[Direction, float], kind: str, choice: Direction | None = None) -> Hints:
    """What each move in ``values`` gives up against the best, in words (see the module docstring).

    ``kind`` is the agent's :attr:`~agents.base.Agent.value_kind`. ``choice`` (the move the agent
    plays, when known) wins a tie for best; otherwise ties go by action order, as in ``Agent.act``.
    """
    if kind not in VALUE_KINDS:
        raise ValueError(f"unknown kind of move values {kind!r}: one of {', '.join(VALUE_KINDS)}")
    moves = [d for d in DIRECTIONS if d in values]
    vals = {d: float(values[d]) for d in moves}
    texts = {d: NOT_A_NUMBER for d in moves}
    finite = [d for d in moves if math.isfinite(vals[d])]
    if not finite:
        return Hints(texts, None)
    top = max(vals[d] for d in finite)
    low = min(vals[d] for d in finite)
    if len(finite) == 1:
        (only,) = finite
        texts[only] = ONLY if len(moves) == 1 else BEST
        return Hints(texts, only, _summary(kind, vals, only))
    if same(top, low):
        for d in finite:
            texts[d] = ALL_EQUAL
        return Hints(texts, None)
    tied = [d for d in finite if same(vals[d], top)]
    best = choice if choice in tied else tied[0]
    if kind == "share" and (low < 0 or sum(vals[d] for d in finite) <= 0):
        kind = "rank"  # not shares after all (a plug-in agent's logits): rank them rather than lie
    total = sum(vals[d] for d in finite)
    for d in finite:
        v = vals[d]
        if kind == "share":
            share = _percent(v / total)
            texts[d] = f"{BEST} · {share}" if d is best else share
        elif d is best:
            texts[d] = BEST
        elif same(v, top):
            texts[d] = TIED
        elif kind == "points":
            texts[d] = _points(top - v)
        else:
            texts[d] = ordinal(rank_of((vals[e] for e in finite), v))
    return Hints(texts, best, _summary(kind, vals, best))


def _summary(kind: str, vals: Mapping[Direction, float], best: Direction) -> str:
    if kind == "points":
        return f"expects about {vals[best]:,.0f} more points"
    return ""
