"""Game files: ``.npz`` (seed 003's layout) and ``.jsonl`` (one game per line), written and read back.

``.npz`` (all games concatenated, N moves, G games, one board shape per file)::

    layouts        (N, rows*cols) int64   board before each move, row-major (seed 003's ``layouts``)
    moves          (N, 4) uint8           one-hot direction in action order up, left, down, right
                                          (seed 003's w, a, s, d)
    scores         (N,) int64             score after each move (seed 003's ``scores``)
    rewards        (N,) int64             merge reward of each move
    game_offsets   (G+1,) int64           game g is moves game_offsets[g]:game_offsets[g+1]
    initial_boards (G, rows*cols) int64   first board of each game (what a 0-move game needs)
    final_boards   (G, rows*cols) int64   last board of each game
    spawns         (M, 3) int64           (global move index, flat cell, value) of every spawned tile
    move_players   (N,) int64             who made each move: index into its game's ``players``
    board_shape    (2,) int64             rows, cols
    games          0-d str                JSON list of G dicts: id, source, agent, checkpoint, seed, rules,
                                          started, ended, status, score, max_tile, n_moves, players
                                          (list of {kind, agent, checkpoint}, see engine.store.Player),
                                          start (see below)
    rules          0-d str                JSON rules shared by every game (when they all agree)
    format, version                       "2048-studio-games", 1
    reviews        0-d str                (only when a game has reviews) JSON list of R dicts: game
                                          (0-based index into ``games``), key, reviewer, created,
                                          updated, reviewed (see "Reviews" below)
    review_values  (V, 4) float64         every review's values one after the other, V = sum of
                                          ``reviewed``: review r is the next ``reviewed`` rows
    reviews_version 0-d int64             1 (the reviews' own format version, see below)

A bare seed-003 file (only ``layouts``, ``moves``, ``scores``; optionally ``num_moves`` per game)
imports too: rules default to the classic game of that shape, spawns are read off the next layout.

``.jsonl``: one JSON object per line with the same fields per game (``layouts`` as nested
rows x cols lists, ``moves`` as direction names, ``spawns`` as ``[[row, col, value], ...]`` per move,
``move_players`` as a list of indexes into ``players``; ``reviews`` as a list of dicts with key,
reviewer, created, updated, reviewed and ``values`` (``reviewed`` rows of 4 numbers, ``null`` for NaN),
and ``reviews_version``; both only when the game has reviews).

``players`` / ``move_players`` are optional (files of studios before "one game, one record" have
neither, and format version 1 covers both): without them every move is by one player, built from the
game's ``source``, ``agent`` and ``checkpoint`` (``unknown`` when the source is not a player kind).

Reading is data only (``allow_pickle=False``; JSON) and every game is checked before anything is
returned: shapes, tile values, directions, and a replay of each move with the engine's slide that must
give the next layout minus the spawned tiles, with the rewards and scores adding up.

Versions: a file's ``version`` must be the whole number 1 (the only format so far); a bare seed-003
file (no ``format``, no ``version``) counts as version 1. Anything else (0, -1, 1.5, "1", 2) is refused.

Reviews (:mod:`engine.store.reviews`): each exported game carries every review the store holds of
it: the reviewer ``key`` (the identity reviews are reused by, text of 1 to :data:`MAX_REVIEW_KEY`
characters, unique within the game), ``reviewer`` (what the reviewer said about itself: an object of
at most :data:`MAX_REVIEWER_FIELDS` text names with text, number, boolean or null values,
:data:`MAX_REVIEWER_BYTES` as JSON), ``created`` / ``updated`` (Unix seconds), ``reviewed`` (how
many moves from the first it covers: 0 .. the game's moves, a partial review travels as far as it
got) and its values, float64[reviewed, 4] in action order as the store keeps them: finite, or NaN
for an illegal move (always) or a legal one the reviewer did not rate; never infinite. An export
writes infinite values as NaN and values of illegal moves as NaN (the store's reviewer writes them
so already; grades read either as "not rated"), so whatever it writes imports again. Grades are not
in the file: they follow from the values and the game. A bad review refuses the whole file like any
other bad field (one line naming the game and the field); imported reviews belong to the new game
ids. There is no de-duplication: a file imported twice gives two copies of each game, each with its
own reviews.

Reviews are optional and versioned on their own (``reviews_version``, only 1 so far; absent means 1,
another is refused), so the game format stays version 1 and both ways keep working: files without
reviews (every export before them) import as before, and a file with reviews imports into an older
studio, which ignores the entries and keys it does not know (an ``.npz``'s extra members, a line's
extra keys): it gets the games without their reviews.

Where a game starts (``start``): ``"rules"`` means the initial board is one the rules start from:
``Rules.start_tiles`` tiles, each a value the rules spawn (2 unless ``p4`` is 1, 4 when ``p4`` > 0),
every other cell empty (:func:`start_problem`); ``"position"`` means the game was set up on a board of
its own (``GameRecorder(store, Game(board=...))``, an environment reset to a given board) or
continues an earlier record (schema 1 stored each hand-over between a person and an agent as a new
record starting mid-game). Exports write the field for every game. Files written before it existed
(every studio export up to format version 1 without ``start``, e.g. ``tests/fixtures/export_v1.*``,
and bare seed-003 files, whose logs may be excerpts of longer games) say nothing: such a game *with
moves* may start from any position, as those files legitimately do; a game *without moves* must start
on a rules start board, since nothing else in the file vouches for its board. Whatever the start, every
board holds only storable tiles (:func:`engine.store.codec.tile_problem`: 0 or 2..2**62) and at most
one 2**62 tile (two of them merge into 2**63, which no int64 holds).

Statuses (:data:`engine.store.model.GAME_STATUSES`): ``finished`` claims the game is over, so its
final board must have no legal move; a game whose file says ``finished`` with a move left is refused.
``playing`` and ``abandoned`` claim nothing that the board can contradict: a game killed after its
last move but before it was closed keeps ``playing`` (or is swept to ``abandoned``) with no move left,
and imports as it is (``playing`` becomes ``abandoned``: no process plays it here). Without a status
(bare files) a game is ``finished`` when no move is left, else ``abandoned``.

Limits (module constants; hostile files must not exhaust memory before they are refused). An ``.npz``
is a zip: before any member is inflated, the sizes the zip declares must add up to at most
:data:`MAX_NPZ_BYTES` (512 MiB, about three million moves of a 4x4 game) over at most
:data:`MAX_NPZ_MEMBERS` members, and each member's ``.npy`` header (shape x item size) must match the
size the zip declares for it; zipfile never inflates a member past its declared size, so a member
that lies is cut short and refused. A ``.jsonl`` file is at most :data:`MAX_JSONL_BYTES` (1 GiB), read
one line at a time, each line at most :data:`MAX_LINE_BYTES` (64 MiB) before it is parsed. Either way
a game has at most :data:`MAX_GAME_MOVES` moves (1,000,000: far beyond the longest 4x4 game, about
100,000 moves to a 131072 tile) and a file at most :data:`MAX_FILE_GAMES` games and
:data:`MAX_FILE_MOVES` moves in all, a game at most :data:`MAX_GAME_REVIEWS` reviews and a file at
most :data:`MAX_FILE_REVIEW_MOVES` reviewed moves in all (the whole file is checked in memory before one game is written):
export larger libraries in several files. A refusal is a :class:`StoreError` of one line; nothing is
written to the store.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import reprlib
import struct
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from engine import jsonsafe
from engine.core import DIRECTIONS, MAX_SIDE, Direction, Rules, legal_mask, slide_unchecked
from engine.fsutil import atomic_write
from engine.npzcheck import NpzSizeError, check_npz_sizes
from engine.store.codec import MAX_EXPONENT, tile_problem
from engine.store.model import GAME_STATUSES, MAX_TIME, PLAYER_KINDS, GameRecord, Player, StoreError
from engine.store.reviews import ReviewData

log = logging.getLogger(__name__)

NPZ_FORMAT = "2048-studio-games"
JSONL_FORMAT = "2048-studio-game"
VERSION = 1
#: The reviews' own format version (see the module docstring): a game file stays version 1 with them.
REVIEWS_VERSION = 1
SUFFIXES = (".npz", ".jsonl")
#: Where a game starts (see the module docstring): on a board the rules start from, or a position.
STARTS = ("rules", "position")

MAX_NPZ_BYTES = 512 << 20  # what an .npz's members may inflate to, all together
MAX_NPZ_MEMBERS = 64  # the format has 17 entries
MAX_JSONL_BYTES = 1 << 30
MAX_LINE_BYTES = 64 << 20
MAX_GAME_MOVES = 1_000_000
MAX_FILE_GAMES = 100_000
MAX_FILE_MOVES = 4_000_000
MAX_GAME_REVIEWS = 64  # one per reviewer: a handful in practice
MAX_FILE_REVIEW_MOVES = MAX_FILE_MOVES  # rows of 4 values in all: 128 MiB of float64
MAX_REVIEW_KEY = 512  # name@dD:hash, the name a checkpoint file's stem
MAX_REVIEWER_FIELDS = 32
MAX_REVIEWER_BYTES = 16 << 10  # a checkpoint path and a label are its longest fields
_TOP_TILE = 1 << MAX_EXPONENT  # the largest storable tile: two of them cannot merge in 64 bits

Triple = tuple[int, int, int]


@dataclass
class IncomingGame:
    """One game read from a file and fully checked; ``meta`` holds source, agent, seed, times, status, id.

    Also the form :meth:`GameStore.record_trace` hands a whole in-memory game to the store's one writer
    of whole games (with an empty ``meta``)."""

    rules: Rules
    meta: dict[str, Any]
    initial_board: np.ndarray
    layouts: np.ndarray  # (n, rows, cols) int64
    moves: np.ndarray  # (n,) int8
    rewards: np.ndarray  # (n,) int64
    scores: np.ndarray  # (n,) int64
    spawns: list[list[Triple]]
    final_board: np.ndarray
    players: list[Player]
    move_players: np.ndarray  # (n,) int64 index into players
    reviews: list[ReviewData] = field(default_factory=list)  # checked against this game's moves


def file_kind(path: str | os.PathLike[str]) -> str:
    """``".npz"`` or ``".jsonl"`` from the file name, or a StoreError naming the supported ones."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        suffix = ".jsonl"
    if suffix not in SUFFIXES:
        raise StoreError(f"{Path(path).name}: unknown file type {suffix or '(none)'!r}: use .npz or .jsonl")
    return suffix


