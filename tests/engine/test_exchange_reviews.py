"""Issue 19: a game file carries the game's reviews. Round trips in both formats keep every value and
so every grade; files without reviews still import; hostile reviews are refused in one line with
nothing written (see the "Reviews" part of :mod:`engine.store.exchange`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.spec import AgentSpec
from engine.store import GameStore, StoreError, exchange
from engine.store.reviews import imported_key
from studio.services.review import Reviewer, default_reviewer, review_by_key, review_game, stored_review
from tests.engine.exchange_helpers import FIXTURES, db_snapshot
from tests.engine.exchange_helpers import exported_arrays as _arrays
from tests.engine.exchange_helpers import exported_lines as _lines
from tests.engine.exchange_helpers import play_first_legal as _play
from tests.engine.exchange_helpers import write_jsonl as _write_jsonl

FULL = Reviewer(AgentSpec(name="expectimax"), 1)  # cheap at depth 1, still a real reviewer
PARTIAL = Reviewer(AgentSpec(name="expectimax"), 2)
SUFFIXES = (".npz", ".jsonl")


def _stop_after(n: int):
    calls = [0]

    def should_stop() -> bool:
        calls[0] += 1
        return calls[0] > n

    return should_stop


@pytest.fixture
def reviewed(store: GameStore) -> list[int]:
    """Three games: two reviewed by two reviewers (the second review partial), one never reviewed."""
    ids = [_play(store, 1, 30), _play(store, 2, 20), _play(store, 3, 5)]
    for gid in ids[:2]:
        assert review_game(store, gid, FULL).complete
        partial = review_game(store, gid, PARTIAL, should_stop=_stop_after(7))
        assert len(partial.moves) == 7 and not partial.complete
    return ids


def _by_key(store: GameStore, gid: int) -> dict[str, tuple[Any, np.ndarray]]:
    return {r.key: (r, store.review_values(r.id)) for r in store.list_reviews(gid)}


def _export(store: GameStore, ids: list[int], path: Path) -> Path:
    return store.export_file(ids, path)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_reviews_round_trip_exactly_with_their_grades(store, reviewed, tmp_path, suffix):
    path = _export(store, reviewed, tmp_path / f"games{suffix}")
    new = store.import_file(path)
    assert len(new) == 3
    for old_id, new_id in zip(reviewed, new, strict=True):
        before, after = _by_key(store, old_id), _by_key(store, new_id)
        # imported: under their own keys, so never taken for the local reviewer's (issue 34)
        assert {imported_key(k) for k in before} == after.keys()
        for key, (info, values) in before.items():
            info2, values2 = after[imported_key(key)]
            assert values2.dtype == np.float64 and values2.shape == values.shape
            # bit for bit, NaN where NaN: the file loses nothing
            assert values2.tobytes() == values.tobytes()
            assert (info2.reviewer, info2.reviewed, info2.created, info2.updated) == (
                {**info.reviewer, "imported": True},
                info.reviewed,
                info.created,
                info.updated,
            )
            assert info2.game_id == new_id
        for reviewer in (FULL, PARTIAL):
            a = stored_review(store, old_id, reviewer)
            assert stored_review(store, new_id, reviewer) is None  # an imported review stands in for none
            b = review_by_key(store, new_id, imported_key(reviewer.key()))
            if a is None:
                assert b is None
                continue
            assert b is not None and b.label.endswith("(imported)")
            assert [(m.grade, m.best, m.loss) for m in a.moves] == [
                (m.grade, m.best, m.loss) for m in b.moves
            ]
            assert (a.accuracy, a.counts, a.complete) == (b.accuracy, b.counts, b.complete)
    assert store.list_reviews(new[2]) == []
    assert {r.reviewed for r in store.list_reviews(new[0])} == {7, store.get_game(new[0]).n_moves}


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_importing_twice_gives_each_copy_its_own_reviews(store, reviewed, tmp_path, suffix):
    """No de-duplication in the exchange: two imports, two games, each with two reviews."""
    path = _export(store, reviewed[:1], tmp_path / f"one{suffix}")
    (a,) = store.import_file(path)
    (b,) = store.import_file(path)
    assert a != b
    for gid in (reviewed[0], a, b):
        assert len(store.list_reviews(gid)) == 2


def test_a_repeated_jsonl_line_is_two_games_with_their_reviews(store, reviewed, tmp_path):
    path = _export(store, reviewed[:1], tmp_path / "one.jsonl")
    path.write_text(path.read_text() * 2)
    a, b = store.import_file(path)
    assert len(store.list_reviews(a)) == len(store.list_reviews(b)) == 2


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_files_without_reviews_import_and_are_unchanged(store, tmp_path, suffix):
    """An export of unreviewed games has no review entries at all: what the studio wrote before."""
    gid = _play(store, 4, 10)
    path = _export(store, [gid], tmp_path / f"plain{suffix}")
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            assert not {"reviews", "review_values", "reviews_version"} & set(z.files)
    else:
        assert "reviews" not in json.loads(path.read_text())
    (new,) = store.import_file(path)
    assert store.list_reviews(new) == []


def test_old_format_fixtures_still_import(store):
    assert len(store.import_file(FIXTURES / "export_v1.npz")) == 3
    assert len(store.import_file(FIXTURES / "export_v1.jsonl")) == 1


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_file_with_reviews_keeps_format_version_1(store, reviewed, tmp_path, suffix):
    """Older readers accept version 1 only and ignore members / keys they do not know: the reviews
    ride in such, so an older studio imports the games without their reviews."""
    path = _export(store, reviewed, tmp_path / f"games{suffix}")
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            assert int(z["version"]) == 1 and int(z["reviews_version"]) == 1
            arrays = {k: z[k] for k in z.files if not k.startswith("review")}
        np.savez_compressed(tmp_path / "stripped.npz", **arrays)
        stripped = tmp_path / "stripped.npz"
    else:
        lines = [json.loads(ln) for ln in path.read_text().splitlines()]
        assert {ln["version"] for ln in lines} == {1}
        assert [ln.get("reviews_version") for ln in lines] == [1, 1, None]
        stripped = tmp_path / "stripped.jsonl"
        stripped.write_text(
            "".join(
                json.dumps({k: v for k, v in ln.items() if not k.startswith("review")}) + "\n" for ln in lines
            )
        )
    assert len(store.import_file(stripped)) == 3


def test_jsonl_writes_null_for_nan_and_exports_clean_values(store, reviewed, tmp_path):
    """JSON has no NaN: an illegal move's value is null. An infinite value (a diverged reviewer) and a
    value for an illegal move are written as NaN, so the export imports again."""
    gid = reviewed[0]
    rec = store.load_game(gid)
    odd = store.open_review(gid, "odd", {"name": "odd"})
    vals = np.ones((3, 4))
    vals[0, :] = -np.inf
    store.add_review_values(odd.id, 0, vals)
    path = _export(store, [gid], tmp_path / "odd.jsonl")
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text and "null" in text
    (new,) = store.import_file(path)
    got = store.review_values(store.get_review(new, imported_key("odd")).id)
    assert np.isnan(got[0]).all()
    from engine.core import legal_mask

    for i in (1, 2):
        mask = legal_mask(rec.layouts[i])
        assert np.array_equal(np.isnan(got[i]), ~mask) and np.all(got[i][mask] == 1.0)


# ---------------------------------------------------------------------------------------- hostile


def _refused(store: GameStore, path: Path, match: str) -> str:
    before = db_snapshot(store.path)
    with pytest.raises(StoreError, match=match) as e:
        store.import_file(path)
    message = str(e.value)
    assert "\n" not in message and len(message) <= 400, message
    assert db_snapshot(store.path) == before  # nothing lost, nothing added
    return message


def _with_reviews(arrays: dict[str, np.ndarray], metas: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    return {**arrays, "reviews": np.array(json.dumps(metas))}


def _jsonl_case(line: dict[str, Any], case: str) -> str:
    """Make ``line``'s first review hostile; returns what the refusal names."""
    review = line["reviews"][0]
    if case == "shape":
        review["values"][0] = review["values"][0][:3]
        return r"review 1: values: move 0: expected 4 numbers"
    if case == "rows":
        review["values"].pop()
        return r"review 1: values has \d+ rows, expected"
    if case == "dtype":
        review["values"][1][0] = "1.5"
        return r"review 1: values: move 1: expected 4 numbers or null"
    if case == "bool":
        review["values"][1][0] = True
        return r"review 1: values: move 1"
    if case == "inf":
        row = review["values"][2]
        row[next(i for i, v in enumerate(row) if v is not None)] = float("inf")
        return r"review 1: values: move 2 has an infinite value"
    if case == "illegal":
        row = review["values"][0]
        row[next(i for i, v in enumerate(row) if v is None)] = 1.0
        return r"review 1: values: move 0 rates \w+, an illegal move there"
    if case == "huge key":
        review["key"] = "k" * 100_000
        return r"review 1: key must be text of 1 to 512 characters"
    if case == "key type":
        review["key"] = 7
        return r"review 1: key must be text"
    if case == "moves":
        review["reviewed"] = len(line["moves"]) + 1
        review["values"].append([1.0, 1.0, 1.0, 1.0])
        return r"review 1: reviewed \d+, but the game has \d+ moves"
    if case == "reviewed type":
        review["reviewed"] = 2.0
        return r"review 1: reviewed must be a whole number"
    if case == "reviewer":
        review["reviewer"] = {"name": {"nested": [1, 2]}}
        return r"review 1: reviewer field 'name' must be text"
    if case == "big reviewer":
        review["reviewer"] = {"label": "x" * 20_000}
        return r"review 1: reviewer is .* of JSON, more than"
    if case == "time":
        review["created"] = -5
        return r"review 1: created must be Unix seconds"
    if case == "duplicate":
        line["reviews"][1]["key"] = review["key"]
        return r"review 2: a second review by reviewer key"
    if case == "version":
        line["reviews_version"] = 2
        return r"reviews written by a newer 2048 Studio \(reviews_version 2\)"
    if case == "not a list":
        line["reviews"] = {"key": "k"}
        return r"reviews must be a list"
    if case == "too many":
        line["reviews"] = [dict(review, key=f"k{i}") for i in range(exchange.MAX_GAME_REVIEWS + 1)]
        return r"reviews, more than the 64 a game may carry"
    raise AssertionError(case)


