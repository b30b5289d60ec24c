"""What the store and exchange tests share: recorded games to export, a real export read back as JSON
lines or arrays, a hand-made ``.jsonl`` written out for import, SQL run on a database file behind the
store's back, and a snapshot of the rows a refused import must leave alone."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine import Direction, Game
from engine.store import HUMAN, GameRecorder, Player
from engine.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from engine.store import GameStore

ORDER = (Direction.LEFT, Direction.UP, Direction.RIGHT, Direction.DOWN)
#: the checked-in stores and exports of older versions (copy a store before opening it)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def play_first_legal(
    store: GameStore, seed: int, moves: int, player: Player = HUMAN, game: Game | None = None
) -> int:
    """A recorded game: the first legal move in the order left, up, right, down, ``moves`` times."""
    rec = (
        GameRecorder(store, game, player)
        if game is not None
        else GameRecorder(store, player=player, seed=seed)
    )
    for _ in range(moves):
        if rec.game_over:
            break
        rec.play(next(d for d in ORDER if d in rec.game.legal_moves()))
    rec.close()
    assert rec.game_id is not None
    return rec.game_id


def exported_lines(store: GameStore, ids: list[int], tmp_path: Path) -> list[dict[str, Any]]:
    """Games ``ids`` exported to ``tmp_path/export.jsonl``, one dict a line."""
    path = store.export_jsonl(ids, tmp_path / "export.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_jsonl(path: Path, games: list[dict[str, Any]]) -> Path:
    """``games`` as a ``.jsonl`` file at ``path``."""
    path.write_text("".join(json.dumps(g) + "\n" for g in games))
    return path


def exported_arrays(store: GameStore, ids: list[int], tmp_path: Path) -> dict[str, np.ndarray]:
    """Games ``ids`` exported to ``tmp_path/export.npz``, its arrays read back."""
    path = store.export_npz(ids, tmp_path / "export.npz")
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def run_sql(path: Path, *statements: str, params: tuple = ()) -> None:
    """Run ``statements`` on the database file at ``path`` and commit (``params`` go to those with a ``?``)."""
    con = sqlite3.connect(path)
    try:
        for statement in statements:
            con.execute(statement, params if "?" in statement else ())
        con.commit()
    finally:
        con.close()


def db_snapshot(path: Path) -> list[list[Any]]:
    """Every row of the games, their moves and reviews, and the id counters: what a refused import must
    leave untouched in the database file at ``path``."""
    con = sqlite3.connect(path)
    try:
        return [
            con.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("games", "moves", "reviews", "review_chunks", "sqlite_sequence")
        ]
    finally:
        con.close()


def schema_names(path: Path, kind: str) -> set[str]:
    """The names of the database file's schema objects of ``kind`` (``table``, ``index``)."""
    con = sqlite3.connect(path)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,))}
    finally:
        con.close()


def assert_current_schema(path: Path) -> None:
    """The store file at ``path`` is at schema 6, says so in its meta table, and is sound."""
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "6"
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        con.close()
