"""Hypothesis strategies for boards, shared by the engine tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

SHAPES = [(3, 3), (4, 4), (5, 5), (3, 5), (6, 4)]


def exponent_grids(rows: int, cols: int, max_exp: int = 17) -> st.SearchStrategy[list[list[int]]]:
    """Grids of exponents, biased towards few distinct small values so that merges are common, with
    some room for the big ones (>= 16: 65536 and up)."""
    cell = st.one_of(
        st.just(0),
        st.integers(1, 3),
        st.integers(0, max_exp),
        st.sampled_from([15, 16, 17] if max_exp >= 17 else [max_exp]),
    )
    return st.lists(st.lists(cell, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


def value_grid(exps: list[list[int]]) -> list[list[int]]:
    return [[0 if e == 0 else 1 << e for e in row] for row in exps]


def value_boards(rows: int, cols: int, max_exp: int = 17) -> st.SearchStrategy[list[list[int]]]:
    return exponent_grids(rows, cols, max_exp).map(value_grid)


def shaped_value_boards(max_exp: int = 17) -> st.SearchStrategy[list[list[int]]]:
    """A board of one of the test shapes (3x3, 4x4, 5x5, 3x5, 6x4)."""
    return st.sampled_from(SHAPES).flatmap(lambda s: value_boards(s[0], s[1], max_exp))


def packed_boards() -> st.SearchStrategy[int]:
    """4x4 packed boards whose tiles all fit a nibble (<= 32768)."""
    from engine.fast import pack_exponents

    return exponent_grids(4, 4, 15).map(lambda g: pack_exponents(np.array(g, dtype=np.int64)))


u64 = st.integers(0, (1 << 64) - 1)