def start_problem(board: np.ndarray, rules: Rules) -> str | None:
    """None when ``board`` is one ``rules`` can start a game on, else what is wrong, in words.

    A start board holds ``rules.start_tiles`` tiles, each a value the rules spawn (2 unless ``p4`` is 1,
    4 when ``p4`` > 0), and nothing else: ``[[2, 0], [0, 4]]`` is a start of the classic rules,
    ``[[2, 2], [2, 0]]`` is not (``"3 tiles, the rules start with 2"``).
    """
    b = np.asarray(board)
    if b.shape != rules.shape:
        return f"a {b.shape} board, the rules play on {rules.rows}x{rules.cols}"
    tiles = b[b != 0]
    if len(tiles) != rules.start_tiles:
        return f"{len(tiles)} tiles, the rules start with {rules.start_tiles}"
    allowed = _spawnable(rules)
    odd = [int(v) for v in tiles if int(v) not in allowed]
    if odd:
        return f"a {odd[0]}, the rules start with {' or '.join(map(str, sorted(allowed)))} only"
    return None


def _spawnable(rules: Rules) -> set[int]:
    return {v for v, ok in ((2, rules.p4 < 1), (4, rules.p4 > 0)) if ok}


# ------------------------------------------------------------------------------------------- writing


def _meta_of(rec: GameRecord) -> dict[str, Any]:
    s = rec.summary
    return {
        "id": s.id,
        "source": s.source,
        "agent": s.agent,
        "checkpoint": s.checkpoint,
        "seed": s.seed,
        "rules": s.rules.to_dict(),
        "started": s.started,
        "ended": s.ended,
        "status": s.status,
        "score": s.score,
        "max_tile": s.max_tile,
        "n_moves": s.n_moves,
        "players": [p.to_json() for p in s.players],
        "start": "rules" if start_problem(rec.initial_board, s.rules) is None else "position",
    }


def exported_values(rec: GameRecord, values: np.ndarray) -> np.ndarray:
    """A review's values as a file carries them: float64[reviewed, 4] (at most the game's moves),
    NaN where a value is infinite or rates an illegal move, so that the file imports again (the
    store's reviewer writes them so already; grades read either as "not rated")."""
    out = np.array(values[: rec.n_moves], dtype=np.float64).reshape(-1, 4)
    out[np.isinf(out)] = np.nan
    for i in range(len(out)):
        if np.isfinite(out[i]).any():
            out[i, ~legal_mask(rec.layouts[i])] = np.nan
    return out


def _review_json(rec: GameRecord, review: ReviewData) -> tuple[dict[str, Any], np.ndarray]:
    values = exported_values(rec, review.values)
    meta = {
        "key": review.key,
        "reviewer": review.reviewer,
        "created": review.created,
        "updated": review.updated,
        "reviewed": len(values),
    }
    return meta, values


def write_npz(
    records: Sequence[GameRecord], path: Path, reviews: Sequence[Sequence[ReviewData]] | None = None
) -> None:
    """``reviews[g]``: the reviews of ``records[g]`` (none: no reviews in the file)."""
    shapes = sorted({r.rules.shape for r in records})
    if len(shapes) != 1:
        listed = ", ".join(f"{a}x{b}" for a, b in shapes)
        raise StoreError(
            f"an .npz file holds one board shape, these games have {listed}: export them "
            "separately or as .jsonl"
        )
    rows, cols = shapes[0]
    cells = rows * cols
    counts = [r.n_moves for r in records]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n = int(offsets[-1])

    def cat(get: Callable[[GameRecord], np.ndarray], dtype: Any, width: int | None = None) -> np.ndarray:
        parts = [
            np.asarray(get(r), dtype=dtype).reshape(-1, width) if width else np.asarray(get(r), dtype=dtype)
            for r in records
        ]
        return np.concatenate(parts) if parts else np.empty((0, width) if width else 0, dtype=dtype)

    moves = cat(lambda r: r.moves, np.int64)
    one_hot = np.zeros((n, 4), dtype=np.uint8)
    one_hot[np.arange(n), moves] = 1
    spawn_rows = []
    for g, rec in enumerate(records):
        for i in range(rec.n_moves):
            for sr, sc, sv in rec.spawns[i]:
                if sv:
                    spawn_rows.append((int(offsets[g]) + i, int(sr) * cols + int(sc), int(sv)))
    metas = [_meta_of(r) for r in records]
    rules_all = {jsonsafe.dumps(m["rules"], sort_keys=True) for m in metas}
    arrays: dict[str, Any] = {
        "format": np.array(NPZ_FORMAT),
        "version": np.array(VERSION),
        "board_shape": np.array([rows, cols], dtype=np.int64),
        "layouts": cat(lambda r: r.layouts, np.int64, cells),
        "moves": one_hot,
        "scores": cat(lambda r: r.scores, np.int64),
        "rewards": cat(lambda r: r.rewards, np.int64),
        "game_offsets": offsets,
        "initial_boards": np.stack([r.initial_board.reshape(cells) for r in records]).astype(np.int64),
        "final_boards": np.stack([r.final_board.reshape(cells) for r in records]).astype(np.int64),
        "spawns": np.array(spawn_rows, dtype=np.int64).reshape(-1, 3),
        "move_players": cat(lambda r: r.move_players, np.int64),
        "games": np.array(jsonsafe.dumps(metas)),
    }
    if len(rules_all) == 1:
        arrays["rules"] = np.array(rules_all.pop())
    review_metas: list[dict[str, Any]] = []
    review_values: list[np.ndarray] = []
    for g, (rec, game_reviews) in enumerate(zip(records, reviews or [], strict=False)):
        for review in game_reviews:
            meta, values = _review_json(rec, review)
            review_metas.append({"game": g, **meta})
            review_values.append(values)
    if review_metas:  # a file without reviews is byte for byte what the studio wrote before them
        arrays["reviews"] = np.array(jsonsafe.dumps(review_metas))
        arrays["review_values"] = np.concatenate(review_values).astype(np.float64)
        arrays["reviews_version"] = np.array(REVIEWS_VERSION)
    atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))


