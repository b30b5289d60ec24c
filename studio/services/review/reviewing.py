"""Reviewing stored games: walk a game's positions with a reviewer, store its raw values chunk by chunk
(:mod:`engine.store.reviews`), resume an unfinished review, read a stored one back. Qt-free.

A kill keeps every committed chunk; ``progress(done, total)`` and ``should_stop()`` let a worker thread
report and cancel; ``on_partial(review)`` hands a worker the review so far, graded from the values in
hand, so a window draws a running review without reading it back from the store on its own thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.base import Agent
from agents.review import grading_refusal
from engine import Rules
from engine.store import GameRecord, GameStore
from engine.store.reviews import IMPORTED

from .calibration import DEFAULT_DEPTH
from .choosing import default_reviewer, resolve_reviewer
from .grading import Grading, ReviewerFault, checked_points, grading_of, position_values
from .identity import Reviewer
from .results import GameReview, game_review

#: A chunk of reviewed moves is committed after this many moves or this many seconds, whichever first.
CHUNK_MOVES = 64
CHUNK_SECONDS = 0.5
#: ``on_partial`` is handed the review so far at most this often (seconds): grading it is O(moves).
PARTIAL_SECONDS = 1.0

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]
OnPartial = Callable[[GameReview], None]


def stored_review(store: GameStore, game_id: int, reviewer: Reviewer) -> GameReview | None:
    """The stored (maybe unfinished) review of a game by ``reviewer``, without building it; None when
    that reviewer never reviewed the game."""
    info = store.get_review(game_id, reviewer.key())
    if info is None:
        return None
    rec = store.load_game(game_id)
    return game_review(rec, info.reviewer, store.review_values(info.id), reviewer)


def review_by_key(store: GameStore, game_id: int, key: str) -> GameReview | None:
    """The stored review of a game under ``key`` as it stands (an imported one's key starts with
    ``imported:``; its reviewer says ``"imported": true`` and its label says so), or None."""
    info = store.get_review(game_id, key)
    if info is None:
        return None
    described = dict(info.reviewer)
    if described.get("imported"):
        described["label"] = f"{described.get('label') or described.get('name') or '?'} (imported)"
    return game_review(store.load_game(game_id), described, store.review_values(info.id), None)


#: Before reviewers said whether they were the default: the labels only :func:`default_reviewer` gives
_DEFAULT_LABELS = ("n-tuple run ", "expectimax (calibrated)")


def _made_by_default(described: dict[str, Any]) -> bool:
    """Whether the reviewer that made a stored review was the default then (it says so; a review from
    before reviewers said it: the default rule's own labels at its depth)."""
    if "default" in described:
        return described["default"] is True
    label = str(described.get("label") or "")
    return described.get("depth") == DEFAULT_DEPTH and label.startswith(_DEFAULT_LABELS)


def earlier_default_review(store: GameStore, game_id: int, reviewer: Reviewer) -> GameReview | None:
    """The newest stored review of a game made by a reviewer that was the default then but is not
    ``reviewer`` (the default now), with :attr:`GameReview.default_now` set, so what shows it says
    whose figures they are; None when there is none (imported reviews never count)."""
    key = reviewer.key()
    for info in store.list_reviews(game_id):
        if info.key == key or info.key.startswith(IMPORTED) or not info.reviewed:
            continue
        if not _made_by_default(info.reviewer) or grading_refusal(info.reviewer):
            continue
        review = game_review(store.load_game(game_id), info.reviewer, store.review_values(info.id), None)
        review.default_now = reviewer.label
        return review
    return None


def _reviewed(store: GameStore, review_id: int, fallback: int) -> int:
    """How far a review stands now (``fallback`` when it cannot be read)."""
    try:
        return len(store.review_values(review_id))
    except Exception:
        return fallback


def review_game(
    store: GameStore,
    game_id: int,
    reviewer: Reviewer | None = None,
    *,
    agent: Agent | None = None,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    on_partial: OnPartial | None = None,
) -> GameReview:
    """Review game ``game_id`` (see the module docstring); ``agent``: ``reviewer`` already built (a
    batch builds it once). A stop request ends the review after the move in hand, its values stored.
    ``on_partial``: called on the calling thread with the review so far (at most every
    :data:`PARTIAL_SECONDS`, after a committed chunk), graded from the values in hand."""
    rec = store.load_game(game_id)
    reviewer = reviewer or default_reviewer(store, rec.rules)
    key = reviewer.key()
    info = store.get_review(game_id, key)
    if info is not None and info.reviewed >= rec.n_moves:
        return game_review(rec, info.reviewer, store.review_values(info.id), reviewer)
    if agent is None:
        agent = reviewer.build(rec.rules)
    else:
        why = type(agent).unsupported_reason(rec.rules)
        if why:
            raise ValueError(f"{agent.name} cannot review game {game_id}: {why}")
    info = store.open_review(game_id, key, reviewer.describe(agent))
    walk = _Walk(store, info.id, agent, grading_of(agent), rec, info.reviewed, progress, should_stop)
    walk.parts.append(store.review_values(info.id))
    if on_partial is not None:
        described = info.reviewer
        walk.on_chunk = lambda: on_partial(game_review(rec, described, walk.values(), reviewer))
    try:
        evaluated = walk.run()
    except ReviewerFault:
        store.truncate_review(
            info.id, info.reviewed
        )  # values it gave are not to be trusted: none of this call's
        raise
    except Exception:
        # the reviewer crashed (a checkpoint that does not run): what it finished stays, as after a
        # kill, but never an empty review
        store.truncate_review(info.id, _reviewed(store, info.id, info.reviewed))
        raise
    return game_review(rec, info.reviewer, walk.values(), reviewer, evaluated)


@dataclass
class _Walk:
    """Evaluating positions ``start ..`` of ``rec`` with ``agent``, committing chunks to the store;
    ``parts``: the values so far (the stored ones first), ``on_chunk``: called after a committed chunk
    at most every :data:`PARTIAL_SECONDS`."""

    store: GameStore
    review_id: int
    agent: Agent
    grading: Grading
    rec: GameRecord
    start: int
    progress: Progress | None
    should_stop: ShouldStop | None
    parts: list[np.ndarray] = field(default_factory=list)
    on_chunk: Callable[[], None] | None = None

    def values(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros((0, 4))

    def run(self) -> int:
        """Evaluate every position left (or until a stop); the number evaluated."""
        n = self.rec.n_moves
        pending: list[np.ndarray] = []
        at = self.start
        last_flush = last_partial = time.perf_counter()

        def flush() -> None:
            nonlocal at, last_flush
            if pending:
                chunk = np.stack(pending)
                self.store.add_review_values(self.review_id, at, chunk)
                self.parts.append(chunk)
                at += len(pending)
                pending.clear()
            last_flush = time.perf_counter()

        try:
            for i in range(self.start, n):
                if self.should_stop is not None and self.should_stop():
                    break
                raw = self._position(i)
                pending.append(raw)
                if len(pending) >= CHUNK_MOVES or time.perf_counter() - last_flush >= CHUNK_SECONDS:
                    flush()
                    if self.progress is not None:
                        self.progress(at, n)
                    if self.on_chunk is not None and time.perf_counter() - last_partial >= PARTIAL_SECONDS:
                        self.on_chunk()
                        last_partial = time.perf_counter()
        finally:
            flush()  # an exception or Ctrl-C still keeps what was evaluated
        if self.progress is not None:
            self.progress(at, n)
        return at - self.start

    def _position(self, i: int) -> np.ndarray:
        """The reviewer's checked raw values of position ``i`` (ReviewerFault when refused)."""
        rec = self.rec
        before = int(rec.scores[i] - rec.rewards[i])
        raw = position_values(self.agent, rec.rules, rec.layouts[i], before)
        checked_points(self.agent, raw, self.grading, rec.layouts[i], i)
        return raw


def review_games(
    store: GameStore,
    game_ids: Iterable[int],
    reviewer: Reviewer | None = None,
    *,
    depth: int | None = None,
    progress: Callable[[int, int, int, int], None] | None = None,
    should_stop: ShouldStop | None = None,
    on_skip: Callable[[int, str], None] | None = None,
) -> list[GameReview]:
    """Review several games with one reviewer (built once per rules); ``reviewer`` None: the default
    one for each game's rules, at ``depth`` when given. ``progress(game_no, games, moves_done,
    moves)``. Stops between moves when ``should_stop()`` says so (the reviews so far are returned,
    the unfinished one included).

    A game the reviewer cannot review (another board size for an n-tuple network, say) is passed by
    with ``on_skip(game_id, reason)`` and the others go on; without ``on_skip`` it raises ValueError.
    """
    ids = list(game_ids)
    defaults: dict[Rules, Reviewer] = {}
    agents: dict[tuple[str, Rules], Agent | str] = {}  # a built reviewer, or why it cannot be built
    out = []
    for k, gid in enumerate(ids):
        if should_stop is not None and should_stop():
            break

        def each(done: int, total: int, k: int = k) -> None:
            if progress is not None:
                progress(k, len(ids), done, total)

        try:
            summary = store.get_game(gid)
            if reviewer is None and summary.rules not in defaults:
                defaults[summary.rules] = resolve_reviewer(store, None, depth, summary.rules)
            chosen = reviewer or defaults[summary.rules]
            info = store.get_review(gid, chosen.key())
            agent = None
            if info is None or info.reviewed < summary.n_moves:
                slot = (chosen.key(), summary.rules)
                if slot not in agents:
                    try:
                        agents[slot] = chosen.build(summary.rules)
                    except ValueError as e:
                        agents[slot] = str(e)  # said once per rules, not rebuilt for every game
                built = agents[slot]
                if isinstance(built, str):
                    raise ValueError(built)
                agent = built
            out.append(review_game(store, gid, chosen, agent=agent, progress=each, should_stop=should_stop))
        except ValueError as e:
            if on_skip is None:
                raise
            on_skip(gid, str(e))
    return out
