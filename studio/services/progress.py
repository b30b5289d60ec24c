"""A person's progress over time: score, highest tile, review accuracy and blunders per game phase. Qt-free.

The one call both front ends use (the Progress tab and ``python main.py progress``): :func:`progress`
reads the chosen games from the store, oldest first, and for each one that has a stored review grades
its moves again from the stored values (:mod:`agents.review`; grades are never stored, so a change of
thresholds shows here at once).

Which games: those of ``source`` (a store source: ``human`` is the games the person played alone,
``agent`` those an agent played in the Play tab; or ``all``, evaluations and training included) started on or after ``since``, the
newest ``limit`` of them. Left out: games still being played (the Play tab's
current game: its review would be stale at the next move), games with no move (nothing to grade) and
damaged rows.

Which review: a *complete* review by ``reviewer`` when one is given and stored, else the newest complete
review of the game by anyone, else none (the game is listed in :attr:`Progress.unreviewed`, so a front
end can offer to review it with :func:`studio.services.review.review_games`). An unfinished review is
not used: its accuracy would be that of the opening only, and reviewing the game finishes it.

Game phases go by the highest tile on the board *before* the move (:data:`PHASES`): "< 512" (the
opening, where little is at stake), then one phase per tile 512, 1024, 2048, and "4096+" for
everything past (few games get there, so one bucket keeps its share readable). The blunder share of a
phase is blunders / graded moves in that phase, where graded moves are the reviewed moves that were
not forced (a forced move has no alternative to blunder against; the accuracy leaves them out too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.review import BLUNDER, FORCED, accuracy
from engine.store import GameStore, GameSummary, ReviewInfo, format_time
from studio.services.review import Reviewer, grades_of

#: Phases by the highest tile on the board before the move: labels, and the least tile of each.
PHASES: tuple[str, ...] = ("< 512", "512", "1024", "2048", "4096+")
PHASE_FLOORS: tuple[int, ...] = (0, 512, 1024, 2048, 4096)
#: The ``source`` that means every game.
ALL = "all"
#: The most games one call reads by default (the newest): a training store holds 10^5 games and this
#: view is about a person's own, a few hundred at most.
DEFAULT_LIMIT = 2000


def phase_of(max_tile: int) -> int:
    """Index into :data:`PHASES` of a position whose highest tile is ``max_tile``."""
    return max(i for i, floor in enumerate(PHASE_FLOORS) if max_tile >= floor)


def _share(blunders: int, graded: int) -> float | None:
    return blunders / graded if graded else None


@dataclass(frozen=True)
class GameProgress:
    """One game's figures. ``accuracy`` (percent) and ``reviewer`` (its label) are None when the game
    has no complete review; ``blunders[p]`` / ``graded[p]`` count the moves of phase ``p``
    (:data:`PHASES`) graded blunder / graded at all (not forced); all zero without a review."""

    game_id: int
    started: float
    source: str
    score: int
    max_tile: int
    moves: int
    accuracy: float | None = None
    reviewer: str | None = None
    blunders: tuple[int, ...] = (0,) * len(PHASES)
    graded: tuple[int, ...] = (0,) * len(PHASES)

    @property
    def date(self) -> str:
        """Local start time, ``YYYY-MM-DD HH:MM``."""
        return format_time(self.started)[:16]

    @property
    def reviewed(self) -> bool:
        return self.accuracy is not None

    @property
    def shares(self) -> list[float | None]:
        """Blunder share per phase (None where the game had no graded move in that phase)."""
        return [_share(b, n) for b, n in zip(self.blunders, self.graded)]

    def to_json(self) -> dict[str, Any]:
        return {
            "game": self.game_id,
            "started": self.started,
            "date": self.date,
            "source": self.source,
            "score": self.score,
            "max_tile": self.max_tile,
            "moves": self.moves,
            "accuracy": None if self.accuracy is None else round(self.accuracy, 2),
            "reviewer": self.reviewer,
            "blunders": dict(zip(PHASES, self.blunders)),
            "graded": dict(zip(PHASES, self.graded)),
            "blunder_share": {p: _rounded(s) for p, s in zip(PHASES, self.shares)},
        }


def _rounded(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


@dataclass(frozen=True)
class Progress:
    """The games of a selection in time order (oldest first) and what they add up to."""

    source: str
    since: str | None
    reviewer: str | None  # the preferred reviewer's key (None: the newest review of each game)
    games: list[GameProgress] = field(default_factory=list)

    @property
    def unreviewed(self) -> list[int]:
        """Ids of the games without a complete review, oldest first (what "Review N games" reviews)."""
        return [g.game_id for g in self.games if not g.reviewed]

    @property
    def reviewed(self) -> list[GameProgress]:
        return [g for g in self.games if g.reviewed]

    @property
    def mean_score(self) -> float | None:
        return float(np.mean([g.score for g in self.games])) if self.games else None

    @property
    def best_tile(self) -> int | None:
        return max(g.max_tile for g in self.games) if self.games else None

    @property
    def mean_accuracy(self) -> float | None:
        """Mean of the reviewed games' accuracies (each game counts once, however long)."""
        acc = [g.accuracy for g in self.games if g.accuracy is not None]
        return float(np.mean(acc)) if acc else None

    @property
    def blunders(self) -> tuple[int, ...]:
        """Blunders per phase over every reviewed game."""
        return tuple(sum(g.blunders[p] for g in self.games) for p in range(len(PHASES)))

    @property
    def graded(self) -> tuple[int, ...]:
        """Graded (not forced) moves per phase over every reviewed game."""
        return tuple(sum(g.graded[p] for g in self.games) for p in range(len(PHASES)))

    @property
    def shares(self) -> list[float | None]:
        """Blunder share per phase over every reviewed move of the selection (pooled: a long game
        weighs more than a short one, as it has more moves to blunder)."""
        return [_share(b, n) for b, n in zip(self.blunders, self.graded)]

    def summary(self) -> str:
        """One line: games, mean score, best tile, mean accuracy, games unreviewed."""
        if not self.games:
            return "No games yet"
        acc = self.mean_accuracy
        unreviewed = len(self.unreviewed)
        return " · ".join(
            [
                f"{len(self.games):,} game{'s' if len(self.games) != 1 else ''}",
                f"mean score {self.mean_score:,.0f}",
                f"best tile {self.best_tile:,}",
                "mean accuracy " + ("-" if acc is None else f"{acc:.1f} %"),
                f"{unreviewed:,} unreviewed",
            ]
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "since": self.since,
            "reviewer": self.reviewer,
            "phases": list(PHASES),
            "n_games": len(self.games),
            "mean_score": _rounded(self.mean_score, 2),
            "best_tile": self.best_tile,
            "mean_accuracy": _rounded(self.mean_accuracy, 2),
            "blunders": dict(zip(PHASES, self.blunders)),
            "graded": dict(zip(PHASES, self.graded)),
            "blunder_share": {p: _rounded(s) for p, s in zip(PHASES, self.shares)},
            "unreviewed": self.unreviewed,
            "games": [g.to_json() for g in self.games],
        }