def game_to_json(rec: GameRecord, reviews: Sequence[ReviewData] = ()) -> dict[str, Any]:
    """One game as the JSON object of a ``.jsonl`` line, with ``reviews`` (its stored reviews)."""
    out: dict[str, Any] = {"format": JSONL_FORMAT, "version": VERSION, **_meta_of(rec)}
    out["initial_board"] = rec.initial_board.tolist()
    out["layouts"] = rec.layouts.tolist()
    out["moves"] = [DIRECTIONS[int(m)].label for m in rec.moves]
    out["rewards"] = rec.rewards.tolist()
    out["scores"] = rec.scores.tolist()
    out["spawns"] = [[[int(r), int(c), int(v)] for r, c, v in rec.spawns[i] if v] for i in range(rec.n_moves)]
    out["final_board"] = rec.final_board.tolist()
    out["move_players"] = rec.move_players.tolist()
    if reviews:
        out["reviews_version"] = REVIEWS_VERSION
        out["reviews"] = []
        for review in reviews:
            meta, values = _review_json(rec, review)
            # null for NaN: JSON has no NaN (Python would write a bare NaN other readers refuse)
            rows = [[None if math.isnan(v) else v for v in row] for row in values.tolist()]
            out["reviews"].append({**meta, "values": rows})
    return out


def write_jsonl(
    records: Iterable[GameRecord], path: Path, reviews: Iterable[Sequence[ReviewData]] | None = None
) -> None:
    """``reviews``: the reviews of each record, in the same order (none: no reviews in the file)."""

    def write(fh: IO[bytes]) -> None:
        per_game = iter(reviews) if reviews is not None else None
        for rec in records:
            mine = next(per_game, ()) if per_game is not None else ()
            # null for a non-finite time or value: a bare Infinity is not JSON (the import would refuse it)
            fh.write(jsonsafe.dumps(game_to_json(rec, mine), separators=(",", ":")).encode() + b"\n")

    atomic_write(path, write)


# ------------------------------------------------------------------------------------------- reading


def read_games(path: str | os.PathLike[str]) -> list[IncomingGame]:
    """Every game of a ``.npz`` / ``.jsonl`` file, checked; a StoreError (one line) on the first problem."""
    p = Path(path)
    kind = file_kind(p)
    if not p.is_file():
        raise StoreError(f"{p}: no such file")
    try:
        games = _read_npz(p) if kind == ".npz" else _read_jsonl(p)
    except RecursionError:  # data nested deeper than any game file (e.g. in a message's repr)
        raise StoreError(f"{p.name}: nested too deeply to be a game file") from None
    except StoreError as e:
        text = str(e)
        if len(text) <= 400:
            raise
        raise StoreError(text[:397] + "...") from None
    if not games:
        raise StoreError(f"{p.name}: no games in the file")
    return games


def _int_array(value: Any, label: str, what: str) -> np.ndarray:
    """``value`` as an int64 array (whole floats and bools accepted), or a StoreError saying what is wrong."""
    try:
        arr = np.asarray(value)
    except ValueError:
        raise StoreError(f"{label}: {what} is not a rectangular array") from None
    if arr.dtype == object:
        raise StoreError(f"{label}: {what} is not a rectangular array of numbers")
    if arr.dtype.kind == "b":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float64)  # float16 cannot even hold the bound below
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)) or np.any(np.abs(arr) >= 2.0**63):
            raise StoreError(f"{label}: {what} must hold whole numbers")
        return arr.astype(np.int64)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**63:
        raise StoreError(f"{label}: {what} holds a number too large for 64 bits")
    if arr.dtype.kind not in "iu":
        raise StoreError(f"{label}: {what} must hold numbers, got {arr.dtype}")
    return arr.astype(np.int64)


def _boards(value: Any, label: str, what: str, shape: tuple[int, ...]) -> np.ndarray:
    """Tile-checked int64 boards of ``shape`` (a -1 first dimension = any count)."""
    try:
        arr = np.asarray(value)
    except ValueError:
        raise StoreError(f"{label}: {what} is not a rectangular array") from None
    problem = tile_problem(arr)
    if problem:
        raise StoreError(f"{label}: {what}: {problem}")
    arr = _int_array(arr, label, what)
    want = tuple(arr.shape[0] if s == -1 and arr.ndim else s for s in shape)
    if arr.shape != want:
        want_txt = " x ".join("n" if s == -1 else str(s) for s in shape)
        raise StoreError(f"{label}: {what} has shape {arr.shape}, expected {want_txt}")
    return arr


def _rules(value: Any, label: str, shape: tuple[int, int] | None) -> Rules:
    if value is None:
        if shape is None:
            raise StoreError(f"{label}: no rules and no board shape given")
        return Rules(rows=shape[0], cols=shape[1])
    if not isinstance(value, Mapping):
        raise StoreError(f"{label}: rules must be a JSON object, got {type(value).__name__}")
    for key in ("rows", "cols", "start_tiles", "spawn_per_move", "p4"):
        v = value.get(key, 0)
        if not isinstance(v, (int, float) if key == "p4" else int) or isinstance(v, bool):
            kind = "a number" if key == "p4" else "a whole number"
            raise StoreError(f"{label}: bad rules: {key} must be {kind}, got {_shown(v)}")
    try:
        return Rules.from_dict(dict(value))
    except (TypeError, ValueError) as e:
        raise StoreError(f"{label}: bad rules: {e}") from None


