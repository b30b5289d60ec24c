"""scripts/equal_cpu_train.py: two real trainers get the same CPU-seconds, and each saves its checkpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.scripts import load_script

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads CPU time from /proc")


def test_tree_cpu_seconds_counts_a_busy_child_and_its_waited_children() -> None:
    script = load_script("equal_cpu_train")
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass\ntime.sleep(30)"
    # a shell whose child burns one CPU-second, then sleeps (still alive: counted as a live descendant)
    proc = subprocess.Popen(["sh", "-c", f"{sys.executable} -c '{busy}'"])
    try:
        deadline = time.monotonic() + 60
        used = 0.0
        while time.monotonic() < deadline and used < 1.0:
            time.sleep(0.2)
            used = script.tree_cpu_seconds(proc.pid)
        assert 1.0 <= used < 10.0
    finally:
        script.signal_tree(proc.pid, 9)
        proc.wait()


def test_two_trainers_get_the_same_cpu_seconds_and_save_their_checkpoints(tmp_path, capsys) -> None:
    script = load_script("equal_cpu_train")
    work = tmp_path / "work"
    assert (
        script.main(["ntuple", "td-afterstate", "--cpu-seconds", "8", "--work", str(work), "--lead", "2"])
        == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["agents"]
    assert set(result) == {"ntuple", "td-afterstate"}
    for name, r in result.items():
        assert r["exit"] == 0, (work / f"{name}.log").read_text()[-2000:]
        assert 8.0 <= r["cpu_seconds"] < 8.0 + 4.0  # stopped within a poll of the budget
        assert r["checkpoints"] and all(p.endswith(".npz") for p in r["checkpoints"])
    assert abs(result["ntuple"]["cpu_seconds"] - result["td-afterstate"]["cpu_seconds"]) < 4.0


def test_an_agent_named_twice_is_refused(tmp_path) -> None:
    with pytest.raises(SystemExit):
        load_script("equal_cpu_train").main(["dqn", "dqn", "--cpu-seconds", "1", "--work", str(tmp_path)])
