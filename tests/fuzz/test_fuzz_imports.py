"""Fuzz: mutated game files at the import door (``GameStore.import_file`` and ``games import``).

Every case starts from real exports (``.npz`` and ``.jsonl``) of a small library: two short games, a
game without moves (still playing), a game a person shared with an agent, a game played to the end
and one set up on a board of its own; two games carry reviews (one by two reviewers, one of them
partial). It mutates them (JSON fields deleted, retyped, made huge,
negative, NaN, nested, lines cut or repeated; ``.npz`` entries dropped, given another dtype, shape or
absurd values, the file's bytes flipped or cut) and imports the result into its own copy of a store.

The property: the import succeeds, and then every imported game reads back and replays by the rules
(``replay --verify``'s check) and each of its reviews reads back and grades, or it raises a StoreError of one line and the store is exactly as it
was. Never another exception. Through the CLI: exit 0 or 2, one line on stderr, never a traceback.
"""

from __future__ import annotations

import copy
import io
import json
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.review import grade_move, values_in_points
from agents.spec import AgentSpec
from engine import Direction, Game, Rules
from engine.store import HUMAN, GameRecorder, GameStore, Player, StoreError
from studio.cli import main
from studio.commands.replay import verify
from studio.services.review import Reviewer, review_game
from tests.engine.exchange_helpers import db_snapshot
from tests.fuzz.common import FUZZ, count

GREEDY = Player("agent", "greedy", "/ckpt/greedy-1.npz")
ORDER = (Direction.LEFT, Direction.UP, Direction.RIGHT, Direction.DOWN)

WEIRD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 20),
    st.sampled_from([3, 4096, 2**31, 2**62, 2**62 + 1, 2**63 - 1, 2**63, 2**64, -(2**63), 2**70, 10**30]),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.5, 2.0, -0.0, 1e308]),
    st.text(max_size=4),
    st.sampled_from(
        ["up", "left", "finished", "playing", "abandoned", "human", "agent", "rules", "position"]
    ),
    st.lists(st.integers(-4, 4096), max_size=4),
    st.recursive(st.integers(0, 8), lambda inner: st.lists(inner, max_size=3), max_leaves=6),
    st.dictionaries(
        st.sampled_from(["rows", "cols", "p4", "kind", "agent"]), st.integers(-2, 20), max_size=3
    ),
)


# ------------------------------------------------------------------------------------------ set-up


def _play(store: GameStore, seed: int, moves: int, players: tuple[Player, ...] = (HUMAN,)) -> int:
    rec = GameRecorder(store, rules=Rules(), seed=seed, lazy=True)
    for i in range(moves):
        if rec.game_over:
            break
        rec.play(next(d for d in ORDER if d in rec.game.legal_moves()), players[i % len(players)])
    rec.close()
    assert rec.game_id is not None
    return rec.game_id


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The exports every case mutates, and an empty-ish store file each case copies."""
    root = tmp_path_factory.mktemp("fuzz-imports")
    with GameStore(root / "source.sqlite3") as store:
        ids = [_play(store, 1, 8), _play(store, 2, 5)]
        ids.append(store.start_game(rules=Rules(), initial_board=Game(seed=5).board, seed=5))  # no moves
        ids.append(_play(store, 6, 9, (HUMAN, HUMAN, GREEDY)))  # mixed
        ids.append(_play(store, 7, 10_000))  # to the end: finished
        board = np.array([[2, 4, 8, 16], [0, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]])
        with GameRecorder(store, Game(seed=3, board=board), GREEDY) as rec:  # set up: start "position"
            for _ in range(4):
                rec.play(rec.game.legal_moves()[0])
        ids.append(rec.game_id)
        assert store.get_game(ids[4]).status == "finished"
        greedy, expectimax = (
            Reviewer(AgentSpec(name="expectimax"), 2),
            Reviewer(AgentSpec(name="expectimax"), 1),
        )
        review_game(store, ids[0], greedy)
        review_game(store, ids[3], greedy)
        stops = iter([False] * 4 + [True] * 99)  # a partial review: the first 4 moves
        review_game(store, ids[3], expectimax, should_stop=lambda: next(stops))
        assert [len(store.list_reviews(i)) for i in ids] == [1, 0, 0, 2, 0, 0]
        npz = store.export_npz(ids, root / "games.npz")
        jsonl = store.export_jsonl(ids, root / "games.jsonl")
    with GameStore(root / "base.sqlite3") as base:  # what each case imports into: one game already there
        _play(base, 11, 3)
    with np.load(npz, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    lines = [json.loads(ln) for ln in jsonl.read_text().splitlines()]
    yield Library({"arrays": arrays, "lines": lines, "base": root / "base.sqlite3"})


class Library(dict):
    """The exports; a short repr, so that a falsifying example's report is about the draws."""

    def __repr__(self) -> str:
        return "library"


