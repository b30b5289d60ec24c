"""Issue 17, the game-file door: hostile ``.npz`` / ``.jsonl`` files are refused in one line, nothing is
written, and nothing big is allocated before the refusal. Every case starts from a real export."""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine import Game, Rules
from engine.store import GameStore, StoreError, exchange
from engine.store.codec import MAX_EXPONENT
from tests.engine.exchange_helpers import FIXTURES, ORDER, db_snapshot
from tests.engine.exchange_helpers import exported_arrays as _arrays
from tests.engine.exchange_helpers import exported_lines as _lines
from tests.engine.exchange_helpers import play_first_legal as _play
from tests.engine.exchange_helpers import write_jsonl as _write_jsonl

TOP = 1 << MAX_EXPONENT


def _write_npz(path: Path, arrays: dict[str, Any]) -> Path:
    np.savez_compressed(path, **arrays)
    return path


def _refused(store: GameStore, path: Path, match: str) -> str:
    """Import must raise a one-line StoreError matching ``match`` and change nothing."""
    before = db_snapshot(store.path)
    with pytest.raises(StoreError, match=match) as info:
        store.import_file(path)
    assert "\n" not in str(info.value)
    assert db_snapshot(store.path) == before
    return str(info.value)


def _refused_line(store: GameStore, path: Path, key: str, value: Any, match: str) -> str:
    """A real export of one game with ``key`` set to ``value``, written to ``path``: refused as ``_refused``
    checks, the message returned."""
    (line,) = _lines(store, [_play(store, 1, 3)], path.parent)
    line[key] = value
    return _refused(store, _write_jsonl(path, [line]), match)


def _zero_move_game(store: GameStore) -> int:
    return store.start_game(rules=Rules(), initial_board=Game(seed=5).board, seed=5)  # playing, no moves


# ------------------------------------------------------------------------------ 1. where a game starts


