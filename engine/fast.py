"""The 4x4 fast path: packed boards, 65,536-entry row tables and numba kernels.

Packed board (one ``uint64``)::

    bit  63 ............................................................ 0
         | row 3          | row 2          | row 1          | row 0          |
         | c3  c2  c1  c0 | c3  c2  c1  c0 | c3  c2  c1  c0 | c3  c2  c1  c0 |

Cell ``(r, c)`` is the nibble at bits ``4 * (4 * r + c)``: row 0 in the low 16 bits, column 0 in the
low nibble of its row, so nibble order is row-major cell order (the order spawns count empty cells
in). A nibble holds the tile's **exponent**: 0 = empty, 1 = 2, ..., 15 = 32768.

Tiles are unbounded in the studio, but a nibble is not: a move that merges two 32768s (-> 65536)
*overflows*. Every kernel that moves reports it (``overflows``, ``step_bits`` bits 4-7, playout
status) instead of writing a wrong board, and the Python callers (:class:`engine.Game`,
:class:`engine.BatchEngine`, :func:`random_playout`) finish such games on the general path
(:mod:`engine.core`), which holds any tile.

Row tables (built once at import, vectorised numpy, ~10 ms): for every 16-bit row ``x``,
``ROW_LEFT[x]`` / ``ROW_RIGHT[x]`` is the row after a left / right move and ``ROW_SCORE[x]`` the
reward (sum of merged values; a line's reward does not depend on which end it slides to, since the
same runs of equal tiles pair up either way). ``ROW_OVERFLOW[x]`` is 1 when the move merges two 15s;
those rows' ``ROW_LEFT`` / ``ROW_RIGHT`` entries are placeholders (but still differ from ``x``, so
legality stays right). Up / down are left / right on the transposed board.

Spawns use exactly the draws of :class:`engine.core.SpawnRng`: one splitmix64 output for the cell
(``(u >> 32) % n_empty`` over the empty cells in row-major order), one for the value
(``(u >> 11) * 2**-53 < p4`` -> a 4). So a seed gives the same game here and on the general path.

All kernels are ``@njit(cache=True)``: the first import compiles and caches them on disk
(``__pycache__``), later processes load them in milliseconds. They are plain functions of
``uint64`` / ``int64`` scalars so other numba code (agents' search, n-tuple learners) can call them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit
from numba import types as numba_types

from engine.core import DIRECTIONS, MASK64, Board, Direction, Rules, SpawnRng, seed_to_state, validate_board

# --------------------------------------------------------------------------------------------------
# Row tables


def _build_row_tables() -> tuple[
    npt.NDArray[np.uint16], npt.NDArray[np.uint16], npt.NDArray[np.uint32], npt.NDArray[np.uint8]
]:
    """All 65,536 rows slid left at once: compress the non-empty nibbles, then pair them up."""
    rows = np.arange(65536, dtype=np.int64)
    cells = (rows[:, None] >> (4 * np.arange(4))) & 0xF  # (65536, 4) exponents, index = column
    # Stable sort on "is empty" moves the tiles to the front and keeps their order.
    order = np.argsort(cells == 0, axis=1, kind="stable")
    tiles = np.take_along_axis(cells, order, axis=1)
    tiles = np.concatenate([tiles, np.zeros((65536, 2), dtype=np.int64)], axis=1)  # read past the end
    read = np.zeros(65536, dtype=np.int64)  # per row: the next tile to read
    out = np.zeros((65536, 4), dtype=np.int64)
    score = np.zeros(65536, dtype=np.int64)
    overflow = np.zeros(65536, dtype=bool)
    idx = np.arange(65536)
    for k in range(4):  # output slot k, wall first: the pair nearest the wall merges first
        a = tiles[idx, read]
        b = tiles[idx, np.minimum(read + 1, 5)]
        merge = (a != 0) & (a == b)
        out[:, k] = np.where(merge, a + 1, a)
        score += np.where(merge, 1 << (a + 1), 0)
        overflow |= merge & (a == 15)
        read += np.where(merge, 2, 1)
    out[out > 15] = 0  # overflow rows: placeholder nibble (the row still changes: two tiles vanished)
    left = (out << (4 * np.arange(4))).sum(axis=1)

    def reverse(x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return ((x & 0xF) << 12) | ((x & 0xF0) << 4) | ((x >> 4) & 0xF0) | ((x >> 12) & 0xF)

    # A right move is a left move of the mirrored row, mirrored back.
    right = reverse(left[reverse(rows)])
    return (
        left.astype(np.uint16),
        right.astype(np.uint16),
        score.astype(np.uint32),
        overflow.astype(np.uint8),
    )


ROW_LEFT, ROW_RIGHT, ROW_SCORE, ROW_OVERFLOW = _build_row_tables()
# ROW_FLAGS[x]: bit 0 = a left move changes row x, bit 1 = a right move does, bit 2 = it overflows.
# OR-ed over the four rows (or columns) it gives a board's legal moves in eight lookups.
_ALL_ROWS = np.arange(65536)
ROW_FLAGS = (
    (ROW_LEFT != _ALL_ROWS).astype(np.uint8)
    | ((ROW_RIGHT != _ALL_ROWS).astype(np.uint8) << 1)
    | (ROW_OVERFLOW << 2)
).astype(np.uint8)
_ROW_LR = np.concatenate([ROW_LEFT, ROW_RIGHT])  # move() indexes both by direction, branch-free
for _t in (ROW_LEFT, ROW_RIGHT, ROW_SCORE, ROW_OVERFLOW, ROW_FLAGS, _ROW_LR):
    _t.flags.writeable = False  # numba freezes them into the kernels: keep Python from diverging

MAX_EXPONENT = 15  # the largest exponent a nibble holds (32768)
OVERFLOW_SHIFT = 4  # step_bits: bit 4 + d set when move d would merge two 32768s

# uint64 shift amounts for the kernels (numba freezes these globals into constants)
_U0, _U1, _U4, _U11, _U16, _U32, _U48 = (np.uint64(k) for k in (0, 1, 4, 11, 16, 32, 48))
_NIB = np.uint64(0xF)
_ROW = np.uint64(0xFFFF)
_INV_2_53 = 1.0 / 9007199254740992.0


# --------------------------------------------------------------------------------------------------
# Kernels on one packed board


@njit(cache=True)
def splitmix64(state: np.uint64) -> tuple[np.uint64, np.uint64]:
    """``state -> (new_state, output)``; the same stream as :func:`engine.core.splitmix64`."""
    s = np.uint64(state) + np.uint64(0x9E3779B97F4A7C15)
    z = s
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return s, z ^ (z >> np.uint64(31))


@njit(cache=True)
def transpose(b: np.uint64) -> np.uint64:
    """Swap rows and columns: cell (r, c) -> (c, r). The diagonal nibbles stay; two swap rounds
    move the 2x2 blocks' off-diagonal nibbles, then the off-diagonal 2x2 blocks (nneonneo's trick)."""
    x = np.uint64(b)
    a1 = x & np.uint64(0xF0F00F0FF0F00F0F)
    a2 = x & np.uint64(0x0000F0F00000F0F0)
    a3 = x & np.uint64(0x0F0F00000F0F0000)
    a = a1 | (a2 << np.uint64(12)) | (a3 >> np.uint64(12))
    b1 = a & np.uint64(0xFF00FF0000FF00FF)
    b2 = a & np.uint64(0x00FF00FF00000000)
    b3 = a & np.uint64(0x00000000FF00FF00)
    return b1 | (b2 >> np.uint64(24)) | (b3 << np.uint64(24))


@njit(cache=True)
def move(b: np.uint64, d: int) -> tuple[np.uint64, np.int64]:
    """Slide packed board ``b`` in direction ``d`` (0 up, 1 left, 2 down, 3 right), no spawn.

    Returns ``(new_board, reward)``. A board whose first row is ``[2 2 2 2]`` (``0x1111``) moved
    left becomes ``0x0022`` with reward 8. Undefined on an overflowing move (check ``overflows``)
    and for d outside 0..3 (kernels do not check their arguments; the Python entry points do).
    """
    # Branch-free in d (learners and random play pick directions the CPU cannot predict): up and
    # down are left and right of the transposed board, so always transpose and select.
    b = np.uint64(b)
    columns = (d & 1) == 0
    src = transpose(b) if columns else b
    table = (d >> 1) << 16  # left half of _ROW_LR for up/left, right half for down/right
    out = _U0
    reward = np.int64(0)
    for r in range(4):
        shift = np.uint64(16 * r)
        row = np.intp((src >> shift) & _ROW)
        out |= np.uint64(_ROW_LR[table + row]) << shift
        reward += np.int64(ROW_SCORE[row])
    back = transpose(out)
    return (back if columns else out), reward


@njit(cache=True)
def _flags(b: np.uint64) -> int:
    """OR of ``ROW_FLAGS`` over the four rows of ``b``."""
    return int(
        ROW_FLAGS[np.intp(b & _ROW)]
        | ROW_FLAGS[np.intp((b >> _U16) & _ROW)]
        | ROW_FLAGS[np.intp((b >> _U32) & _ROW)]
        | ROW_FLAGS[np.intp(b >> _U48)]
    )


@njit(cache=True)
def step_bits(b: np.uint64) -> int:
    """``legal_mask_bits(b) | overflow_bits << 4``: all a caller needs to vet its next move in one call.

    Bit ``d`` is set when move ``d`` changes the board, bit ``4 + d`` when it would merge two 32768s
    (left and right overflow together, as do up and down). Eight lookups, no branches on the board.
    """
    b = np.uint64(b)
    h = _flags(b)  # rows: left / right
    v = _flags(transpose(b))  # columns: up / down
    bits = (v & 1) | ((h & 1) << 1) | ((v & 2) << 1) | ((h & 2) << 2)
    if h & 4:
        bits |= (2 | 8) << OVERFLOW_SHIFT
    if v & 4:
        bits |= (1 | 4) << OVERFLOW_SHIFT
    return bits


@njit(cache=True)
def legal_mask_bits(b: np.uint64) -> int:
    """Bit ``d`` set when move ``d`` changes the board: a lone 2 in the top-left corner -> ``0b1100``
    (down and right)."""
    return step_bits(b) & 0xF


@njit(cache=True)
def overflows(b: np.uint64, d: int) -> bool:
    """True when move ``d`` would merge two 32768s (a 65536 does not fit in a nibble)."""
    return (step_bits(b) >> (OVERFLOW_SHIFT + d)) & 1 == 1


_NIBBLE_LOW = np.uint64(0x1111111111111111)


@njit(cache=True)
def _empty_bits(b: np.uint64) -> np.uint64:
    """Bit ``4 * i`` set when cell ``i`` is empty (an OR-fold of each nibble into its low bit)."""
    x = b | (b >> _U1)
    x |= x >> np.uint64(2)
    return ~x & _NIBBLE_LOW


@njit(cache=True)
def count_empty(b: np.uint64) -> int:
    """Number of empty cells: ``count_empty(0) -> 16``, ``count_empty(0x1) -> 15``."""
    b = np.uint64(b)
    if b == _U0:
        return 16  # the one count a nibble-wide sum cannot hold
    return int((_empty_bits(b) * _NIBBLE_LOW) >> np.uint64(60))  # sum of the 0/1 nibbles


@njit(cache=True)
def max_exponent(b: np.uint64) -> int:
    """Largest exponent on the board (0 for an empty board; 11 when the best tile is 2048)."""
    b = np.uint64(b)
    m = np.uint64(0)
    for i in range(16):
        e = (b >> np.uint64(4 * i)) & _NIB
        if e > m:
            m = e
    return int(m)


@njit(cache=True)
def spread_nibbles(x: np.uint64) -> np.uint64:
    """The low eight nibbles of ``x`` -> eight bytes, nibble i into byte i: ``0x21 -> 0x0201``."""
    x = np.uint64(x) & np.uint64(0xFFFFFFFF)
    x = (x | (x << _U16)) & np.uint64(0x0000FFFF0000FFFF)
    x = (x | (x << np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    return (x | (x << _U4)) & np.uint64(0x0F0F0F0F0F0F0F0F)


_BYTE_LOW = np.uint64(0x0101010101010101)
_BYTE_HIGH = np.uint64(0x8080808080808080)


@njit(cache=True)
def spawn_at(b: np.uint64, rng_state: np.uint64, p4: float) -> tuple[np.uint64, np.uint64, np.int64, int]:
    """Spawn one tile: ``-> (new_board, new_rng_state, cell, exponent)``; ``cell`` is ``4*r + c``.

    No empty cell: nothing drawn, ``(b, rng_state, -1, 0)``.
    """
    b = np.uint64(b)
    rng = np.uint64(rng_state)
    empties = _empty_bits(b)
    if empties == _U0:
        return b, rng, np.int64(-1), 0
    # prefix nibble j = number of empty cells among 0..j (wraps only for the empty board: n = 16).
    prefix = empties * _NIBBLE_LOW
    n = 16 if b == _U0 else int(prefix >> np.uint64(60))
    rng, u = splitmix64(rng)
    k = (u >> _U32) % np.uint64(n)
    rng, u2 = splitmix64(rng)
    e = 2 if float(u2 >> _U11) * _INV_2_53 < p4 else 1
    if b == _U0:
        cell = np.int64(k)
    else:
        # The k-th empty cell (from 0) is the number of cells j whose prefix is <= k. Compare all 16
        # prefixes with k at once, one byte each (no branches: the cell is random, so a search loop
        # mispredicts on every spawn): bit 7 of byte j of (k | 0x80) - prefix_j survives iff k >= prefix_j.
        kb = (k | np.uint64(0x80)) * _BYTE_LOW
        lo = ((kb - spread_nibbles(prefix)) & _BYTE_HIGH) >> np.uint64(7)
        hi = ((kb - spread_nibbles(prefix >> _U32)) & _BYTE_HIGH) >> np.uint64(7)
        cell = np.int64(((lo + hi) * _BYTE_LOW) >> np.uint64(56))
    return b | (np.uint64(e) << np.uint64(4 * cell)), rng, cell, e


@njit(cache=True)
def spawn(b: np.uint64, rng_state: np.uint64, p4: float) -> tuple[np.uint64, np.uint64]:
    """One spawn (``SpawnRng`` draws: cell, then value): ``-> (new_board, new_rng_state)``."""
    nb, rng, _, _ = spawn_at(b, rng_state, p4)
    return nb, rng


@njit(cache=True)
def game_step(
    b: np.uint64, d: int, rng_state: np.uint64, p4: float
) -> tuple[np.uint64, np.int64, np.uint64, np.int64, int, int]:
    """One legal, non-overflowing move plus one spawn, and the next board's ``step_bits``.

    ``-> (new_board, reward, new_rng_state, spawn_cell, spawn_exponent, next_step_bits)``: the one
    jitted call :class:`engine.Game` makes per move. The caller has checked ``d`` with ``step_bits``.
    """
    moved, reward = move(b, d)
    nb, rng, cell, e = spawn_at(moved, rng_state, p4)
    return nb, reward, rng, cell, e, step_bits(nb)


@njit(cache=True)
def _pick_legal(bits: int, u: np.uint64) -> int:
    """The ``(u >> 32) % n_legal``-th legal direction of a legal-mask."""
    n = 0
    for d in range(4):
        n += (bits >> d) & 1
    if n == 0:
        return 0  # no legal move: any direction is as (il)legal as another
    k = int((u >> _U32) % np.uint64(n))
    for d in range(4):
        if (bits >> d) & 1:
            if k == 0:
                return d
            k -= 1
    return -1


@njit(cache=True)
def playout(
    b: np.uint64, spawn_state: np.uint64, move_state: np.uint64, p4: float, spawn_per_move: int
) -> tuple[np.uint64, np.uint64, np.uint64, np.int64, int, int]:
    """Random legal moves until the game is over, or until the next move would overflow.

    Moves come from their own splitmix64 stream (``move_state``: one draw per move, the
    ``(u >> 32) % n_legal``-th legal direction), so the spawns are those of ``Game`` with the same
    spawn state. ``-> (board, spawn_state, move_state, score_gained, moves, status)``; status 0 =
    game over, 1 = stopped *before* a move that would merge two 32768s (the draw for that move is
    not consumed, so a general-path continuation replays it).
    """
    b = np.uint64(b)
    ss = np.uint64(spawn_state)
    ms = np.uint64(move_state)
    score = np.int64(0)
    moves = 0
    bits = step_bits(b)
    while bits & 0xF:
        ms2, u = splitmix64(ms)
        d = _pick_legal(bits & 0xF, u)
        if (bits >> (OVERFLOW_SHIFT + d)) & 1:
            return b, ss, ms, score, moves, 1
        ms = ms2
        b, reward = move(b, d)
        score += reward
        moves += 1
        for _ in range(spawn_per_move):
            b, ss = spawn(b, ss, p4)
        bits = step_bits(b)
    return b, ss, ms, score, moves, 0


@njit(cache=True)
def playout_batch(
    boards: npt.NDArray[np.uint64],
    spawn_states: npt.NDArray[np.uint64],
    move_states: npt.NDArray[np.uint64],
    p4: float,
    spawn_per_move: int,
) -> tuple[
    npt.NDArray[np.uint64],
    npt.NDArray[np.uint64],
    npt.NDArray[np.uint64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int8],
]:
    """:func:`playout` for every game of the arrays (one thread, no prange: callers own the cores)."""
    n = boards.shape[0]
    out_b = np.empty(n, np.uint64)
    out_s = np.empty(n, np.uint64)
    out_m = np.empty(n, np.uint64)
    scores = np.empty(n, np.int64)
    moves = np.empty(n, np.int64)
    status = np.empty(n, np.int8)
    for i in range(n):
        b, s, m, sc, mv, st = playout(boards[i], spawn_states[i], move_states[i], p4, spawn_per_move)
        out_b[i] = b
        out_s[i] = s
        out_m[i] = m
        scores[i] = sc
        moves[i] = mv
        status[i] = st
    return out_b, out_s, out_m, scores, moves, status


@njit(cache=True, inline="always")
def best_move(vals: npt.NDArray[np.float64], legal_bits: int) -> int:
    """The move a searching player makes: the legal move (bit ``d`` of ``legal_bits``, as from
    :func:`step_bits`) with the highest finite value, ties by action order; with no finite value (a
    diverged network, every line lost), the first legal move; -1 when no move is legal. Shared by the
    jitted playouts of expectimax and the n-tuple player, so both pick moves as ``Agent.act`` does."""
    d = -1
    best = 0.0
    for k in range(4):
        v = vals[k]
        if (legal_bits >> k) & 1 and np.isfinite(v) and (d < 0 or v > best):
            best = v
            d = k
    if d < 0:
        for k in range(4):
            if (legal_bits >> k) & 1:
                return k
    return d


@njit(cache=True)
def new_board(rng_state: np.uint64, p4: float, start_tiles: int) -> tuple[np.uint64, np.uint64]:
    """An empty board with ``start_tiles`` spawns: ``-> (board, rng_state)``."""
    b = _U0
    rng = np.uint64(rng_state)
    for _ in range(start_tiles):
        b, rng = spawn(b, rng, p4)
    return b, rng


# --------------------------------------------------------------------------------------------------
# Python-side helpers

_SHIFTS = np.arange(0, 64, 4, dtype=np.uint64)


def pack(values: Any) -> int:
    """A 4x4 board of tile values -> packed int: ``[[2, 4, 0, 0], 0, 0, 0] -> 0x21``.

    ValueError for a board that is not 4x4 or holds a tile above 32768 (callers fall back to the
    general path then).
    """
    b = validate_board(values)
    if b.shape != (4, 4):
        raise ValueError(f"packed boards are 4x4, got shape {b.shape}")
    if int(b.max()) > 32768:
        raise ValueError(f"tile {int(b.max())} does not fit a 4-bit cell (max 32768): use the general path")
    return pack_exponents(np.where(b == 0, 0, np.log2(np.maximum(b, 1)).round()).astype(np.uint8))


def pack_exponents(exps: Any) -> int:
    """A 4x4 array of exponents (0..15) -> packed int: ``[[1, 2, 0, 0], ...zeros] -> 0x21``."""
    e = np.asarray(exps)
    if e.shape != (4, 4):
        raise ValueError(f"packed boards are 4x4, got shape {e.shape}")
    if e.dtype.kind not in "iu" or e.min() < 0 or e.max() > MAX_EXPONENT:
        raise ValueError("exponents must be integers between 0 and 15 to fit a 4-bit cell")
    return int(np.bitwise_or.reduce(e.ravel().astype(np.uint64) << _SHIFTS))


def unpack_exponents(packed: int) -> npt.NDArray[np.uint8]:
    """Packed int -> 4x4 uint8 exponents: ``0x21 -> [[1, 2, 0, 0], ...zeros]``."""
    return ((np.uint64(packed) >> _SHIFTS) & np.uint64(0xF)).astype(np.uint8).reshape(4, 4)


def unpack(packed: int) -> Board:
    """Packed int -> 4x4 int64 tile values: ``0x21 -> [[2, 4, 0, 0], ...zeros]``."""
    e = unpack_exponents(packed).astype(np.int64)
    return np.where(e == 0, 0, np.left_shift(np.int64(1), e))


def move_board(values: Any, direction: Direction | int | str) -> tuple[Board, int]:
    """``engine.slide`` for 4x4 boards through the packed kernels (falls back past 32768).

    ``move_board([[2, 2, 2, 2], [0]*4, [0]*4, [0]*4], "left") -> ([[4, 4, 0, 0], ...], 8)``.
    """
    from engine.core import slide

    d = int(Direction.parse(direction))
    b = validate_board(values)
    if b.shape != (4, 4) or int(b.max()) > 32768:
        return slide(b, d)
    p = pack(b)
    if overflows(np.uint64(p), d):
        return slide(b, d)
    moved, reward = move(np.uint64(p), d)
    return unpack(int(moved)), int(reward)


@dataclass(frozen=True)
class PlayoutResult:
    """A finished random game: final board (values), score gained, moves made, max tile, and
    ``general_path_moves``: how many of the moves ran on the general path after an overflow."""

    board: Board
    score: int
    moves: int
    max_tile: int
    general_path_moves: int = 0


def _finish_general(
    board: Board, spawn_state: int, move_state: int, rules: Rules
) -> tuple[Board, int, int, int]:
    """Continue a random playout on the general path with the same two streams (tiles unbounded)."""
    from engine.core import legal_mask, slide_unchecked, spawn_tiles

    srng = SpawnRng(spawn_state)
    mrng = SpawnRng(move_state)
    score = moves = 0
    mask = legal_mask(board)
    while mask.any():
        legal = [d for d in DIRECTIONS if mask[d]]
        d = legal[mrng.cell(len(legal))]
        board, reward = slide_unchecked(board, d)
        score += reward
        moves += 1
        spawn_tiles(board, srng, rules, rules.spawn_per_move)
        mask = legal_mask(board)
    return board, score, moves, moves


def random_playout(
    seed: int | None = None, *, move_seed: int | None = None, rules: Rules | None = None, board: Any = None
) -> PlayoutResult:
    """Play one 4x4 game of random legal moves to the end in one jitted call.

    Spawns follow ``Game(seed=seed, rules=rules)`` exactly; moves come from a second stream
    (``move_seed``, default ``seed + 1``). ``board`` starts from a given 4x4 position instead of the
    start tiles. Tiles past 32768 are finished on the general path, never dropped.
    ``random_playout(1).moves -> 100-odd``.
    """
    rules = rules or Rules()
    if rules.shape != (4, 4):
        raise ValueError(f"random_playout is 4x4 only, got rules {rules.rows}x{rules.cols}: use engine.Game")
    sstate = seed_to_state(seed)
    mstate = seed_to_state(move_seed if move_seed is not None else (None if seed is None else seed + 1))
    if board is None:
        b0, sstate_after = new_board(np.uint64(sstate), float(rules.p4), int(rules.start_tiles))
        sstate = int(sstate_after)
    else:
        values = validate_board(board)
        if values.shape != (4, 4):
            raise ValueError(f"board must be 4x4, got shape {values.shape}")
        if int(values.max()) > 32768:
            fb, sc, mv, gm = _finish_general(values.copy(), sstate, mstate, rules)
            return PlayoutResult(fb, sc, mv, int(fb.max()), gm)
        b0 = np.uint64(pack(values))
    b, ss, ms, score, moves, status = playout(
        np.uint64(b0), np.uint64(sstate), np.uint64(mstate), float(rules.p4), int(rules.spawn_per_move)
    )
    final = unpack(int(b))
    general = 0
    if status == 1:
        final, more, extra, general = _finish_general(final, int(ss), int(ms), rules)
        score += more
        moves += extra
    return PlayoutResult(final, int(score), int(moves), int(final.max()), general)


@dataclass(frozen=True)
class PlayoutBatch:
    """``random_playouts`` results, one entry per game: scores, moves and max tiles (int64 arrays)."""

    scores: npt.NDArray[np.int64]
    moves: npt.NDArray[np.int64]
    max_tiles: npt.NDArray[np.int64]
    general_path_games: int = 0


def random_playouts(n: int, seed: int | None = None, *, rules: Rules | None = None) -> PlayoutBatch:
    """``n`` independent random games in one jitted call; game ``i`` equals
    ``random_playout(seed_i, move_seed=seed_i + 1)`` with ``seed_i`` derived from ``seed`` and ``i``.

    ``random_playouts(1000, seed=0).scores.mean() -> ~1100``.
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n (number of games) must be a whole number >= 1, got {n!r}")
    rules = rules or Rules()
    if rules.shape != (4, 4):
        raise ValueError(f"random_playouts is 4x4 only, got rules {rules.rows}x{rules.cols}")
    base = SpawnRng(seed_to_state(seed))
    seeds = [base.next_u64() & ((1 << 62) - 1) for _ in range(n)]
    boards = np.empty(n, np.uint64)
    sstates = np.empty(n, np.uint64)
    mstates = np.empty(n, np.uint64)
    for i, s in enumerate(seeds):
        b, st = new_board(np.uint64(seed_to_state(s)), float(rules.p4), int(rules.start_tiles))
        boards[i], sstates[i], mstates[i] = b, st, seed_to_state(s + 1)
    fb, fs, fm, scores, moves, status = playout_batch(
        boards, sstates, mstates, float(rules.p4), int(rules.spawn_per_move)
    )
    max_tiles = np.array([1 << max_exponent(x) if x else 0 for x in fb], dtype=np.int64)
    general = 0
    for k in np.flatnonzero(status == 1):
        i = int(k)
        final, more, extra, _ = _finish_general(unpack(int(fb[i])), int(fs[i]), int(fm[i]), rules)
        scores[i] += more
        moves[i] += extra
        max_tiles[i] = int(final.max())
        general += 1
    return PlayoutBatch(scores, moves, max_tiles, general)


