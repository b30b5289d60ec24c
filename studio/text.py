"""Plain-text building blocks shared by the command line and the window: tables, numbers, durations, boards."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Collection[int] = ()) -> str:
    """A fixed-width text table; columns whose index is in ``right`` are right-aligned (numbers)."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))]
        return "  ".join(parts).rstrip()

    return "\n".join([line(list(headers))] + [line(r) for r in cells])


def number(v: float | int | None) -> str:
    """``1234.0 -> "1234"``, ``0.012345 -> "0.01235"``, NaN/None -> ``"-"``."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    f = float(v)
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == int(f) and abs(f) < 1e15:
        return str(int(f))
    # Four significant digits below 1,000 (0.01235); whole numbers above (12980, never 1.298e+04).
    return f"{f:.4g}" if abs(f) < 1000 else f"{f:.0f}"


def duration(seconds: float | None, missing: str = "-") -> str:
    """``75.2 -> "1:15"``, ``3725 -> "1:02:05"``; ``missing`` for None, NaN, infinite or negative
    (an ETA not known yet says ``"…"``)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return missing
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def board_lines(board: np.ndarray, marks: Collection[tuple[int, int]] = (), mark: str = "*") -> list[str]:
    """A board as text lines, ``.`` for empty cells and ``mark`` after the cells in ``marks``."""
    width = max(4, len(str(int(board.max()))))
    lines = []
    for r, row in enumerate(board):
        cells = []
        for c, v in enumerate(row):
            text = "." if v == 0 else str(int(v))
            cells.append(text.rjust(width) + (mark if (r, c) in marks else " "))
        lines.append(" ".join(cells).rstrip())
    return lines


def side_by_side(blocks: Sequence[tuple[str, list[str]]], gap: int = 4) -> str:
    """Text blocks (title, lines) next to each other."""
    widths = [max([len(t)] + [len(ln) for ln in lines]) for t, lines in blocks]
    height = max(len(lines) for _, lines in blocks)
    out = ["".join(t.ljust(w + gap) for (t, _), w in zip(blocks, widths)).rstrip()]
    for i in range(height):
        out.append(
            "".join(
                (lines[i] if i < len(lines) else "").ljust(w + gap) for (_, lines), w in zip(blocks, widths)
            ).rstrip()
        )
    return "\n".join(out)


SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    """``[1, 2, 3] -> "▁▄█"`` (NaN -> space)."""
    arr = np.asarray(values, dtype=float)
    ok = arr[~np.isnan(arr)]
    if ok.size == 0:
        return ""
    lo, hi = float(ok.min()), float(ok.max())
    out = []
    for v in arr:
        if math.isnan(v):
            out.append(" ")
        else:
            k = 0 if hi == lo else round((v - lo) / (hi - lo) * (len(SPARK) - 1))
            out.append(SPARK[k])
    return "".join(out)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``plural(1, "game") -> "1 game"``, ``plural(1200, "game") -> "1,200 games"`` (``many``: an
    irregular plural)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


#: A game's status in the words the window and the command line share: ``playing`` (being played
#: now), ``finished`` (game over) and ``unfinished`` (left before game over; Play goes on with it).
#: The keys are the store's statuses (``abandoned`` is the store's word for unfinished).
GAME_STATUS_WORDS: dict[str, str] = {"playing": "playing", "finished": "finished", "abandoned": "unfinished"}


def game_status(status: str) -> str:
    """The store's status of a game in the shared words (:data:`GAME_STATUS_WORDS`)."""
    return GAME_STATUS_WORDS.get(status, status)


def store_status(word: str) -> str:
    """The store's status for a word of :data:`GAME_STATUS_WORDS` (the store's own words pass as they are)."""
    for status, text in GAME_STATUS_WORDS.items():
        if text == word:
            return status
    return word