def test_a_zero_move_game_on_a_board_no_rules_start_from_is_refused(store, tmp_path):
    """The issue: a 0-move game whose board holds 2**62 tiles imported and "verified"."""
    gid = _zero_move_game(store)
    (line,) = _lines(store, [gid], tmp_path)
    assert line["start"] == "rules"
    board = [[TOP, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, TOP // 2]]
    line["initial_board"] = line["final_board"] = board
    line["max_tile"] = TOP
    msg = _refused(store, _write_jsonl(tmp_path / "big.jsonl", [line]), "not one the rules start from")
    assert (
        msg.startswith("big.jsonl line 1: ") and "a 4611686018427387904, the rules start with 2 or 4" in msg
    )
    del line["start"]  # a file from before the field: a game without moves must still be a rules start
    _refused(store, _write_jsonl(tmp_path / "old.jsonl", [line]), r"line 1: .*not one the rules start from")

    arrays = _arrays(store, [gid], tmp_path)
    arrays["initial_boards"] = arrays["final_boards"] = np.array(board, dtype=np.int64).reshape(1, 16)
    games = json.loads(str(arrays["games"]))
    games[0]["max_tile"] = TOP
    arrays["games"] = np.array(json.dumps(games))
    _refused(store, _write_npz(tmp_path / "big.npz", arrays), r"big\.npz: game 1: .*not one the rules start")


@pytest.mark.parametrize(
    ("board", "problem"),
    [
        ([[2, 2, 2, 0]] + [[0] * 4] * 3, "3 tiles, the rules start with 2"),
        ([[8, 0, 0, 2]] + [[0] * 4] * 3, "a 8, the rules start with 2 or 4 only"),
        ([[0] * 4] * 4, "0 tiles, the rules start with 2"),
    ],
)
def test_start_problem_names_what_is_wrong(board, problem):
    assert exchange.start_problem(np.array(board), Rules()) == problem
    assert exchange.start_problem(np.array([[4, 0], [0, 4]]), Rules(rows=2, cols=2, p4=1.0)) is None
    assert exchange.start_problem(np.array([[4, 0], [0, 2]]), Rules(rows=2, cols=2, p4=0.0)) is not None


def test_a_game_that_says_it_starts_by_the_rules_must(store, tmp_path):
    """A game set up on a board of its own exports as "position" and round-trips; relabelled "rules", it is refused."""
    board = np.array([[2, 2, 4, 8], [0, 0, 0, 0], [0, 0, 0, 16], [0, 0, 0, 0]])
    gid = _play(store, 0, 6, game=Game(seed=3, board=board))
    (line,) = _lines(store, [gid], tmp_path)
    assert line["start"] == "position"
    for suffix in (".npz", ".jsonl"):
        (new,) = store.import_file(store.export_file([gid], tmp_path / f"pos{suffix}"))
        assert np.array_equal(store.load_game(new).initial_board, board)
    line["start"] = "rules"
    _refused(
        store, _write_jsonl(tmp_path / "lie.jsonl", [line]), r"line 1: .*\(5 tiles, the rules start with 2\)"
    )
    line["start"] = "anywhere"
    _refused(store, _write_jsonl(tmp_path / "odd.jsonl", [line]), "start must be one of rules, position")


def test_files_from_before_the_start_field_still_import(store, tmp_path):
    """Schema 1's exports (hand-over records start mid-game) and bare seed-003 excerpts say nothing."""
    assert len(store.import_file(FIXTURES / "export_v1.npz")) == 3
    assert len(store.import_file(FIXTURES / "export_v1.jsonl")) == 1
    # a seed-003 log that starts mid-game (an excerpt): its moves are replayed from its first layout
    game = Game(seed=4)
    for _ in range(15):
        game.step(game.legal_moves()[-1])
    layouts, moves, scores = [], [], []
    for _ in range(5):
        d = next(d for d in ORDER if d in game.legal_moves())
        layouts.append(game.board.reshape(16).copy())
        moves.append(np.eye(4)[d])
        game.step(d)
        scores.append(game.score)
    assert exchange.start_problem(layouts[0].reshape(4, 4), Rules()) is not None
    np.savez(
        tmp_path / "excerpt.npz", layouts=np.array(layouts), moves=np.array(moves), scores=np.array(scores)
    )
    (gid,) = store.import_file(tmp_path / "excerpt.npz")
    assert store.load_game(gid).n_moves == 5


def test_two_top_tiles_on_one_board_are_refused(store, tmp_path):
    """Two 2**62 tiles would merge into 2**63: the engine's slide cannot hold it. One is fine."""
    gid = _zero_move_game(store)
    (line,) = _lines(store, [gid], tmp_path)
    line["start"] = "position"
    line["initial_board"] = line["final_board"] = [[TOP, 2, 0, 0], [0] * 4, [0] * 4, [0] * 4]
    line["max_tile"] = TOP
    (new,) = store.import_file(_write_jsonl(tmp_path / "one.jsonl", [line]))
    assert store.load_game(new).final_board.max() == TOP
    line["initial_board"] = line["final_board"] = [[TOP, TOP, 0, 0], [0] * 4, [0] * 4, [0] * 4]
    _refused(store, _write_jsonl(tmp_path / "two.jsonl", [line]), r"two tiles of 2\*\*62 on one board")


def test_a_spawn_past_64_bits_is_refused_in_one_line(store, tmp_path):
    """Without a final board the last spawn is placed on the board: its value is checked first."""
    gid = _play(store, 1, 5)
    (line,) = _lines(store, [gid], tmp_path)
    del line["final_board"]
    r, c, _ = line["spawns"][-1][0]
    line["spawns"][-1] = [[r, c, 2**70]]
    _refused(
        store,
        _write_jsonl(tmp_path / "huge.jsonl", [line]),
        r"move 4: spawns must be a list of \[row, col, value\]",
    )
    line["spawns"][-1] = [[r, c, 2**40]]
    _refused(store, _write_jsonl(tmp_path / "big.jsonl", [line]), r"move 4: a 1099511627776 appeared")


# ------------------------------------------------------------------------------ 2. statuses


def _finished(store: GameStore, seed: int = 7) -> int:
    gid = _play(store, seed, 10_000)
    assert store.get_game(gid).status == "finished"
    return gid


def test_finished_with_a_move_left_is_refused(store, tmp_path):
    gids = [_play(store, 1, 5), _play(store, 2, 5)]
    lines = _lines(store, gids, tmp_path)
    lines[1]["status"] = "finished"
    msg = _refused(
        store, _write_jsonl(tmp_path / "done.jsonl", lines), "line 2: says finished, but its final board"
    )
    assert "still has a legal move (" in msg
    arrays = _arrays(store, gids, tmp_path)
    games = json.loads(str(arrays["games"]))
    games[0]["status"] = "finished"
    arrays["games"] = np.array(json.dumps(games))
    _refused(store, _write_npz(tmp_path / "done.npz", arrays), r"done\.npz: game 1: says finished")


@pytest.mark.parametrize("status", ["playing", "abandoned"])
def test_a_game_over_that_was_never_closed_imports_as_it_is(store, tmp_path, status):
    """Killed after its last move, before it was closed: no move left, yet not "finished". Kept."""
    (line,) = _lines(store, [_finished(store)], tmp_path)
    line["status"] = status
    (new,) = store.import_file(_write_jsonl(tmp_path / "open.jsonl", [line]))
    assert store.get_game(new).status == "abandoned"  # "playing" too: no process plays it here


def test_finished_games_still_import(store, tmp_path):
    gid = _finished(store)
    for suffix in (".npz", ".jsonl"):
        (new,) = store.import_file(store.export_file([gid], tmp_path / f"end{suffix}"))
        assert store.get_game(new).status == "finished"


# ------------------------------------------------------------------------------ 3. versions


@pytest.mark.parametrize(
    ("version", "match"),
    [
        (np.array(-1), "version must be the whole number 1, got -1"),
        (np.array(0), "version must be the whole number 1, got 0"),
        (np.array(1.0), r"version must be the whole number 1, got 1\.0"),
        (np.array("1"), "version must be the whole number 1, got '1'"),
        (np.array(True), "version must be the whole number 1, got True"),
        (np.array([1, 1]), r"version must be the whole number 1, got \[1, 1\]"),
        (np.array(2), r"written by a newer 2048 Studio \(format version 2\)"),
    ],
)
def test_npz_versions_other_than_1_are_refused(store, tmp_path, version, match):
    arrays = _arrays(store, [_play(store, 1, 3)], tmp_path)
    arrays["version"] = version
    _refused(store, _write_npz(tmp_path / "v.npz", arrays), r"v\.npz: " + match)


@pytest.mark.parametrize("version", [-1, 0, 1.0, True, "1", None, [1], 2])
def test_jsonl_versions_other_than_1_are_refused(store, tmp_path, version):
    match = r"v\.jsonl line 1: (version must be|written by a newer)"
    _refused_line(store, tmp_path / "v.jsonl", "version", version, match)


# ------------------------------------------------------------------------------ 4. games without moves


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_games_without_moves_round_trip(store, tmp_path, suffix):
    """A started game with no move (still playing) and a closed one, alone and with others."""
    playing = _zero_move_game(store)
    closed = _play(store, 9, 0)
    played = _play(store, 3, 4)
    for ids in ([playing], [closed], [playing, closed, played]):
        new = store.import_file(store.export_file(ids, tmp_path / f"zero{len(ids)}{suffix}"))
        assert len(new) == len(ids)
        for a, b in zip(ids, new):
            ra, rb = store.load_game(a), store.load_game(b)
            assert rb.n_moves == ra.n_moves and rb.summary.score == ra.summary.score
            assert np.array_equal(ra.initial_board, rb.initial_board)
            assert np.array_equal(ra.final_board, rb.final_board) and np.array_equal(ra.layouts, rb.layouts)
            assert rb.summary.status == ("abandoned" if ra.summary.status == "playing" else ra.summary.status)


# ------------------------------------------------------------------------------ 5. limits


def _forbid_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if any .npy member's data is read from now on (the refusal must come first)."""

    def boom(*args, **kwargs):
        raise AssertionError("an .npy member was read before the refusal")

    monkeypatch.setattr(np.lib.format, "read_array", boom)


@pytest.fixture
def no_reading(monkeypatch):
    _forbid_reading(monkeypatch)


def test_a_zip_bomb_is_refused_before_anything_is_inflated(store, tmp_path, monkeypatch):
    """A small file whose members inflate past the bound: refused from the sizes the zip declares."""
    arrays = _arrays(store, [_play(store, 1, 3)], tmp_path)
    arrays["layouts"] = np.zeros((20_000, 16), dtype=np.int64)  # 2.5 MiB of zeros, a few kB packed
    path = _write_npz(tmp_path / "bomb.npz", arrays)
    assert path.stat().st_size < 20_000
    monkeypatch.setattr(exchange, "MAX_NPZ_BYTES", 1 << 20)
    _forbid_reading(monkeypatch)
    _refused(
        store,
        path,
        r"bomb\.npz: entry 'layouts\.npy' would take the archive past 1,048,576 bytes once decompressed",
    )


def _lying_npz(path: Path, shape: tuple[int, ...], data: bytes) -> Path:
    """An .npz whose layouts.npy header declares ``shape`` (int64) but holds ``data``."""
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<i8", "fortran_order": False, "shape": shape})
    member.write(data)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("layouts.npy", member.getvalue())
        for key, arr in (("moves", np.zeros((1, 4), np.uint8)), ("scores", np.zeros(1, np.int64))):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arr)
            zf.writestr(f"{key}.npy", buf.getvalue())
    return path


def test_a_header_that_declares_a_huge_shape_allocates_nothing(store, tmp_path, no_reading):
    path = _lying_npz(tmp_path / "liar.npz", (10**12, 16), bytes(128))
    _refused(
        store,
        path,
        r"liar\.npz: entry 'layouts\.npy' declares shape \(1000000000000, 16\) of <i8 \(128,000,000,000,000 bytes\) but holds 128",
    )


def test_a_header_may_not_declare_less_either(store, tmp_path, no_reading):
    _refused(
        store,
        _lying_npz(tmp_path / "short.npz", (1, 16), bytes(1 << 16)),
        r"declares shape \(1, 16\) of <i8 \(128 bytes\) but holds 65,536",
    )


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda zf: zf.writestr("layouts", b"raw"), "entry 'layouts' is not a NumPy array"),
        (lambda zf: [zf.writestr(f"x{i}.npy", b"") for i in range(100)], "100 entries, more than the 64"),
        (lambda zf: [zf.writestr("a.npy", b""), zf.writestr("a.npy", b"")], "entry 'a' appears twice"),
    ],
)
def test_odd_zip_members_are_refused(store, tmp_path, build, match, no_reading):
    path = tmp_path / "odd.npz"
    with zipfile.ZipFile(path, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name
        build(zf)
    _refused(store, path, match)


def test_zero_size_items_are_refused(store, tmp_path, no_reading):
    """A V0 array of 10**15 items is 0 bytes: nothing to allocate, but every per-item loop would run forever."""
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "|V0", "fortran_order": False, "shape": (10**15,)})
    with zipfile.ZipFile(tmp_path / "void.npz", "w") as zf:
        zf.writestr("layouts.npy", member.getvalue())
    _refused(store, tmp_path / "void.npz", "has items of size 0")