def _meta(obj: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The descriptive fields of a game (all optional), type-checked."""
    meta: dict[str, Any] = {}
    for key in ("source", "agent", "checkpoint"):
        v = obj.get(key)
        if v is not None and not isinstance(v, str):
            raise StoreError(f"{label}: {key} must be text, got {_shown(v)}")
        meta[key] = v
    for key in ("seed", "id"):
        v = obj.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise StoreError(f"{label}: {key} must be a whole number, got {_shown(v)}")
        meta[key] = v
    for key in ("started", "ended"):
        v = obj.get(key)
        # NaN fails the range test too; an int past 64 bits must never reach numpy (np.isfinite(2**64)
        # raised a TypeError: found by the fuzz suite)
        if v is not None and (
            not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= MAX_TIME
        ):
            # Range-checked at the door: one time past what a platform's time functions take made
            # every later listing of the library fail.
            raise StoreError(f"{label}: {key} must be Unix seconds between 1970 and 9999, got {_shown(v)}")
        meta[key] = None if v is None else float(v)
    status = obj.get("status")  # None: decided from the final board in check_game
    if status is not None and status not in GAME_STATUSES:
        raise StoreError(f"{label}: status must be one of {', '.join(GAME_STATUSES)}, got {_shown(status)}")
    meta["status"] = status
    for key in ("score", "max_tile", "n_moves"):
        v = obj.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise StoreError(f"{label}: {key} must be a whole number, got {_shown(v)}")
        meta[key] = v
    start = obj.get("start")
    if start is not None and start not in STARTS:
        raise StoreError(f"{label}: start must be one of {', '.join(STARTS)}, got {_shown(start)}")
    meta["start"] = start
    players = obj.get("players")
    if players is not None:
        if not isinstance(players, list) or not players:
            raise StoreError(f"{label}: players must be a non-empty list of {{kind, agent, checkpoint}}")
        try:
            meta["players"] = [Player.from_json(p) for p in players]
        except StoreError as e:
            raise StoreError(f"{label}: {e}") from None
    else:
        meta["players"] = None
    return meta


def _players(
    label: str, meta: dict[str, Any], move_players: np.ndarray | None, n: int
) -> tuple[list[Player], np.ndarray]:
    """The game's players and the player of each move; a file without them had one player per game."""
    players = meta.get("players")
    if players is None:
        source = meta.get("source")
        kind = source if isinstance(source, str) and source in PLAYER_KINDS else "unknown"
        players = [Player(kind, meta.get("agent"), meta.get("checkpoint"))]
    if move_players is None:
        if len(players) > 1:
            raise StoreError(f"{label}: {len(players)} players but no move_players saying who made each move")
        return players, np.zeros(n, dtype=np.int64)
    if move_players.shape != (n,):
        raise StoreError(f"{label}: {n} moves but move_players has shape {move_players.shape}")
    if n and (move_players.min() < 0 or move_players.max() >= len(players)):
        raise StoreError(f"{label}: move_players refers to a player that is not in players")
    return players, move_players.astype(np.int64)


def _directions(value: Any, label: str) -> np.ndarray:
    """Direction names / 0-3 / one-hot rows -> (n,) int8."""
    if isinstance(value, list):
        out = np.empty(len(value), dtype=np.int8)
        for i, v in enumerate(value):
            try:
                if not isinstance(v, (str, int)) or isinstance(v, bool):
                    raise ValueError(type(v).__name__)
                out[i] = int(Direction.parse(v))
            except ValueError:
                raise StoreError(
                    f"{label}: move {i}: {_shown(v)} is not a direction (up, left, down, right or 0-3)"
                ) from None
        return out
    arr = _int_array(value, label, "moves")
    if arr.ndim == 2:
        if arr.shape[1] != 4 or np.any((arr != 0) & (arr != 1)) or np.any(arr.sum(axis=1) != 1):
            raise StoreError(
                f"{label}: moves must be one-hot rows of 4 (up, left, down, right), shape {arr.shape}"
            )
        return arr.argmax(axis=1).astype(np.int8)
    if arr.ndim != 1 or np.any((arr < 0) | (arr > 3)):
        raise StoreError(f"{label}: moves must be n one-hot rows of 4 or n directions 0-3")
    return arr.astype(np.int8)


def _spawn_list(value: Any, label: str, i: int) -> list[Triple]:
    """``[[row, col, value], ...]`` of whole numbers (JSON), or a StoreError."""
    if not isinstance(value, list) or not all(
        isinstance(t, list)
        and len(t) == 3
        and all(isinstance(x, int) and not isinstance(x, bool) and abs(x) < 1 << 63 for x in t)
        for t in value
    ):
        raise StoreError(f"{label}: move {i}: spawns must be a list of [row, col, value]")
    return [(r, c, v) for r, c, v in value]


def check_game(
    label: str,
    rules: Rules,
    meta: dict[str, Any],
    *,
    layouts: np.ndarray,
    moves: np.ndarray,
    scores: np.ndarray,
    rewards: np.ndarray | None = None,
    spawns: Sequence[Sequence[Triple]] | None = None,
    initial_board: np.ndarray | None = None,
    final_board: np.ndarray | None = None,
    move_players: np.ndarray | None = None,
) -> IncomingGame:
    """Replay a game move by move and check everything agrees; returns it complete (rewards, spawns, boards).

    For move ``i``: the move must be legal on ``layouts[i]``; its merge reward must match ``rewards[i]``
    (when given); scores must rise by exactly the reward; and the next layout (``layouts[i+1]``, or
    ``final_board`` after the last move) must be the slid board plus the spawned tiles: 2s or 4s on
    empty cells, as many as the rules spawn (and exactly ``spawns[i]`` when spawns are given).
    ``move_players`` (who made each move) must point into ``meta["players"]``. The initial board must
    be a rules start board unless the game starts from a position (``meta["start"]``, see the module
    docstring), and a ``finished`` game must end on a board with no legal move.
    """
    n = len(moves)
    _check_shapes(label, rules, n, layouts, scores, rewards, spawns, initial_board, final_board)
    players, who = _players(label, meta, move_players, n)
    if initial_board is None:
        if n == 0:
            raise StoreError(f"{label}: a game without moves needs its initial board")
        initial_board = layouts[0]
    elif n and not np.array_equal(initial_board, layouts[0]):
        raise StoreError(f"{label}: initial board differs from the layout before move 0")
    _check_start(label, rules, meta.get("start"), initial_board, n)
    for what, boards in (
        ("layouts", layouts),
        ("initial board", initial_board),
        ("final board", final_board),
    ):
        if boards is not None:
            _check_top_tiles(label, what, boards)
    out_rewards, out_spawns, board_after = _replay(
        label, rules, layouts, moves, scores, rewards, spawns, initial_board, final_board
    )
    if final_board is None:
        final_board = board_after
        _check_top_tiles(label, "final board", final_board)
    elif n == 0 and not np.array_equal(final_board, initial_board):
        raise StoreError(f"{label}: a game without moves must end on its initial board")
    _check_end(label, meta, scores, final_board)
    return IncomingGame(
        rules,
        meta,
        initial_board,
        layouts,
        moves.astype(np.int8),
        out_rewards,
        scores.astype(np.int64),
        out_spawns,
        final_board,
        players,
        who,
    )


def _check_shapes(
    label: str,
    rules: Rules,
    n: int,
    layouts: np.ndarray,
    scores: np.ndarray,
    rewards: np.ndarray | None,
    spawns: Sequence[Sequence[Triple]] | None,
    initial_board: np.ndarray | None,
    final_board: np.ndarray | None,
) -> None:
    """One score, reward, layout and spawn list per move (``n`` of them) and boards of the rules' shape."""
    if n > MAX_GAME_MOVES:
        raise StoreError(f"{label}: {n:,} moves, more than the {MAX_GAME_MOVES:,} a game may have")
    if scores.shape != (n,):
        raise StoreError(f"{label}: {n} moves but scores has shape {scores.shape}")
    if rewards is not None and rewards.shape != (n,):
        raise StoreError(f"{label}: {n} moves but rewards has shape {rewards.shape}")
    if layouts.shape != (n, *rules.shape):
        raise StoreError(f"{label}: {n} moves but layouts of shape {layouts.shape}")
    if spawns is not None and len(spawns) != n:
        raise StoreError(f"{label}: {n} moves but spawns for {len(spawns)}")
    for what, board in (("initial board", initial_board), ("final board", final_board)):
        if board is not None and board.shape != rules.shape:
            raise StoreError(f"{label}: {what} has shape {board.shape}, the rules play on {rules.shape}")


def _replay(
    label: str,
    rules: Rules,
    layouts: np.ndarray,
    moves: np.ndarray,
    scores: np.ndarray,
    rewards: np.ndarray | None,
    spawns: Sequence[Sequence[Triple]] | None,
    initial_board: np.ndarray,
    final_board: np.ndarray | None,
) -> tuple[np.ndarray, list[list[Triple]], np.ndarray]:
    """Every move replayed and checked (see :func:`check_game`): the merge rewards, each move's spawns,
    and the board after the last move (the initial board for a game without moves)."""
    n = len(moves)
    out_rewards = np.empty(n, dtype=np.int64)
    out_spawns: list[list[Triple]] = []
    score = 0
    board_after = initial_board
    for i in range(n):
        d = Direction(int(moves[i]))
        slid, reward = slide_unchecked(layouts[i], d)
        if np.array_equal(slid, layouts[i]):
            raise StoreError(f"{label}: move {i}: {d.label} changes nothing on that board (an illegal move)")
        if reward >= 1 << 63:  # a row of 2**60 pairs on a wide board (found by reading, not the fuzz)
            raise StoreError(f"{label}: move {i}: its reward {reward} does not fit in 64 bits")
        if rewards is not None and int(rewards[i]) != reward:
            raise StoreError(f"{label}: move {i}: reward {int(rewards[i])} but {d.label} merges {reward}")
        out_rewards[i] = reward
        if i == 0:
            score = int(scores[0]) - reward
            if score < 0:
                raise StoreError(f"{label}: move 0: score {int(scores[0])} is less than its reward {reward}")
        if int(scores[i]) != score + reward:
            raise StoreError(
                f"{label}: move {i}: score {int(scores[i])}, expected {score + reward} "
                f"(previous score {score} + reward {reward})"
            )
        score += reward
        nxt = layouts[i + 1] if i + 1 < n else final_board
        given = list(spawns[i]) if spawns is not None else None
        where = "the next layout" if i + 1 < n else "the final board"
        triples, board_after = _spawned(label, i, rules, d, slid, nxt, where, given)
        out_spawns.append(triples)
    return out_rewards, out_spawns, board_after


def _spawned(
    label: str,
    i: int,
    rules: Rules,
    d: Direction,
    slid: np.ndarray,
    nxt: np.ndarray | None,
    where: str,
    given: list[Triple] | None,
) -> tuple[list[Triple], np.ndarray]:
    """The tiles a move spawned and the board after it (``slid``: the board it slid to).

    With the next board ``nxt`` (``where`` names it): the tiles it adds to ``slid``, which must be
    ``given`` when the file lists them. Without (the last move of a file without a final board): the
    ``given`` tiles placed on ``slid``. ``label`` names the game, ``i`` the move."""
    if nxt is not None:
        changed = np.argwhere(nxt != slid)
        found = [(int(r), int(c), int(nxt[r, c])) for r, c in changed]
        if any(slid[r, c] != 0 for r, c, _ in found):
            raise StoreError(f"{label}: move {i}: {where} is not the board after {d.label} plus new tiles")
        if given is not None and sorted(given) != sorted(found):
            raise StoreError(
                f"{label}: move {i}: spawns {given} do not match the next layout (which adds {found})"
            )
        triples = given if given is not None else found
        _check_spawns(label, i, rules, slid, triples, exact=True)
        return triples, nxt
    triples = given or []
    # checked before they are placed: a value past 64 bits cannot even be put on a board
    _check_spawns(label, i, rules, slid, triples, exact=given is not None)
    board_after = slid.copy()
    rows, cols = rules.shape
    for r, c, v in triples:
        if not (0 <= r < rows and 0 <= c < cols) or board_after[r, c] != 0:
            raise StoreError(f"{label}: move {i}: spawn at ({r}, {c}) is not on an empty cell")
        board_after[r, c] = v
    return triples, board_after


def _check_end(label: str, meta: dict[str, Any], scores: np.ndarray, final_board: np.ndarray) -> None:
    """What the file says of the game's end (score, max tile, moves, status) against its replay; a
    file without a status gets one (over when no move is left)."""
    n = len(scores)
    final_score = int(scores[-1]) if n else 0
    for key, actual in (("score", final_score), ("max_tile", int(final_board.max())), ("n_moves", n)):
        if meta.get(key) is not None and meta[key] != actual and not (key == "score" and n == 0):
            raise StoreError(f"{label}: says {key} {meta[key]} but its moves give {actual}")
    left = legal_mask(final_board)
    if meta.get("status") is None:  # a bare file: over when no move is left
        meta["status"] = "abandoned" if left.any() else "finished"
    elif meta["status"] == "finished" and left.any():
        names = ", ".join(d.label for d in DIRECTIONS if left[d])
        raise StoreError(f"{label}: says finished, but its final board still has a legal move ({names})")


def _check_start(label: str, rules: Rules, start: str | None, board: np.ndarray, n: int) -> None:
    """The initial board against the game's ``start`` (see the module docstring).

    ``"position"``: any board. ``"rules"``: a start board of the rules. No ``start`` (files written
    before the field, bare seed-003 files): a game with moves may start from a position, as schema 1's
    hand-over records and games set up on a board of their own did (its moves are replayed from it); a
    game without moves must start on a rules start board.
    """
    if start == "position" or (start is None and n > 0):
        return
    problem = start_problem(board, rules)
    if problem:
        raise StoreError(
            f"{label}: its initial board is not one the rules start from ({problem}); "
            'a game set up on a board of its own says "start": "position"'
        )


def _check_top_tiles(label: str, what: str, boards: np.ndarray) -> None:
    """At most one 2**62 tile per board: two would merge into 2**63, past what an int64 holds."""
    top = (boards == _TOP_TILE).reshape(-1, boards.shape[-2] * boards.shape[-1]).sum(axis=1)
    if top.size and int(top.max()) > 1:
        raise StoreError(
            f"{label}: {what}: two tiles of 2**{MAX_EXPONENT} on one board (their merge would not fit in 64 bits)"
        )


def _check_spawns(
    label: str, i: int, rules: Rules, slid: np.ndarray, triples: list[Triple], *, exact: bool
) -> None:
    allowed = _spawnable(rules)
    for _r, _c, v in triples:
        if v not in allowed:
            raise StoreError(
                f"{label}: move {i}: a {v} appeared, but these rules spawn only "
                f"{' or '.join(map(str, sorted(allowed)))}"
            )
    expected = min(rules.spawn_per_move, int(np.count_nonzero(slid == 0)))
    if exact and len(triples) != expected:
        raise StoreError(f"{label}: move {i}: {len(triples)} tiles appeared, the rules spawn {expected}")


# --------------------------------------------------------------------------------------------- .npz


def _npz_text(data: Mapping[str, np.ndarray], key: str, name: str) -> str | None:
    if key not in data:
        return None
    arr = data[key]
    if arr.dtype.kind == "U" and arr.ndim == 0:
        return str(arr)
    if arr.dtype == np.uint8 and arr.ndim == 1:
        try:
            return arr.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise StoreError(f"{name}: entry {key!r} must be text")


def _npz_json(data: Mapping[str, np.ndarray], key: str, name: str) -> Any:
    text = _npz_text(data, key, name)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise StoreError(f"{name}: entry {key!r} is not valid JSON ({e.msg})") from None
    except RecursionError:
        raise StoreError(f"{name}: entry {key!r} is not valid JSON (nested too deeply)") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise StoreError(
            f"{name}: entry {key!r} is not valid JSON ({' '.join(str(e).split())[:80]})"
        ) from None


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    """Every entry of an ``.npz``, read only once the zip's declared sizes and each ``.npy`` header
    show that it fits the limits (see the module docstring and :mod:`engine.npzcheck`); a StoreError
    otherwise."""
    name = path.name
    try:
        with zipfile.ZipFile(path) as zf:
            try:
                members = check_npz_sizes(zf, MAX_NPZ_BYTES, max_members=MAX_NPZ_MEMBERS)
            except NpzSizeError as e:
                raise StoreError(f"{name}: {e}") from None
            odd = next((m.name for m in members.values() if m.dtype is None), None)
            if odd is not None:
                raise StoreError(f"{name}: entry {_shown(odd)} is not a NumPy array (.npy)")
            data = {}
            for key, member in members.items():
                with zf.open(member.name) as fp:
                    # allow_pickle=False: an object array raises instead of unpickling (no code runs).
                    data[key] = np.lib.format.read_array(fp, allow_pickle=False)
            return data
    except StoreError:
        raise
    except _NPZ_REFUSALS as e:  # zip, zlib and .npy format refusals of a damaged file all mean the same
        raise StoreError(f"{name}: not a readable .npz file ({_first_line(e)})") from None
    except Exception as e:  # none of those: still a file that does not read, but say so in the log
        log.exception("reading %s: an error no damaged .npz was known to raise", name)
        raise StoreError(f"{name}: not a readable .npz file ({_first_line(e)})") from None


#: What zipfile, zlib and numpy's .npy reader raise for a damaged or hostile file: a bad zip or member
#: (BadZipFile, a missing member's KeyError, an encrypted member's RuntimeError, an unknown compression's
#: NotImplementedError), a cut stream (EOFError, zlib.error), a bad header (ValueError, SyntaxError of
#: its literal, struct.error) or an absurd size (OverflowError, MemoryError), or the disk (OSError).
_NPZ_REFUSALS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
    KeyError,
    RuntimeError,
    NotImplementedError,
    EOFError,
    ValueError,
    SyntaxError,
    TypeError,
    OverflowError,
    MemoryError,
    OSError,
)


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def _check_npz_header(data: Mapping[str, np.ndarray], name: str) -> None:
    """The file says it is a games file of a version this reader knows, and holds the three arrays
    every games file has."""
    fmt = _npz_text(data, "format", name)
    if fmt is not None and fmt != NPZ_FORMAT:
        raise StoreError(f"{name}: format {_shown(fmt)} is not {NPZ_FORMAT!r}")
    if "version" in data:
        v = data["version"]
        if v.dtype.kind not in "iu" or v.size != 1:
            raise StoreError(f"{name}: version must be the whole number {VERSION}, got {_shown(v)}")
        _check_version(int(v.reshape(-1)[0]), name)
    for key in ("layouts", "moves", "scores"):
        if key not in data:
            raise StoreError(f"{name}: missing {key!r} (an .npz of games needs layouts, moves and scores)")


