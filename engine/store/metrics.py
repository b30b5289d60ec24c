"""Metric history blocks: consecutive training events stored column by column.

A block is a dict of numpy columns (``kind`` uint8 indexes ``kinds``; ``episode``, ``step`` int64;
``elapsed``, ``progress`` float64; ``vals`` float64 of shape (len(names), n), NaN where an event did
not report that metric). Blocks are merged log-structured (see ``schema.SCHEMA``), so reading a long
run back is a handful of ``np.frombuffer`` calls.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

FANOUT = 16  # this many blocks of one level merge into one block of the next
RESERVED = ("episode", "step", "elapsed")  # the fixed columns of run_metrics()


def metric_value(name: str, value: Any) -> float:
    """A metric value as a float (bool and numpy scalars welcome; None -> NaN)."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"metric {name!r} must be a number, got {value!r}") from None


def block_from_events(events: Sequence[Any]) -> dict[str, Any]:
    """MetricEvent-like objects (kind, episode, step, elapsed, progress, metrics) -> one block."""
    n = len(events)
    kinds: list[str] = []
    kind_index: dict[str, int] = {}
    names: list[str] = []
    name_index: dict[str, int] = {}
    kind = np.empty(n, dtype=np.uint8)
    episode = np.empty(n, dtype=np.int64)
    step = np.empty(n, dtype=np.int64)
    elapsed = np.empty(n, dtype=np.float64)
    progress = np.empty(n, dtype=np.float64)
    cells: list[tuple[int, int, float]] = []
    for i, ev in enumerate(events):
        k = str(ev.kind)
        if k not in kind_index:
            if len(kinds) == 255:
                raise ValueError("more than 255 different event kinds in one batch")
            kind_index[k] = len(kinds)
            kinds.append(k)
        kind[i] = kind_index[k]
        episode[i] = int(ev.episode)
        step[i] = int(ev.step)
        elapsed[i] = float(ev.elapsed)
        progress[i] = float(getattr(ev, "progress", 0.0) or 0.0)
        metrics: Mapping[str, Any] = ev.metrics or {}
        for name, value in metrics.items():
            j = name_index.get(name)
            if j is None:
                j = name_index[name] = len(names)
                names.append(str(name))
            cells.append((j, i, metric_value(name, value)))
    vals = np.full((len(names), n), np.nan, dtype=np.float64)
    for j, i, v in cells:
        vals[j, i] = v
    return {
        "kinds": kinds,
        "kind": kind,
        "episode": episode,
        "step": step,
        "elapsed": elapsed,
        "progress": progress,
        "names": names,
        "vals": vals,
    }


def block_to_row(block: Mapping[str, Any]) -> dict[str, Any]:
    """A block -> SQL parameters (JSON text and bytes)."""
    return {
        "n": int(block["kind"].shape[0]),
        "kinds": json.dumps(block["kinds"]),
        "kind": block["kind"].astype(np.uint8).tobytes(),
        "episode": block["episode"].astype("<i8").tobytes(),
        "step": block["step"].astype("<i8").tobytes(),
        "elapsed": block["elapsed"].astype("<f8").tobytes(),
        "progress": block["progress"].astype("<f8").tobytes(),
        "names": json.dumps(block["names"]),
        "vals": np.ascontiguousarray(block["vals"], dtype="<f8").tobytes(),
    }


def block_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """SQL row (n, kinds, kind, episode, step, elapsed, progress, names, vals) -> a block."""
    n = int(row["n"])
    names = json.loads(row["names"])
    return {
        "kinds": json.loads(row["kinds"]),
        "kind": np.frombuffer(row["kind"], dtype=np.uint8),
        "episode": np.frombuffer(row["episode"], dtype="<i8"),
        "step": np.frombuffer(row["step"], dtype="<i8"),
        "elapsed": np.frombuffer(row["elapsed"], dtype="<f8"),
        "progress": np.frombuffer(row["progress"], dtype="<f8"),
        "names": names,
        "vals": np.frombuffer(row["vals"], dtype="<f8").reshape(len(names), n),
    }


def concat_blocks(blocks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Blocks in event order -> one block (kinds and names are the union, in first-seen order)."""
    kinds: list[str] = []
    names: list[str] = []
    for b in blocks:
        kinds.extend(k for k in b["kinds"] if k not in kinds)
        names.extend(m for m in b["names"] if m not in names)
    if len(kinds) > 255:
        raise ValueError("more than 255 different event kinds in one run")
    total = sum(int(b["kind"].shape[0]) for b in blocks)
    out_kind = np.empty(total, dtype=np.uint8)
    vals = np.full((len(names), total), np.nan, dtype=np.float64)
    name_pos = {m: j for j, m in enumerate(names)}
    kind_pos = {k: j for j, k in enumerate(kinds)}
    start = 0
    for b in blocks:
        n = int(b["kind"].shape[0])
        remap = np.array([kind_pos[k] for k in b["kinds"]] or [0], dtype=np.uint8)
        out_kind[start : start + n] = remap[b["kind"]]
        for j, m in enumerate(b["names"]):
            vals[name_pos[m], start : start + n] = b["vals"][j]
        start += n

    def cat(key: str, dtype: Any) -> np.ndarray:
        return np.concatenate([b[key] for b in blocks]).astype(dtype) if blocks else np.empty(0, dtype)

    return {
        "kinds": kinds,
        "kind": out_kind,
        "episode": cat("episode", np.int64),
        "step": cat("step", np.int64),
        "elapsed": cat("elapsed", np.float64),
        "progress": cat("progress", np.float64),
        "names": names,
        "vals": vals,
    }


def head_block(block: Mapping[str, Any], n: int) -> dict[str, Any]:
    """The first ``n`` events of a block (kinds and names kept)."""
    return {
        **block,
        **{key: block[key][:n] for key in ("kind", "episode", "step", "elapsed", "progress")},
        "vals": block["vals"][:, :n],
    }


def tail_block(block: Mapping[str, Any], start: int) -> dict[str, Any]:
    """The events of a block from index ``start`` on (kinds and names kept)."""
    return {
        **block,
        **{key: block[key][start:] for key in ("kind", "episode", "step", "elapsed", "progress")},
        "vals": block["vals"][:, start:],
    }


def last_values(block: Mapping[str, Any]) -> dict[str, float]:
    """The last non-NaN value of every metric in a block."""
    out: dict[str, float] = {}
    for j, name in enumerate(block["names"]):
        col = block["vals"][j]
        ok = np.flatnonzero(~np.isnan(col))
        if ok.size:
            out[name] = float(col[ok[-1]])
    return out


def columns(block: Mapping[str, Any], kinds: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """A block -> ``{"episode", "step", "elapsed", <metric>...}`` columns, optionally of some kinds only.

    A metric whose name collides with a fixed column is returned as ``"metric:<name>"``.
    """
    keep: np.ndarray | slice = slice(None)
    if kinds is not None:
        wanted = [i for i, k in enumerate(block["kinds"]) if k in set(kinds)]
        keep = np.isin(block["kind"], np.array(wanted, dtype=np.uint8))
    # concat_blocks built fresh, writable arrays: asarray hands them out without another copy
    out: dict[str, np.ndarray] = {
        "episode": np.asarray(block["episode"][keep], dtype=np.int64),
        "step": np.asarray(block["step"][keep], dtype=np.int64),
        "elapsed": np.asarray(block["elapsed"][keep], dtype=np.float64),
    }
    for j, name in enumerate(block["names"]):
        key = f"metric:{name}" if name in RESERVED else name
        out[key] = np.asarray(block["vals"][j][keep], dtype=np.float64)
    return out