def test_jsonl_lines_and_files_are_bounded_before_parsing(store, tmp_path, monkeypatch):
    (line,) = _lines(store, [_play(store, 1, 30)], tmp_path)
    path = _write_jsonl(tmp_path / "long.jsonl", [line])
    monkeypatch.setattr(exchange, "MAX_LINE_BYTES", 1000)

    def no_parse(*args, **kwargs):
        raise AssertionError("a line past the limit was parsed")

    with monkeypatch.context() as m:
        m.setattr(exchange.json, "loads", no_parse)
        _refused(store, path, r"long\.jsonl line 1: longer than 1,000 bytes")
    monkeypatch.setattr(exchange, "MAX_JSONL_BYTES", 100)
    _refused(store, path, r"long\.jsonl: [\d,]+ bytes, more than the 100 bytes one import reads")


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_moves_and_games_per_file_are_bounded(store, tmp_path, monkeypatch, suffix):
    ids = [_play(store, s, 6) for s in (1, 2, 3)]
    path = store.export_file(ids, tmp_path / f"many{suffix}")
    label = r"many\.npz: game 1" if suffix == ".npz" else r"many\.jsonl line 1"
    with monkeypatch.context() as m:
        m.setattr(exchange, "MAX_GAME_MOVES", 5)
        _refused(store, path, label + ": 6 moves, more than the 5 a game may have")
    with monkeypatch.context() as m:
        m.setattr(exchange, "MAX_FILE_GAMES", 2)
        _refused(store, path, "more than the 2 games one import reads")
    with monkeypatch.context() as m:
        m.setattr(exchange, "MAX_FILE_MOVES", 17)
        _refused(store, path, "more than the 17 moves one import reads")
    assert len(store.import_file(path)) == 3


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[" * 200_000 + "]" * 200_000, r"not valid JSON \(nested too deeply\)"),
        ('{"layouts": ' + "1" * 5000 + "}", r"not valid JSON \(Exceeds the limit"),
        ("\ufeff{}", "not valid JSON"),
    ],
)
def test_unparseable_lines_are_one_line_errors(store, tmp_path, text, match):
    path = tmp_path / "deep.jsonl"
    path.write_text(text + "\n", encoding="utf-8")
    _refused(store, path, r"deep\.jsonl line 1: " + match)