#: what a hostile file of either kind may carry; each kind adds the cases only it can hold
BOTH_CASES = ["shape", "rows", "dtype", "inf", "huge key", "moves", "duplicate", "version", "not a list"]
JSONL_CASES = [
    *BOTH_CASES,
    *("bool", "illegal", "key type", "reviewed type", "reviewer", "big reviewer", "time", "too many"),
]


@pytest.mark.parametrize("case", JSONL_CASES)
def test_hostile_jsonl_reviews_are_refused_in_one_line(store, reviewed, tmp_path, case):
    lines = _lines(store, reviewed, tmp_path)
    match = _jsonl_case(lines[1], case)
    message = _refused(store, _write_jsonl(tmp_path / "bad.jsonl", lines), match)
    assert message.startswith("bad.jsonl line 2"), message  # names the game


def _npz_case(arrays: dict[str, np.ndarray], case: str) -> tuple[dict[str, np.ndarray], str]:
    metas = json.loads(str(arrays["reviews"]))
    values = arrays["review_values"]
    if case == "shape":
        return {**arrays, "review_values": values[:, :3]}, r"review_values has shape \(\d+, 3\)"
    if case == "rows":
        return {**arrays, "review_values": values[:-1]}, r"review_values has shape .* the reviews cover"
    if case == "dtype":
        return {**arrays, "review_values": values.astype(np.float32)}, r"review_values must be float64"
    if case == "int dtype":
        ints = np.nan_to_num(values).astype(np.int64)
        return {**arrays, "review_values": ints}, r"review_values must be float64 .*, got int64"
    if case == "inf":
        out = values.copy()
        out[np.argwhere(np.isfinite(out))[0][0], :] = np.inf
        return {**arrays, "review_values": out}, r"game 1: review 1: values: move \d+ has an infinite value"
    if case == "huge key":
        metas[2]["key"] = "k" * 10_000
        return _with_reviews(arrays, metas), r"game 2: review 3: key must be text of 1 to 512"
    if case == "moves":
        metas[0]["reviewed"] += 1000
        return _with_reviews(arrays, metas), r"game 1: review 1: reviewed \d+, but the game has \d+ moves"
    if case == "no game":
        metas[1]["game"] = 7
        return _with_reviews(arrays, metas), r"review 2: game 7 is not in the file"
    if case == "game type":
        metas[1]["game"] = "1"
        return _with_reviews(arrays, metas), r"review 2: game '1' is not in the file"
    if case == "duplicate":
        metas[1]["key"] = metas[0]["key"]
        return _with_reviews(arrays, metas), r"game 1: review 2: a second review by reviewer key"
    if case == "orphan values":
        out = {k: v for k, v in arrays.items() if k != "reviews"}
        return out, r"entry 'review_values' without 'reviews'"
    if case == "version":
        return {**arrays, "reviews_version": np.array(3)}, r"reviews_version 3"
    if case == "version type":
        return {**arrays, "reviews_version": np.array(1.0)}, r"reviews_version must be the whole number 1"
    if case == "not json":
        return {**arrays, "reviews": np.array("[{")}, r"entry 'reviews' is not valid JSON"
    if case == "not a list":
        return {**arrays, "reviews": np.array('{"game": 0}')}, r"'reviews' must be a JSON list of objects"
    raise AssertionError(case)


