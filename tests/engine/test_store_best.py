"""Checkpoints of a run in the store: evaluation scores, the best one, retention, disk use, migration."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine import Rules
from engine.store import GameStore, StoreError
from engine.store.model import format_size
from engine.store.schema import _migrate_1_to_2
from tests.engine.exchange_helpers import assert_current_schema


def _run(store: GameStore) -> int:
    return store.create_run("dqn", {}, Rules(), {"episodes": 10})


def _checkpoint(store: GameStore, run_id: int, episode: int, size: int = 100) -> int:
    path = store.path.parent / "checkpoints" / f"run-{run_id}" / f"dqn-ep{episode}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return store.add_checkpoint(run_id, path, episode, episode * 10)


def test_the_best_checkpoint_is_the_highest_evaluation_score_and_a_tie_keeps_the_earlier(store):
    rid = _run(store)
    a, b, c = (_checkpoint(store, rid, e) for e in (1, 2, 3))
    assert store.best_checkpoint(rid) is None
    assert store.set_checkpoint_eval(a, 100.0) is True
    assert store.set_checkpoint_eval(b, 250.5) is True
    assert store.set_checkpoint_eval(c, 250.5) is False  # a tie: the earlier stays best
    best = store.best_checkpoint(rid)
    assert best is not None and (best.id, best.eval_score, best.best, best.episode) == (b, 250.5, True, 2)
    cps = store.run_checkpoints(rid)
    assert [(cp.eval_score, cp.best) for cp in cps] == [(100.0, False), (250.5, True), (250.5, False)]
    assert store.set_checkpoint_eval(c, 300.0) is True
    assert [cp.best for cp in store.run_checkpoints(rid)] == [False, False, True]


def test_best_is_per_run_and_scores_must_be_finite(store):
    r1, r2 = _run(store), _run(store)
    a, b = _checkpoint(store, r1, 1), _checkpoint(store, r2, 1)
    assert store.set_checkpoint_eval(a, 10.0) and store.set_checkpoint_eval(b, 5.0)
    best1, best2 = store.best_checkpoint(r1), store.best_checkpoint(r2)
    assert best1 is not None and best2 is not None and (best1.id, best2.id) == (a, b)
    with pytest.raises(StoreError, match="finite"):
        store.set_checkpoint_eval(a, float("nan"))
    with pytest.raises(StoreError, match="no checkpoint 999"):
        store.set_checkpoint_eval(999, 1.0)


def test_pruning_keeps_the_newest_the_best_and_the_protected_and_deletes_the_rest(store):
    rid = _run(store)
    ids = [_checkpoint(store, rid, e) for e in range(1, 8)]
    paths = {c.id: c.path for c in store.run_checkpoints(rid)}
    store.set_checkpoint_eval(ids[1], 50.0)  # episode 2 is the best
    deleted = store.prune_checkpoints(rid, keep_last=2, protect=[ids[3]])
    kept = [c.episode for c in store.run_checkpoints(rid)]
    assert kept == [2, 4, 6, 7]
    assert sorted(p.name for p in deleted) == ["dqn-ep1.npz", "dqn-ep3.npz", "dqn-ep5.npz"]
    assert all(not paths[i].exists() for i in (ids[0], ids[2], ids[4]))
    assert all(paths[i].exists() for i in (ids[1], ids[3], ids[5], ids[6]))
    best = store.best_checkpoint(rid)
    assert best is not None and best.episode == 2 and best.path.exists()
    # the newest is what a resume loads: never deleted, even asked to keep none
    store.prune_checkpoints(rid, keep_last=0)
    assert [c.episode for c in store.run_checkpoints(rid)] == [2, 7]
    assert store.last_checkpoint(rid) == paths[ids[6]]


def test_pruning_a_row_whose_file_a_newer_row_shares_keeps_the_file(store):
    rid = _run(store)
    _checkpoint(store, rid, 1)
    cid = _checkpoint(store, rid, 2)
    same = store.run_checkpoints(rid)[-1].path
    store.add_checkpoint(rid, same, 2, 20, final=True)  # saved again at the same counters (pause + stop)
    store.prune_checkpoints(rid, keep_last=1)
    cps = store.run_checkpoints(rid)
    assert [c.final for c in cps] == [True] and cps[0].path.exists() and cid not in [c.id for c in cps]


def test_pruning_drops_rows_of_files_already_gone(store):
    rid = _run(store)
    _checkpoint(store, rid, 1)
    _checkpoint(store, rid, 2)
    store.run_checkpoints(rid)[0].path.unlink()
    assert store.prune_checkpoints(rid, keep_last=1) == []
    assert [c.episode for c in store.run_checkpoints(rid)] == [2]


def test_disk_use_is_the_sum_of_the_files_that_exist(store):
    r1, r2, r3 = _run(store), _run(store), _run(store)
    _checkpoint(store, r1, 1, size=1000)
    _checkpoint(store, r1, 2, size=2345)
    _checkpoint(store, r2, 1, size=7)
    assert store.run_disk_use(r1) == 3345
    assert store.run_disk_use(r1) == sum(c.path.stat().st_size for c in store.run_checkpoints(r1))
    assert store.runs_disk_use([r1, r2, r3]) == {r1: 3345, r2: 7, r3: 0}
    assert store.runs_disk_use() == {r1: 3345, r2: 7}
    assert store.runs_disk_use([]) == {}
    store.run_checkpoints(r1)[0].path.unlink()  # deleted by hand: no longer counted
    assert store.run_disk_use(r1) == 2345 and store.run_disk_use(r3) == 0


def test_format_size_speaks_human_units():
    assert [format_size(n) for n in (0, 999, 1000, 812_345, 9_960_000, 168_000_000, 1_234_000_000)] == [
        "0 B",
        "999 B",
        "1.0 kB",
        "812 kB",
        "10.0 MB",
        "168 MB",
        "1.2 GB",
    ]
    assert format_size(None) == "-"


# ------------------------------------------------------------------------------------------ migration


def _columns(con: sqlite3.Connection) -> set[str]:
    return {r[1] for r in con.execute("PRAGMA table_info(run_checkpoints)")}


@pytest.fixture
def v2_path(v1_path: Path) -> Path:
    """A schema-2 store: the schema-1 fixture brought to 2 exactly as schema 2's studio did."""
    con = sqlite3.connect(v1_path, isolation_level=None)
    con.execute("BEGIN")
    _migrate_1_to_2(con)
    con.execute("PRAGMA user_version = 2")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.execute("COMMIT")
    assert "best" not in _columns(con) and "eval_score" not in _columns(con)
    con.close()
    return v1_path