def test_json_in_an_npz_is_bounded_too(store, tmp_path):
    arrays = _arrays(store, [_play(store, 1, 3)], tmp_path)
    arrays["games"] = np.array("[" * 200_000)
    _refused(
        store,
        _write_npz(tmp_path / "deep.npz", arrays),
        r"entry 'games' is not valid JSON \(nested too deeply\)",
    )


# ------------------------------------------------------------------------------ found by the fuzz suite


def test_a_bad_rules_shape_in_a_bare_npz_is_a_one_line_error(store, tmp_path):
    layouts = np.zeros((1, 16), dtype=np.int64)
    layouts[0, :2] = 2
    np.savez(
        tmp_path / "rules.npz",
        layouts=layouts,
        moves=np.array([[0, 0, 0, 1]]),
        scores=np.array([0]),
        rules=np.array(json.dumps({"rows": "4", "cols": 4})),
    )
    _refused(store, tmp_path / "rules.npz", "rows and cols must be whole numbers")


def test_num_moves_that_overflow_are_refused(store, tmp_path):
    arrays = _arrays(store, [_play(store, 1, 4)], tmp_path)
    for key in ("game_offsets", "games", "initial_boards", "final_boards", "rules", "format", "version"):
        arrays.pop(key)
    arrays["num_moves"] = np.array([2**62, 2**62, 2**62, 2**62 + 4], dtype=np.int64)  # adds up to 4 mod 2**64
    _refused(store, _write_npz(tmp_path / "wrap.npz", arrays), "num_moves must be between 0 and the 4 moves")