# --------------------------------------------------------------------------------------------------
# Entry points for Python callers (``engine.Game``).
#
# A fast-path Game keeps ``[packed board, rng state, p4 threshold]`` in an int64[3] array that these
# kernels update in place (the same 64 bits, read as signed; ``Game.packed`` / ``rng_state`` give
# them back unsigned), and the per-move kernel returns one int. Why: numba refuses a Python int
# >= 2**63 as an argument, and each argument typed and each result boxed costs about as much as the
# move itself. The p4 threshold is ``ceil(p4 * 2**53)``: ``x * 2**-53 < p4`` exactly when
# ``x < ceil(p4 * 2**53)`` for a whole x < 2**53, so ``threshold * 2**-53`` draws the same 4s as p4.
#
# STEP_INFO layout of the int ``_py_step`` returns: bits 0-7 the next board's step_bits, bits 8-12
# the spawn (2 * cell + exponent - 1), bits 13+ the reward.

STEP_SPAWN_SHIFT = 8
STEP_REWARD_SHIFT = 13


def new_state(packed: int, rng_state: int, p4: float) -> npt.NDArray[np.int64]:
    """``[packed, rng_state, p4 threshold]`` as the int64[3] array the Python-entry kernels update."""
    threshold = math.ceil(float(p4) * 9007199254740992.0)
    return np.array([packed & MASK64, rng_state & MASK64, threshold], dtype=np.uint64).view(np.int64)


