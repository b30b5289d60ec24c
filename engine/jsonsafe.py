"""JSON that is JSON: every document the studio writes goes through :func:`dumps`.

Python's ``json`` writes ``NaN``, ``Infinity`` and ``-Infinity`` for non-finite floats by default, which
no strict reader (nor the studio's own import, nor ``jq``) accepts. A bad time or score already in the
store must not turn an export into a file the studio then refuses: non-finite floats are written as
``null`` ("no value"), and ``allow_nan=False`` makes any one that slips past a ValueError rather than a
broken file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["dumps", "finite"]


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (also inside dicts, lists and tuples) replaced by None;
    numpy scalars become Python numbers. Anything else is returned as it is."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kw: Any) -> str:
    """``json.dumps`` of :func:`finite` ``(value)``, never a bare NaN / Infinity (``kw`` as for json.dumps)."""
    return json.dumps(finite(value), allow_nan=False, **kw)