@pytest.mark.parametrize("started", [2**64, -(2**70), float("nan"), float("inf")])
def test_a_time_past_64_bits_is_a_one_line_error(store, tmp_path, started):
    match = "started must be Unix seconds between 1970 and 9999"
    _refused_line(store, tmp_path / "when.jsonl", "started", started, match)


@pytest.mark.parametrize("with_final", [True, False])
def test_a_reward_past_64_bits_is_a_one_line_error(store, tmp_path, with_final):
    """Eight merges of 2**60 pairs into 2**61 on a 16-wide board: a reward of 2**64 (an OverflowError)."""
    board = [[2**60] * 16] + [[0] * 16 for _ in range(15)]
    after = [[2**61] * 8 + [0] * 8] + [[0] * 16 for _ in range(15)]
    after[1][0] = 2
    game = {
        "rules": {"rows": 16, "cols": 16},
        "start": "position",
        "initial_board": board,
        "layouts": [board],
        "moves": ["left"],
        "scores": [0],
        "spawns": [[[1, 0, 2]]],
        **({"final_board": after} if with_final else {}),
    }
    _refused(
        store,
        _write_jsonl(tmp_path / "wide.jsonl", [game]),
        r"move 0: its reward 18446744073709551616 does not fit",
    )
    top = [[2**62, 0, 0, 0], [2**61, 2**61, 0, 0], [0] * 4, [0] * 4]  # left makes a second 2**62
    game = {"rules": {}, "start": "position", "layouts": [top], "moves": ["left"], "scores": [2**62]}
    _refused(store, _write_jsonl(tmp_path / "top.jsonl", [game]), "two tiles of 2\\*\\*62 on one board")


@pytest.mark.parametrize("key", ["seed", "moves", "players", "status", "source"])
def test_a_deeply_nested_value_is_a_one_line_error(store, tmp_path, key):
    """JSON parses 900 levels, but the repr in the message (and numpy) did not: a RecursionError."""
    deep: Any = 2
    for _ in range(900):
        deep = [deep]
    value = [deep] if key == "moves" else deep
    msg = _refused_line(store, tmp_path / "deep.jsonl", key, value, r"deep\.jsonl")
    assert len(msg) < 200