def _npz_spawns(
    data: Mapping[str, np.ndarray], name: str, n_total: int, shape: tuple[int, int]
) -> list[list[Triple]] | None:
    """The spawns of every move (row, column, value), from the optional ``(m, 3)`` array of move index,
    flat cell and value; None when the file has none."""
    if "spawns" not in data:
        return None
    sp = _int_array(data["spawns"], name, "spawns")
    cells = shape[0] * shape[1]
    if sp.ndim != 2 or sp.shape[1] != 3:
        raise StoreError(f"{name}: spawns must have shape (m, 3): move, cell, value")
    if sp.size and (
        sp[:, 0].min() < 0 or sp[:, 0].max() >= n_total or sp[:, 1].min() < 0 or sp[:, 1].max() >= cells
    ):
        raise StoreError(f"{name}: spawns refer to a move or cell that does not exist")
    spawns_by_move: list[list[Triple]] = [[] for _ in range(n_total)]
    for m, cell, v in sp.tolist():
        spawns_by_move[m].append((cell // shape[1], cell % shape[1], v))
    return spawns_by_move


def _read_npz(path: Path) -> list[IncomingGame]:
    name = path.name
    data = _load_npz(path)
    _check_npz_header(data, name)
    metas = _npz_json(data, "games", name)
    top_rules = _npz_json(data, "rules", name)
    layouts_raw = data["layouts"]
    if layouts_raw.ndim not in (2, 3):
        raise StoreError(f"{name}: layouts must have shape (n, rows*cols), got {layouts_raw.shape}")
    n_total = layouts_raw.shape[0]
    if n_total > MAX_FILE_MOVES:
        raise StoreError(
            f"{name}: {n_total:,} moves, more than the {MAX_FILE_MOVES:,} moves one import reads"
        )
    shape = _board_shape(data, layouts_raw, top_rules, metas, name)
    cells = shape[0] * shape[1]
    flat = layouts_raw.reshape(n_total, -1) if n_total else layouts_raw.reshape(0, cells)
    layouts = _boards(flat, name, "layouts", (-1, cells)).reshape(-1, *shape)
    moves = _directions(data["moves"], name)
    # seed 003 keeps a one-move game's scores as a 0-d array (np.array(score)); otherwise shapes must be (n,)
    scores = np.atleast_1d(_int_array(data["scores"], name, "scores"))
    rewards = np.atleast_1d(_int_array(data["rewards"], name, "rewards")) if "rewards" in data else None
    who = (
        _int_array(data["move_players"], name, "move_players").reshape(-1) if "move_players" in data else None
    )
    for what, arr in (("moves", moves), ("scores", scores), ("rewards", rewards), ("move_players", who)):
        if arr is not None and arr.shape[0] != n_total:
            raise StoreError(f"{name}: {n_total} layouts but {arr.shape[0]} {what}")

    offsets = _offsets(data, n_total, name)
    n_games = len(offsets) - 1
    if metas is not None and (
        not isinstance(metas, list) or len(metas) != n_games or not all(isinstance(m, dict) for m in metas)
    ):
        raise StoreError(f"{name}: 'games' must be a JSON list of {n_games} objects")
    initial = finals = None
    if "initial_boards" in data:
        initial = _boards(data["initial_boards"], name, "initial_boards", (n_games, cells)).reshape(
            -1, *shape
        )
    if "final_boards" in data:
        finals = _boards(data["final_boards"], name, "final_boards", (n_games, cells)).reshape(-1, *shape)
    spawns_by_move = _npz_spawns(data, name, n_total, shape)

    games = []
    for g in range(n_games):
        label = f"{name}: game {g + 1}"
        a, b = int(offsets[g]), int(offsets[g + 1])
        meta_obj = metas[g] if metas is not None else {}
        rules = _rules(meta_obj.get("rules", top_rules), label, shape)
        if rules.shape != shape:
            raise StoreError(
                f"{label}: rules are {rules.rows}x{rules.cols} but the boards are {shape[0]}x{shape[1]}"
            )
        games.append(
            check_game(
                label,
                rules,
                _meta(meta_obj, label),
                layouts=layouts[a:b],
                moves=moves[a:b],
                scores=scores[a:b],
                rewards=None if rewards is None else rewards[a:b],
                spawns=None if spawns_by_move is None else spawns_by_move[a:b],
                initial_board=None if initial is None else initial[g],
                final_board=None if finals is None else finals[g],
                move_players=None if who is None else who[a:b],
            )
        )
    _npz_reviews(data, name, games)
    return games


def _npz_reviews(data: Mapping[str, np.ndarray], name: str, games: list[IncomingGame]) -> None:
    """Attach the reviews of an ``.npz`` (entries ``reviews``, ``review_values``) to its checked games."""
    metas = _npz_json(data, "reviews", name)
    if metas is None:
        for key in ("review_values", "reviews_version"):
            if key in data:  # values nobody can attribute: a damaged file, not one without reviews
                raise StoreError(f"{name}: entry {key!r} without 'reviews'")
        return
    if "reviews_version" in data:
        v = data["reviews_version"]
        if v.dtype.kind not in "iu" or v.size != 1:
            raise StoreError(
                f"{name}: reviews_version must be the whole number {REVIEWS_VERSION}, got {_shown(v)}"
            )
        _check_reviews_version(int(v.reshape(-1)[0]), name)
    if not isinstance(metas, list) or not all(isinstance(m, dict) for m in metas):
        raise StoreError(f"{name}: 'reviews' must be a JSON list of objects")
    where: list[tuple[str, int, int]] = []  # label, game, reviewed of each review, in file order
    per_game = [0] * len(games)
    for r, meta in enumerate(metas):
        g = meta.get("game")
        if not isinstance(g, int) or isinstance(g, bool) or not 0 <= g < len(games):
            raise StoreError(
                f"{name}: review {r + 1}: game {_shown(g)} is not in the file "
                f"(0-based index into its {len(games)} games)"
            )
        label = f"{name}: game {g + 1}: review {r + 1}"
        per_game[g] += 1
        if per_game[g] > MAX_GAME_REVIEWS:
            raise StoreError(
                f"{name}: game {g + 1}: more than the {MAX_GAME_REVIEWS} reviews a game may carry"
            )
        where.append((label, g, _reviewed(meta, label, len(games[g].moves))))
    total = sum(n for _, _, n in where)
    if total > MAX_FILE_REVIEW_MOVES:
        raise StoreError(
            f"{name}: {total:,} reviewed moves, more than the {MAX_FILE_REVIEW_MOVES:,} one import reads"
        )
    values = data["review_values"] if "review_values" in data else np.zeros((0, 4))
    if values.dtype.kind != "f" or values.dtype.itemsize != 8:
        raise StoreError(
            f"{name}: review_values must be float64 (as the store keeps them), got {values.dtype}"
        )
    if values.shape != (total, 4):
        raise StoreError(
            f"{name}: review_values has shape {values.shape}, the reviews cover {total} moves "
            f"(expected {total} x 4)"
        )
    values = values.astype(np.float64)  # native byte order
    keys: list[set[str]] = [set() for _ in games]
    at = 0
    for meta, (label, g, n) in zip(metas, where, strict=True):
        games[g].reviews.append(_review(label, meta, values[at : at + n].copy(), games[g], keys[g]))
        at += n


def _check_version(version: Any, label: str) -> None:
    """Only format version 1 exists: a newer one is refused as such, anything else as not a version."""
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise StoreError(f"{label}: written by a newer 2048 Studio (format version {version})")
    if not isinstance(version, int) or isinstance(version, bool) or version != VERSION:
        raise StoreError(f"{label}: version must be the whole number {VERSION}, got {_shown(version)}")


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = (
    2,
    4,
    4,
    40,
    40,
    40,
)


def _shown(value: Any) -> str:
    """A value from the file for a one-line message: its repr, short however big or deep the value."""
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[:5].tolist() if value.ndim else value.item()
    return " ".join(_REPR.repr(value).split())


def _board_shape(
    data: Mapping[str, np.ndarray], layouts: np.ndarray, rules: Any, metas: Any, name: str
) -> tuple[int, int]:
    if "board_shape" in data:
        bs = _int_array(data["board_shape"], name, "board_shape").reshape(-1)
        if bs.shape != (2,) or bs.min() < 1 or bs.max() > MAX_SIDE:
            raise StoreError(f"{name}: board_shape must be two numbers from 1 to {MAX_SIDE} (rows, cols)")
        return int(bs[0]), int(bs[1])
    if layouts.ndim == 3:
        return int(layouts.shape[1]), int(layouts.shape[2])
    for r in [rules] + (
        [m.get("rules") for m in metas if isinstance(m, dict)] if isinstance(metas, list) else []
    ):
        if isinstance(r, dict) and "rows" in r and "cols" in r:
            rows, cols = r["rows"], r["cols"]
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (rows, cols)):
                raise StoreError(f"{name}: the rules' rows and cols must be whole numbers >= 1")
            return rows, cols
    if layouts.ndim != 2:
        raise StoreError(f"{name}: layouts must have shape (n, rows*cols), got {layouts.shape}")
    side = round(layouts.shape[1] ** 0.5)
    if side * side != layouts.shape[1] or side == 0:
        raise StoreError(
            f"{name}: cannot tell the board shape from {layouts.shape[1]} cells: add board_shape"
        )
    return side, side


def _offsets(data: Mapping[str, np.ndarray], n_total: int, name: str) -> np.ndarray:
    if "game_offsets" in data:
        off = _int_array(data["game_offsets"], name, "game_offsets").reshape(-1)
    elif "num_moves" in data:  # seed 003's GameDriver keeps the move count of each game
        counts = _int_array(data["num_moves"], name, "num_moves").reshape(-1)
        if np.any(counts < 0) or np.any(counts > n_total):
            raise StoreError(f"{name}: num_moves must be between 0 and the {n_total} moves of the file")
        off = np.concatenate([[0], np.cumsum(counts)])
    else:
        off = np.array([0, n_total])
    if len(off) - 1 > MAX_FILE_GAMES:
        raise StoreError(
            f"{name}: {len(off) - 1:,} games, more than the {MAX_FILE_GAMES:,} games one import reads"
        )
    if (
        len(off) < 2
        or off[0] != 0
        or off[-1] != n_total
        or np.any(off < 0)
        or np.any(off > n_total)
        or np.any(np.diff(off) < 0)
    ):
        raise StoreError(
            f"{name}: game boundaries do not cover the {n_total} moves (0 .. {n_total}, increasing)"
        )
    return off


# ------------------------------------------------------------------------------------------ reviews


def _check_reviews_version(version: Any, label: str) -> None:
    """Only reviews format version 1 exists (see the module docstring)."""
    if isinstance(version, int) and not isinstance(version, bool) and version > REVIEWS_VERSION:
        raise StoreError(f"{label}: reviews written by a newer 2048 Studio (reviews_version {version})")
    if not isinstance(version, int) or isinstance(version, bool) or version != REVIEWS_VERSION:
        raise StoreError(
            f"{label}: reviews_version must be the whole number {REVIEWS_VERSION}, got {_shown(version)}"
        )


def _reviewed(obj: Mapping[str, Any], label: str, n: int) -> int:
    """How many moves a review covers: a whole number from 0 to the game's ``n`` moves."""
    v = obj.get("reviewed")
    if not isinstance(v, int) or isinstance(v, bool):
        raise StoreError(f"{label}: reviewed must be a whole number, got {_shown(v)}")
    if not 0 <= v <= n:
        raise StoreError(f"{label}: reviewed {v}, but the game has {n} moves")
    return v


def _reviewer_spec(value: Any, label: str) -> dict[str, Any]:
    """What a reviewer said about itself: a small flat JSON object (see the module docstring)."""
    if not isinstance(value, dict):
        raise StoreError(f"{label}: reviewer must be a JSON object, got {_shown(value)}")
    if len(value) > MAX_REVIEWER_FIELDS:
        raise StoreError(f"{label}: reviewer has {len(value)} fields, more than {MAX_REVIEWER_FIELDS}")
    for k, v in value.items():
        ok = (
            v is None
            or isinstance(v, (str, bool))
            or (isinstance(v, int) and abs(v) < 1 << 63)
            or (isinstance(v, float) and math.isfinite(v))
        )
        if not ok:  # nested values or numbers SQLite and JSON readers do not agree on
            raise StoreError(
                f"{label}: reviewer field {_shown(k)} must be text, a number, true/false or null, got {_shown(v)}"
            )
    size = len(json.dumps(value, sort_keys=True).encode())
    if size > MAX_REVIEWER_BYTES:
        raise StoreError(f"{label}: reviewer is {_mib(size)} of JSON, more than {_mib(MAX_REVIEWER_BYTES)}")
    return dict(value)


def _review_time(obj: Mapping[str, Any], key: str, label: str, default: float) -> float:
    v = obj.get(key)
    if v is None:
        return default
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= MAX_TIME:
        raise StoreError(f"{label}: {key} must be Unix seconds between 1970 and 9999, got {_shown(v)}")
    return float(v)


def _review(
    label: str, meta: Mapping[str, Any], values: np.ndarray, game: IncomingGame, keys: set[str]
) -> ReviewData:
    """One review of a checked ``game`` (``values``: float64, its reviewed moves x 4), checked against
    the game's positions; ``keys``: the reviewer keys its earlier reviews had (one review per key)."""
    key = meta.get("key")
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_REVIEW_KEY:
        raise StoreError(f"{label}: key must be text of 1 to {MAX_REVIEW_KEY} characters, got {_shown(key)}")
    if key in keys:  # the store keeps one review per (game, key): a second would be ambiguous
        raise StoreError(f"{label}: a second review by reviewer key {_shown(key)}")
    keys.add(key)
    reviewer = _reviewer_spec(meta.get("reviewer"), label)
    created = _review_time(meta, "created", label, time.time())
    updated = _review_time(meta, "updated", label, created)
    n = _reviewed(meta, label, len(game.moves))
    if values.shape != (n, 4):
        raise StoreError(f"{label}: values has shape {values.shape}, expected {n} x 4 (reviewed {n})")
    inf = np.isinf(values)
    if inf.any():
        at = int(np.argwhere(inf)[0][0])
        raise StoreError(
            f"{label}: values: move {at} has an infinite value (finite, or NaN for an illegal move)"
        )
    finite = np.isfinite(values)
    for i in np.flatnonzero(finite.any(axis=1)):
        illegal = finite[i] & ~legal_mask(game.layouts[i])
        if illegal.any():
            d = DIRECTIONS[int(np.argmax(illegal))]
            raise StoreError(
                f"{label}: values: move {int(i)} rates {d.label}, an illegal move there (its value must be NaN)"
            )
    return ReviewData(key, reviewer, created, updated, values)


def _json_reviews(obj: Mapping[str, Any], label: str, game: IncomingGame) -> list[ReviewData]:
    """The reviews of a ``.jsonl`` line (``reviews``, ``reviews_version``), checked against its game."""
    raw = obj.get("reviews")
    if "reviews_version" in obj or raw is not None:
        _check_reviews_version(obj.get("reviews_version", REVIEWS_VERSION), label)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise StoreError(f"{label}: reviews must be a list of objects, got {_shown(raw)}")
    if len(raw) > MAX_GAME_REVIEWS:
        raise StoreError(f"{label}: {len(raw)} reviews, more than the {MAX_GAME_REVIEWS} a game may carry")
    keys: set[str] = set()
    out = []
    for k, meta in enumerate(raw):
        rl = f"{label}: review {k + 1}"
        if not isinstance(meta, dict):
            raise StoreError(f"{rl}: expected a JSON object, got {_shown(meta)}")
        n = _reviewed(meta, rl, len(game.moves))
        out.append(_review(rl, meta, _json_values(meta.get("values"), rl, n), game, keys))
    return out


def _json_values(value: Any, label: str, n: int) -> np.ndarray:
    """``n`` rows of 4 numbers or ``null`` (NaN) -> float64[n, 4]; types checked before numpy sees
    them (numpy would turn ``"1.5"`` or ``true`` into numbers)."""
    if not isinstance(value, list):
        raise StoreError(f"{label}: values must be a list of rows of 4 numbers, got {_shown(value)}")
    if len(value) != n:
        raise StoreError(f"{label}: values has {len(value)} rows, expected {n} (reviewed {n})")
    for i, row in enumerate(value):
        if (
            not isinstance(row, list)
            or len(row) != 4
            or not all(x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)) for x in row)
        ):
            raise StoreError(f"{label}: values: move {i}: expected 4 numbers or null, got {_shown(row)}")
    try:
        return np.array(value, dtype=np.float64).reshape(n, 4)
    except (OverflowError, ValueError, TypeError):  # an integer past what a float holds
        raise StoreError(f"{label}: values hold a number too large for a float") from None


