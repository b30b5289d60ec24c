"""n-tuple training on several threads starts numba's OpenMP pool with the passive wait policy (issue
49): GNU OpenMP's default lets an idle worker spin, CPU time that makes no moves and that a CPU-seconds
budget pays for. A fresh process each: the pool starts once per process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import os
from numba.np.ufunc import parallel

seen = []
original = parallel._launch_threads


def spy():
    seen.append(os.environ.get("OMP_WAIT_POLICY"))
    original()


parallel._launch_threads = spy
from agents.base import Budget
from agents.ntuple import NTupleAgent, NTupleConfig

agent = NTupleAgent(NTupleConfig(layout="4x4", threads=2), seed=1)
list(agent.train(Budget(episodes=4)))
print(seen[0], os.environ.get("OMP_WAIT_POLICY"), parallel._is_initialized, agent.counters.episodes)
"""


def _run(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_two_workers_start_the_pool_passive_and_leave_the_environment_as_it_was() -> None:
    # passive while the pool started; the variable gone again for OpenMP libraries loaded later
    assert _run() == ["PASSIVE", "None", "True", "4"]


def test_a_policy_the_user_chose_is_kept() -> None:
    assert _run(OMP_WAIT_POLICY="ACTIVE") == ["ACTIVE", "ACTIVE", "True", "4"]