def _check_reviews(store: GameStore, gid: int) -> None:
    """An imported game's reviews read back as the store keeps them, and every move grades."""
    rec = store.load_game(gid)
    for info in store.list_reviews(gid):
        values = store.review_values(info.id)
        assert values.shape == (info.reviewed, 4) and info.reviewed <= rec.n_moves
        assert not np.isinf(values).any()
        points = values_in_points(values, info.reviewer)
        for i, row in enumerate(points):
            grade_move(row, int(rec.moves[i]), board=rec.layouts[i])


def check_import(base: Path, file: Path) -> str:
    """The property, on a fresh copy of the store: ``"imported"`` or ``"refused"``, else the test fails."""
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "studio.sqlite3"
        shutil.copyfile(base, db)
        before = db_snapshot(db)
        with GameStore(db) as store:
            try:
                ids = store.import_file(file)
            except StoreError as e:
                message = str(e)
                assert message and "\n" not in message, repr(message)
                refused = True
            else:
                refused = False
                assert ids and store.count_games() == 1 + len(ids)
                for gid in ids:
                    rec = store.load_game(gid)
                    assert verify(rec) is None, (gid, verify(rec))
                    assert rec.summary.problem is None and rec.summary.n_moves == rec.n_moves
                    _check_reviews(store, gid)
                assert all(g.problem is None for g in store.list_games())
        if refused:
            assert db_snapshot(db) == before
        return "refused" if refused else "imported"


# ------------------------------------------------------------------------------------------ mutations


def _mutate(data: st.DataObject, value: Any, depth: int = 0) -> Any:
    """``value`` with one change somewhere inside it (JSON-like values)."""
    if isinstance(value, (list, dict)) and value and depth < 6:
        how = data.draw(
            st.sampled_from(["inside", "inside", "inside", "replace", "drop", "cut", "repeat", "scale"])
        )
        keys = list(range(len(value))) if isinstance(value, list) else list(value)
        key = data.draw(st.sampled_from(keys))
        out = copy.copy(value)
        if how == "inside":
            out[key] = _mutate(data, value[key], depth + 1)
        elif how == "replace":
            out[key] = data.draw(WEIRD)
        elif how == "drop":
            del out[key]
        elif how == "cut" and isinstance(out, list):
            out = out[: data.draw(st.integers(0, len(out)))]
        elif how == "repeat" and isinstance(out, list):
            out.insert(key, copy.deepcopy(out[key]))
        elif how == "scale":  # every number times 2**k: boards stay powers of two, tiles get huge
            out[key] = _scaled(value[key], 2 ** data.draw(st.integers(1, 62)))
        else:
            out[key] = data.draw(WEIRD)
        return out
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return data.draw(
            st.sampled_from(
                [
                    value + 1,
                    value - 1,
                    value * 2,
                    -value,
                    value + 2**62,
                    float(value) + 0.5,
                    str(value),
                    [value],
                ]
            )
            | WEIRD
        )
    return data.draw(WEIRD)