NPZ_CASES = [*BOTH_CASES, "int dtype", "no game", "game type", "orphan values", "version type", "not json"]


@pytest.mark.parametrize("case", NPZ_CASES)
def test_hostile_npz_reviews_are_refused_in_one_line(store, reviewed, tmp_path, case):
    arrays, match = _npz_case(_arrays(store, reviewed, tmp_path), case)
    path = tmp_path / "bad.npz"
    np.savez_compressed(path, **arrays)
    message = _refused(store, path, match)
    assert message.startswith("bad.npz: "), message


def test_a_review_values_header_past_the_limit_is_refused_before_reading(
    store, reviewed, tmp_path, monkeypatch
):
    arrays = _arrays(store, reviewed, tmp_path)
    monkeypatch.setattr(exchange, "MAX_FILE_REVIEW_MOVES", 10)
    path = tmp_path / "many.npz"
    np.savez_compressed(path, **arrays)
    _refused(store, path, r"reviewed moves, more than the 10 one import reads")
    lines = _lines(store, reviewed, tmp_path)
    _refused(store, _write_jsonl(tmp_path / "many.jsonl", lines), r"more than the 10 reviewed moves")


def test_a_damaged_stored_review_stops_the_export_in_one_line(store, reviewed, tmp_path):
    con = sqlite3.connect(store.path)
    con.execute("UPDATE review_chunks SET vals = x'00'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"game \d+: review \d+ is damaged at move 0 \(delete that review"):
        store.export_jsonl(reviewed, tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


def test_a_forged_review_under_the_default_reviewers_key_changes_nothing(store, tmp_path, capsys):
    """Issue 34: a .jsonl carrying a review under the default reviewer's own key, every move "best",
    does not change what ``review ID`` says of the game: the store reviews it itself."""
    from studio.cli import main

    gid = _play(store, 5, 40)
    path = store.export_file([gid], tmp_path / "game.jsonl")
    line = json.loads(path.read_text())
    rec = store.load_game(gid)
    key = default_reviewer(store, rec.rules).key()
    from engine.core import legal_mask

    forged = [
        [
            (1e9 if d == int(rec.moves[i]) else 0.0) if legal_mask(rec.layouts[i])[d] else None
            for d in range(4)
        ]
        for i in range(rec.n_moves)
    ]
    line["reviews_version"] = 1
    line["reviews"] = [
        {"key": key, "reviewer": {"label": "forged", "value_kind": "points"}, "created": 1.0,
         "updated": 1.0, "reviewed": rec.n_moves, "values": forged}
    ]  # fmt: skip
    path.write_text(json.dumps(line) + "\n")
    (new,) = store.import_file(path)
    assert [r.key for r in store.list_reviews(new)] == [imported_key(key)]
    data_dir = str(Path(store.path).parent)
    assert main(["--data-dir", data_dir, "review", str(gid), "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(["--data-dir", data_dir, "review", str(new), "--json"]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert imported["reviewer"]["label"] != "forged" and imported["reviewer"]["key"] == key
    assert imported["accuracy"] == local["accuracy"] < 100.0
    assert [m["grade"] for m in imported["moves"]] == [m["grade"] for m in local["moves"]]
