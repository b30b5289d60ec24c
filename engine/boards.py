"""Batched board helpers on exponent boards (numpy only): slides and afterstates of a whole batch, legal
masks, symmetries, tile counts. The learners' batched twin of :func:`engine.core.slide` (checked
against it in tests/agents/test_torch_common.py); it lives in the engine, which owns every slide.

Boards here are **exponent** arrays ``(B, rows, cols)`` (``uint8``: 0 empty, k for tile 2**k), the form
learners store and encode. Action order is the engine's: 0 up, 1 left, 2 down, 3 right.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine import Game, to_exponents
from engine import fast as _fast
from engine.core import from_left_frame, to_left_frame

N_ACTIONS = 4
_NIBBLE_SHIFTS = np.array([0, 4, 8, 12], dtype=np.int64)


def game_exponents(game: Game) -> npt.NDArray[np.uint8]:
    """The game's board as exponents, shape (rows, cols) uint8."""
    return to_exponents(game.board)


def legal_masks(exps_BRC: npt.NDArray[np.integer]) -> npt.NDArray[np.bool_]:
    """Legal-move masks ``(B, 4)`` of a batch of exponent boards, in action order.

    A move is legal when, along its axis, some tile has an empty cell on its move side or an equal
    neighbour: ``[[1, 0]]`` -> left legal, right not; ``[[1, 1]]`` -> both. Vectorised so that a whole
    data set of logged games gets its masks in one call.
    """
    e = np.asarray(exps_BRC)
    if e.ndim == 2:
        e = e[None]
    a, b = e[:, :, :-1], e[:, :, 1:]  # horizontal neighbours: a left of b
    same_h = (a == b) & (a != 0)
    left = ((a == 0) & (b != 0)) | same_h
    right = ((b == 0) & (a != 0)) | same_h
    c, d = e[:, :-1, :], e[:, 1:, :]  # vertical neighbours: c above d
    same_v = (c == d) & (c != 0)
    up = ((c == 0) & (d != 0)) | same_v
    down = ((d == 0) & (c != 0)) | same_v
    out = np.zeros((e.shape[0], N_ACTIONS), dtype=bool)
    out[:, 0] = up.reshape(e.shape[0], -1).any(axis=1)
    out[:, 1] = left.reshape(e.shape[0], -1).any(axis=1)
    out[:, 2] = down.reshape(e.shape[0], -1).any(axis=1)
    out[:, 3] = right.reshape(e.shape[0], -1).any(axis=1)
    return out


