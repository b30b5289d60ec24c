"""A person's progress over time: score, highest tile, review accuracy and blunders per game phase. Qt-free.

The one call both front ends use (the Progress tab and ``python main.py progress``): :func:`progress`
reads the chosen games from the store, oldest first, and for each one that has a stored review by the
reviewer grades its moves again from the stored values (:func:`studio.services.review.grade_stored`; grades
are never stored, so a change of thresholds shows here at once).

Which games (``source``): ``mine`` (the default) is every game the person played a move in: alone,
or shared with an agent under Watch (source ``mixed``); ``human`` the games the person played alone;
any other store source (``mixed``, ``agent``, ``evaluation``, ``training``, ``imported``) its games;
``all`` every game. "Mine" never holds an arena, evaluation or training game. Games started on or
after ``since``, the newest ``limit`` of them. The game being played counts once it has a move (its
review covers the moves made when it was reviewed; reviewing again goes on from there). Left out:
games with no move and damaged rows.

Whose moves: in a game the person played in, only the person's moves count (their number, accuracy
and blunders); the agents' moves of a mixed game are not the person's. A game without the person
(``agent``, ``evaluation`` ...) counts every move.

Which review: the one by ``reviewer`` (None: :func:`studio.services.review.default_reviewer`, the same
reviewer as the Replay tab, the coach and ``review``), when it covers every move of the game; else the
game is listed in :attr:`Progress.unreviewed`, so a front end can offer to review it with
:func:`studio.services.review.review_games`. An unfinished review is not used: its accuracy would be
that of the opening only, and reviewing the game finishes it.

Game phases go by the highest tile on the board *before* the move (:data:`PHASES`): "< 512" (the
opening, where little is at stake), then one phase per tile 512, 1024, 2048, and "4096+" for
everything past (few games get there, so one bucket keeps its share readable). The blunder share of a
phase is blunders / graded moves in that phase, where graded moves are the reviewed moves that count
and were not forced (a forced move has no alternative to blunder against; the accuracy leaves them
out too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from agents.review import BLUNDER, accuracy
from engine import Rules
from engine.store import SOURCE_FILTERS, GameFilter, GameStore, GameSummary, format_time
from studio.services.review import PHASE_FLOORS, PHASES, Reviewer, default_reviewer, grade_stored, phase_of

__all__ = [
    "ALL",
    "MINE",
    "PHASES",
    "PHASE_FLOORS",
    "SOURCES",
    "GameProgress",
    "Progress",
    "phase_of",
    "progress",
]

#: The ``source`` that means every game.
ALL = "all"
#: The ``source`` that means every game the person played a move in (the default).
MINE = "mine"
#: What ``source`` accepts.
SOURCES: tuple[str, ...] = (MINE, *SOURCE_FILTERS, ALL)
#: The most games one call reads by default (the newest): a training store holds 10^5 games and this
#: view is about a person's own, a few hundred at most.
DEFAULT_LIMIT = 2000


def _share(blunders: int, graded: int) -> float | None:
    return blunders / graded if graded else None


@dataclass(frozen=True)
class GameProgress:
    """One game's figures. ``accuracy`` (percent) and ``reviewer`` (its label) are None when the game
    has no complete review; ``moves`` counts the moves that are the subject's (the person's in a game
    they played in); ``blunders[p]`` / ``graded[p]`` count those of phase ``p`` (:data:`PHASES`) graded
    blunder / graded at all (not forced); all zero without a review. ``status``: the game's
    (``playing`` for the game in progress)."""

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
    status: str = "finished"

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
            "status": self.status,
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
    reviewer: str | None  # the reviewer's label
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
            return "No games of yours yet: play one in the Play tab" if self.source == MINE else "No games"
        acc = self.mean_accuracy
        unreviewed = len(self.unreviewed)
        moves = sum(g.moves for g in self.games)
        whose = "your moves" if self.source in (MINE, "human") else "moves"
        return " · ".join(
            [
                f"{len(self.games):,} game{'s' if len(self.games) != 1 else ''}",
                f"{moves:,} {whose}",
                f"mean score {self.mean_score:,.0f}",
                f"best tile {self.best_tile:,}",
                "mean accuracy " + ("-" if acc is None else f"{acc:.1f} %"),
                f"{unreviewed:,} unreviewed",
                f"reviewer {self.reviewer}",
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


def game_progress(
    store: GameStore,
    summary: GameSummary,
    reviewer: Reviewer,
    moves: int | None = None,
    key: str | None = None,
) -> GameProgress:
    """One game's figures (see the module docstring for whose moves, the review used and the phases).

    ``moves``: the subject's moves when the caller counted them already (:func:`subject_moves`). The
    game's moves are read only when it has a complete review to grade (a library of 10^5 games has
    thousands of the person's, most of them never reviewed). ``key``: ``reviewer.key()``, when the
    caller has it (working it out reads the reviewer's calibration file)."""
    if moves is None:
        moves = subject_moves(summary, _per_player(store, summary))
    base = GameProgress(
        summary.id,
        summary.started,
        summary.source,
        summary.score,
        summary.max_tile,
        moves,
        status=summary.status,
    )
    info = store.get_review(summary.id, reviewer.key() if key is None else key)
    if info is None or info.reviewed < summary.n_moves:
        return base
    game = grade_stored(store.load_game(summary.id), store.review_values(info.id), info.reviewer)
    blunders = [0] * len(PHASES)
    graded = [0] * len(PHASES)
    for g, p in zip(game.grades, game.phases):
        if g.graded:
            graded[p] += 1
            blunders[p] += g.grade == BLUNDER
    return replace(
        base,
        accuracy=accuracy(game.grades),
        reviewer=reviewer.label,
        blunders=tuple(blunders),
        graded=tuple(graded),
    )


def _shared(summary: GameSummary) -> bool:
    """A game of several players, one of them the person: only some of its moves are the person's."""
    return len(summary.players) > 1 and any(p.is_human for p in summary.players)


def _per_player(store: GameStore, summary: GameSummary) -> dict[int, int]:
    return store.moves_per_player([summary.id])[summary.id] if _shared(summary) else {}


def subject_moves(summary: GameSummary, per_player: dict[int, int]) -> int:
    """The moves that count of a game: the person's in a game they played in (``per_player``: moves
    by player index, needed only for a shared game), else every move."""
    if not _shared(summary):
        return summary.n_moves
    return sum(
        n for i, n in per_player.items() if 0 <= i < len(summary.players) and summary.players[i].is_human
    )


def _shown(g: GameSummary, source: str) -> bool:
    """Whether a game belongs in the view: with a move (the game in progress too), sound; in "mine",
    only games the person made a move in."""
    if g.n_moves <= 0 or g.problem is not None or g.status not in ("finished", "abandoned", "playing"):
        return False
    return source != MINE or any(p.is_human for p in g.players)


def progress(
    store: GameStore,
    *,
    source: str = MINE,
    since: Any = None,
    reviewer: Reviewer | None = None,
    limit: int | None = DEFAULT_LIMIT,
) -> Progress:
    """The selection's games oldest first, with their figures (see the module docstring).

    ``source``: one of :data:`SOURCES` (``mine``, a store source filter, or ``all``); ``since``: a date
    (``YYYY-MM-DD``, a datetime or Unix seconds; a bad one is a one-line StoreError); ``reviewer``:
    whose reviews to read (None: the default reviewer for each game's rules); ``limit``: the newest
    this many games (None: every one).
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    shown: list[GameSummary] = []
    match = GameFilter(
        source=None if source in (ALL, MINE) else source,
        played_by="human" if source == MINE else None,
        since=since,
    )
    page = max(limit or 0, 500)
    offset = 0
    while limit is None or len(shown) < limit:  # newest first, a page at a time, until enough are kept
        games = store.list_games(match, limit=page, offset=offset)
        shown += [g for g in games if _shown(g, source)]
        if len(games) < page:
            break
        offset += page
    if limit is not None:
        shown = shown[:limit]
    chosen: dict[Rules, tuple[Reviewer, str]] = {}  # rules -> the reviewer and its key, worked out once
    # The person's moves of every shared game in one query, not a game's moves read per game.
    per_player = store.moves_per_player([g.id for g in shown if _shared(g)])
    out = []
    for g in reversed(shown):  # the store lists newest first
        if g.rules not in chosen:
            who = reviewer or default_reviewer(store, g.rules)
            chosen[g.rules] = (who, who.key())
        who, key = chosen[g.rules]
        out.append(game_progress(store, g, who, subject_moves(g, per_player.get(g.id, {})), key))
    label = reviewer.label if reviewer is not None else default_reviewer(store).label
    return Progress(source, None if since is None else str(since), label, out)


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
