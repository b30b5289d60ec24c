"""Crash-safe file writes shared by the store's exports and the agents' checkpoints."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO


def atomic_write(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write(fileobj)`` on a temporary file beside ``path``, fsync it, then rename it over ``path``.

    A crash or a kill at any moment leaves either the old file or the new one, never half a file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


#: Characters a file name built from stored or imported text keeps; every other one becomes ``_``.
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+")
#: The longest such name (file systems allow 255 bytes; room is left for what callers add around it).
NAME_MAX = 100


class UnsafePath(ValueError):
    """A path built from stored or imported text that would leave its folder; the message says which."""


def safe_name(text: object, fallback: str = "unnamed") -> str:
    """One file-name component from text a file or the store gave (an agent's name, a checkpoint's file
    name): never a separator, never ``.``/``..`` or a hidden name, never empty, at most :data:`NAME_MAX`
    characters. Plain names (``ntuple``, ``run-3-dqn``) come back as they are."""
    name = "".join(c if c in _NAME_OK else "_" for c in str(text))[:NAME_MAX].lstrip(".")
    return name if name.strip("_") else fallback


def path_under(folder: str | os.PathLike[str], *parts: object) -> Path:
    """``folder / part / ...`` with each part made a :func:`safe_name`, checked to stay under ``folder``
    once links are followed (UnsafePath otherwise: a link inside the folder that points out of it).

    Every path the studio builds from stored or imported text goes through here, so a run whose agent
    is ``../../tmp/x`` writes inside the folder it was asked to, under a name that says what it is."""
    base = Path(folder)
    path = base.joinpath(*(safe_name(p) for p in parts))
    root = base.resolve()
    if not path.resolve().is_relative_to(root):
        raise UnsafePath(f"{path} leads out of {base}: not written")
    return path
