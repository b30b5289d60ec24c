"""Importing skips the games the library holds already (issue #33): the same content, whoever played."""

from __future__ import annotations

import json

import pytest

from engine import Rules
from engine.store import HUMAN, GameRecorder, GameStore, Player, exchange


def _game(store: GameStore, seed: int, moves: int, player: Player = HUMAN) -> int:
    with GameRecorder(store, player=player, rules=Rules(), seed=seed) as rec:
        for _ in range(moves):
            rec.play(rec.game.legal_moves()[0])
    assert rec.game_id is not None
    return rec.game_id


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_a_file_read_back_has_the_keys_of_the_stored_games(store, tmp_path, suffix):
    ids = [_game(store, s, 8 + s) for s in range(3)]
    path = store.export_file(ids, tmp_path / f"g{suffix}")
    incoming = [exchange.incoming_key(g) for g in exchange.read_games(path)]
    stored = [exchange.record_key(store.load_game(i)) for i in ids]
    assert incoming == stored and len(set(stored)) == 3


def test_the_key_is_the_board_history_not_who_or_when(store, tmp_path):
    a = _game(store, 5, 10)
    b = _game(store, 5, 10, Player("agent", "greedy"))  # the same moves from the same seed
    c = _game(store, 5, 11)
    ka, kb, kc = (exchange.record_key(store.load_game(i)) for i in (a, b, c))
    assert ka == kb != kc
    # One spawn's value changed in a file: another game.
    line = json.loads(store.export_jsonl([a], tmp_path / "a.jsonl").read_text())
    rec = store.load_game(a)
    spawns = [list(map(list, s)) for s in line["spawns"]]
    r, col, v = spawns[-1][0]
    spawns[-1][0] = [r, col, 6 - v]  # 2 <-> 4
    other = exchange.content_key(rec.rules, rec.initial_board, rec.moves, spawns)
    assert other != ka


def test_import_games_skips_the_librarys_and_the_files_own_copies(store, tmp_path):
    ids = [_game(store, s, 6) for s in (1, 2)]
    path = tmp_path / "three.jsonl"
    exchange.write_jsonl([store.load_game(i) for i in (ids[0], ids[1], ids[1])], path)
    store.delete_games([ids[1]])
    result = store.import_games(path)
    assert len(result.ids) == 1 and result.already == [ids[0], result.ids[0]]
    again = store.import_games(path)
    assert again.ids == [] and sorted(again.already) == sorted([ids[0], result.ids[0], result.ids[0]])
    assert store.count_games() == 2
    # import_file still adds every game, copies included (exact copies on purpose)
    assert len(store.import_file(path)) == 3 and store.count_games() == 5
