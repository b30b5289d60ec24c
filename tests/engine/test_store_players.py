"""One game, one record: the player of each move, the recorder, schema 1 -> 2, and v1 exports.

``tests/fixtures/store_v1.sqlite`` and ``export_v1.*`` were written by the code of commit 711ad7e
(schema 1; see ``tests/fixtures/make_v1_store.py`` for what they hold).
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from engine import Direction, Game, Rules
from engine.store import HUMAN, GameRecorder, GameStore, Player, StoreError, exchange
from tests.engine.exchange_helpers import FIXTURES, assert_current_schema

GREEDY = Player("agent", "greedy", "checkpoints/greedy-1.npz")
ORDER = (Direction.LEFT, Direction.UP, Direction.RIGHT, Direction.DOWN)


def _replays(rec) -> bool:
    """True when the game's seed and moves give exactly its stored boards and scores."""
    game = Game(rules=rec.rules, seed=rec.summary.seed)
    for i in range(rec.n_moves):
        if not np.array_equal(game.board, rec.layouts[i]):
            return False
        game.step(int(rec.moves[i]))
        if game.score != rec.scores[i]:
            return False
    return bool(np.array_equal(game.board, rec.final_board))


# ------------------------------------------------------------------------------------------ seed


def test_a_game_started_without_a_seed_replays_from_its_recorded_seed(store):
    """The seed bug: the recorded seed must be the one the game uses (PlaySession drew one and used None)."""
    rec = GameRecorder(store, rules=Rules(), lazy=True)
    assert rec.seed is not None and rec.game.seed == rec.seed
    for i in range(30):
        rec.play(rec.game.legal_moves()[i % len(rec.game.legal_moves())], HUMAN if i < 20 else GREEDY)
    rec.close()
    assert rec.game_id is not None
    stored = store.load_game(rec.game_id)
    assert stored.summary.seed == rec.seed and stored.n_moves == 30
    assert _replays(stored)


# ------------------------------------------------------------------------------------------ recorder


def test_hand_overs_make_one_mixed_record(store):
    rec = GameRecorder(store, rules=Rules(), seed=3, lazy=True)
    for who in (HUMAN,) * 3 + (GREEDY,) * 4 + (HUMAN,) * 2:
        assert rec.play(rec.game.legal_moves()[0], who) is not None
        assert rec.player == who
    rec.close()
    assert store.count_games() == 1
    g = store.load_game(rec.game_id)
    assert g.summary.source == "mixed" and g.summary.status == "abandoned"
    assert g.summary.players == (HUMAN, GREEDY)
    assert g.move_players.tolist() == [0, 0, 0, 1, 1, 1, 1, 0, 0]
    assert [g.player_of(i).label for i in (0, 3, 8)] == ["you", "greedy (greedy-1.npz)", "you"]
    assert (g.summary.agent, g.summary.checkpoint) == ("greedy", "checkpoints/greedy-1.npz")
    assert g.summary.who == "you + greedy (greedy-1.npz)" and g.summary.agents == ("greedy",)
    assert g.moves_by("human").tolist() == [True] * 3 + [False] * 4 + [True] * 2
    assert g.moves_by(agent="greedy").tolist() == [False] * 3 + [True] * 4 + [False] * 2
    assert _replays(g)
    # filters: source is the game's, played_by / agent match any of its players
    assert [s.id for s in store.list_games(source="mixed")] == [g.id]
    assert store.list_games(source="human") == [] and store.list_games(source="agent") == []
    assert [s.id for s in store.list_games(played_by="human")] == [g.id]
    assert [s.id for s in store.list_games(agent="greedy")] == [g.id]
    assert store.count_games(played_by="evaluation") == 0 and store.count_games(agent="random") == 0