def count_tiles(exps_BRC: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
    """Non-empty cells per board, shape (B,)."""
    e = np.asarray(exps_BRC)
    return (e.reshape(e.shape[0], -1) != 0).sum(axis=1).astype(np.int64)


# ------------------------------------------------------------------------------------------ moves


def _slide_left_lines(lines_LC: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slide-left of exponent lines ``(L, C)``: ``(lines after, merged value, merges)`` per line.

    ``[1 1 1 1] -> [2 2 0 0]`` (value 8, 2 merges); ``[2 1 1 0] -> [2 2 0 0]`` (value 4, 1 merge).
    Compress, merge each equal neighbour pair once from the wall outwards (a merged cell is zeroed so it
    cannot merge again), compress again: the engine's rule, vectorised over lines. Lines of 4 cells whose
    tiles fit a nibble use the engine's 65,536-entry row tables instead (a few lookups).
    """
    if lines_LC.shape[1] == 4 and lines_LC.size and int(lines_LC.max()) <= _fast.MAX_EXPONENT:
        e = lines_LC.astype(np.int64)
        idx_L = e[:, 0] | (e[:, 1] << 4) | (e[:, 2] << 8) | (e[:, 3] << 12)
        if not _fast.ROW_OVERFLOW[idx_L].any():
            row_L = _fast.ROW_LEFT[idx_L].astype(np.int64)
            out = (row_L[:, None] >> _NIBBLE_SHIFTS) & 0xF
            merges_L = np.count_nonzero(e, axis=1) - np.count_nonzero(out, axis=1)
            return out, _fast.ROW_SCORE[idx_L].astype(np.int64), merges_L
    order = np.argsort(lines_LC == 0, axis=1, kind="stable")
    t = np.take_along_axis(lines_LC, order, axis=1).astype(np.int64)
    value_L = np.zeros(t.shape[0], dtype=np.int64)
    merges_L = np.zeros(t.shape[0], dtype=np.int64)
    for j in range(t.shape[1] - 1):
        m = (t[:, j] == t[:, j + 1]) & (t[:, j] != 0)
        t[m, j] += 1
        t[m, j + 1] = 0
        value_L[m] += np.left_shift(np.int64(1), t[m, j])
        merges_L += m
    order = np.argsort(t == 0, axis=1, kind="stable")
    return np.take_along_axis(t, order, axis=1), value_L, merges_L


def slide_batch(exps_BRC: np.ndarray, direction: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move ``direction`` on every board (no spawn): ``(boards after (B, R, C) uint8, merged value (B,),
    merges (B,))``. An illegal move returns the board unchanged with value 0."""
    e = np.asarray(exps_BRC)
    view = to_left_frame(e, direction)
    b, r, c = view.shape
    lines, value, merges = _slide_left_lines(view.reshape(b * r, c))
    out = from_left_frame(lines.reshape(b, r, c), direction)
    return (
        np.ascontiguousarray(out, dtype=np.uint8),
        value.reshape(b, r).sum(axis=1),
        merges.reshape(b, r).sum(axis=1),
    )


def _afterstates_4x4(e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The four moves of 4x4 boards by row-table lookups; None when a tile does not fit a nibble."""
    if e.size == 0 or int(e.max()) > _fast.MAX_EXPONENT:
        return None
    e64 = e.astype(np.int64)
    rows_BR = (e64 << _NIBBLE_SHIFTS[None, None, :]).sum(axis=2)  # row r, column 0 in the low nibble
    cols_BC = (e64 << _NIBBLE_SHIFTS[None, :, None]).sum(axis=1)  # column c, row 0 in the low nibble
    if _fast.ROW_OVERFLOW[rows_BR].any() or _fast.ROW_OVERFLOW[cols_BC].any():
        return None
    shifts = _NIBBLE_SHIFTS
    left = (_fast.ROW_LEFT[rows_BR].astype(np.int64)[..., None] >> shifts) & 0xF
    right = (_fast.ROW_RIGHT[rows_BR].astype(np.int64)[..., None] >> shifts) & 0xF
    # Up / down are left / right moves of the columns; unpacked as (column, row), then transposed.
    up = ((_fast.ROW_LEFT[cols_BC].astype(np.int64)[..., None] >> shifts) & 0xF).transpose(0, 2, 1)
    down = ((_fast.ROW_RIGHT[cols_BC].astype(np.int64)[..., None] >> shifts) & 0xF).transpose(0, 2, 1)
    after = np.stack([up, left, down, right], axis=1).astype(np.uint8)
    row_score = _fast.ROW_SCORE[rows_BR].astype(np.int64).sum(axis=1)
    col_score = _fast.ROW_SCORE[cols_BC].astype(np.int64).sum(axis=1)
    value = np.stack([col_score, row_score, col_score, row_score], axis=1)
    tiles = np.count_nonzero(e.reshape(e.shape[0], -1), axis=1)
    merges = tiles[:, None] - np.count_nonzero(after.reshape(e.shape[0], 4, -1), axis=2)
    # An illegal move leaves every line unchanged, and an unchanged line merged nothing: value 0.
    return after, value, merges


def afterstates(exps_BRC: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All four moves of every board: ``(boards (B, 4, R, C), merged values (B, 4), merges (B, 4))``."""
    e = np.asarray(exps_BRC)
    if e.shape[1:] == (4, 4):
        fast = _afterstates_4x4(e)
        if fast is not None:
            return fast
    outs = [slide_batch(exps_BRC, d) for d in range(N_ACTIONS)]
    return (
        np.stack([o[0] for o in outs], axis=1),
        np.stack([o[1] for o in outs], axis=1),
        np.stack([o[2] for o in outs], axis=1),
    )


# ------------------------------------------------------------------------------------------ symmetries


@dataclass(frozen=True)
class Symmetry:
    """One symmetry of the board: optional transpose, then optional up-down and left-right flips.

    ``action_map[a]`` is the move on the transformed board that does what move ``a`` did on the
    original: sliding ``apply(b)`` with ``action_map[a]`` gives ``apply(slide(b, a))``.
    """

    transpose: bool
    flip_ud: bool
    flip_lr: bool
    action_map: tuple[int, int, int, int]

    def apply(self, exps_BRC: np.ndarray) -> np.ndarray:
        """Transform a batch ``(B, rows, cols)`` (a copy, contiguous)."""
        out = exps_BRC
        if self.transpose:
            out = out.transpose(0, 2, 1)
        if self.flip_ud:
            out = out[:, ::-1, :]
        if self.flip_lr:
            out = out[:, :, ::-1]
        return np.ascontiguousarray(out)

    def apply_actions(self, actions_B: np.ndarray) -> np.ndarray:
        return np.asarray(self.action_map, dtype=np.int64)[actions_B]

    def apply_masks(self, masks_BA: np.ndarray) -> np.ndarray:
        """Masks follow their moves: new_mask[:, action_map[a]] = mask[:, a]."""
        out = np.empty_like(masks_BA)
        out[:, list(self.action_map)] = masks_BA
        return out


def _action_map(transpose: bool, flip_ud: bool, flip_lr: bool) -> tuple[int, int, int, int]:
    # up 0, left 1, down 2, right 3. A transpose swaps the axes (up <-> left, down <-> right);
    # an up-down flip swaps up and down; a left-right flip swaps left and right. Applied in that order.
    m = [0, 1, 2, 3]
    if transpose:
        m = [{0: 1, 1: 0, 2: 3, 3: 2}[a] for a in m]
    if flip_ud:
        m = [{0: 2, 2: 0}.get(a, a) for a in m]
    if flip_lr:
        m = [{1: 3, 3: 1}.get(a, a) for a in m]
    return (m[0], m[1], m[2], m[3])


def symmetries(rows: int, cols: int) -> tuple[Symmetry, ...]:
    """The board's symmetries: 8 on a square board, 4 otherwise (a transpose changes the shape).

    The identity comes first.
    """
    out = []
    for t in (False, True) if rows == cols else (False,):
        for ud in (False, True):
            for lr in (False, True):
                out.append(Symmetry(t, ud, lr, _action_map(t, ud, lr)))
    return tuple(out)


def augment_batch(
    exps_BRC: np.ndarray,
    actions_B: np.ndarray,
    masks_BA: np.ndarray | None,
    rng: np.random.Generator,
    syms: tuple[Symmetry, ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Apply a random symmetry to each sample (same board shape in and out)."""
    pick_B = rng.integers(len(syms), size=exps_BRC.shape[0])
    exps_out = np.empty_like(exps_BRC)
    actions_out = np.empty_like(actions_B)
    masks_out = None if masks_BA is None else np.empty_like(masks_BA)
    for i, sym in enumerate(syms):
        sel = pick_B == i
        if not sel.any():
            continue
        exps_out[sel] = sym.apply(exps_BRC[sel])
        actions_out[sel] = sym.apply_actions(actions_B[sel])
        if masks_BA is not None and masks_out is not None:
            masks_out[sel] = sym.apply_masks(masks_BA[sel])
    return exps_out, actions_out, masks_out
