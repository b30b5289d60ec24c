"""What :class:`~engine.store.db.GameStore` and its runs / reviews / sweeps mixins share.

Its own module (like :mod:`engine.store.process`) because ``db`` imports the mixins: the mixins
importing anything back from ``db`` would make a circle.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal

from engine.store.model import StoreError
from engine.store.process import owner_gone

#: The tables whose rows have a driving process (status, error, updated, pid, host columns).
Table = Literal["runs", "sweeps"]


def one_row(con: sqlite3.Connection, sql: str, key: int, missing: str) -> sqlite3.Row:
    """The row ``sql`` selects for its one parameter ``key`` (an id), or StoreError ``missing``
    (``"no run 7"``) when there is none."""
    row: sqlite3.Row | None = con.execute(sql, (key,)).fetchone()
    if row is None:
        raise StoreError(missing)
    return row


def columns(row: sqlite3.Row, names: Sequence[str]) -> dict[str, Any]:
    """The columns ``names`` of ``row`` as they are stored, by name: the fields of a summary that need
    no decoding (a summary's constructor takes them as keywords)."""
    return {name: row[name] for name in names}


def check_status(status: str, allowed: tuple[str, ...], what: str) -> None:
    """StoreError unless ``status`` is one of ``allowed`` (``what``: ``run`` / ``sweep``)."""
    if status not in allowed:
        raise StoreError(f"{what} status must be one of {', '.join(allowed)}, got {status!r}")


class StoreBase:
    """The part of :class:`~engine.store.db.GameStore` its mixins build on: the file, this machine's
    name, transactions, and the reads and writes every table does the same way."""

    _path: Path
    _host: str

    def _tx(self, write: bool) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # provided by GameStore

    def _get(self, sql: str, key: int, missing: str) -> sqlite3.Row:
        """:func:`one_row` in a read transaction of its own."""
        with self._tx(write=False) as con:
            return one_row(con, sql, key, missing)

    def _rows_of(
        self, select: str, column: str, ids: Sequence[int] | None, *conditions: str
    ) -> list[sqlite3.Row]:
        """The rows of ``select`` (a SELECT without WHERE) that meet ``conditions`` (SQL tests, all of
        them) and, unless ``ids`` is None, whose ``column`` is one of ``ids``: none for an empty list."""
        tests = list(conditions)
        params: list[int] = []
        if ids is not None:
            params = [int(i) for i in ids]
            if not params:
                return []
            tests.append(f"{column} IN ({', '.join('?' * len(params))})")
        sql = select + (" WHERE " + " AND ".join(tests) if tests else "")
        with self._tx(write=False) as con:
            rows: list[sqlite3.Row] = con.execute(sql, params).fetchall()
        return rows

    def _set_status(self, table: Table, row_id: int, status: str, error: str | None, *, drive: bool) -> None:
        """Set a run's or sweep's status and error text; ``drive``: also record this process (and this
        machine) as the one driving it, so that a later store can tell when the driver is gone."""
        with self._tx(write=True) as con:
            if self._write_status(con, table, row_id, status, error, drive=drive) == 0:
                raise StoreError(f"no {table[:-1]} {row_id}")

    def _write_status(
        self,
        con: sqlite3.Connection,
        table: Table,
        row_id: int,
        status: str,
        error: str | None,
        *,
        drive: bool,
    ) -> int:
        """:meth:`_set_status` inside the caller's transaction; how many rows changed (0: no such row)."""
        if drive:
            sql = f"UPDATE {table} SET status = ?, error = ?, updated = ?, pid = ?, host = ? WHERE id = ?"
            return con.execute(sql, (status, error, time.time(), os.getpid(), self._host, row_id)).rowcount
        sql = f"UPDATE {table} SET status = ?, error = ?, updated = ? WHERE id = ?"
        return con.execute(sql, (status, error, time.time(), row_id)).rowcount

    def _driver(self, con: sqlite3.Connection, table: Table, row_id: int) -> tuple[sqlite3.Row, bool]:
        """A run's or sweep's status / pid / host row, and whether its driver is certainly gone."""
        sql = f"SELECT status, pid, host FROM {table} WHERE id = ?"
        row = one_row(con, sql, row_id, f"no {table[:-1]} {row_id}")
        return row, owner_gone(row["pid"], row["host"], self._host)

    def _claim(self, table: Table, row_id: int, busy: tuple[str, ...]) -> None:
        """Make this process the one driver of a run or sweep (status running), in one write transaction,
        so two processes resuming it cannot both proceed. StoreError naming the driver when another live
        process holds it in a ``busy`` status; a driver on this machine whose process is gone is taken over."""
        with self._tx(write=True) as con:
            row, gone = self._driver(con, table, row_id)
            pid, host = row["pid"], row["host"]
            if row["status"] in busy and pid != os.getpid() and not gone:
                raise StoreError(
                    f"{table[:-1]} {row_id} is {row['status']} in process {pid} on {host}: stop it there first"
                )
            self._write_status(con, table, row_id, "running", None, drive=True)