def test_a_lazy_recorder_stores_nothing_until_the_first_legal_move(store):
    corner = np.zeros((4, 4), dtype=np.int64)
    corner[0, 0] = 2  # left and up change nothing
    rec = GameRecorder(store, Game(seed=1, board=corner), lazy=True)
    assert rec.play("left") is None and rec.play(Direction.UP) is None
    assert np.array_equal(rec.board, corner) and rec.moves == 0
    rec.close()
    assert rec.game_id is None and store.count_games() == 0
    assert rec.play(rec.game.legal_moves()[0]) is None  # closed: nothing happens


def test_the_first_mover_is_the_player_of_an_eager_record(store):
    """A record started for the person, whose first move an agent makes, is the agent's alone."""
    rec = GameRecorder(store, rules=Rules(), seed=2)
    assert store.get_game(rec.game_id).players == (HUMAN,)
    rec.play(rec.game.legal_moves()[0], GREEDY)
    rec.play(rec.game.legal_moves()[0])  # no player given: the last mover again
    g = store.get_game(rec.game_id)
    assert (g.source, g.players, g.n_moves) == ("agent", (GREEDY,), 2)


def test_a_refused_move_is_not_made(store):
    rec = GameRecorder(store, rules=Rules(), seed=4)
    rec.play(rec.game.legal_moves()[0])
    store.finish_game(rec.game_id, "abandoned")  # e.g. another process closed it
    before, score = rec.board, rec.score
    with pytest.raises(StoreError, match="no more moves"):
        rec.play(rec.game.legal_moves()[0])
    assert np.array_equal(rec.board, before) and rec.score == score and rec.moves == 1


def test_recorder_refuses_a_game_and_a_seed():
    with pytest.raises(ValueError, match="not both"):
        GameRecorder(None, Game(seed=1), seed=2)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ migration


def _v1_export(name: str) -> list[exchange.IncomingGame]:
    return exchange.read_games(FIXTURES / name)


