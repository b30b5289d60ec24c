"""The store survives hostile and damaged data: migrations safe to re-run, JSON that is JSON, paths built from stored
text, early limits of a ``.jsonl`` import, and honest words at open (a damaged file, a dangling link,
a date at the calendar's edge)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engine import Rules
from engine.fsutil import UnsafePath, path_under, safe_name
from engine.jsonsafe import dumps, finite
from engine.paths import DataDirError, data_dir
from engine.store import HUMAN, GameRecorder, GameStore, Player, StoreError, exchange, to_timestamp
from engine.store.schema import SCHEMA_VERSION
from studio.cli import main

GREEDY = Player("agent", "greedy", "checkpoints/greedy-1.npz")


def _strict(text: str):
    """json.loads that refuses NaN / Infinity (what every other JSON reader does)."""

    def refuse(name: str):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def _mixed_game(store: GameStore) -> int:
    rec = GameRecorder(store, rules=Rules(), seed=3, lazy=True)
    for who in (HUMAN,) * 3 + (GREEDY,) * 4:
        rec.play(rec.game.legal_moves()[0], who)
    rec.close()
    assert rec.game_id is not None
    return rec.game_id


def _dump(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table (the meta row of the schema version aside)."""
    con = sqlite3.connect(path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        out = {}
        for t in sorted(tables):
            if t.startswith("sqlite_"):
                continue
            out[t] = sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
        return out
    finally:
        con.close()


# ---------------------------------------------------------------------------------- 8. migrations


@pytest.mark.parametrize("lowered_to", [1, 2, 3, 4])
def test_every_migration_run_again_on_converted_data_changes_nothing(tmp_path, v1_path, lowered_to):
    """A version lowered by hand (a crash between the changes and the bump, a restored copy) re-runs
    the migrations from there over data they converted already: not one row may change; a mixed game
    (two players) stays mixed and loads."""
    path = v1_path
    with GameStore(path) as store:
        mixed = _mixed_game(store)
        rid = store.create_run("ntuple", {}, Rules(), {"episodes": 1})
        cid = store.add_checkpoint(rid, tmp_path / "c.npz", 1, 10)
        store.set_checkpoint_eval(cid, 50.0)
        sid = store.create_sweep("ntuple", {"seeds": 1}, [({"lr": 0.1}, 1)])
        store.link_trial(sid, 0, rid)
    before = _dump(path)
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {lowered_to}")
    con.close()
    with GameStore(path) as store:
        g = store.load_game(mixed)
        assert g.summary.source == "mixed" and g.summary.players == (HUMAN, GREEDY)
        assert store.get_game(mixed).source == "mixed"
        assert store.best_checkpoint(rid).eval_score == 50.0
        assert store.sweep_trials(sid)[0].run_id == rid
    assert _dump(path) == before
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    con.close()


# --------------------------------------------------------------------------------- 10. valid JSON


def test_json_writer_turns_non_finite_floats_into_null():
    assert finite({"a": [1.0, float("inf"), (np.float64("nan"), -np.inf)], "b": "x"}) == {
        "a": [1.0, None, [None, None]],
        "b": "x",
    }
    assert _strict(dumps({"t": float("-inf")})) == {"t": None}


def test_a_bad_time_in_the_store_still_lists_and_exports_as_valid_json(data_dir, tmp_path, capsys):
    with GameStore.open(data_dir) as store:
        rec = GameRecorder(store, rules=Rules(), seed=1)
        for _ in range(5):
            rec.play(rec.game.legal_moves()[0])
        rec.close()
        gid = rec.game_id
        path = store.path
    con = sqlite3.connect(path)
    con.execute("UPDATE games SET started = 9e999, ended = -9e999 WHERE id = ?", (gid,))  # inf, -inf
    con.commit()
    con.close()
    assert main(["--data-dir", str(data_dir), "games", "list", "--json"]) == 0
    line = capsys.readouterr().out.strip()
    assert "Infinity" not in line
    assert _strict(line)["started"] is None and _strict(line)["ended"] is None
    out = tmp_path / "bad.jsonl"
    assert main(["--data-dir", str(data_dir), "games", "export", "--all", "--out", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    assert "Infinity" not in text and _strict(text)["started"] is None
    # and the studio imports its own export again
    with GameStore.open(data_dir) as store:
        (new,) = store.import_file(out)
        assert store.load_game(new).n_moves == 5
    npz = tmp_path / "bad.npz"
    assert main(["--data-dir", str(data_dir), "games", "export", "--all", "--out", str(npz)]) == 0
    with np.load(npz, allow_pickle=False) as z:
        metas = _strict(str(z["games"]))
    assert metas[0]["started"] is None


# ------------------------------------------------------------------------------ 9. stored names


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("ntuple", "ntuple"),
        ("run-3-dqn", "run-3-dqn"),
        ("../../../../tmp/x", "_.._.._.._tmp_x"),
        ("..", "unnamed"),
        (".", "unnamed"),
        ("", "unnamed"),
        ("a/b\\c", "a_b_c"),
        (".hidden", "hidden"),
        ("x" * 300, "x" * 100),
        ("/etc/passwd", "_etc_passwd"),
    ],
)
def test_a_stored_name_becomes_one_plain_file_name(text, name):
    assert safe_name(text) == name


def test_a_path_from_stored_text_stays_in_its_folder(tmp_path):
    assert path_under(tmp_path, "run-1-../../x") == tmp_path / "run-1-.._.._x"
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "link").symlink_to(outside)
    with pytest.raises(UnsafePath, match="leads out of"):
        path_under(tmp_path / "inner", "link")