@pytest.mark.parametrize("start", ["v1", "v2"])
def test_an_older_store_migrates_in_place_and_its_checkpoints_are_unevaluated(start, request):
    path = request.getfixturevalue(f"{start}_path")
    with GameStore(path) as store:
        cps = store.run_checkpoints(1)
        assert [c.path.name for c in cps] == ["dqn-run1.pt"]
        assert (cps[0].eval_score, cps[0].best) == (None, False)
        assert store.best_checkpoint(1) is None
        assert store.run_disk_use(1) == 0  # the fixture's file is not on this disk
        assert len(store.list_games()) == 8 and store.get_run(1).n_events == 2
        # the new columns work on the migrated store
        assert store.set_checkpoint_eval(cps[0].id, 42.0)
        best = store.best_checkpoint(1)
        assert best is not None and best.eval_score == 42.0
    assert_current_schema(path)
    con = sqlite3.connect(path)
    assert {"eval_score", "best"} <= _columns(con)
    con.close()


def test_a_new_store_has_the_columns_and_migrating_twice_is_harmless(store, v2_path):
    con = sqlite3.connect(store.path)
    assert {"eval_score", "best"} <= _columns(con)
    con.close()
    with GameStore(v2_path):
        pass
    with GameStore(v2_path) as again:  # opening a migrated store migrates nothing
        assert again.run_checkpoints(1)[0].best is False