def _chosen_review(reviews: Sequence[ReviewInfo], n_moves: int, key: str | None) -> ReviewInfo | None:
    """The review to read: ``key``'s if complete, else the newest complete one (list is newest first)."""
    complete = [r for r in reviews if r.reviewed >= n_moves]
    preferred = [r for r in complete if r.key == key]
    chosen = preferred or complete
    return chosen[0] if chosen else None


def game_progress(store: GameStore, summary: GameSummary, key: str | None = None) -> GameProgress:
    """One game's figures (see the module docstring for the review used and the phases)."""
    base = GameProgress(
        summary.id, summary.started, summary.source, summary.score, summary.max_tile, summary.n_moves
    )
    info = _chosen_review(store.list_reviews(summary.id), summary.n_moves, key)
    if info is None:
        return base
    rec = store.load_game(summary.id)
    grades = grades_of(rec, store.review_values(info.id), str(info.reviewer.get("value_kind", "rank")))
    blunders = [0] * len(PHASES)
    graded = [0] * len(PHASES)
    for g in grades:
        if g.grade == FORCED:
            continue
        p = phase_of(int(rec.layouts[g.index].max()))
        graded[p] += 1
        blunders[p] += g.grade == BLUNDER
    label = info.reviewer.get("label") or info.reviewer.get("name") or info.key
    return GameProgress(
        summary.id,
        summary.started,
        summary.source,
        summary.score,
        summary.max_tile,
        summary.n_moves,
        accuracy(grades),
        str(label),
        tuple(blunders),
        tuple(graded),
    )


def _shown(g: GameSummary) -> bool:
    """Whether a game belongs in the view: over (not the one being played), with a move, sound."""
    return g.status in ("finished", "abandoned") and g.n_moves > 0 and g.problem is None


def progress(
    store: GameStore,
    *,
    source: str = "human",
    since: Any = None,
    reviewer: Reviewer | None = None,
    limit: int | None = DEFAULT_LIMIT,
) -> Progress:
    """The selection's games oldest first, with their figures (see the module docstring).

    ``source``: a store source filter (``human``, ``agent``, ...) or ``"all"``; ``since``: a date
    (``YYYY-MM-DD``, a datetime or Unix seconds; a bad one is a one-line StoreError); ``reviewer``: whose
    review to prefer; ``limit``: the newest this many games (None: every one).
    """
    shown: list[GameSummary] = []
    where = None if source == ALL else source
    page = max(limit or 0, 500)
    offset = 0
    while limit is None or len(shown) < limit:  # newest first, a page at a time, until enough are kept
        games = store.list_games(source=where, since=since, limit=page, offset=offset)
        shown += [g for g in games if _shown(g)]
        if len(games) < page:
            break
        offset += page
    if limit is not None:
        shown = shown[:limit]
    key = reviewer.key() if reviewer is not None else None
    out = [game_progress(store, g, key) for g in reversed(shown)]  # the store lists newest first
    return Progress(source, None if since is None else str(since), key, out)


def rolling_mean(values: Sequence[float | None], window: int = 10) -> list[float]:
    """Mean of the last ``window`` known values at each point (NaN until the first known value): the
    trend line drawn over a noisy per-game series."""
    out: list[float] = []
    seen: list[float] = []
    for v in values:
        if v is not None and math.isfinite(v):
            seen.append(float(v))
        tail = seen[-window:]
        out.append(sum(tail) / len(tail) if tail else math.nan)
    return out
