"""Which reviewer: an agent spec at a search depth, and the key its stored reviews are found by. Qt-free.

Reviewer keys name a checkpoint by the SHA-256 of its bytes (cached by path, size and modification
time), never by its path: a copied or moved data dir reuses every review, and a file overwritten in
place is another reviewer. The calibration a reviewer grades with is part of its key too: a new fit is
another reviewer, whose reviews are not mixed with the old one's.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.base import Agent
from agents.review import Calibration
from agents.spec import AgentSpec
from engine import Rules

from .calibration import DEPTH_SETTINGS, calibration_hash, nearest, own_depths, shipped_depths
from .grading import at_depth, depth_of, grading_of, remember_calibrations

_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGEST_LOCK = threading.Lock()


def file_digest(path: str | Path) -> str | None:
    """SHA-256 of a file's bytes (hex), cached by (path, size, mtime); None when it cannot be read."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return None
    slot = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    with _DIGEST_LOCK:
        if slot in _DIGESTS:
            return _DIGESTS[slot]
    h = hashlib.sha256()
    try:
        with p.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    digest = h.hexdigest()
    with _DIGEST_LOCK:
        _DIGESTS[slot] = digest
    return digest


#: (path, size, mtime) -> the checkpoint's metadata, None when its archive or metadata do not read: a
#: run's files are read once per window, not at every review
_METADATA: dict[tuple[str, int, int], dict[str, Any] | None] = {}


def checkpoint_meta(path: Path) -> dict[str, Any] | None:
    """The metadata of the checkpoint at ``path`` (the arrays are not inflated), or None when it does not
    read: a damaged or truncated best checkpoint is passed over, so the default reviewer falls back to
    the next one instead of refusing to review."""
    from agents.checkpoint import CheckpointError, read_checkpoint

    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _METADATA:
        try:
            _METADATA[key] = read_checkpoint(path, arrays=False)[0]
        except CheckpointError:
            _METADATA[key] = None
    return _METADATA[key]


@dataclass(frozen=True)
class Reviewer:
    """An agent spec (registry name or checkpoint file) and the search depth it reviews at (None: the
    agent's own setting). :meth:`key` is its stable identity in the store; ``fallback`` (not part of
    it) says why this is not a strong reviewer, when it is not. ``calibrations``: the data dir's
    calibrations folder (:func:`calibrations_dir`), read before the shipped defaults; None: the
    shipped ones only."""

    spec: AgentSpec
    depth: int | None = None
    fallback: str | None = field(default=None, compare=False)
    #: chosen by the default rule (:func:`default_reviewer`); stored with its reviews, so a review made
    #: by an earlier default is known as one once the default has changed
    default: bool = field(default=False, compare=False)
    calibrations: Path | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        name = self.spec.display
        if self.spec.name == "ntuple" or (self.spec.checkpoint and "ntuple" in name):
            name = name.replace("ntuple", "n-tuple", 1)
        if self.depth is None:
            return name
        return f"{name}, 2-ply" if self.depth == 2 and "n-tuple" in name else f"{name} depth {self.depth}"

    def _spec_ident(self) -> dict[str, Any]:
        spec: dict[str, Any] = json.loads(self.spec.key())
        if self.spec.checkpoint is not None:
            digest = file_digest(self.spec.checkpoint)
            # gone: the path alone (building the reviewer will say the file is missing)
            spec["checkpoint"] = f"sha256:{digest}" if digest else self.spec.checkpoint
        return spec

    def calibration_file(self) -> Path | None:
        """Where ``review --calibrate`` writes this reviewer's calibration in the data dir (one file
        per agent, settings and checkpoint content, every depth in it), or None without a data dir."""
        if self.calibrations is None:
            return None
        spec = self._spec_ident()
        for part in ("config", "play"):  # the depth is a key inside the file, not part of its name
            spec[part] = {k: v for k, v in spec[part].items() if k not in DEPTH_SETTINGS}
        digest = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
        name = self.spec.name
        if name is None and self.spec.checkpoint is not None:  # the agent the file holds, for a person
            meta = checkpoint_meta(Path(self.spec.checkpoint))
            name = str(meta.get("agent")) if meta is not None else None
        safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in name or "checkpoint")
        return self.calibrations / f"{safe[:40]}-{digest}.json"

    def calibration_depths(self) -> dict[int, Calibration]:
        """This reviewer's calibrations by depth: the data dir's (:meth:`calibration_file`) over the
        shipped defaults (a registry agent with its default settings). A one-line ValueError naming
        the file and field when one of them is refused."""
        config = {**self.spec.config, **self.spec.play}
        shipped = {} if self.spec.checkpoint else shipped_depths(self.spec.name, config)
        return {**shipped, **own_depths(self.calibration_file())}

    def key(self) -> str:
        """``name@dD:hash`` — the same for the same agent, settings, checkpoint *content* and depth."""
        ident_of: dict[str, Any] = {
            "spec": json.dumps(self._spec_ident(), sort_keys=True),
            "depth": self.depth,
        }
        try:
            cal = nearest(self.calibration_depths(), self.depth)
            if cal is not None:
                ident_of["calibration"] = calibration_hash(cal)
        except ValueError as e:  # a refused calibration: its own key; building the reviewer says why
            ident_of["calibration"] = hashlib.sha1(str(e).encode()).hexdigest()[:12]
        ident = json.dumps(ident_of, sort_keys=True)
        digest = hashlib.sha1(ident.encode()).hexdigest()[:16]
        name = self.spec.name or "checkpoint"  # never the file's name: a copy elsewhere is the same reviewer
        return f"{name}@d{self.depth if self.depth is not None else '-'}:{digest}"

    def agent(self, rules: Rules | None = None) -> Agent:
        """The agent at :attr:`depth`, whether or not it can grade (``review --calibrate`` fits it)."""
        agent = self.spec.build(rules, exact=False)
        if rules is not None:
            why = type(agent).unsupported_reason(rules)
            if why:
                raise ValueError(f"{agent.name} cannot review this game: {why}")
        if self.depth is not None:
            at_depth(agent, self.depth)
        return agent

    def build(self, rules: Rules | None = None) -> Agent:
        """The reviewing agent, at :attr:`depth`; ValueError with the reason when it cannot review."""
        agent = self.agent(rules)
        # ValueError: its values are not points and it has no calibration (or a refused one)
        remember_calibrations(agent, self.calibration_depths())
        grading_of(agent)
        return agent

    def describe(self, agent: Agent) -> dict[str, Any]:
        """What a stored review says about its reviewer (``agent``: this reviewer, built)."""
        return {
            "key": self.key(),
            "name": agent.name,
            "checkpoint": self.spec.checkpoint,
            "depth": depth_of(agent),
            "label": self.label,
            "fallback": self.fallback,
            "default": self.default,
            **grading_of(agent).to_json(),
        }
