"""Checkpoint files: weights + the config and rules that made them, never a pickle.

Layout: an uncompressed ``.npz`` (zip) archive. Every entry is a plain numeric array; ``__meta__`` is the
UTF-8 JSON metadata as a uint8 array::

    {"format": "2048-studio-checkpoint", "version": 1, "agent": "dqn", "config": {...},
     "rules": {...}, "counters": {...}, "state": {...agent metadata...}, "created": "..."}

Loading uses ``np.load(allow_pickle=False)``, so a crafted object array is refused without being
unpickled, and no code from the file ever runs. Writes are atomic (temporary file + fsync + rename):
a crash or a kill mid-write leaves the previous checkpoint intact.
"""

from __future__ import annotations

import datetime as _dt
import json
import zipfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.config import ConfigError
from agents.registry import get_agent_class
from engine import Rules
from engine.fsutil import atomic_write

if TYPE_CHECKING:  # base imports this module (Agent.save / Agent.load); this one needs no base at run time
    from agents.base import Agent

FORMAT = "2048-studio-checkpoint"
VERSION = 1
META_KEY = "__meta__"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message says why (other agent, other rules, damaged, newer)."""


def save_checkpoint(agent: Agent, path: str | Path) -> Path:
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    arrays, state_meta = agent.get_state()
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "agent": agent.name,
        "config": agent.config.to_dict(),
        "rules": agent.rules.to_dict(),
        "counters": asdict(agent.counters),
        "seed": agent.seed,
        "state": state_meta,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    payload = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    for k, v in payload.items():
        if k == META_KEY or v.dtype == object:
            raise ValueError(f"checkpoint array {k!r} must be a plain numeric array")
    payload[META_KEY] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    atomic_write(path, lambda fh: _write_npz(fh, payload))
    return path


def _write_npz(fh: Any, arrays: dict[str, np.ndarray]) -> None:
    """What ``np.savez`` does, minus its keyword clash (an array named ``allow_pickle``) and with
    pickling refused on the writing side too."""
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)


def read_checkpoint(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Metadata and arrays of a checkpoint file, checked for format and version; nothing executed."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"no checkpoint at {path}")
    if not zipfile.is_zipfile(path):
        raise CheckpointError(f"{path.name} is not a 2048 Studio checkpoint (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if META_KEY not in npz.files:
                raise CheckpointError(f"{path.name} is not a 2048 Studio checkpoint (no metadata)")
            meta = json.loads(bytes(npz[META_KEY]).decode())
            arrays = {k: npz[k] for k in npz.files if k != META_KEY}
    except CheckpointError:
        raise
    except ValueError as e:
        if "pickle" in str(e).lower():
            raise CheckpointError(
                f"{path.name} holds pickled objects; refused (checkpoints are data only)"
            ) from None
        raise CheckpointError(f"{path.name} is damaged or truncated: {e}") from None
    except (OSError, zipfile.BadZipFile, EOFError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path.name} is damaged or truncated: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path.name} is not a 2048 Studio checkpoint")
    version = meta.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CheckpointError(
            f"{path.name} has checkpoint format version {version}, newer than this studio's {VERSION}: upgrade"
        )
    return meta, arrays


def load_checkpoint(
    path: str | Path, *, expect_agent: str | None = None, expect_rules: Rules | None = None
) -> Agent:
    """Rebuild the agent a checkpoint was made from (its registered class, config, rules and state)."""
    path = Path(path)
    meta, arrays = read_checkpoint(path)
    name = meta.get("agent")
    if expect_agent is not None and name != expect_agent:
        raise CheckpointError(f"{path.name} is a checkpoint of agent {name!r}, not {expect_agent!r}")
    try:
        cls = get_agent_class(str(name))
    except KeyError:
        raise CheckpointError(f"{path.name} is a checkpoint of unknown agent {name!r}") from None
    try:
        rules = Rules.from_dict(meta.get("rules", {}))
        config = cls.config_cls.from_dict(meta.get("config", {}))
    except (ConfigError, ValueError, TypeError) as e:
        raise CheckpointError(f"{path.name} has settings this version cannot use: {e}") from None
    if expect_rules is not None and rules != expect_rules:
        raise CheckpointError(
            f"{path.name} was trained on {rules.rows}x{rules.cols} (p4={rules.p4}), "
            f"not {expect_rules.rows}x{expect_rules.cols} (p4={expect_rules.p4})"
        )
    agent = cls(config, rules, seed=meta.get("seed"))
    agent.counters = type(agent.counters)(**meta.get("counters", {}))
    try:
        agent.set_state(arrays, meta.get("state", {}))
    except (KeyError, ValueError, RuntimeError) as e:
        raise CheckpointError(f"{path.name} does not fit agent {name!r}: {e}") from None
    return agent