def test_a_hostile_agent_name_cannot_make_a_tensorboard_export_leave_its_folder(data_dir, tmp_path, capsys):
    pytest.importorskip("tensorboard")
    from agents.base import MetricEvent

    victim = tmp_path / "victim"
    with GameStore.open(data_dir) as store:
        rid = store.create_run("ntuple", {}, Rules(), {"episodes": 1})
        store.log_metrics(rid, [MetricEvent("episode", 1, 10, 0.1, {"score": 12.0}, 0.5)])
        path = store.path
    con = sqlite3.connect(path)
    con.execute("UPDATE runs SET agent = ? WHERE id = ?", (f"../../../{victim.name}/x", rid))
    con.commit()
    con.close()
    dest = tmp_path / "a" / "b" / "dest"
    assert main(["--data-dir", str(data_dir), "runs", "export", str(rid), str(dest), "--tensorboard"]) == 0
    capsys.readouterr()
    assert not victim.exists()
    (folder,) = dest.iterdir()
    assert folder.name == f"run-{rid}-.._.._.._victim_x" and list(folder.glob("events.out.tfevents.*"))


def test_an_empty_export_path_is_refused_with_one_line(data_dir, tmp_path, capsys, monkeypatch):
    with GameStore.open(data_dir) as store:
        rid = store.create_run("ntuple", {}, Rules(), {"episodes": 1})
    monkeypatch.chdir(tmp_path)
    for extra in (["--tensorboard"], []):
        assert main(["--data-dir", str(data_dir), "runs", "export", str(rid), "", *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert "destination is empty" in err and len(err.splitlines()) == 1
        assert main(["--data-dir", str(data_dir), "runs", "export", str(rid), "  ", *extra]) == 2
        capsys.readouterr()
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------- 12. early limits


def _jsonl_with_reviews(path: Path, games: int, reviews: int) -> None:
    """``games`` games of 8 moves, each with ``reviews`` full reviews (valid, as an export writes)."""
    lines = []
    for g in range(games):
        rec_game = _game_json(seed=g)
        rows = [[1.0 if legal else None for legal in r] for r in rec_game.pop("_legal")]
        rec_game["reviews_version"] = 1
        rec_game["reviews"] = [
            {"key": f"k{k}", "reviewer": {"name": "x"}, "created": 1.0, "updated": 1.0, "reviewed": len(rows),
             "values": rows}
            for k in range(reviews)
        ]  # fmt: skip
        lines.append(json.dumps(rec_game))
    path.write_text("\n".join(lines) + "\n")


def _game_json(seed: int) -> dict:
    from engine import Game
    from engine.core import legal_mask

    with GameStore(Path(os.environ["STUDIO2048_DATA_DIR"]) / f"g{seed}.sqlite3") as store:
        rec = GameRecorder(store, rules=Rules(), seed=seed)
        for _ in range(8):
            rec.play(rec.game.legal_moves()[0])
        rec.close()
        record = store.load_game(rec.game_id)
    out = exchange.game_to_json(record)
    out["_legal"] = [legal_mask(b).tolist() for b in record.layouts]
    assert isinstance(Game, type)
    return out


def test_a_jsonl_over_a_count_limit_is_refused_before_any_game_is_checked(tmp_path, monkeypatch):
    """Counts known from the parsed lines (games, moves, reviews per game, reviewed moves) are checked
    before the first game is replayed: a 56 MB file used to be refused only after 242 s of checks."""
    path = tmp_path / "many.jsonl"
    _jsonl_with_reviews(path, games=4, reviews=3)
    checked = []
    real = exchange.check_game

    def counting(*a, **kw):
        checked.append(a[0])
        return real(*a, **kw)

    monkeypatch.setattr(exchange, "check_game", counting)
    assert len(exchange.read_games(path)) == 4 and len(checked) == 4  # under every limit: all read
    for limit, value, words in [
        ("MAX_FILE_REVIEW_MOVES", 3 * 8 * 3 + 1, "reviewed moves one import reads"),
        ("MAX_GAME_REVIEWS", 2, "3 reviews, more than the 2 a game may carry"),
        ("MAX_FILE_MOVES", 3 * 8 + 1, "moves one import reads"),
        ("MAX_FILE_GAMES", 3, "games one import reads"),
    ]:
        checked.clear()
        with monkeypatch.context() as m:
            m.setattr(exchange, limit, value)
            with pytest.raises(StoreError, match=words):
                exchange.read_games(path)
        assert checked == [], limit


# ------------------------------------------------------------------------------------- minor


def test_a_date_at_the_calendars_edge_says_what_to_type(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    import time

    time.tzset()
    try:
        with pytest.raises(StoreError, match="use a date from 1970 to 9998"):
            to_timestamp("0001-01-01")
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_games_since_year_one_is_one_clear_line(data_dir, capsys, monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    import time

    time.tzset()
    try:
        assert main(["--data-dir", str(data_dir), "games", "list", "--since", "0001-01-01"]) == 2
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    err = capsys.readouterr().err.strip()
    assert "year 0" not in err and "1970 to 9998" in err and len(err.splitlines()) == 1


def test_a_dangling_link_as_data_dir_is_called_a_dangling_link(tmp_path):
    link = tmp_path / "data"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(DataDirError, match=r"is a link to .*gone, which does not exist"):
        data_dir(link)
    plain = tmp_path / "file"
    plain.write_text("x")
    with pytest.raises(DataDirError, match="is a file"):
        data_dir(plain)


def test_a_page_damaged_store_is_refused_at_open_with_what_to_do(tmp_path):
    path = tmp_path / "studio.sqlite3"
    with GameStore(path) as store:
        for seed in range(30):
            rec = GameRecorder(store, rules=Rules(), seed=seed)
            for _ in range(20):
                rec.play(rec.game.legal_moves()[0])
            rec.close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'moves'").fetchone()[0]
    con.close()
    data = bytearray(path.read_bytes())
    start = (root - 1) * page
    data[start : start + page] = b"\xa5" * page  # the moves table's root page: garbage
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"is damaged .*\.recover") as e:
        GameStore(path)
    assert len(str(e.value).splitlines()) == 1
    # an intact store opens as before
    with GameStore(tmp_path / "fine.sqlite3") as store:
        assert store.count_games() == 0


def test_pruning_never_deletes_a_file_outside_the_checkpoints_folder(data_dir, tmp_path):
    """A checkpoint's path is text in the store: pruning a run whose rows name files elsewhere (a store
    edited by hand, an absolute ``/home/...``, a ``../`` climb) forgets those rows and deletes nothing."""
    precious = tmp_path / "precious.npz"
    precious.write_bytes(b"keep me")
    with GameStore.open(data_dir) as store:
        rid = store.create_run("dqn", {}, Rules(), {"episodes": 10})
        ours = store.path.parent / "checkpoints" / f"run-{rid}"
        ours.mkdir(parents=True)
        ids = []
        for k, path in enumerate([precious, ours / "a.npz", ours / "b.npz", ours / "c.npz"]):
            if path.parent == ours:
                path.write_bytes(b"x")
            ids.append(store.add_checkpoint(rid, path, k + 1, 10 * (k + 1)))
        con = sqlite3.connect(store.path)
        climb = os.path.relpath(precious, store.path.parent)  # ../<the test's folder>/precious.npz
        con.execute("UPDATE run_checkpoints SET path = ? WHERE id = ?", (climb, ids[1]))
        con.commit()
        con.close()
        (ours / "a.npz").unlink()
        deleted = store.prune_checkpoints(rid, keep_last=1)
        assert precious.read_bytes() == b"keep me"
        assert deleted == [ours / "b.npz"] and (ours / "c.npz").exists()
        assert [c.path for c in store.run_checkpoints(rid)] == [ours / "c.npz"]