# -------------------------------------------------------------------------------------------- .jsonl


def _read_jsonl(path: Path) -> list[IncomingGame]:
    name = path.name
    size = path.stat().st_size
    if size > MAX_JSONL_BYTES:
        raise StoreError(
            f"{name}: {_mib(size)}, more than the {_mib(MAX_JSONL_BYTES)} one import reads "
            "(export fewer games per file)"
        )
    _prescan_jsonl(path)
    games: list[IncomingGame] = []
    moves = reviewed = 0
    with open(path, "rb") as fh:
        ln = 0
        while True:
            raw = fh.readline(MAX_LINE_BYTES + 1)  # never more than the limit in memory
            if not raw:
                break
            ln += 1
            label = f"{name} line {ln}"
            if len(raw) > MAX_LINE_BYTES:
                raise StoreError(f"{label}: longer than {_mib(MAX_LINE_BYTES)} (one game per line)")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise StoreError(f"{name}: not a UTF-8 text file (line {ln})") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise StoreError(f"{label}: not valid JSON ({e.msg})") from None
            except RecursionError:
                raise StoreError(f"{label}: not valid JSON (nested too deeply)") from None
            except ValueError as e:  # e.g. an integer of more digits than Python converts
                raise StoreError(f"{label}: not valid JSON ({' '.join(str(e).split())[:80]})") from None
            if not isinstance(obj, dict):
                raise StoreError(f"{label}: expected a JSON object (one game)")
            if len(games) >= MAX_FILE_GAMES:
                raise StoreError(f"{name}: more than the {MAX_FILE_GAMES:,} games one import reads")
            game = _game_from_json(obj, label)
            moves += len(game.moves)
            if moves > MAX_FILE_MOVES:
                raise StoreError(f"{name}: more than the {MAX_FILE_MOVES:,} moves one import reads")
            reviewed += sum(r.reviewed for r in game.reviews)
            if reviewed > MAX_FILE_REVIEW_MOVES:
                raise StoreError(
                    f"{name}: more than the {MAX_FILE_REVIEW_MOVES:,} reviewed moves one import reads"
                )
            games.append(game)
    return games


