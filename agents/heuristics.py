"""Board heuristics for search agents: sums of per-line scores, so a 4x4 board scores by table lookups.

Every heuristic here is a *line* function: a board's score is the sum of one function over its rows
(read left to right) plus one over its columns (read top to bottom)::

    H(board) = sum(row_fn(row) for row in rows) + sum(col_fn(col) for col in columns)

Lines are lists of **exponents** (0 = empty, 1 = a 2, 11 = a 2048; unbounded). On 4x4 boards each
function is evaluated once for all 65,536 possible 4-cell lines (:func:`line_tables`), and the
search adds eight table entries per board (nneonneo's trick); on other shapes the functions run on
the lines directly. Both paths call the same Python function for a line, so they agree exactly.

Two families:

* ``nneonneo`` (the default, after nneonneo/2048-ai's row heuristic): rewards empty cells and
  adjacent equal tiles, penalises non-monotone lines with a power of the exponents (so disorder among
  big tiles costs far more than among small ones) and the sum of ``exponent ** sum_power`` (a board
  holding its value in fewer, bigger tiles scores higher). nneonneo adds a constant 200,000 per line
  so that the value of a lost board (0) is far below every live board; here a lost position is worth
  ``-loss_penalty`` instead (same decisions, as expectations are linear), see :mod:`agents.expectimax`.
* ``seed004`` (seed 004's ``H = -0.1 Smoothness + 1.0 Monotonicity + 2.7 EmptyTiles + 3.5 Merges``),
  in our per-line reading of its four named features (the seed names them without formulas):
  smoothness = sum of ``|e_a - e_b|`` over neighbouring tiles (empty cells skipped), a roughness that
  the negative weight turns into a penalty; monotonicity = ``-min(increases, decreases)`` along the
  line (<= 0, a penalty with a positive weight); empty tiles = empty cells, counted once (rows only);
  merge potential = neighbouring equal tiles (empty cells skipped), in rows and columns.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

HEURISTICS: tuple[str, ...] = ("nneonneo", "seed004")


@dataclass(frozen=True)
class NneonneoWeights:
    """nneonneo/2048-ai's constants (its SCORE_* names), per line; empty cells count in rows and columns."""

    empty: float = 270.0
    merges: float = 700.0
    monotonicity: float = 47.0
    monotonicity_power: float = 4.0
    sum: float = 11.0
    sum_power: float = 3.5


@dataclass(frozen=True)
class Seed004Weights:
    """Seed 004's weights: -0.1 smoothness, 1.0 monotonicity, 2.7 empty tiles, 3.5 merge potential."""

    smoothness: float = -0.1
    monotonicity: float = 1.0
    empty: float = 2.7
    merges: float = 3.5


def _tiles(line: Sequence[int]) -> list[int]:
    return [e for e in line if e]


def nneonneo_line(line: Sequence[int], w: NneonneoWeights) -> float:
    """nneonneo's line score without its constant: ``[0, 0, 0, 0] -> 4 * 270 = 1080.0``.

    ``merges`` counts each run of equal tiles (empty cells skipped) as ``1 + (run length - 1)``, as
    nneonneo does: ``[1, 1, 0, 0]`` has 2, ``[1, 1, 1, 0]`` has 3.
    """
    empty = 0
    merges = 0
    prev = 0
    counter = 0
    total = 0.0
    for e in line:
        total += float(e) ** w.sum_power
        if e == 0:
            empty += 1
        else:
            if prev == e:
                counter += 1
            elif counter > 0:
                merges += 1 + counter
                counter = 0
            prev = e
    if counter > 0:
        merges += 1 + counter
    mono_left = 0.0
    mono_right = 0.0
    for i in range(1, len(line)):
        a = float(line[i - 1]) ** w.monotonicity_power
        b = float(line[i]) ** w.monotonicity_power
        if line[i - 1] > line[i]:
            mono_left += a - b
        else:
            mono_right += b - a
    return w.empty * empty + w.merges * merges - w.monotonicity * min(mono_left, mono_right) - w.sum * total


def seed004_line(line: Sequence[int], w: Seed004Weights, *, count_empty: bool) -> float:
    """Seed 004's four features on one line: ``[1, 1, 0, 0]`` (rows) -> ``2.7 * 2 + 3.5 * 1 = 8.9``."""
    tiles = _tiles(line)
    rough = 0.0
    ups = 0.0
    downs = 0.0
    merges = 0
    for a, b in itertools.pairwise(tiles):
        rough += abs(a - b)
        if b > a:
            ups += b - a
        else:
            downs += a - b
        if a == b:
            merges += 1
    score = w.smoothness * rough + w.monotonicity * -min(ups, downs) + w.merges * merges
    if count_empty:
        score += w.empty * (len(line) - len(tiles))
    return score


@dataclass(frozen=True)
class Heuristic:
    """A board heuristic: a family name and its weights (frozen, so it can key the table cache)."""

    name: str
    weights: NneonneoWeights | Seed004Weights

    def __post_init__(self) -> None:
        expected = {"nneonneo": NneonneoWeights, "seed004": Seed004Weights}.get(self.name)
        if expected is None or not isinstance(self.weights, expected):
            raise ValueError(
                f"unknown heuristic {self.name!r} (or weights of another one): choose one of {HEURISTICS}"
            )

    def row_fn(self, line: Sequence[int]) -> float:
        if isinstance(self.weights, NneonneoWeights):
            return nneonneo_line(line, self.weights)
        return seed004_line(line, self.weights, count_empty=True)

    def col_fn(self, line: Sequence[int]) -> float:
        if isinstance(self.weights, NneonneoWeights):
            return nneonneo_line(line, self.weights)
        return seed004_line(line, self.weights, count_empty=False)

    def __call__(self, exps: npt.NDArray[np.integer]) -> float:
        """Score a board of exponents (any shape): rows first, then columns, each in index order."""
        total = 0.0
        for row in exps.tolist():
            total += self.row_fn(row)
        for col in exps.T.tolist():
            total += self.col_fn(col)
        return total


@functools.lru_cache(maxsize=8)
def line_tables(heuristic: Heuristic) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Row and column tables: entry ``x`` scores the 4-cell line whose cell ``i`` is nibble ``i`` of ``x``.

    Built by calling the line functions themselves (a fraction of a second per heuristic, cached), so a
    table lookup and the general path give bit-identical numbers.
    """
    lines = [[x & 0xF, (x >> 4) & 0xF, (x >> 8) & 0xF, (x >> 12) & 0xF] for x in range(65536)]
    rows = np.array([heuristic.row_fn(line) for line in lines], dtype=np.float64)
    if heuristic.name == "nneonneo":  # one function for rows and columns: one table
        cols = rows
    else:
        cols = np.array([heuristic.col_fn(line) for line in lines], dtype=np.float64)
    rows.flags.writeable = False
    cols.flags.writeable = False
    return rows, cols
