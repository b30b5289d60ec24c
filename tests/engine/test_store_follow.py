"""Following a run from another process: metrics read from event N on equal the tail of the whole history
(the slow twin), across compacted blocks; a run's owner process is known."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from agents.base import MetricEvent
from engine import Rules
from engine.store import GameStore


def _events(start: int, n: int) -> list[MetricEvent]:
    out = []
    for i in range(start, start + n):
        metrics = {"score": float(i * 3)} if i % 2 else {"loss": 1.0 / (i + 1)}
        out.append(MetricEvent("episode" if i % 2 else "update", i, 10 * i, 0.1 * i, metrics))
    return out


def test_metrics_since_n_equal_the_tail_of_the_whole_history(data_dir: Path) -> None:
    with GameStore.open(data_dir) as store:
        run = store.create_run("dqn", {}, Rules(), {"episodes": 9})
        written = 0
        for size in (7, 1, 30, 5, 200, 3, 17, 40):  # many blocks: compaction merges some of them
            store.log_metrics(run, _events(written, size))
            written += size
        whole = store.run_metrics(run)
        assert len(whole["episode"]) == written
        for since in (0, 1, 6, 7, 38, 100, 242, written - 1, written, written + 5):
            tail = store.run_metrics(run, since=since)
            # Nothing new: no events and no metric columns (the names come with the events).
            assert set(tail) == set(whole) if since < written else not len(tail["episode"])
            for name, column in tail.items():
                np.testing.assert_array_equal(column, whole[name][since:], err_msg=f"{name} since {since}")
        assert store.run_metrics(run, kinds=["episode"], since=100)["episode"].tolist() == list(
            range(101, written, 2)
        )
        summary = store.get_run(run)
        assert summary.pid == os.getpid() and summary.host


def test_a_second_store_in_one_process_keeps_the_first_ones_lock(data_dir: Path) -> None:
    """Opening (and closing) a second store on the same file in this process must not drop the first
    connection's SQLite lock: another process would then delete the WAL under it at its exit
    (seen as "database disk image is malformed")."""
    import sqlite3
    import subprocess
    import sys

    path = data_dir / "studio.sqlite3"
    first = GameStore(path)
    first.create_run("dqn", {}, Rules(), {"episodes": 1})
    GameStore(path).close()
    child = (
        f"from engine.store import GameStore; from engine import Rules; s = GameStore({str(path)!r}); "
        "[s.create_run('x', {}, Rules(), {'episodes': 1}) for _ in range(20)]; s.close()"
    )
    subprocess.run([sys.executable, "-c", child], check=True, cwd=Path(__file__).resolve().parents[2])
    assert (data_dir / "studio.sqlite3-wal").exists()  # the child saw this process's lock: the WAL stays
    for _ in range(5):
        first.create_run("dqn", {}, Rules(), {"episodes": 1})
    assert len(first.list_runs(limit=None)) == 26
    first.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