def _scaled(value: Any, factor: int) -> Any:
    if isinstance(value, list):
        return [_scaled(v, factor) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return value * factor
    return value


def _mutate_array(data: st.DataObject, arr: np.ndarray) -> np.ndarray:
    how = data.draw(
        st.sampled_from(
            ["dtype", "value", "value", "shape", "scalar", "empty", "row", "json", "scale", "swap"]
        )
    )
    if how == "json" and arr.dtype.kind == "U":
        try:
            obj = json.loads(str(arr))
        except ValueError:
            obj = str(arr)
        return np.array(json.dumps(_mutate(data, obj)))
    if how == "dtype":
        dtype = data.draw(
            st.sampled_from(
                ["int8", "uint8", "int32", "uint64", "float16", "float64", "bool", "U3", "complex64"]
            )
        )
        try:
            return arr.astype(dtype)
        except (TypeError, ValueError, OverflowError):  # no number, or "256" as int8: zeros of that dtype
            return np.zeros(arr.shape, dtype=dtype)
    if how == "value" and arr.size:
        kind = data.draw(st.sampled_from(["int", "uint", "float"]))
        out = (
            arr.astype({"int": np.int64, "uint": np.uint64, "float": np.float64}[kind])
            if arr.dtype.kind != "U"
            else arr
        )
        if out.dtype.kind == "U":
            return np.array(data.draw(st.text(max_size=8)))
        flat = out.reshape(-1).copy()
        i = data.draw(st.integers(0, flat.size - 1))
        choices = {
            "int": [-1, 3, 5, 2**62, -(2**63), 2**63 - 1, 1, 0, 2, 4, 8],
            "uint": [2**63, 2**64 - 1, 3, 2**62],
            "float": [float("nan"), float("inf"), 0.5, 1e30, -2.0, 2.0],
        }[kind]
        flat[i] = data.draw(st.sampled_from(choices))
        return flat.reshape(out.shape)
    if how == "shape":
        return data.draw(
            st.sampled_from(
                [arr.reshape(-1), arr[None], arr.T, arr.reshape(*arr.shape, 1) if arr.ndim else arr[None]]
            )
        )
    if how == "scale" and arr.dtype.kind in "iu":  # tiles stay powers of two, and get huge
        return arr.astype(np.int64) * np.int64(2 ** data.draw(st.integers(1, 62)))
    if how == "swap" and arr.ndim and len(arr) > 1:  # rows of the right type in the wrong place
        i, j = data.draw(st.integers(0, len(arr) - 1)), data.draw(st.integers(0, len(arr) - 1))
        out = arr.copy()
        out[[i, j]] = out[[j, i]]
        return out
    if how == "scalar":
        return np.array(data.draw(st.integers(-3, 20)))
    if how == "empty":
        return arr[:0] if arr.ndim else np.zeros(0, dtype=arr.dtype)
    if how == "row" and arr.ndim:
        cut = data.draw(st.booleans())
        return arr[:-1] if cut else np.concatenate([arr, arr[-1:]]) if len(arr) else arr
    return arr


def _flip(data: st.DataObject, raw: bytes) -> bytes:
    """A few bytes flipped, or the file cut short."""
    out = bytearray(raw)
    if data.draw(st.booleans()):
        return bytes(out[: data.draw(st.integers(0, len(out)))])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(out) - 1))
        out[i] ^= data.draw(st.integers(1, 255))
    return bytes(out)


def _hostile_jsonl(data: st.DataObject, lines: list[dict[str, Any]], path: Path) -> Path:
    games = copy.deepcopy(lines)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(games) - 1))
        games[i] = _mutate(data, games[i])
    if data.draw(st.integers(0, 3)) == 0:  # aim at the reviews: one key among twenty is rarely drawn
        reviewed = [i for i, g in enumerate(games) if isinstance(g, dict) and "reviews" in g]
        if reviewed:
            i = data.draw(st.sampled_from(reviewed))
            games[i]["reviews"] = _mutate(data, games[i]["reviews"])
    if data.draw(st.integers(0, 3)) == 0:  # a field of one game in another: right types, wrong game
        a, b = data.draw(st.integers(0, len(games) - 1)), data.draw(st.integers(0, len(games) - 1))
        key = data.draw(st.sampled_from(sorted(games[a])))
        if key in games[b]:
            games[a][key] = copy.deepcopy(games[b][key])
    if data.draw(st.integers(0, 4)) == 0:  # reorder, repeat or drop whole games
        games = data.draw(st.lists(st.sampled_from(games), min_size=1, max_size=len(games) + 1))
    text = "".join(json.dumps(g) + "\n" for g in games)
    raw = text.encode()
    if data.draw(st.integers(0, 5)) == 0:
        raw = _flip(data, raw)
    path.write_bytes(raw)
    return path


