"""Small conversions between Python values and the database's columns (JSON text, seeds, rules)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from engine.core import Rules
from engine.store.model import StoreError


def to_json(value: Any, what: str) -> str:
    """JSON text of a dict / dataclass / object with ``to_dict`` (numpy scalars, arrays, paths welcome).

    ``what`` names the value in the StoreError raised when it cannot be stored.
    """

    def default(o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return dataclasses.asdict(o)
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, Path):
            return str(o)
        raise TypeError(f"{type(o).__name__} is not JSON-serialisable")

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if hasattr(value, "to_dict") and not isinstance(value, Mapping):
        value = value.to_dict()
    try:
        return json.dumps(value, default=default, sort_keys=True)
    except (TypeError, ValueError) as e:
        raise StoreError(f"{what} cannot be stored as JSON: {e}") from None


def rules_of(rules: Rules | Mapping[str, Any]) -> Rules:
    """``Rules`` as given, or built from its dict."""
    if isinstance(rules, Rules):
        return rules
    if isinstance(rules, Mapping):
        return Rules.from_dict(dict(rules))
    raise StoreError(f"rules must be engine.Rules or a dict, got {type(rules).__name__}")


def seed_text(seed: int | None) -> str | None:
    """A seed as decimal text: seeds may be any size, SQLite integers stop at 2**63."""
    if seed is None:
        return None
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise StoreError(f"seed must be a whole number or None, got {seed!r}")
    return str(int(seed))


def seed_value(text: str | None) -> int | None:
    """Inverse of :func:`seed_text`."""
    return None if text is None else int(text)