def _prescan_jsonl(path: Path) -> None:
    """The limits a ``.jsonl`` file's counts decide, checked before any game is: its games, its moves,
    each game's reviews and its reviewed moves, read off the parsed lines without checking a single
    board. Checking a game (replaying its moves, judging every review row) is what takes the time: a
    56 MB file of 500 games with 64 reviews each was refused only after 242 s of it. A line that is
    not JSON, or a field of the wrong type, is left to the full check, which names it."""
    name = path.name
    n_games = moves = reviewed = 0
    with open(path, "rb") as fh:
        ln = 0
        while True:
            raw = fh.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            ln += 1
            if len(raw) > MAX_LINE_BYTES or not raw.strip():
                if len(raw) > MAX_LINE_BYTES:
                    return  # the full check says so, with its line
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                return  # the full check says what is wrong with this line
            if not isinstance(obj, dict):
                return
            n_games += 1
            if n_games > MAX_FILE_GAMES:
                raise StoreError(f"{name}: more than the {MAX_FILE_GAMES:,} games one import reads")
            n = obj.get("moves")
            if isinstance(n, list):
                if len(n) > MAX_GAME_MOVES:
                    raise StoreError(
                        f"{name} line {ln}: {len(n):,} moves, more than the {MAX_GAME_MOVES:,} a game may have"
                    )
                moves += len(n)
                if moves > MAX_FILE_MOVES:
                    raise StoreError(f"{name}: more than the {MAX_FILE_MOVES:,} moves one import reads")
            reviews = obj.get("reviews")
            if not isinstance(reviews, list):
                continue
            if len(reviews) > MAX_GAME_REVIEWS:
                raise StoreError(
                    f"{name} line {ln}: {len(reviews)} reviews, more than the {MAX_GAME_REVIEWS} a game may carry"
                )
            for r in reviews:
                values = r.get("values") if isinstance(r, dict) else None
                reviewed += len(values) if isinstance(values, list) else 0
            if reviewed > MAX_FILE_REVIEW_MOVES:
                raise StoreError(
                    f"{name}: more than the {MAX_FILE_REVIEW_MOVES:,} reviewed moves one import reads"
                )