def _hostile_npz(data: st.DataObject, arrays: dict[str, np.ndarray], path: Path) -> Path:
    out = dict(arrays)
    for _ in range(data.draw(st.integers(1, 3))):
        aim = data.draw(st.integers(0, 3)) == 0  # the review entries: 3 of 17, so aim at them too
        key = data.draw(st.sampled_from(sorted(k for k in arrays if k.startswith("review") or not aim)))
        if data.draw(st.integers(0, 5)) == 0:
            out.pop(key, None)
        elif key in out:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # complex -> real, and the like: the mutation, not the door
                out[key] = _mutate_array(data, out[key])
    if data.draw(st.integers(0, 8)) == 0:
        out["num_moves"] = np.array(data.draw(st.lists(st.integers(-2, 60), max_size=7)), dtype=np.int64)
    buf = io.BytesIO()
    np.savez_compressed(buf, **out)
    raw = buf.getvalue()
    if data.draw(st.integers(0, 5)) == 0:
        raw = _flip(data, raw)
    path.write_bytes(raw)
    return path


def _hostile_file(data: st.DataObject, library: dict[str, Any], path: Path) -> Path:
    """A mutated export at ``path``, of the kind its suffix names (``.npz`` or ``.jsonl``)."""
    if path.suffix == ".npz":
        return _hostile_npz(data, library["arrays"], path)
    return _hostile_jsonl(data, library["lines"], path)


# ------------------------------------------------------------------------------------------ the tests


def test_the_unmutated_exports_import(library):
    with tempfile.TemporaryDirectory() as d:
        for name, write in (("ok.npz", _write_npz), ("ok.jsonl", _write_jsonl)):
            path = write(library, Path(d) / name)
            assert check_import(library["base"], path) == "imported"


def _write_npz(library: dict[str, Any], path: Path) -> Path:
    np.savez_compressed(path, **library["arrays"])
    return path


def _write_jsonl(library: dict[str, Any], path: Path) -> Path:
    path.write_text("".join(json.dumps(g) + "\n" for g in library["lines"]))
    return path


@pytest.mark.parametrize("kind", [".jsonl", ".npz"])
@FUZZ
@given(data=st.data())
def test_fuzz_import(library, kind, data):
    count(f"import {kind[1:]}")
    with tempfile.TemporaryDirectory() as d:
        check_import(library["base"], _hostile_file(data, library, Path(d) / f"fuzz{kind}"))


@pytest.mark.parametrize("kind", [".npz", ".jsonl"])
@FUZZ
@given(data=st.data())
def test_fuzz_games_import_command(library, kind, data, capsys):
    count(f"games import {kind}")
    with tempfile.TemporaryDirectory() as d:
        shutil.copyfile(library["base"], Path(d) / "studio.sqlite3")
        before = db_snapshot(Path(d) / "studio.sqlite3")
        path = _hostile_file(data, library, Path(d) / f"fuzz{kind}")
        capsys.readouterr()
        code = main(["--data-dir", d, "games", "import", str(path)])
        out, err = capsys.readouterr()
        assert code in (0, 2), (code, err)
        assert "Traceback" not in err and "Traceback" not in out
        if code == 2:
            assert err.count("\n") == 1 and err.startswith("python main.py games: error: "), err
            assert db_snapshot(Path(d) / "studio.sqlite3") == before
        else:
            assert out.startswith("imported ")