@njit(cache=True)
def _py_step(st: npt.NDArray[np.int64], d: int) -> int:
    p4 = float(st[2]) * _INV_2_53
    nb, reward, rng, cell, e, bits = game_step(np.uint64(st[0]), d, np.uint64(st[1]), p4)
    st[0] = np.int64(nb)
    st[1] = np.int64(rng)
    return int((reward << STEP_REWARD_SHIFT) | ((2 * cell + e - 1) << STEP_SPAWN_SHIFT) | bits)


@njit(cache=True)
def _py_move_spawn(
    st: npt.NDArray[np.int64], d: int, n: int
) -> tuple[np.int64, npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """Move ``d`` (``d < 0``: no move) then ``n`` spawns: ``-> (reward, cells, exponents, step_bits)``;
    a cell of -1 means the board was full."""
    p4 = float(st[2]) * _INV_2_53
    cur = np.uint64(st[0])
    reward = np.int64(0)
    if d >= 0:
        cur, reward = move(cur, d)
    r = np.uint64(st[1])
    cells = np.full(n, -1, np.int64)
    exps = np.zeros(n, np.int64)
    for i in range(n):
        cur, r, c, e = spawn_at(cur, r, p4)
        cells[i] = c
        exps[i] = e
    st[0] = np.int64(cur)
    st[1] = np.int64(r)
    return reward, cells, exps, step_bits(cur)


@njit(cache=True)
def _py_spawns(st: npt.NDArray[np.int64], n: int) -> int:
    """``n <= SPAWN_CODES_MAX`` spawns on the state's board, encoded in one int: bits 0-7 step_bits,
    then 6 bits per spawn, ``2 * cell + exponent`` (1..32; 0: none, the board was full)."""
    p4 = float(st[2]) * _INV_2_53
    cur = np.uint64(st[0])
    r = np.uint64(st[1])
    out = np.int64(0)
    for i in range(n):
        cur, r, c, e = spawn_at(cur, r, p4)
        if c >= 0:
            out |= (2 * c + e) << (8 + 6 * i)
    st[0] = np.int64(cur)
    st[1] = np.int64(r)
    return int(out | step_bits(cur))


SPAWN_CODES_MAX = 9  # 8 + 6 * 9 = 62 bits


@njit(cache=True)
def _py_max_exponent(st: npt.NDArray[np.int64]) -> int:
    return max_exponent(np.uint64(st[0]))


def _entry_point(dispatcher: Any, argtypes: tuple[Any, ...]) -> Any:
    """The compiled function behind ``dispatcher`` for exactly ``argtypes``.

    Calling it skips numba's per-call argument typing and overload lookup: about 130 ns of the
    ~300 ns a one-board kernel call costs, which is a tenth of a ``Game.step``. It also skips every
    check, so it is only for the private calls above, whose arguments always have these types
    (the state array comes from ``new_state``). If numba ever stops exposing it, the dispatcher
    itself is returned.
    """
    try:
        try:
            entry = dispatcher.compile(argtypes)
        except RuntimeError as e:
            if "no compiled object yet" not in str(e):
                raise
            # numba compiled the kernel and registered it, then failed to write it to its cache (a
            # kernel whose source changed, compiled where the kernels it calls came from the cache:
            # seen once in the suite after an update of engine/batch.py). The kernel is in the
            # dispatcher: asking again returns it; the cache is written by a later process.
            entry = dispatcher.compile(argtypes)
    except (AttributeError, TypeError):  # pragma: no cover - a numba without Dispatcher.compile
        return dispatcher
    return entry if callable(entry) else dispatcher


@functools.cache
def state_entry(name: str) -> Any:
    """The entry point of ``_py_step`` or ``_py_spawns`` for ``(int64[3] state, int64)``, loaded on
    first use (not at import: loading compiled kernels takes a while, and many importers never move)."""
    state_t = numba_types.Array(numba_types.int64, 1, "C")
    kernel = {"step": _py_step, "spawns": _py_spawns}[name]
    return _entry_point(kernel, (state_t, numba_types.int64))