def test_a_schema_1_store_migrates_in_place_without_loss(v1_path):
    con = sqlite3.connect(v1_path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    con.close()
    with GameStore(v1_path) as store:
        games = {g.id: g for g in store.list_games()}
        assert sorted(games) == list(range(1, 9))
        sources = [games[i].source for i in range(1, 9)]
        # the hand-over stays the three records schema 1 made (3-5); the import keeps its source (8)
        assert sources == ["human", "agent", "human", "agent", "human", "evaluation", "training", "human"]
        assert games[2].players == (GREEDY,) and games[4].players == (GREEDY,)
        assert games[6].players == (Player("evaluation", "expectimax"),)
        assert games[7].players == (Player("training", "dqn"),) and games[7].run_id == 1
        assert [i for i in games if games[i].imported] == [8]
        assert games[8].origin == {"file": "export_v1.jsonl", "id": 1, "source": "human"}
        assert [g.id for g in store.list_games(source="imported")] == [8]
        assert [games[i].n_moves for i in range(1, 9)] == [12, 10, 4, 5, 3, 53, 8, 12]
        assert [games[i].status for i in range(1, 9)] == ["abandoned"] * 5 + [
            "finished",
            "abandoned",
            "abandoned",
        ]
        records = {i: store.load_game(i) for i in games}
        # boards and moves: as schema 1's own exports of games 1 and 3-5 have them
        pairs = [(1, _v1_export("export_v1.jsonl")[0]), *zip((3, 4, 5), _v1_export("export_v1.npz"))]
        for gid, incoming in pairs:
            r = records[gid]
            assert np.array_equal(r.layouts, incoming.layouts) and np.array_equal(r.moves, incoming.moves)
            assert np.array_equal(r.final_board, incoming.final_board)
            assert r.scores.tolist() == incoming.scores.tolist()
        assert np.array_equal(records[8].layouts, records[1].layouts)
        for gid in (1, 2, 3, 6, 7, 8):  # the seeded ones replay from their seed
            assert _replays(records[gid]), gid
        assert all(r.move_players.tolist() == [0] * r.n_moves for r in records.values())
        # the run, its metric history and its checkpoint are untouched
        run = store.get_run(1)
        assert (run.agent, run.status, run.n_events, run.last_metrics) == (
            "dqn",
            "finished",
            2,
            {"score": 60.0, "max_tile": 8.0},
        )
        assert store.run_metrics(1)["score"].tolist()[:1] == [60.0]
        assert [c.path.name for c in store.run_checkpoints(1)] == ["dqn-run1.pt"]
        assert [m.message for m in store.run_messages(1)] == ["checkpoint saved"]
    assert_current_schema(v1_path)


def test_the_migration_is_idempotent(v1_path):
    with GameStore(v1_path) as store:
        first = [(g, store.load_game(g.id).layouts.tolist()) for g in store.list_games()]
    con = sqlite3.connect(v1_path)
    con.execute("PRAGMA user_version = 1")  # as if a crash had hit between the changes and the bump
    con.close()
    with GameStore(v1_path) as store:
        again = [(g, store.load_game(g.id).layouts.tolist()) for g in store.list_games()]
        assert again == first
        # and the migrated store records new games as usual
        rec = GameRecorder(store, rules=Rules(), seed=9)
        rec.play(rec.game.legal_moves()[0], GREEDY)
        rec.close()
        assert store.get_game(rec.game_id).source == "agent" and store.count_games() == 9


def test_a_failed_migration_changes_nothing(v1_path):
    con = sqlite3.connect(v1_path)
    con.execute("UPDATE games SET origin = 'not json' WHERE id = 8")
    con.commit()
    con.close()
    with pytest.raises(ValueError):
        GameStore(v1_path)
    con = sqlite3.connect(v1_path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "players" not in {r[1] for r in con.execute("PRAGMA table_info(games)")}
    assert con.execute("SELECT source FROM games WHERE id = 8").fetchone()[0] == "imported"
    con.close()


# ------------------------------------------------------------------------------------------ files


@pytest.mark.parametrize("name", ["export_v1.jsonl", "export_v1.npz"])
def test_exports_of_schema_1_still_import(store, name):
    ids = store.import_file(FIXTURES / name)
    got = [store.get_game(i) for i in ids]
    if name.endswith(".jsonl"):
        assert [(g.source, g.players, g.n_moves) for g in got] == [("human", (HUMAN,), 12)]
    else:
        assert [(g.source, g.players, g.n_moves) for g in got] == [
            ("human", (HUMAN,), 4),
            ("agent", (GREEDY,), 5),
            ("human", (HUMAN,), 3),
        ]
    assert all(g.imported and g.origin["file"] == name for g in got)
    assert [g.origin["source"] for g in got] == [g.source for g in got]


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_a_mixed_game_exports_and_imports_with_its_players(store, tmp_path, suffix):
    rec = GameRecorder(store, rules=Rules(), seed=6, lazy=True)
    for who in (HUMAN, GREEDY, GREEDY, HUMAN):
        rec.play(rec.game.legal_moves()[0], who)
    rec.close()
    path = store.export_file([rec.game_id], tmp_path / f"mixed{suffix}")
    (new,) = store.import_file(path)
    a, b = store.load_game(rec.game_id), store.load_game(new)
    assert b.summary.source == "mixed" and b.summary.players == (HUMAN, GREEDY)
    assert b.move_players.tolist() == [0, 1, 1, 0] == a.move_players.tolist()
    assert b.summary.origin == {"file": f"mixed{suffix}", "id": rec.game_id, "source": "mixed"}
    assert [g.id for g in store.list_games(source="imported")] == [new]
    assert [g.id for g in store.list_games(source="mixed")] == [new, rec.game_id]


def test_import_refuses_a_move_by_nobody(store, tmp_path):
    rec = GameRecorder(store, rules=Rules(), seed=6, lazy=True)
    for who in (HUMAN, GREEDY):
        rec.play(rec.game.legal_moves()[0], who)
    rec.close()
    obj = exchange.game_to_json(store.load_game(rec.game_id))
    obj["move_players"] = [0, 2]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(StoreError, match="move_players refers to a player"):
        store.import_file(path)
    del obj["move_players"]
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(StoreError, match="2 players but no move_players"):
        store.import_file(path)