def _game_from_json(obj: dict[str, Any], label: str) -> IncomingGame:
    fmt = obj.get("format")
    if fmt is not None and fmt != JSONL_FORMAT:
        raise StoreError(f"{label}: format {_shown(fmt)} is not {JSONL_FORMAT!r}")
    _check_version(obj.get("version", VERSION), label)
    for key in ("layouts", "moves", "scores"):
        if not isinstance(obj.get(key), list):
            raise StoreError(f"{label}: missing list {key!r}")
    if len(obj["moves"]) > MAX_GAME_MOVES:
        raise StoreError(
            f"{label}: {len(obj['moves']):,} moves, more than the {MAX_GAME_MOVES:,} a game may have"
        )
    raw_rules = obj.get("rules")
    shape = None
    if raw_rules is None:
        probe = obj.get("initial_board") or (obj["layouts"][0] if obj["layouts"] else None)
        if isinstance(probe, list) and probe and isinstance(probe[0], list):
            shape = (len(probe), len(probe[0]))
    rules = _rules(raw_rules, label, shape)
    n = len(obj["moves"])
    layouts = _boards(
        obj["layouts"] if obj["layouts"] else np.zeros((0, *rules.shape), np.int64),
        label,
        "layouts",
        (-1, *rules.shape),
    )
    moves = _directions(obj["moves"], label)
    scores = _int_array(obj["scores"], label, "scores")
    rewards = _int_array(obj["rewards"], label, "rewards") if obj.get("rewards") is not None else None
    spawns = None
    if obj.get("spawns") is not None:
        if not isinstance(obj["spawns"], list) or len(obj["spawns"]) != n:
            raise StoreError(f"{label}: spawns must be a list with one entry per move")
        spawns = [_spawn_list(s, label, i) for i, s in enumerate(obj["spawns"])]
    initial = (
        _boards(obj["initial_board"], label, "initial_board", rules.shape)
        if obj.get("initial_board") is not None
        else None
    )
    final = (
        _boards(obj["final_board"], label, "final_board", rules.shape)
        if obj.get("final_board") is not None
        else None
    )
    who = (
        _int_array(obj["move_players"], label, "move_players")
        if obj.get("move_players") is not None
        else None
    )
    game = check_game(
        label,
        rules,
        _meta(obj, label),
        layouts=layouts,
        moves=moves,
        scores=scores,
        rewards=rewards,
        spawns=spawns,
        initial_board=initial,
        final_board=final,
        move_players=who,
    )
    game.reviews = _json_reviews(obj, label, game)
    return game


# ------------------------------------------------------------------------------------ duplicates


@dataclass(frozen=True)
class ImportResult:
    """What an import did: ``ids`` of the games it added (in file order), ``already`` the library ids
    of the file's games it skipped because the library holds them already (one per skipped game; a
    game twice in the file is imported once, its copy counted here under the new id)."""

    ids: list[int]
    already: list[int]


def content_key(
    rules: Rules, initial_board: np.ndarray, moves: np.ndarray, spawns: Sequence[Iterable[Sequence[int]]]
) -> str:
    """What makes two records the same game, as a hash: the rules, the first board, every move and the
    tiles that appeared after it (which fix every board, reward and score). Who played, the times,
    status, ids, the origin and the seed (a seed-003 file has none) are not part of it, so an export
    imported twice, or a game exported from this library and imported back, is the same game."""
    h = hashlib.sha256()
    h.update(json.dumps(rules.to_dict(), sort_keys=True).encode())
    h.update(np.ascontiguousarray(initial_board, dtype="<i8").tobytes())
    h.update(b"|" + np.ascontiguousarray(moves, dtype="<i8").tobytes())
    rows = [
        (i, int(r), int(c), int(v))
        for i, triples in enumerate(spawns)
        for r, c, v in sorted(tuple(int(x) for x in t) for t in triples)
        if v
    ]
    h.update(b"|" + np.array(rows, dtype="<i8").reshape(-1, 4).tobytes())
    return h.hexdigest()


def incoming_key(g: IncomingGame) -> str:
    """:func:`content_key` of a game read from a file."""
    return content_key(g.rules, g.initial_board, g.moves, g.spawns)


def record_key(rec: GameRecord) -> str:
    """:func:`content_key` of a stored game."""
    return content_key(rec.rules, rec.initial_board, rec.moves, list(rec.spawns))
