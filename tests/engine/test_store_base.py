"""What the store's runs and sweeps share (engine/store/base.py): status writes, claims, one-row reads."""

from __future__ import annotations

import os
import re
import sqlite3

import pytest

from engine import Rules
from engine.store import GameStore, StoreError


def _run(store: GameStore) -> int:
    return store.create_run("dqn", {}, Rules(), {"episodes": 10})


def _sweep(store: GameStore) -> int:
    return store.create_sweep("dqn", {"grid": {"lr": [0.1, 0.2]}}, [({"lr": 0.1}, 1), ({"lr": 0.2}, 2)])


def _driver_of(store: GameStore, table: str, row_id: int) -> tuple[str, int | None, str | None]:
    con = sqlite3.connect(store.path)
    try:
        return con.execute(f"SELECT status, pid, host FROM {table} WHERE id = ?", (row_id,)).fetchone()
    finally:
        con.close()


def _hand_to(store: GameStore, table: str, row_id: int, status: str, pid: int, host: str) -> None:
    """Make another process (``pid`` on ``host``) the row's driver, as that process's store would."""
    con = sqlite3.connect(store.path)
    try:
        with con:
            con.execute(
                f"UPDATE {table} SET status = ?, pid = ?, host = ? WHERE id = ?", (status, pid, host, row_id)
            )
    finally:
        con.close()


def test_a_run_and_a_sweep_record_their_driver_only_for_the_statuses_that_drive(store):
    rid, sid = _run(store), _sweep(store)
    here = _driver_of(store, "runs", rid)[2]  # create_run recorded this machine
    _hand_to(store, "runs", rid, "stopped", 1, "elsewhere")
    _hand_to(store, "sweeps", sid, "stopped", 1, "elsewhere")
    store.set_run_status(rid, "finished", "done")  # not a driving status: the recorded driver stays
    store.set_sweep_status(sid, "finished")
    assert _driver_of(store, "runs", rid) == ("finished", 1, "elsewhere")
    assert _driver_of(store, "sweeps", sid) == ("finished", 1, "elsewhere")
    assert store.get_run(rid).error == "done"
    store.set_run_status(rid, "paused")  # paused drives a run; only running drives a sweep
    store.set_sweep_status(sid, "running")
    assert _driver_of(store, "runs", rid) == ("paused", os.getpid(), here)
    assert _driver_of(store, "sweeps", sid) == ("running", os.getpid(), here)
    assert store.get_run(rid).error is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.set_run_status(99, "stopped"), "no run 99"),
        (lambda s: s.set_sweep_status(99, "stopped"), "no sweep 99"),
        (lambda s: s.claim_run(99), "no run 99"),
        (lambda s: s.claim_sweep(99), "no sweep 99"),
        (lambda s: s.get_run(99), "no run 99"),
        (lambda s: s.get_sweep(99), "no sweep 99"),
        (lambda s: s.get_game(99), "no game 99"),
        (lambda s: s.set_checkpoint_eval(99, 1.0), "no checkpoint 99"),
        (lambda s: s.set_run_status(1, "done"), "run status must be one of running, "),
        (
            lambda s: s.set_sweep_status(1, "paused"),
            "sweep status must be one of running, stopped, finished, failed, got 'paused'",
        ),
    ],
)
def test_a_missing_row_or_an_unknown_status_is_a_one_line_store_error(store, call, message):
    with pytest.raises(StoreError, match=re.escape(message)):
        call(store)


@pytest.mark.parametrize(("table", "busy"), [("runs", "paused"), ("sweeps", "running")])
def test_a_claim_refuses_a_live_driver_elsewhere_and_takes_over_a_gone_or_idle_one(store, table, busy):
    row_id = _run(store) if table == "runs" else _sweep(store)
    claim = store.claim_run if table == "runs" else store.claim_sweep
    what = table[:-1]
    _hand_to(store, table, row_id, busy, 4242, "elsewhere")  # another machine: cannot tell it is gone
    with pytest.raises(StoreError) as refused:
        claim(row_id)
    assert (
        str(refused.value) == f"{what} {row_id} is {busy} in process 4242 on elsewhere: stop it there first"
    )
    assert _driver_of(store, table, row_id) == (busy, 4242, "elsewhere")  # refused: nothing written
    _hand_to(store, table, row_id, "stopped", 4242, "elsewhere")  # stopped: nobody drives it
    claim(row_id)
    status, pid, _ = _driver_of(store, table, row_id)
    assert (status, pid) == ("running", os.getpid())
