"""Game reviews in the store: chunks in order, reuse by reviewer key, cascade on delete, schema 3 -> 4."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engine import Game
from engine.records import GameTrace, play_recorded
from engine.store import GameStore, ReviewInfo, StoreError
from tests.engine.exchange_helpers import assert_current_schema, schema_names


def _game(store: GameStore, moves: int = 12, seed: int = 1) -> int:
    game = Game(seed=seed)
    trace = GameTrace.start(game)
    while not game.game_over and game.moves < moves:
        play_recorded(game, game.legal_moves()[0], trace)
    trace.final_board = game.board
    return store.record_trace(trace, "human")


def _values(n: int, start: float = 0.0) -> np.ndarray:
    vals = np.arange(start, start + 4 * n, dtype=np.float64).reshape(n, 4)
    vals[:, 2] = np.nan  # an illegal move
    return vals


def test_values_are_stored_in_chunks_and_read_back_in_order(store):
    gid = _game(store)
    info = store.open_review(gid, "ex@d2:abc", {"name": "expectimax", "depth": 2, "value_kind": "rank"})
    assert isinstance(info, ReviewInfo) and info.reviewed == 0 and info.game_id == gid
    assert info.reviewer["depth"] == 2
    assert store.review_values(info.id).shape == (0, 4)
    assert store.add_review_values(info.id, 0, _values(5)) == 5
    assert store.add_review_values(info.id, 5, _values(3, 100.0)) == 8
    got = store.review_values(info.id)
    np.testing.assert_array_equal(got, np.concatenate([_values(5), _values(3, 100.0)]))
    again = store.open_review(gid, "ex@d2:abc", {"name": "other"})  # the stored one, unchanged
    assert (again.id, again.reviewed, again.reviewer["name"]) == (info.id, 8, "expectimax")
    with pytest.raises(StoreError, match="stands at move 8, not 5"):
        store.add_review_values(info.id, 5, _values(1))
    with pytest.raises(StoreError, match="n x 4"):
        store.add_review_values(info.id, 8, np.zeros((2, 3)))
    with pytest.raises(StoreError, match="no review"):
        store.add_review_values(info.id + 99, 0, _values(1))
    with pytest.raises(StoreError, match="no game 999"):
        store.open_review(999, "k", {})


def test_another_reviewer_keeps_both_and_a_review_can_be_forgotten(store):
    gid = _game(store)
    a = store.open_review(gid, "a", {})
    b = store.open_review(gid, "b", {})
    store.add_review_values(b.id, 0, _values(2))
    assert a.id != b.id
    assert {r.key for r in store.list_reviews(gid)} == {"a", "b"}
    assert store.get_review(gid, "b").reviewed == 2 and store.get_review(gid, "c") is None
    store.delete_review(b.id)
    assert [r.key for r in store.list_reviews(gid)] == ["a"]


def test_deleting_a_game_deletes_its_reviews_and_their_values(store):
    g1, g2 = _game(store, seed=1), _game(store, seed=2)
    for gid in (g1, g2):
        store.add_review_values(store.open_review(gid, "k", {}).id, 0, _values(4))
    store.delete_games([g1])
    assert store.list_reviews(g1) == [] and len(store.list_reviews(g2)) == 1
    con = sqlite3.connect(store.path)
    assert con.execute("SELECT count(*) FROM review_chunks").fetchone()[0] == 1
    con.close()


def test_a_damaged_chunk_is_a_one_line_error(store):
    gid = _game(store)
    info = store.open_review(gid, "k", {})
    store.add_review_values(info.id, 0, _values(2))
    con = sqlite3.connect(store.path)
    con.execute("UPDATE review_chunks SET vals = x'00'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="damaged at move 0"):
        store.review_values(info.id)


@pytest.fixture
def v3_path(tmp_path: Path) -> Path:
    """A schema-3 store with a game: schema 4 less the review tables, as schema 3's studio made it."""
    path = tmp_path / "v3.sqlite3"
    with GameStore(path) as s:
        _game(s)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DROP TABLE review_chunks")
    con.execute("DROP TABLE reviews")
    con.execute("PRAGMA user_version = 3")
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    con.close()
    assert "reviews" not in schema_names(path, "table")
    return path


@pytest.mark.parametrize("start", ["v1", "v3"])
def test_an_older_store_migrates_in_place_to_schema_4(start, request):
    path = request.getfixturevalue(f"{start}_path")
    with GameStore(path) as store:
        games = store.list_games()
        assert games
        gid = games[0].id
        assert store.list_reviews(gid) == []
        info = store.open_review(gid, "k", {"name": "expectimax"})
        store.add_review_values(info.id, 0, _values(1))
        assert store.get_review(gid, "k").reviewed == 1
    assert {"reviews", "review_chunks"} <= schema_names(path, "table")
    assert_current_schema(path)
    with GameStore(path) as store:  # opening again changes nothing
        assert store.get_review(gid, "k").reviewed == 1
