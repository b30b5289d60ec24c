"""The rules of 2048 on boards of any shape: the general (slow, obviously-correct-ish) path.

Conventions, written down once (and tested in ``tests/engine/test_conventions.py``):

* A board is a 2-D integer numpy array of tile **values** (0 = empty, otherwise a power of two >= 2),
  shape ``rows x cols``. Tiles are unbounded: 65536, 131072, ... are ordinary tiles (int64 holds up
  to 2**62). Learners usually see **exponents** instead: ``log2(value)``, 0 for empty
  (:func:`to_exponents` / :func:`from_exponents`).
* Action order (used by every agent, one-hot move vectors and the Gymnasium env) follows seed 003's
  w/a/s/d: ``0 = up, 1 = left, 2 = down, 3 = right``.
* A move slides every line towards the move's side; equal neighbours merge once per move, the pair
  nearest the wall first: ``[2 2 2 2] -> [4 4 0 0]``, ``[4 4 4 0] -> [8 4 0 0]``.
* The reward of a move is the sum of the values of the tiles it created by merging (the classic game's
  score increment): ``[2 2 2 2] left`` has reward 8.
* A move that changes nothing is illegal. The game is over when no move is legal.
* Spawn rule: after every legal move, ``Rules.spawn_per_move`` tiles appear, each on an empty cell
  chosen uniformly, a 4 with probability ``Rules.p4`` and otherwise a 2. A new game starts with
  ``Rules.start_tiles`` spawned tiles.
* Randomness for spawns comes from a splitmix64 stream owned by the game (:class:`SpawnRng`), so the
  Python path and the numba kernels draw exactly the same spawns from the same seed.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt

Board = npt.NDArray[np.int64]

MASK64 = (1 << 64) - 1


class Direction(IntEnum):
    """The four moves, in the studio's action order (seed 003's w, a, s, d)."""

    UP = 0
    LEFT = 1
    DOWN = 2
    RIGHT = 3

    @property
    def label(self) -> str:
        """The move's name in lower case: ``Direction.UP.label == "up"``."""
        return self.name.lower()

    @classmethod
    def parse(cls, value: Direction | int | str) -> Direction:
        """``"up"``, ``"U"``, ``"w"``, ``0`` or ``Direction.UP`` -> ``Direction.UP``; anything else is a ValueError.

        Single letters follow seed 000's u/d/l/r, so ``"d"`` is **down**; ``"w"``/``"a"``/``"s"`` are
        accepted for up/left/down, but WASD as a *key map* (D = right) belongs to the front ends.
        """
        if isinstance(value, Direction):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if 0 <= int(value) <= 3:
                return cls(int(value))
        elif isinstance(value, str):
            key = value.strip().lower()
            if key in _DIRECTION_ALIASES:
                return _DIRECTION_ALIASES[key]
        raise ValueError(
            f"unknown direction {value!r}: use one of up, left, down, right (or 0-3, w/a/s/d, u/l/d/r)"
        )


DIRECTIONS: tuple[Direction, ...] = (Direction.UP, Direction.LEFT, Direction.DOWN, Direction.RIGHT)

_DIRECTION_ALIASES: dict[str, Direction] = {}
for _d, _aliases in {
    Direction.UP: ("up", "u", "w", "north"),
    Direction.LEFT: ("left", "l", "a", "west"),
    Direction.DOWN: ("down", "d", "s", "south"),
    Direction.RIGHT: ("right", "r", "east"),
}.items():
    for _a in _aliases:
        _DIRECTION_ALIASES[_a] = _d


#: The longest board side the rules accept: a board is a handful of kilobytes, a game's log stays
#: bounded, and a typo like ``--rows 100000`` is a one-line error instead of a 75 GB allocation.
MAX_SIDE = 16


