"""Issue 47: a library of 10^5 games lists fast. Schema 6 adds the listing indexes (new stores and old
ones migrated, the v1 fixture too); listings page in any column's order; the Games tab's summary and
the Progress tab's move counts are added up by the database; games go in in bulk."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from engine.store import GameFilter, GameStore, StoreError
from engine.store.schema import SCHEMA_VERSION
from studio.commands.bench_store import synthetic_games
from tests.engine.exchange_helpers import FIXTURES, schema_names

LISTING_INDEXES = {"games_started", "games_status", "games_imported"}


def _plan(store: GameStore, match: GameFilter) -> str:
    """The query plan of the newest-first page that ``games list`` and the tabs read."""
    where, params = match.sql()
    sql = f"SELECT id FROM games{where} ORDER BY started DESC, id DESC LIMIT 50"
    rows = store._conn().execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return " | ".join(str(r[3]) for r in rows)


def _filled(tmp_path: Path, n: int = 300) -> GameStore:
    store = GameStore(tmp_path / "lib.sqlite3")
    assert store.insert_games(synthetic_games(n, 12, seed=3), per_transaction=64) == n
    return store


def test_a_new_store_has_the_listing_indexes_and_uses_them(tmp_path: Path):
    assert SCHEMA_VERSION == 6
    with _filled(tmp_path) as store:
        assert schema_names(store.path, "index") >= LISTING_INDEXES
        for match in (GameFilter(), GameFilter(since="2020-01-01"), GameFilter(status="finished")):
            plan = _plan(store, match)
            # read in start order from an index: no sort of every matching row to show 50
            assert "USING INDEX games_" in plan or "USING COVERING INDEX games_" in plan, plan
            assert "TEMP B-TREE" not in plan, plan
        assert "games_imported" in _plan(store, GameFilter(source="imported"))


def test_a_schema_5_store_gains_the_indexes_and_keeps_its_games(tmp_path: Path):
    path = tmp_path / "v5.sqlite3"
    with GameStore(path) as store:
        store.insert_games(synthetic_games(40, 8, seed=1))
        before = [(g.id, g.source, g.score, g.n_moves) for g in store.list_games()]
    con = sqlite3.connect(path, isolation_level=None)
    for name in LISTING_INDEXES:
        con.execute(f"DROP INDEX {name}")
    con.execute("PRAGMA user_version = 5")
    con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    con.close()
    assert not LISTING_INDEXES & schema_names(path, "index")
    with GameStore(path) as store:
        assert [(g.id, g.source, g.score, g.n_moves) for g in store.list_games()] == before
    assert schema_names(path, "index") >= LISTING_INDEXES
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 6
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_the_v1_fixture_opens_with_the_indexes(tmp_path: Path):
    path = tmp_path / "store_v1.sqlite"
    shutil.copy(FIXTURES / "store_v1.sqlite", path)
    with GameStore(path) as store:
        games = store.list_games()
        assert games and store.count_games() == len(games)
    assert schema_names(path, "index") >= LISTING_INDEXES


def test_pages_in_any_order_match_the_whole_listing_sorted(tmp_path: Path):
    with _filled(tmp_path) as store:
        every = store.list_games()
        for order, key in (("score", lambda g: (g.score, g.id)), ("n_moves", lambda g: (g.n_moves, g.id))):
            for descending in (True, False):
                want = [g.id for g in sorted(every, key=key, reverse=descending)]
                pages = [
                    g.id
                    for offset in range(0, len(every), 70)
                    for g in store.list_games(order=order, descending=descending, offset=offset, limit=70)
                ]
                assert pages == want, (order, descending)
        human = store.list_games(GameFilter(source="human"), order="score", limit=5)
        assert [g.source for g in human] == ["human"] * 5
        with pytest.raises(StoreError, match="ordered by one of"):
            store.list_games(order="players; DROP TABLE games")


def test_game_stats_add_up_the_whole_filter(tmp_path: Path):
    with _filled(tmp_path) as store:
        for match in (GameFilter(), GameFilter(source="evaluation"), GameFilter(min_score=40)):
            games = store.list_games(match)
            stats = store.game_stats(match)
            assert stats.count == len(games) > 0
            assert stats.best_score == max(g.score for g in games)
            assert stats.moves == sum(g.n_moves for g in games)
            assert stats.statuses == {"abandoned": len(games)}
            tiles: dict[int, int] = {}
            for g in games:
                tiles[g.max_tile] = tiles.get(g.max_tile, 0) + 1
            assert stats.tiles == tiles
        empty = store.game_stats(GameFilter(agent="nobody"))
        assert (empty.count, empty.best_score, empty.moves, empty.tiles) == (0, 0, 0, {})


def test_moves_per_player_counts_each_players_moves(tmp_path: Path):
    with _filled(tmp_path) as store:
        games = store.list_games()
        mixed = [g for g in games if g.source == "mixed"][:3]
        alone = next(g for g in games if g.source == "evaluation")
        counts = store.moves_per_player([g.id for g in mixed] + [alone.id])
        for g in mixed:
            rec = store.load_game(g.id)
            want = {i: int((rec.move_players == i).sum()) for i in range(len(g.players))}
            assert counts[g.id] == {i: n for i, n in want.items() if n}
            assert sum(counts[g.id].values()) == g.n_moves
        assert counts[alone.id] == {0: alone.n_moves}
        assert store.moves_per_player([]) == {}


def test_import_says_each_step_and_still_finds_the_copies(tmp_path: Path):
    with _filled(tmp_path, 60) as store:
        ids = [g.id for g in store.list_games(limit=4)]
        path = store.export_jsonl(ids, tmp_path / "four.jsonl")
        store.delete_games(ids[:1])
        steps: list[str] = []
        result = store.import_games(path, progress=steps.append)
        assert len(result.ids) == 1 and sorted(result.already) == sorted(ids[1:])
        assert steps == ["reading the file", "comparing 4 games with the library", "adding 1 new game"]
