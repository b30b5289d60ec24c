"""Compact byte encodings of boards and spawns for the moves table.

A board is stored as one **exponent byte per cell**, row-major (0 = empty, k = tile 2**k). Tiles are
unbounded in the rules but an int64 tops out at 2**62, so every tile fits in a byte with room to
spare; a 4x4 board is 16 bytes instead of 128 as int64 values, and a whole game decodes with one
``np.frombuffer``.

Spawns are 5 bytes per tile: little-endian uint32 flat cell index (boards may have more than 255
cells) + uint8 exponent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

MAX_EXPONENT = 62  # 2**62 is the largest power of two an int64 holds
SPAWN_DTYPE = np.dtype([("cell", "<u4"), ("exp", "u1")])  # itemsize 5, no padding


def tile_problem(values: Any) -> str | None:
    """None when every entry is 0 or a power of two in [2, 2**62]; otherwise what is wrong, in words.

    ``[[0, 2], [4, 3]]`` -> ``"tile value 3 is not 0 or a power of two >= 2"``.
    """
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        # object: ints too large for 64 bits (or mixed junk) came from JSON
        for v in arr.ravel().tolist():
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                return f"tile value {v!r} is not a number"
            if v != 0 and (v != int(v) or int(v) < 2 or int(v) & (int(v) - 1)):
                return f"tile value {v!r} is not 0 or a power of two >= 2"
            if int(v) > 1 << MAX_EXPONENT:
                return f"tile value {int(v)} is larger than the largest storable tile 2**{MAX_EXPONENT}"
        return None
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float64)  # float16 cannot even hold the bound below
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            bad = arr[~np.isfinite(arr) | (arr != np.round(arr))].ravel()[0]
            return f"tile value {float(bad)!r} is not a whole number"
        if np.any(np.abs(arr) > float(1 << MAX_EXPONENT)):
            return f"tile value larger than the largest storable tile 2**{MAX_EXPONENT}"
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "u" and arr.size and int(arr.max()) > 1 << MAX_EXPONENT:
        return f"tile value {int(arr.max())} is larger than the largest storable tile 2**{MAX_EXPONENT}"
    nz = arr[arr != 0].astype(np.int64)
    bad = (nz < 2) | ((nz & (nz - 1)) != 0)
    if np.any(bad):
        return f"tile value {int(nz[bad][0])} is not 0 or a power of two >= 2"
    return None


def exponents(values: np.ndarray) -> np.ndarray:
    """Tile values (already checked) -> uint8 exponents, same shape. ``[0, 2, 2048] -> [0, 1, 11]``."""
    v = np.asarray(values, dtype=np.int64)
    # frexp is exact for every power of two up to 2**62 (float64 holds them exactly): 2**k = 0.5 * 2**(k+1)
    _, e = np.frexp(v.astype(np.float64))
    return np.where(v == 0, 0, e - 1).astype(np.uint8)


def values_of(exps: np.ndarray) -> np.ndarray:
    """uint8 exponents -> int64 tile values, same shape. ``[0, 1, 11] -> [0, 2, 2048]``."""
    e = np.asarray(exps).astype(np.int64)
    return np.where(e == 0, 0, np.left_shift(np.int64(1), e))


def encode_board(board: np.ndarray) -> bytes:
    """One board (values) -> exponent bytes, row-major."""
    return exponents(board).tobytes()


def encode_boards(boards: np.ndarray) -> list[bytes]:
    """(n, rows, cols) values -> n byte strings."""
    exps = exponents(boards).reshape(len(boards), int(np.prod(boards.shape[1:])))
    return [row.tobytes() for row in exps]


def _stored_exponents(exps: np.ndarray) -> np.ndarray:
    """Exponent bytes read back from the store; one past :data:`MAX_EXPONENT` is a ValueError (damage:
    ``values_of`` would shift a 1 out of the int64)."""
    if exps.size and int(exps.max()) > MAX_EXPONENT:
        raise ValueError(f"a stored tile is 2**{int(exps.max())}, past the largest tile 2**{MAX_EXPONENT}")
    return exps


def decode_board(blob: bytes, shape: tuple[int, int]) -> np.ndarray:
    """Exponent bytes -> one (rows, cols) int64 board; a ValueError / TypeError for a damaged blob."""
    if not isinstance(blob, bytes):
        raise TypeError(f"a stored board is {type(blob).__name__}, not bytes")
    cells = shape[0] * shape[1]
    if len(blob) != cells:
        raise ValueError(f"stored board has {len(blob)} cells, expected {cells}")
    return values_of(_stored_exponents(np.frombuffer(blob, dtype=np.uint8))).reshape(shape)


def decode_boards(blobs: Sequence[bytes], shape: tuple[int, int]) -> np.ndarray:
    """n byte strings -> (n, rows, cols) int64 values, in one frombuffer."""
    cells = shape[0] * shape[1]
    odd = next((b for b in blobs if not isinstance(b, bytes)), None)
    if odd is not None:
        raise TypeError(f"a stored board is {type(odd).__name__}, not bytes")
    joined = b"".join(blobs)
    if len(joined) != cells * len(blobs):
        raise ValueError(f"stored boards do not all have {cells} cells")
    exps = _stored_exponents(np.frombuffer(joined, dtype=np.uint8))
    return values_of(exps).reshape(len(blobs), *shape)


def spawn_triples(spawns: Iterable[Any]) -> list[tuple[int, int, int]]:
    """``Spawn`` objects or ``(row, col, value)`` triples -> triples of ints."""
    out = []
    for s in spawns:
        if hasattr(s, "row"):
            out.append((int(s.row), int(s.col), int(s.value)))
        else:
            r, c, v = s
            out.append((int(r), int(c), int(v)))
    return out


def encode_spawns(spawns: Iterable[tuple[int, int, int]], cols: int) -> bytes:
    """``[(row, col, value), ...]`` -> 5 bytes per tile."""
    triples = list(spawns)
    rec = np.empty(len(triples), dtype=SPAWN_DTYPE)
    for i, (r, c, v) in enumerate(triples):
        rec[i] = (r * cols + c, int(v).bit_length() - 1)
    return rec.tobytes()


def decode_spawns(blobs: Sequence[bytes], cols: int) -> np.ndarray:
    """n spawn blobs -> (n, S, 3) int64 ``(row, col, value)``, value 0 where a move spawned fewer than S."""
    size = SPAWN_DTYPE.itemsize
    lengths = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
    if np.any(lengths % size):
        raise ValueError(f"a stored spawn list is not a whole number of {size}-byte spawns")
    counts = lengths // size
    width = int(counts.max()) if len(blobs) else 0
    out = np.zeros((len(blobs), width, 3), dtype=np.int64)
    if width == 0:
        return out
    rec = np.frombuffer(b"".join(blobs), dtype=SPAWN_DTYPE)
    _stored_exponents(rec["exp"])
    move = np.repeat(np.arange(len(blobs)), counts)
    slot = np.arange(len(rec)) - np.repeat(np.cumsum(counts) - counts, counts)
    cell = rec["cell"].astype(np.int64)
    out[move, slot, 0] = cell // cols
    out[move, slot, 1] = cell % cols
    out[move, slot, 2] = values_of(rec["exp"])
    return out