@dataclass(frozen=True)
class Rules:
    """The knobs of the game (seed 004's ``Simplified2048``); the defaults are the classic game."""

    rows: int = 4
    cols: int = 4
    p4: float = 0.1
    start_tiles: int = 2
    spawn_per_move: int = 1

    def __post_init__(self) -> None:
        for name in ("rows", "cols"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 1 <= v <= MAX_SIDE:
                raise ValueError(f"Rules.{name} must be a whole number from 1 to {MAX_SIDE}, got {v!r}")
        if self.rows * self.cols < 2:
            raise ValueError(f"a {self.rows}x{self.cols} board is too small: it needs at least 2 cells")
        if isinstance(self.p4, bool) or not isinstance(self.p4, (int, float, np.floating, np.integer)):
            raise ValueError(f"Rules.p4 (probability of a 4) must be a number, got {self.p4!r}")
        if not (0.0 <= float(self.p4) <= 1.0):
            raise ValueError(f"Rules.p4 (probability of a 4) must be in [0, 1], got {self.p4!r}")
        cells = self.rows * self.cols
        if (
            not isinstance(self.start_tiles, (int, np.integer))
            or isinstance(self.start_tiles, bool)
            or not 0 <= self.start_tiles <= cells
        ):
            raise ValueError(
                f"Rules.start_tiles must be between 0 and {cells} (the number of cells), got {self.start_tiles!r}"
            )
        if (
            not isinstance(self.spawn_per_move, (int, np.integer))
            or isinstance(self.spawn_per_move, bool)
            or not 0 <= self.spawn_per_move <= cells - 1
        ):
            raise ValueError(
                f"Rules.spawn_per_move must be between 0 and {cells - 1}, got {self.spawn_per_move!r}"
            )

    @property
    def shape(self) -> tuple[int, int]:
        """The board's shape, ``(rows, cols)``: ``(4, 4)`` for the classic game."""
        return (self.rows, self.cols)

    @property
    def is_classic_shape(self) -> bool:
        """Whether the board is 4x4 (the other rules may still differ from the classic game's)."""
        return self.rows == 4 and self.cols == 4

    def to_dict(self) -> dict[str, Any]:
        """The rules as plain JSON data, ``{"rows": 4, "cols": 4, "p4": 0.1, ...}`` (what stores and
        checkpoints keep); :meth:`from_dict` reads it back."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rules:
        """The rules :meth:`to_dict` wrote: unknown keys are ignored, missing ones take their default,
        and values out of range are a ValueError."""
        known = {k: data[k] for k in ("rows", "cols", "p4", "start_tiles", "spawn_per_move") if k in data}
        return cls(**known)


@dataclass(frozen=True)
class Spawn:
    """A tile that appeared: at ``(row, col)``, with ``value`` 2 or 4."""

    row: int
    col: int
    value: int


@dataclass(frozen=True)
class StepResult:
    """What one legal move did: the move, its reward (sum of merged values) and the spawned tiles."""

    direction: Direction
    reward: int
    spawns: tuple[Spawn, ...]
    game_over: bool


# --------------------------------------------------------------------------------------------------
# Randomness


def splitmix64(state: int) -> tuple[int, int]:
    """One step of splitmix64: ``state -> (new_state, output)``, both 64-bit unsigned ints.

    Chosen because it is tiny, has a 64-bit state a numba kernel can carry, and is identical in pure
    Python and in the jitted kernels (``engine.fast``).
    """
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def seed_to_state(seed: int | None) -> int:
    """A 64-bit generator state from a user seed (``None``: fresh entropy from the OS)."""
    if seed is None:
        return int.from_bytes(os.urandom(8), "little")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError(f"seed must be a whole number or None, got {seed!r}")
    # Mix once so that seeds 0, 1, 2 ... start far apart in the stream.
    return splitmix64(int(seed) & MASK64)[1]


class SpawnRng:
    """The spawn random stream of one game (splitmix64).

    ``cell(n)`` picks an index in ``[0, n)`` from the high 32 bits of one draw (modulo bias < 1e-8 for
    n <= 64, negligible); ``is_four(p4)`` compares a 53-bit uniform float from one draw with ``p4``.
    Each spawn takes exactly two draws, cell first, in that order on every path.
    """

    __slots__ = ("state",)

    def __init__(self, state: int) -> None:
        self.state = int(state) & MASK64

    def next_u64(self) -> int:
        self.state, out = splitmix64(self.state)
        return out

    def cell(self, n: int) -> int:
        return (self.next_u64() >> 32) % n

    def uniform(self) -> float:
        return (self.next_u64() >> 11) * (1.0 / 9007199254740992.0)

    def is_four(self, p4: float) -> bool:
        return self.uniform() < p4


# --------------------------------------------------------------------------------------------------
# Pure functions on boards


def validate_board(board: Any) -> Board:
    """Return ``board`` as an int64 2-D array, or raise a ValueError saying what is wrong with it."""
    arr = np.asarray(board)
    if arr.ndim != 2:
        raise ValueError(
            f"a board must be a 2-D array (rows x cols), got {arr.ndim}-D with shape {arr.shape}"
        )
    if arr.size == 0:
        raise ValueError(f"a board must have at least one cell, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError("board values must be whole numbers (0 or a power of two >= 2)")
    elif arr.dtype.kind not in "iu":
        raise ValueError(f"board values must be integers, got dtype {arr.dtype}")
    out = arr.astype(np.int64)
    nz = out[out != 0]
    if np.any(nz < 2) or np.any(nz & (nz - 1)):
        bad = nz[(nz < 2) | ((nz & (nz - 1)) != 0)][0]
        raise ValueError(f"board values must be 0 or a power of two >= 2, found {int(bad)}")
    return out


def slide_row_left(row: list[int]) -> tuple[list[int], int]:
    """Slide and merge one line towards index 0.

    ``[2 2 2 2] -> [4 4 0 0]`` (reward 8); ``[2 0 2 4] -> [4 4 0 0]`` (reward 4);
    ``[4 4 4 0] -> [8 4 0 0]`` (reward 8); ``[2 4 8 16] -> [2 4 8 16]`` (reward 0).
    """
    tiles = [v for v in row if v]
    out: list[int] = []
    reward = 0
    i = 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            merged = tiles[i] * 2
            out.append(merged)
            reward += merged
            i += 2
        else:
            out.append(tiles[i])
            i += 1
    out.extend([0] * (len(row) - len(out)))
    return out, reward


def to_left_frame(a: npt.NDArray[Any], d: int) -> npt.NDArray[Any]:
    """View ``a`` so that move ``d`` becomes a left move: each line's wall end comes first.

    ``a`` is a board or boards stacked on leading axes (the last two are rows x cols), so
    :mod:`engine.boards` turns a whole batch with the same four views."""
    if d == Direction.LEFT:
        return a
    if d == Direction.RIGHT:
        return a[..., ::-1]
    if d == Direction.UP:
        return np.swapaxes(a, -1, -2)
    return np.swapaxes(a[..., ::-1, :], -1, -2)  # DOWN: columns read bottom to top


def from_left_frame(view: npt.NDArray[Any], d: int) -> npt.NDArray[Any]:
    """The inverse of :func:`to_left_frame`: the left, right and up views are their own inverses."""
    if d == Direction.DOWN:
        return np.swapaxes(view, -1, -2)[..., ::-1, :]
    return to_left_frame(view, d)


def slide(board: Any, direction: Direction | int | str) -> tuple[Board, int]:
    """Slide ``board`` in ``direction`` without spawning: ``(new_board, reward)``.

    Pure: the input is never modified. Works for any rows x cols. One slide-left routine serves
    every direction through transposes and flips::

        slide([[2, 2, 2, 2]], "left")  -> ([[4, 4, 0, 0]], 8)
        slide([[2], [2]], "down")      -> ([[0], [4]], 4)
    """
    b = validate_board(board)
    d = Direction.parse(direction)
    return slide_unchecked(b, d)


def slide_unchecked(board: Board, d: Direction) -> tuple[Board, int]:
    """:func:`slide` for callers that hold a board already validated (int64 tile values, any shape)
    and a parsed :class:`Direction`: the same result without the checks, for search loops that
    slide thousands of boards. ``slide_unchecked(np.array([[2, 2, 2, 2]]), Direction.LEFT)`` ->
    ``([[4, 4, 0, 0]], 8)``."""
    view = to_left_frame(board, d)
    out_view = np.empty_like(view)
    reward = 0
    for i in range(view.shape[0]):
        line, r = slide_row_left([int(x) for x in view[i]])
        out_view[i] = line
        reward += r
    out = np.ascontiguousarray(from_left_frame(out_view, d))
    return out, reward


def can_move(board: Any, direction: Direction | int | str) -> bool:
    """True when the move changes the board (a legal move)."""
    b = validate_board(board)
    moved, _ = slide_unchecked(b, Direction.parse(direction))
    return not np.array_equal(moved, b)


def legal_mask(board: Any) -> npt.NDArray[np.bool_]:
    """Legal-move mask in action order (up, left, down, right)."""
    b = validate_board(board)
    return np.array([not np.array_equal(slide_unchecked(b, d)[0], b) for d in DIRECTIONS], dtype=bool)


def legal_moves(board: Any) -> list[Direction]:
    """The moves that change ``board`` (tile values), in action order (up, left, down, right); empty
    when the game is over. ``legal_moves([[2, 0], [0, 0]]) == [Direction.DOWN, Direction.RIGHT]``."""
    mask = legal_mask(board)
    return [d for d in DIRECTIONS if mask[d]]


def to_exponents(board: Any) -> npt.NDArray[np.uint8]:
    """Tile values -> exponents (``0 -> 0``, ``2 -> 1``, ``2048 -> 11``, ``131072 -> 17``)."""
    b = validate_board(board)
    out = np.zeros(b.shape, dtype=np.uint8)
    nz = b != 0
    out[nz] = np.log2(b[nz]).round().astype(np.uint8)
    return out


def from_exponents(exps: Any) -> Board:
    """Exponents -> tile values (``0 -> 0``, ``k -> 2**k``)."""
    e = np.asarray(exps).astype(np.int64)
    if np.any(e < 0) or np.any(e > 62):
        raise ValueError("exponents must be between 0 and 62")
    return np.where(e == 0, 0, np.left_shift(np.int64(1), e)).astype(np.int64)


def spawn_tiles(board: Board, rng: SpawnRng, rules: Rules, count: int) -> tuple[Spawn, ...]:
    """Spawn ``count`` tiles in place on ``board`` (row-major empty-cell order), returning them."""
    spawns: list[Spawn] = []
    cols = board.shape[1]
    for _ in range(count):
        empty = np.flatnonzero(board.ravel() == 0)
        if empty.size == 0:
            break
        flat = int(empty[rng.cell(int(empty.size))])
        value = 4 if rng.is_four(rules.p4) else 2
        r, c = divmod(flat, cols)
        board[r, c] = value
        spawns.append(Spawn(r, c, value))
    return tuple(spawns)
