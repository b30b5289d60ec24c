"""Issue 17, rows read back: a games or moves row that is damaged anyway (written straight into the file
with sqlite3, an older build, a disk) lists as ``damaged`` and loads as a one-line StoreError; the rest
of the library is untouched and the damaged game can still be deleted."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.store import GameRecorder, GameStore, StoreError
from engine.store.model import DAMAGED
from tests.engine.exchange_helpers import run_sql


def _play(store: GameStore, seed: int, moves: int) -> int:
    rec = GameRecorder(store, seed=seed)
    for _ in range(moves):
        rec.play(rec.game.legal_moves()[0])
    rec.close()
    assert rec.game_id is not None
    return rec.game_id


@pytest.fixture
def two_games(data_dir: Path) -> Iterator[tuple[Path, int, int]]:
    """A store file with a sound game and the one the test damages."""
    with GameStore.open(data_dir) as s:
        sound, victim = _play(s, 1, 6), _play(s, 2, 6)
        path = s.path
    yield path, sound, victim


def _drop_not_null(path: Path, column: str) -> None:
    """What an older schema (or a hand-made file) might allow: the column loses its NOT NULL."""
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA writable_schema = ON")
        (sql,) = con.execute("SELECT sql FROM sqlite_master WHERE name = 'games'").fetchone()
        con.execute(
            "UPDATE sqlite_master SET sql = ? WHERE name = 'games'",
            (sql.replace(f"{column} INTEGER NOT NULL", f"{column} INTEGER"),),
        )
        con.commit()
    finally:
        con.close()


GAMES_ROWS = [
    ("score", "UPDATE games SET score = NULL WHERE id = ?", "score None"),
    ("max_tile", "UPDATE games SET max_tile = 'huge' WHERE id = ?", "max_tile 'huge'"),
    ("max_tile", "UPDATE games SET max_tile = 3 WHERE id = ?", "max_tile 3"),
    ("rules", "UPDATE games SET rules = '{not json' WHERE id = ?", "rules '{not json'"),
    ("rules", "UPDATE games SET rules = '[4, 4]' WHERE id = ?", "not a JSON object"),
    ("rules", """UPDATE games SET rules = '{"rows": 99}' WHERE id = ?""", "Rules.rows"),
    ("n_moves", "UPDATE games SET n_moves = -3 WHERE id = ?", "n_moves -3"),
    ("players", "UPDATE games SET players = 'oops' WHERE id = ?", "players 'oops'"),
    ("players", """UPDATE games SET players = '[{"kind": "martian"}]' WHERE id = ?""", "martian"),
    ("source", "UPDATE games SET source = 'martian' WHERE id = ?", "source 'martian'"),
    ("seed", "UPDATE games SET seed = 'xyz' WHERE id = ?", "seed 'xyz'"),
    ("started", "UPDATE games SET started = 'yesterday' WHERE id = ?", "started 'yesterday'"),
    ("origin", "UPDATE games SET origin = '[1]' WHERE id = ?", "origin '[1]'"),
    ("agent", "UPDATE games SET agent = x'41' WHERE id = ?", "agent b'A'"),
]


@pytest.mark.parametrize(("column", "sql", "shown"), GAMES_ROWS, ids=[f"{c}:{s}" for c, _, s in GAMES_ROWS])
def test_a_damaged_games_row_lists_as_damaged(two_games, column, sql, shown):
    path, sound, victim = two_games
    if column == "score":
        _drop_not_null(path, "score")
    run_sql(path, sql, params=(victim,))
    with GameStore(path) as store:
        listed = {g.id: g for g in store.list_games()}  # the listing lives
        assert set(listed) == {sound, victim} and store.count_games() == 2
        bad = listed[victim]
        assert bad.status == DAMAGED and bad.problem and shown in bad.problem and "\n" not in bad.problem
        assert isinstance(bad.score, int) and isinstance(bad.max_tile, int) and isinstance(bad.n_moves, int)
        assert store.get_game(victim).status == DAMAGED
        assert listed[sound].problem is None and listed[sound].status in ("finished", "abandoned")
        with pytest.raises(StoreError, match=rf"^game {victim} is damaged: .*{column}") as info:
            store.load_game(victim)
        assert "\n" not in str(info.value)
        assert store.load_game(sound).n_moves == 6  # the rest of the library is untouched
        assert store.delete_games([victim]) == 1  # and the damaged game can be removed


def _set_move(assignment: str, idx: int) -> str:
    """SQL that sets ``assignment`` on move ``idx`` of the game given as its parameter."""
    return f"UPDATE moves SET {assignment} WHERE game_id = ? AND idx = {idx}"


MOVES_ROWS = [
    ("board of 3 cells", _set_move("board = x'010203'", 2), "do not all have 16 cells"),
    ("tile 2**70", _set_move("board = x'46000000000000000000000000000001'", 2), r"2\*\*70"),
    ("board as text", _set_move("board = 'abcdefghijklmnop'", 2), "not bytes|cells"),
    ("reward as text", _set_move("reward = 'lots'", 1), "reward is 'lots'"),
    ("reward 1.5", _set_move("reward = 1.5", 1), "reward is 1.5"),
    ("score past 64 bits", _set_move("score = 1e30", 1), "score is 1e"),
    ("spawns of 7 bytes", _set_move("spawns = x'01020304050607'", 0), "5-byte spawns"),
    ("spawn off the board", _set_move("spawns = x'C800000001'", 0), "outside the board"),
    ("player 9", _set_move("player = 9", 3), "not one of the game's players"),
    ("a gap", _set_move("idx = 40", 5), "not numbered"),
    ("a lost move", "DELETE FROM moves WHERE game_id = ? AND idx = 5", "says 6 moves, 5 are stored"),
    ("rows", "UPDATE games SET rows = 5 WHERE id = ?", "boards are 5x4"),
    ("initial board", "UPDATE games SET initial_board = x'00' WHERE id = ?", "1 cells"),
    ("direction", _set_move("direction = 'up'", 1), "direction is 'up'"),
]


@pytest.mark.parametrize(("what", "sql", "shown"), MOVES_ROWS, ids=[m[0] for m in MOVES_ROWS])
def test_a_game_with_damaged_moves_loads_as_a_one_line_error(two_games, what, sql, shown):
    path, sound, victim = two_games
    if what == "direction":
        run_sql(path, "PRAGMA ignore_check_constraints = ON", sql, params=(victim,))
    else:
        run_sql(path, sql, params=(victim,))
    with GameStore(path) as store:
        assert {g.id for g in store.list_games()} == {sound, victim}
        with pytest.raises(StoreError, match=rf"^game {victim} is damaged: .*({shown})") as info:
            store.load_game(victim)
        assert "\n" not in str(info.value)
        assert store.load_game(sound).n_moves == 6


def test_a_playing_game_with_damaged_moves_is_a_one_line_error_too(data_dir):
    """No final board yet: it is rebuilt from the last move, which must be sound."""
    with GameStore.open(data_dir) as store:
        rec = GameRecorder(store, seed=3)
        for _ in range(3):
            rec.play(rec.game.legal_moves()[0])
        gid = rec.game_id
        assert gid is not None and store.get_game(gid).status == "playing"
        run_sql(
            store.path, "UPDATE moves SET spawns = x'FF00000001' WHERE game_id = ? AND idx = 2", params=(gid,)
        )
        with pytest.raises(StoreError, match=f"game {gid} is damaged: a spawn lies outside the board"):
            store.load_game(gid)
