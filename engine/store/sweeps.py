"""Sweeps in the store: a sweep record (its whole spec) and its planned trials, each linked to its run.

:class:`SweepsMixin` is the sweeps part of :class:`engine.store.GameStore`. A sweep plans all its
trials when it is made (``sweep_trials``: index, knob values, seed); a trial's run is linked when the
run is created, so a sweep that was killed knows which trials finished, which have a run to resume
from its last checkpoint, and which never started. Deleting a sweep keeps its runs (they are ordinary
runs); deleting a run unlinks it from its trial (the trial will run again on resume).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.store.base import StoreBase, check_status
from engine.store.model import StoreError
from engine.store.values import seed_text, seed_value, to_json

#: A sweep's life: ``running`` while a driver works on it, then how it ended.
SWEEP_STATUSES: tuple[str, ...] = ("running", "stopped", "finished", "failed")


@dataclass(frozen=True)
class TrialInfo:
    """One planned trial of a sweep: its index, knob values over the sweep's base config, its seed, and
    its run once one was made (``run_id``; ``run_status`` is that run's status, None without a run)."""

    sweep_id: int
    trial: int
    params: dict[str, Any]
    seed: int | None
    run_id: int | None = None
    run_status: str | None = None


@dataclass(frozen=True)
class SweepInfo:
    """A sweep record: the agent, the whole ``spec`` it was asked with, its status and driver."""

    id: int
    agent: str
    spec: dict[str, Any] = field(default_factory=dict)
    status: str = "running"
    error: str | None = None
    created: float = 0.0
    updated: float = 0.0
    pid: int | None = None
    host: str | None = None
    #: trials planned / with a finished run
    n_trials: int = 0
    n_finished: int = 0


_SWEEP_COLUMNS = (
    "s.id, s.agent, s.spec, s.status, s.error, s.created, s.updated, s.pid, s.host, "
    "(SELECT count(*) FROM sweep_trials t WHERE t.sweep_id = s.id) AS n_trials, "
    "(SELECT count(*) FROM sweep_trials t JOIN runs r ON r.id = t.run_id "
    " WHERE t.sweep_id = s.id AND r.status = 'finished') AS n_finished"
)


def _sweep(r: sqlite3.Row) -> SweepInfo:
    spec = json.loads(r["spec"])
    return SweepInfo(
        id=int(r["id"]),
        agent=str(r["agent"]),
        spec=spec if isinstance(spec, dict) else {},
        status=str(r["status"]),
        error=r["error"],
        created=float(r["created"]),
        updated=float(r["updated"]),
        pid=r["pid"],
        host=r["host"],
        n_trials=int(r["n_trials"]),
        n_finished=int(r["n_finished"]),
    )


class SweepsMixin(StoreBase):
    """Sweeps API of :class:`engine.store.GameStore` (see there for threads and transactions)."""

    def create_sweep(
        self,
        agent: str,
        spec: Mapping[str, Any],
        trials: Iterable[tuple[Mapping[str, Any], int | None]],
    ) -> int:
        """Record a sweep (status running, driven by this process) with its planned trials, in order:
        ``trials`` gives each trial's knob values and seed. Returns the sweep's id."""
        now = time.time()
        with self._tx(write=True) as con:
            cur = con.execute(
                "INSERT INTO sweeps (agent, spec, status, created, updated, pid, host) "
                "VALUES (?, ?, 'running', ?, ?, ?, ?)",
                (agent, to_json(spec, "spec"), now, now, os.getpid(), self._host),
            )
            sweep_id = int(cur.lastrowid or 0)
            con.executemany(
                "INSERT INTO sweep_trials (sweep_id, trial, params, seed) VALUES (?, ?, ?, ?)",
                [
                    (sweep_id, i, to_json(dict(params), "params"), seed_text(seed))
                    for i, (params, seed) in enumerate(trials)
                ],
            )
        return sweep_id

    def set_sweep_status(self, sweep_id: int, status: str, error: str | None = None) -> None:
        """Set a sweep's status; ``running`` also records this process as its driver."""
        check_status(status, SWEEP_STATUSES, "sweep")
        self._set_status("sweeps", sweep_id, status, error, drive=status == "running")

    def claim_sweep(self, sweep_id: int) -> None:
        """Make this process the sweep's one driver (status running). StoreError naming the driver when
        another live process drives it; a driver on this machine whose process is gone is taken over."""
        self._claim("sweeps", sweep_id, ("running",))

    def link_trial(self, sweep_id: int, trial: int, run_id: int) -> None:
        """Record ``run_id`` as the run of a sweep's trial (made when the run is created)."""
        with self._tx(write=True) as con:
            cur = con.execute(
                "UPDATE sweep_trials SET run_id = ? WHERE sweep_id = ? AND trial = ?",
                (run_id, sweep_id, trial),
            )
            if cur.rowcount == 0:
                raise StoreError(f"sweep {sweep_id} has no trial {trial}")

    def sweep_trials(self, sweep_id: int) -> list[TrialInfo]:
        """A sweep's trials in planned order, each with its run's id and status when it has one."""
        with self._tx(write=False) as con:
            rows = con.execute(
                "SELECT t.trial, t.params, t.seed, t.run_id, r.status AS run_status "
                "FROM sweep_trials t LEFT JOIN runs r ON r.id = t.run_id "
                "WHERE t.sweep_id = ? ORDER BY t.trial",
                (sweep_id,),
            ).fetchall()
        return [
            TrialInfo(
                sweep_id,
                int(r["trial"]),
                json.loads(r["params"]),
                seed_value(r["seed"]),
                r["run_id"],
                r["run_status"],
            )
            for r in rows
        ]

    def list_sweeps(self, limit: int | None = None) -> list[SweepInfo]:
        """Sweeps, newest first."""
        with self._tx(write=False) as con:
            rows = con.execute(
                f"SELECT {_SWEEP_COLUMNS} FROM sweeps s ORDER BY s.id DESC LIMIT ?",
                (-1 if limit is None else int(limit),),
            ).fetchall()
        return [_sweep(r) for r in rows]

    def get_sweep(self, sweep_id: int) -> SweepInfo:
        sql = f"SELECT {_SWEEP_COLUMNS} FROM sweeps s WHERE s.id = ?"
        return _sweep(self._get(sql, sweep_id, f"no sweep {sweep_id}"))

    def sweep_of_runs(self, run_ids: Sequence[int] | None = None) -> dict[int, tuple[int, int]]:
        """run id -> (sweep id, trial index) for the runs that are sweep trials (all, or of ``run_ids``)."""
        sql = "SELECT run_id, sweep_id, trial FROM sweep_trials"
        rows = self._rows_of(sql, "run_id", run_ids, "run_id IS NOT NULL")
        return {int(r[0]): (int(r[1]), int(r[2])) for r in rows}

    def delete_sweep(self, sweep_id: int) -> None:
        """Delete a sweep record and its trial list (its runs stay, as ordinary runs).

        A sweep that a live driver is running is refused (StoreError naming the driver): that driver
        would go on launching trials of a sweep that no longer exists, each failing and leaving a run
        behind. A driver of this machine whose process is gone does not count."""
        with self._tx(write=True) as con:
            row, gone = self._driver(con, "sweeps", sweep_id)
            pid, host = row["pid"], row["host"]
            if row["status"] == "running" and not gone:
                where = (
                    "this process"
                    if pid == os.getpid() and host == self._host
                    else f"process {pid} on {host}"
                )
                raise StoreError(
                    f"sweep {sweep_id} is running in {where}: stop it first (Ctrl-C there, or Stop in the "
                    "window), then delete it"
                )
            con.execute("DELETE FROM sweeps WHERE id = ?", (sweep_id,))
