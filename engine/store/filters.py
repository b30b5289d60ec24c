"""``GameFilter``: which games a listing shows, and the one place its SQL is written.

Every listing of games takes one (the store's :meth:`~engine.store.db.GameStore.list_games` and
``count_games``, the ``games`` command's flags, the Games and Replay tabs' filter bars, the exports
and the services that page through games), so a filter means the same thing everywhere.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

from engine.store.model import SOURCE_FILTERS, StoreError

TimeLike = Any  # Unix seconds (float), ISO text, datetime.datetime or datetime.date

# A mixed game's agents are listed only in its players column (the agent column holds the first).
_ANY_PLAYER = "EXISTS (SELECT 1 FROM json_each(games.players) WHERE json_extract(value, '$.{key}') = ?)"

#: The source that means the person's games: those played alone (``human``) and those shared with an
#: agent that the person made a move in (``mixed``), as the Progress tab counts "your games". The
#: ``human`` source alone misses every game where Watch or an agent took over for a while.
MINE = "mine"
#: What ``GameFilter.source`` accepts: the person's games, a store source, or ``imported``.
FILTER_SOURCES: tuple[str, ...] = (MINE, *SOURCE_FILTERS)


@dataclass(frozen=True)
class GameFilter:
    """Games matching every field that is not None (the default filter matches every game).

    ``source``: the game's source (``mixed`` for games several players shared), ``imported`` for
    every game read from a file, or ``mine`` (:data:`MINE`) for the person's games, shared ones too. ``agent`` and ``played_by`` (a player kind) match a game when any of
    its players does, so ``played_by="human"`` finds the person's own games and the mixed ones.
    ``min_score`` / ``min_max_tile`` are lower bounds; ``since`` / ``until`` bound the start time
    (seconds, a datetime / date or ISO text; a bare ``until`` date means the end of that day).
    """

    source: str | None = None
    agent: str | None = None
    played_by: str | None = None
    status: str | None = None
    run_id: int | None = None
    min_score: int | None = None
    min_max_tile: int | None = None
    since: TimeLike | None = None
    until: TimeLike | None = None

    def is_empty(self) -> bool:
        """True when the filter matches every game."""
        return all(getattr(self, f.name) is None for f in dataclasses.fields(self))

    def sql(self) -> tuple[str, list[Any]]:
        """The ``WHERE`` clause over the games table (``""`` when empty) and its parameters.

        A source that is no source, or a time that is no time, is a StoreError saying so."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.source == "imported":
            clauses.append("origin IS NOT NULL")
        elif self.source == MINE:  # what played_by="human" matches: alone or in a mixed game
            clauses.append(f"(source = 'human' OR (source = 'mixed' AND {_ANY_PLAYER.format(key='kind')}))")
            params.append("human")
        elif self.source is not None:
            if self.source not in SOURCE_FILTERS:
                raise StoreError(
                    f"game source must be one of {', '.join(FILTER_SOURCES)}, got {self.source!r}"
                )
            clauses.append("source = ?")
            params.append(self.source)
        for column, value in (("status", self.status), ("run_id", self.run_id)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        for column, key, value in (("agent", "agent", self.agent), ("source", "kind", self.played_by)):
            if value is not None:
                clauses.append(f"({column} = ? OR (source = 'mixed' AND {_ANY_PLAYER.format(key=key)}))")
                params += [value, value]
        for column, bound in (("score", self.min_score), ("max_tile", self.min_max_tile)):
            if bound is not None:
                clauses.append(f"{column} >= ?")
                params.append(int(bound))
        if self.since is not None:
            clauses.append("started >= ?")
            params.append(to_timestamp(self.since))
        if self.until is not None:
            clauses.append("started <= ?")
            params.append(to_timestamp(self.until, end_of_day=True))
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def to_timestamp(value: TimeLike, *, end_of_day: bool = False) -> float:
    """Unix seconds from seconds, a datetime / date (local time) or ISO text (``2024-05-01[T12:00]``).

    ``end_of_day``: a bare date means the end of that day (for "until" filters).
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = (
                dt.datetime.fromisoformat(text)
                if ("T" in text or " " in text or ":" in text)
                else dt.date.fromisoformat(text)
            )
        except ValueError:
            raise StoreError(f"{text!r} is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM") from None
    try:
        if isinstance(value, dt.datetime):
            return value.timestamp()
        if isinstance(value, dt.date):
            day = dt.datetime.combine(value, dt.time.max if end_of_day else dt.time.min)
            return day.timestamp()
    except (ValueError, OverflowError, OSError):
        # The local-time conversion of a date at the calendar's edge ("year 0 is out of range" for
        # 0001-01-01 east of Greenwich) says nothing about what to type instead.
        raise StoreError(
            f"{value} is outside the dates this machine can convert: use a date from 1970 to 9998"
        ) from None
    raise StoreError(f"{value!r} is not a time")
