"""What the sweep tests share: a tiny sweep request, and a stored sweep whose driver process is dead."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from agents.base import Budget
from engine.store import GameStore
from studio.services.sweep import SweepRequest

TINY = Budget(episodes=15)


def tiny(**kw: Any) -> SweepRequest:
    """Four n-tuple trials of 15 episodes (two learning rates, two seeds), three evaluation games each;
    ``kw`` changes any field."""
    base: dict[str, Any] = dict(agent="ntuple", budget=TINY, grid={"lr": (0.1, 0.01)}, seeds=2, eval_games=3)
    base.update(kw)
    return SweepRequest(**base)


def dead_driver_sweep(path: Path) -> int:
    """A one-trial sweep stored in the store file at ``path`` as driven by a process that has exited."""
    with GameStore(path) as store:
        sid = store.create_sweep("ntuple", {}, [({"lr": 0.1}, 1)])
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    con = sqlite3.connect(path)
    try:
        con.execute("UPDATE sweeps SET pid = ? WHERE id = ?", (int(dead.stdout), sid))
        con.commit()
    finally:
        con.close()
    return sid
