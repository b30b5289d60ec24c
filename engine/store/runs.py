"""Training runs in the store: the run record, its metric history (columnar blocks) and checkpoints.

:class:`RunsMixin` is the runs half of :class:`engine.store.GameStore`; it uses the store's
transaction helper and knows nothing about games.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from engine.core import Rules
from engine.store import metrics
from engine.store.base import StoreBase, check_status, columns, one_row
from engine.store.model import RUN_STATUSES, CheckpointInfo, RunMessage, RunSummary, StoreError
from engine.store.values import rules_of, seed_text, seed_value, to_json

_CHECKPOINT_COLUMNS = "id, run_id, path, episode, step, final, created, eval_score, best"
_RUN_COLUMNS = (
    "id, agent, config, rules, budget, seed, status, error, created, updated, n_events, "
    "episodes, steps, elapsed, last_metrics, pid, host"
)


class RunsMixin(StoreBase):
    """Runs API of :class:`engine.store.GameStore` (see there for threads and transactions)."""

    def create_run(
        self,
        agent: str,
        config: Mapping[str, Any] | Any,
        rules: Rules | Mapping[str, Any],
        budget: Mapping[str, Any] | Any,
        seed: int | None = None,
        *,
        status: str = "running",
    ) -> int:
        """Record a new training run (status ``running`` unless told) and return its id.

        Inside :meth:`linking_runs_to` the run is also linked to that sweep trial, in the same
        transaction: a kill can never leave a trial's run without its link (an orphan run that the
        sweep's resume would not know and would train again under a new one)."""
        check_status(status, RUN_STATUSES, "run")
        r = rules_of(rules)
        now = time.time()
        link = getattr(self, "_link_next_run", None)
        with self._tx(write=True) as con:
            cur = con.execute(
                "INSERT INTO runs (agent, config, rules, budget, seed, status, created, updated, pid, host) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    agent,
                    to_json(config, "config"),
                    to_json(r, "rules"),
                    to_json(budget, "budget"),
                    seed_text(seed),
                    status,
                    now,
                    now,
                    os.getpid(),
                    self._host,
                ),
            )
            run_id = int(cur.lastrowid or 0)
            if link is not None:
                linked = con.execute(
                    "UPDATE sweep_trials SET run_id = ? WHERE sweep_id = ? AND trial = ? AND run_id IS NULL",
                    (run_id, *link),
                )
                if linked.rowcount == 0:  # rolls the run back too
                    raise StoreError(
                        f"sweep {link[0]} has no trial {link[1]} waiting for a run (deleted, or run elsewhere)"
                    )
            return run_id

    @contextmanager
    def linking_runs_to(self, sweep_id: int, trial: int) -> Iterator[None]:
        """Within the block, :meth:`create_run` links its run to trial ``trial`` of sweep ``sweep_id``
        in the run's own transaction (see there). One thread of this store's process at a time."""
        self._link_next_run: tuple[int, int] | None = (int(sweep_id), int(trial))
        try:
            yield
        finally:
            self._link_next_run = None

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None:
        """Set a run's status (running / paused / stopped / finished / failed) and its error text.

        Setting ``running`` or ``paused`` also records this process as the one driving the run.
        """
        check_status(status, RUN_STATUSES, "run")
        self._set_status("runs", run_id, status, error, drive=status in ("running", "paused"))

    def claim_run(self, run_id: int) -> None:
        """Make this process the one owner of run ``run_id`` (status running), in one write transaction,
        so two processes resuming a run cannot both proceed. StoreError naming the owner when another
        live process trains it; an owner on this machine whose process is gone is taken over."""
        self._claim("runs", run_id, ("running", "paused"))

    def log_metrics(self, run_id: int, events: Sequence[Any]) -> None:
        """Append metric events (``agents.base.MetricEvent``) to a run's history, in one transaction.

        Stored: kind, episode, step, elapsed, progress, every metric, and the message of events that
        have one. Boards and game traces are not stored here (use :meth:`record_trace` with ``run_id``).
        """
        events = list(events)
        if not events:
            return
        try:
            block = metrics.block_from_events(events)
        except (TypeError, ValueError, AttributeError) as e:
            raise StoreError(f"run {run_id}: bad metric event: {e}") from None
        with self._tx(write=True) as con:
            row = one_row(
                con, "SELECT n_events, last_metrics FROM runs WHERE id = ?", run_id, f"no run {run_id}"
            )
            first = int(row["n_events"])
            _insert_block(con, run_id, first, 0, block)
            con.executemany(
                "INSERT INTO run_messages (run_id, seq, kind, episode, step, message) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (run_id, first + i, str(ev.kind), int(ev.episode), int(ev.step), str(ev.message))
                    for i, ev in enumerate(events)
                    if getattr(ev, "message", "")
                ],
            )
            last = json.loads(row["last_metrics"])
            last.update(metrics.last_values(block))
            # The run's counters are the furthest any event reached: an evaluation event arrives after
            # later training events but carries the counters of the (older) checkpoint it played.
            con.execute(
                "UPDATE runs SET n_events = ?, episodes = max(episodes, ?), steps = max(steps, ?), "
                "elapsed = max(elapsed, ?), last_metrics = ?, updated = ? WHERE id = ?",
                (
                    first + len(events),
                    int(block["episode"].max()),
                    int(block["step"].max()),
                    float(block["elapsed"].max()),
                    json.dumps(_finite_or_none(last), allow_nan=False),
                    time.time(),
                    run_id,
                ),
            )
            self._compact(con, run_id)

    def truncate_metrics(self, run_id: int, step: int) -> int:
        """Drop the events a run logged after step ``step`` (its resumed checkpoint); returns those kept.

        A run killed between two checkpoints logged events past its last one; resumed from that
        checkpoint it plays those steps again, and its curves would show them twice. Events are in
        step order, so what is kept is the prefix of events with ``step <= step``.
        """
        with self._tx(write=True) as con:
            rows, whole = _history(con, run_id)
            later = np.flatnonzero(whole["step"] > step)
            if later.size == 0:
                return int(whole["step"].shape[0])
            keep = int(later[0])
            head = metrics.head_block(whole, keep)
            con.execute("DELETE FROM run_metric_blocks WHERE run_id = ?", (run_id,))
            if keep:
                # one block at the highest level seen: later appends compact below it as usual
                _insert_block(con, run_id, 0, max(int(r["level"]) for r in rows), head)
            con.execute("DELETE FROM run_messages WHERE run_id = ? AND seq >= ?", (run_id, keep))
            last = (
                (int(head["episode"][-1]), int(head["step"][-1]), float(head["elapsed"][-1]))
                if keep
                else (0, 0, 0.0)
            )
            con.execute(
                "UPDATE runs SET n_events = ?, episodes = ?, steps = ?, elapsed = ?, last_metrics = ?, updated = ? "
                "WHERE id = ?",
                (
                    keep,
                    *last,
                    json.dumps(_finite_or_none(metrics.last_values(head)), allow_nan=False),
                    time.time(),
                    run_id,
                ),
            )
            return keep

    @staticmethod
    def _compact(con: sqlite3.Connection, run_id: int) -> None:
        """Merge FANOUT blocks of one level into one block of the next, cascading upwards."""
        level = 0
        while True:
            rows = con.execute(
                "SELECT id, first, n, kinds, kind, episode, step, elapsed, progress, names, vals "
                "FROM run_metric_blocks WHERE run_id = ? AND level = ? ORDER BY first",
                (run_id, level),
            ).fetchall()
            if len(rows) < metrics.FANOUT:
                return
            merged = metrics.concat_blocks([metrics.block_from_row(r) for r in rows])
            first = rows[0]["first"]
            con.executemany("DELETE FROM run_metric_blocks WHERE id = ?", [(r["id"],) for r in rows])
            _insert_block(con, run_id, first, level + 1, merged)
            level += 1

    def run_metrics(
        self, run_id: int, kinds: Sequence[str] | None = None, *, since: int = 0
    ) -> dict[str, np.ndarray]:
        """A run's metric history as numpy columns, one entry per event in order.

        ``episode`` and ``step`` (int64), ``elapsed`` (float64), then one float64 column per metric name
        (NaN where an event did not report it). ``kinds`` keeps only events of those kinds (e.g.
        ``["episode"]``). A metric named like a fixed column comes back as ``"metric:<name>"``.
        ``since``: only events from that sequence number on (0-based, before ``kinds`` filters), read
        from the blocks that hold them: what a window following a run polls for.
        """
        with self._tx(write=False) as con:
            _, block = _history(con, run_id, since)
        return metrics.columns(block, kinds)

    def run_messages(self, run_id: int) -> list[RunMessage]:
        """The messages a run reported (info events), in order."""
        with self._tx(write=False) as con:
            rows = con.execute(
                "SELECT seq, kind, episode, step, message FROM run_messages WHERE run_id = ? ORDER BY seq",
                (run_id,),
            ).fetchall()
        return [RunMessage(r["seq"], r["kind"], r["episode"], r["step"], r["message"]) for r in rows]

    def add_checkpoint(
        self, run_id: int, path: str | os.PathLike[str], episode: int, step: int, final: bool = False
    ) -> int:
        """Record a checkpoint file of a run. Paths inside the data dir are kept relative to it."""
        p = Path(path)
        base = self._path.parent.resolve()
        try:
            stored = p.resolve().relative_to(base).as_posix()
        except ValueError:
            stored = str(p.resolve())
        with self._tx(write=True) as con:
            _check_run(con, run_id)
            cur = con.execute(
                "INSERT INTO run_checkpoints (run_id, path, episode, step, final, created) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, stored, int(episode), int(step), int(bool(final)), time.time()),
            )
            con.execute("UPDATE runs SET updated = ? WHERE id = ?", (time.time(), run_id))
            return int(cur.lastrowid or 0)

    def run_checkpoints(self, run_id: int) -> list[CheckpointInfo]:
        """A run's checkpoints, oldest first."""
        with self._tx(write=False) as con:
            rows = con.execute(
                f"SELECT {_CHECKPOINT_COLUMNS} FROM run_checkpoints WHERE run_id = ? ORDER BY id", (run_id,)
            ).fetchall()
        return [self._checkpoint_info(r) for r in rows]

    def _checkpoint_info(self, r: sqlite3.Row) -> CheckpointInfo:
        return CheckpointInfo(
            r["id"],
            r["run_id"],
            self._path.parent / r["path"],
            r["episode"],
            r["step"],
            bool(r["final"]),
            r["created"],
            None if r["eval_score"] is None else float(r["eval_score"]),
            bool(r["best"]),
        )

    def last_checkpoint(self, run_id: int) -> Path | None:
        """The newest checkpoint of a run (what a resume loads), or None."""
        cps = self.run_checkpoints(run_id)
        return cps[-1].path if cps else None

    def best_checkpoint(self, run_id: int) -> CheckpointInfo | None:
        """The run's checkpoint with the highest evaluation score so far (``best``), or None when no
        checkpoint of the run was evaluated. Its ``path`` is what to load to play the run's best policy."""
        with self._tx(write=False) as con:
            row = con.execute(
                f"SELECT {_CHECKPOINT_COLUMNS} FROM run_checkpoints WHERE run_id = ? AND best = 1 "
                "ORDER BY id DESC LIMIT 1",
                (run_id,),
            ).fetchone()
        return None if row is None else self._checkpoint_info(row)

    def set_checkpoint_eval(self, checkpoint_id: int, eval_score: float) -> bool:
        """Record a checkpoint's evaluation score; it becomes its run's ``best`` when the score beats
        the best one so far (a tie keeps the earlier). True when it became the best. One transaction,
        so a run has at most one best checkpoint whoever reads it meanwhile."""
        score = float(eval_score)
        if not math.isfinite(score):
            raise StoreError(f"checkpoint {checkpoint_id}: evaluation score must be finite, got {score}")
        with self._tx(write=True) as con:
            sql = "SELECT run_id FROM run_checkpoints WHERE id = ?"
            row = one_row(con, sql, checkpoint_id, f"no checkpoint {checkpoint_id}")
            run_id = row["run_id"]
            con.execute("UPDATE run_checkpoints SET eval_score = ? WHERE id = ?", (score, checkpoint_id))
            best = con.execute(
                "SELECT id, eval_score FROM run_checkpoints WHERE run_id = ? AND best = 1", (run_id,)
            ).fetchone()
            beaten = best is None or best["id"] == checkpoint_id or best["eval_score"] is None
            if not beaten and score <= float(best["eval_score"]):
                return False
            con.execute(
                "UPDATE run_checkpoints SET best = (id = ?) WHERE run_id = ?", (checkpoint_id, run_id)
            )
            return True

    def prune_checkpoints(self, run_id: int, keep_last: int, protect: Sequence[int] = ()) -> list[Path]:
        """Delete a run's older checkpoint files and their rows; returns the paths deleted.

        Kept: the newest ``keep_last`` checkpoints (the newest is what a resume loads, so at least one
        is always kept), the ``best`` one, and the ids in ``protect`` (a file being evaluated). A file
        that cannot be deleted keeps its row (tried again next time); one already gone loses its row.
        """
        keep_last = max(1, int(keep_last))
        cps = self.run_checkpoints(run_id)
        protected = {int(i) for i in protect}
        doomed = [c for c in cps[:-keep_last] if not c.best and c.id not in protected]
        kept_paths = {c.path for c in cps if c not in doomed}
        deleted: list[Path] = []
        gone: list[int] = []
        for c in doomed:
            if c.path in kept_paths:  # saved again at the same counters (a pause, then a stop): row only
                gone.append(c.id)
                continue
            kept_paths.add(c.path)  # two doomed rows of one file: unlinked once
            if not self._owns_file(c.path):
                # The path is text from the file (a store copied in, edited by hand): only files in
                # the studio's own checkpoints folder are ever deleted; the store forgets the others.
                gone.append(c.id)
                continue
            try:
                c.path.unlink()
                deleted.append(c.path)
            except FileNotFoundError:
                pass
            except OSError:
                continue  # in use or read-only: keep the row, so the file is still accounted for
            gone.append(c.id)
        if gone:
            with self._tx(write=True) as con:
                con.executemany("DELETE FROM run_checkpoints WHERE id = ?", [(i,) for i in gone])
        return deleted

    def _owns_file(self, path: Path) -> bool:
        """Whether ``path`` lies in this store's checkpoints folder (links followed)."""
        try:
            return path.resolve().is_relative_to((self._path.parent / "checkpoints").resolve())
        except (OSError, RuntimeError):  # a loop of links
            return False

    def run_disk_use(self, run_id: int) -> int:
        """Bytes the run's checkpoint files take on disk (those that still exist)."""
        return self.runs_disk_use([run_id]).get(run_id, 0)

    def runs_disk_use(self, run_ids: Sequence[int] | None = None) -> dict[int, int]:
        """Bytes of checkpoint files per run (every run, or those of ``run_ids``), in one query: what a
        table of runs shows (``engine.store.model.format_size`` writes it as ``"168 MB"``)."""
        rows = self._rows_of("SELECT run_id, path FROM run_checkpoints", "run_id", run_ids)
        out = {} if run_ids is None else {int(i): 0 for i in run_ids}
        seen: set[Path] = set()
        base = self._path.parent
        for r in rows:
            path = base / r["path"]
            if path in seen:
                continue
            seen.add(path)
            try:
                size = path.stat().st_size
            except OSError:
                continue
            out[r["run_id"]] = out.get(r["run_id"], 0) + size
        return out

    def list_runs(
        self, agent: str | None = None, status: str | None = None, limit: int | None = None
    ) -> list[RunSummary]:
        """Runs, newest first."""
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("agent", agent), ("status", status)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        sql = f"SELECT {_RUN_COLUMNS} FROM runs" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(-1 if limit is None else int(limit))
        with self._tx(write=False) as con:
            return [_run_summary(r) for r in con.execute(sql, params).fetchall()]

    def get_run(self, run_id: int) -> RunSummary:
        return _run_summary(
            self._get(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", run_id, f"no run {run_id}")
        )

    def delete_run(self, run_id: int) -> None:
        """Delete a run's record, metrics and checkpoint entries (not the files; its games stay, unlinked)."""
        with self._tx(write=True) as con:
            if con.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount == 0:
                raise StoreError(f"no run {run_id}")


def _check_run(con: sqlite3.Connection, run_id: int) -> None:
    """StoreError ``no run 7`` unless the run exists."""
    one_row(con, "SELECT 1 FROM runs WHERE id = ?", run_id, f"no run {run_id}")


def _finite_or_none(d: Mapping[str, float]) -> dict[str, float | None]:
    # JSON has no NaN/inf; a non-finite last value is shown as missing
    return {k: (v if v is not None and math.isfinite(v) else None) for k, v in d.items()}


#: The runs columns a RunSummary takes as stored.
_RUN_AS_STORED = (
    "id", "agent", "status", "error", "created", "updated", "n_events", "episodes", "steps", "elapsed", "pid", "host"
)  # fmt: skip


def _run_summary(row: sqlite3.Row) -> RunSummary:
    last = {k: (math.nan if v is None else float(v)) for k, v in json.loads(row["last_metrics"]).items()}
    return RunSummary(
        **columns(row, _RUN_AS_STORED),
        config=json.loads(row["config"]),
        rules=Rules.from_dict(json.loads(row["rules"])),
        budget=json.loads(row["budget"]),
        seed=seed_value(row["seed"]),
        last_metrics=last,
    )


def _insert_block(
    con: sqlite3.Connection, run_id: int, first: int, level: int, block: Mapping[str, Any]
) -> None:
    """Store one metric block: events ``first`` .. ``first + n - 1`` of the run, at compaction ``level``."""
    con.execute(
        "INSERT INTO run_metric_blocks (run_id, first, level, n, kinds, kind, episode, step, elapsed, progress, "
        "names, vals) VALUES (:run_id, :first, :level, :n, :kinds, :kind, :episode, :step, :elapsed, :progress, "
        ":names, :vals)",
        {"run_id": run_id, "first": first, "level": level, **metrics.block_to_row(block)},
    )


def _history(
    con: sqlite3.Connection, run_id: int, since: int = 0
) -> tuple[list[sqlite3.Row], dict[str, Any]]:
    """A run's metric blocks (rows, in event order) and their events as one block (from event ``since``)."""
    _check_run(con, run_id)
    rows = con.execute(
        "SELECT id, first, level, n, kinds, kind, episode, step, elapsed, progress, names, vals "
        "FROM run_metric_blocks WHERE run_id = ? AND first + n > ? ORDER BY first",
        (run_id, since),
    ).fetchall()
    block = metrics.concat_blocks([metrics.block_from_row(r) for r in rows])
    skip = since - rows[0]["first"] if rows else 0
    return rows, metrics.tail_block(block, skip) if skip > 0 else block
