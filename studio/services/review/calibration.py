"""Stored calibrations of reviewers whose values are not points: the shipped defaults and the data dir's.

A calibration file holds one reviewer's fits by search depth (``{"depths": {"1": {...}, "2": {...}}}``,
each read by :func:`agents.review.parse_calibration`, the one parser). Nothing here builds an agent or
knows which reviewer asks: :mod:`.identity` names the file, :mod:`.fit` writes it. Qt-free.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from agents.review import Calibration, parse_depths

#: Default search depth of the default reviewers (n-tuple 2-ply, expectimax depth 2), and the depth a
#: reviewer without one is matched to a calibration at.
DEFAULT_DEPTH = 2
#: The shipped calibrations of reviewers whose values are not points: read-only defaults (nothing
#: writes inside the installed package); ``review --calibrate`` writes to the data dir's
#: :data:`CALIBRATIONS_FOLDER`, read first.
CALIBRATION_FILE = Path(__file__).resolve().parents[3] / "resources" / "review_calibration.json"
CALIBRATIONS_FOLDER = "calibrations"
#: Settings that are a search depth in a spec's config: a calibration file holds every depth of one
#: reviewer, so they are left out of its name, and a spec that changes only them still matches the
#: shipped fit. (A spec is matched before any agent is built, so by the names its settings carry.)
DEPTH_SETTINGS = ("depth", "search_depth", "depths_policy")


def calibrations_dir(data_dir: str | Path) -> Path:
    """The data dir's folder of calibrations (``review --calibrate`` writes there; nothing is ever
    written inside the installed package: :data:`CALIBRATION_FILE` is a read-only default)."""
    return Path(data_dir) / CALIBRATIONS_FOLDER


def load_calibrations(path: Path | None = None) -> dict[str, Any]:
    """The shipped calibration file's contents ({} when there is none or it does not read as JSON)."""
    try:
        data = json.loads((path or CALIBRATION_FILE).read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def shipped_depths(name: str | None, config: dict[str, Any] | None = None) -> dict[int, Calibration]:
    """The shipped calibrations of agent ``name`` by depth ({} for an agent with other settings than
    its defaults besides the depth: the fit is for that heuristic and those weights). ValueError (one
    line, naming the file) when the file's entry is refused."""
    if name is None or any(k not in DEPTH_SETTINGS for k in (config or {})):
        return {}
    entry = load_calibrations().get(name)
    if not isinstance(entry, dict) or "depths" not in entry:
        return {}
    return parse_depths(entry["depths"], f"{CALIBRATION_FILE} ({name})")


def own_depths(path: Path | None) -> dict[int, Calibration]:
    """A data dir calibration file's calibrations by depth ({} when there is none); ValueError (one
    line, naming the file) when it is refused."""
    if path is None:
        return {}
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ValueError(f"{path}: cannot be read ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"{path}: not a calibration file (not JSON)") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a calibration file")
    return parse_depths(data.get("depths"), str(path))


def nearest(depths: dict[int, Calibration], depth: int | None) -> Calibration | None:
    """The calibration fitted at the depth nearest ``depth`` (the shallower of two as near), or None."""
    if not depths:
        return None
    want = depth if depth is not None else DEFAULT_DEPTH
    return depths[min(depths, key=lambda d: (abs(d - want), d))]


def calibration_hash(cal: Calibration) -> str:
    """A short digest of a calibration's knots: part of a reviewer's key (a new fit, a new reviewer)."""
    return hashlib.sha1(json.dumps(cal.to_json(), sort_keys=True).encode()).hexdigest()[:12]


def calibration_for(
    name: str | None, depth: int | None, config: dict[str, Any] | None = None
) -> Calibration | None:
    """The shipped calibration of agent ``name`` at search ``depth`` (the nearest depth fitted), or
    None (a refused one too: :meth:`Reviewer.build` says why)."""
    try:
        return nearest(shipped_depths(name, config), depth)
    except ValueError:
        return None
