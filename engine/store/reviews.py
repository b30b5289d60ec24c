"""Game reviews in the store: a reviewer's value of every move of a game, written chunk by chunk.

:class:`ReviewsMixin` is the reviews half of :class:`engine.store.GameStore`. A review is one row per
(game, reviewer key) in ``reviews`` and its values in ``review_chunks``: float64[n, 4] per chunk of
consecutive moves (action order, NaN for an illegal move). Chunks are committed as the reviewer makes
them, so a review that was killed keeps what it finished and a new one with the same reviewer goes on
from ``reviewed``. Grades, losses and accuracy are not stored: they follow from the values and the
game (:mod:`agents.review`), so a change of thresholds never needs a migration. Deleting a game
deletes its reviews (foreign keys, ``ON DELETE CASCADE``).

Game files carry reviews too (:mod:`engine.store.exchange`): :meth:`ReviewsMixin.review_data` reads
a game's reviews out for an export, and :func:`insert_review` writes a checked one in the import's
own transaction, so an import is still all or nothing.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.store.base import StoreBase, one_row
from engine.store.model import StoreError


@dataclass(frozen=True)
class ReviewInfo:
    """One stored review: its ``id``, the game, the reviewer (``key`` and what the reviewer said about
    itself: name, checkpoint, depth, label, value_kind), how many moves are ``reviewed``, and times."""

    id: int
    game_id: int
    key: str
    reviewer: dict[str, Any] = field(default_factory=dict)
    reviewed: int = 0
    created: float = 0.0
    updated: float = 0.0


@dataclass
class ReviewData:
    """A review as it travels in a game file: the reviewer ``key`` and what it said about itself
    (``reviewer``), its times, and its values, float64[reviewed, 4] in action order (NaN: an illegal
    move, or one the reviewer did not rate). ``reviewed`` is ``len(values)``: a partial review
    travels as far as it got."""

    key: str
    reviewer: dict[str, Any]
    created: float
    updated: float
    values: np.ndarray

    @property
    def reviewed(self) -> int:
        return int(self.values.shape[0])


_COLUMNS = "id, game_id, reviewer_key, reviewer, reviewed, created, updated"


def _info(r: sqlite3.Row) -> ReviewInfo:
    try:
        reviewer = json.loads(r["reviewer"])
    except (TypeError, ValueError):
        reviewer = {}
    return ReviewInfo(
        int(r["id"]),
        int(r["game_id"]),
        str(r["reviewer_key"]),
        reviewer if isinstance(reviewer, dict) else {},
        int(r["reviewed"]),
        float(r["created"]),
        float(r["updated"]),
    )


class ReviewsMixin(StoreBase):
    """Reviews API of :class:`engine.store.GameStore` (see there for threads and transactions)."""

    def open_review(self, game_id: int, key: str, reviewer: Mapping[str, Any]) -> ReviewInfo:
        """The review of ``game_id`` by reviewer ``key``: the stored one, or a new empty one."""
        now = time.time()
        with self._tx(write=True) as con:
            one_row(con, "SELECT 1 FROM games WHERE id = ?", game_id, f"no game {game_id}")
            con.execute(
                "INSERT OR IGNORE INTO reviews (game_id, reviewer_key, reviewer, created, updated) "
                "VALUES (?, ?, ?, ?, ?)",
                (game_id, key, json.dumps(dict(reviewer), sort_keys=True, default=str), now, now),
            )
            row = con.execute(
                f"SELECT {_COLUMNS} FROM reviews WHERE game_id = ? AND reviewer_key = ?", (game_id, key)
            ).fetchone()
        return _info(row)

    def add_review_values(self, review_id: int, first: int, values: np.ndarray) -> int:
        """Append the values of moves ``first .. first + n - 1`` (float[n, 4]) to a review, in one
        transaction; ``first`` must be where the review stands (a StoreError otherwise: two writers).
        Returns the moves reviewed now."""
        vals = np.ascontiguousarray(values, dtype="<f8")
        if vals.ndim != 2 or vals.shape[1] != 4:
            raise StoreError(f"review values must be n x 4, got shape {vals.shape}")
        n = int(vals.shape[0])
        with self._tx(write=True) as con:
            row = one_row(
                con, "SELECT reviewed FROM reviews WHERE id = ?", review_id, f"no review {review_id}"
            )
            if int(row[0]) != first:
                raise StoreError(f"review {review_id} stands at move {row[0]}, not {first}")
            if n:
                con.execute(
                    "INSERT INTO review_chunks (review_id, first, n, vals) VALUES (?, ?, ?, ?)",
                    (review_id, first, n, vals.tobytes()),
                )
            con.execute(
                "UPDATE reviews SET reviewed = ?, updated = ? WHERE id = ?",
                (first + n, time.time(), review_id),
            )
        return first + n

    def review_values(self, review_id: int) -> np.ndarray:
        """The values stored so far, float64[reviewed, 4] (a damaged chunk is a one-line StoreError)."""
        with self._tx(write=False) as con:
            return _values(con, review_id)

    def get_review(self, game_id: int, key: str) -> ReviewInfo | None:
        """The review of ``game_id`` by reviewer ``key``, or None when there is none."""
        with self._tx(write=False) as con:
            row = con.execute(
                f"SELECT {_COLUMNS} FROM reviews WHERE game_id = ? AND reviewer_key = ?", (game_id, key)
            ).fetchone()
        return None if row is None else _info(row)

    def list_reviews(self, game_id: int) -> list[ReviewInfo]:
        """Every review of a game, the most recently updated first."""
        with self._tx(write=False) as con:
            rows = con.execute(
                f"SELECT {_COLUMNS} FROM reviews WHERE game_id = ? ORDER BY updated DESC, id DESC",
                (game_id,),
            ).fetchall()
        return [_info(r) for r in rows]

    def review_data(self, game_id: int, n_moves: int) -> list[ReviewData]:
        """Every review of a game with its values, for an export: the oldest first, read in one
        snapshot (a review being written meanwhile is taken as far as it had got). Values past the
        game's ``n_moves`` (only a damaged row has them) are left out, so the file imports again; a
        damaged chunk is a one-line StoreError naming the game."""
        with self._tx(write=False) as con:
            rows = con.execute(
                f"SELECT {_COLUMNS} FROM reviews WHERE game_id = ? ORDER BY created, id", (game_id,)
            ).fetchall()
            out = []
            for r in rows:
                info = _info(r)
                try:
                    values = _values(con, info.id)
                except StoreError as e:
                    raise StoreError(f"game {game_id}: {e} (delete that review to export the game)") from None
                out.append(ReviewData(info.key, info.reviewer, info.created, info.updated, values[:n_moves]))
        return out

    def truncate_review(self, review_id: int, reviewed: int) -> None:
        """Cut a review back to its first ``reviewed`` moves (a chunk boundary: where a call that
        failed began), in one transaction; 0 forgets the review (no empty review is left behind)."""
        with self._tx(write=True) as con:
            if reviewed <= 0:
                con.execute("DELETE FROM reviews WHERE id = ?", (review_id,))
                return
            straddles = con.execute(
                "SELECT 1 FROM review_chunks WHERE review_id = ? AND first < ? AND first + n > ?",
                (review_id, reviewed, reviewed),
            ).fetchone()
            if straddles is not None:
                raise StoreError(f"review {review_id} has no chunk boundary at move {reviewed}")
            con.execute("DELETE FROM review_chunks WHERE review_id = ? AND first >= ?", (review_id, reviewed))
            con.execute(
                "UPDATE reviews SET reviewed = MIN(reviewed, ?), updated = ? WHERE id = ?",
                (reviewed, time.time(), review_id),
            )

    def delete_review(self, review_id: int) -> None:
        """Forget a review and its values (reviewing again starts from the first move)."""
        with self._tx(write=True) as con:
            con.execute("DELETE FROM reviews WHERE id = ?", (review_id,))


def _values(con: sqlite3.Connection, review_id: int) -> np.ndarray:
    rows = con.execute(
        "SELECT first, n, vals FROM review_chunks WHERE review_id = ? ORDER BY first", (review_id,)
    ).fetchall()
    parts, at = [], 0
    for first, n, blob in rows:
        if first != at or not isinstance(blob, bytes) or len(blob) != 32 * n:
            raise StoreError(f"review {review_id} is damaged at move {at}")
        parts.append(np.frombuffer(blob, dtype="<f8").reshape(n, 4))
        at += n
    return np.concatenate(parts).astype(np.float64) if parts else np.zeros((0, 4))


#: What an imported review's key starts with: no local reviewer's key does, so a review read from a
#: file is never taken for the local reviewer's own (a file can say anything about itself).
IMPORTED = "imported:"


def imported_key(key: str) -> str:
    """The key an imported review is stored under: always prefixed (a review imported twice over
    gets it twice), so two distinct keys in one file stay distinct."""
    return IMPORTED + key


def insert_review(con: sqlite3.Connection, game_id: int, review: ReviewData) -> int:
    """Write an imported review of ``game_id`` in the caller's transaction (one chunk holds all its
    values); returns its id. It is stored as imported: its key gets :data:`IMPORTED` in front and its
    reviewer says ``"imported": true``, so it shows as a review from a file and never stands in for a
    review by the local reviewer of the same key. The file's checks already made its key unique for
    the game (and the prefix keeps it so)."""
    vals = np.ascontiguousarray(review.values, dtype="<f8")
    reviewer = {**review.reviewer, "imported": True}
    cur = con.execute(
        "INSERT INTO reviews (game_id, reviewer_key, reviewer, reviewed, created, updated) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (
            game_id,
            imported_key(review.key),
            json.dumps(reviewer, sort_keys=True),
            review.reviewed,
            review.created,
            review.updated,
        ),
    )
    review_id = int(cur.lastrowid or 0)
    if review.reviewed:
        con.execute(
            "INSERT INTO review_chunks (review_id, first, n, vals) VALUES (?, 0, ?, ?)",
            (review_id, review.reviewed, vals.tobytes()),
        )
    return review_id
