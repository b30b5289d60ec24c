"""Worker processes run their math libraries on their share of the cores (issue #35): the helper by
hand, and the real worker pools (evaluation, MCTS self-play, the periodic evaluator) reporting it."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.arena import evaluate
from agents.registry import register
from agents.spec import AgentSpec
from agents.threads import (
    PLAY_TORCH_THREADS,
    THREAD_ENV_VARS,
    cpu_count,
    cpu_share,
    report_matches,
    thread_env,
)
from tests.agents import thread_fakes


def test_cpu_share_splits_the_cores_evenly_at_least_one_each() -> None:
    assert [cpu_share(w, cpus=2) for w in (1, 2, 3, 8)] == [2, 1, 1, 1]
    assert [cpu_share(w, cpus=16) for w in (1, 2, 3, 4, 5, 16, 17)] == [16, 8, 5, 4, 3, 1, 1]
    assert cpu_share(0, cpus=4) == 4  # no workers named: the whole machine
    assert cpu_share(2) == max(1, cpu_count() // 2)


def test_thread_env_names_every_library_pool() -> None:
    assert thread_env(3) == {
        "OMP_NUM_THREADS": "3",
        "MKL_NUM_THREADS": "3",
        "OPENBLAS_NUM_THREADS": "3",
        "NUMEXPR_NUM_THREADS": "3",
        "VECLIB_MAXIMUM_THREADS": "3",
    }
    with pytest.raises(ValueError, match="at least 1"):
        thread_env(0)


def test_report_matches_checks_every_known_count() -> None:
    good: dict[str, Any] = {"pid": 1, "torch": 2, "interop": 2, "numba": None, **thread_env(2)}
    assert report_matches(good, 2) and not report_matches(good, 1)
    assert not report_matches({**good, "interop": 4}, 2)
    assert not report_matches({**good, "MKL_NUM_THREADS": None}, 2)
    # a process that only plays: numba at its share, torch and the environment at one thread
    play: dict[str, Any] = {"pid": 1, "torch": 1, "interop": 1, "numba": 8, **thread_env(1)}
    assert report_matches(play, 8, 1) and not report_matches(play, 8) and not report_matches(play, 1)
    assert not report_matches({**play, "torch": 8}, 8, 1)


_CHILD = """
import json, sys
order = sys.argv[1]
if order == "torch-first":
    import numba, torch
from agents.threads import limit_threads, threads_report
before = threads_report()
limit_threads(1)
if order == "torch-later":
    import numba, torch
    limit_threads(1)  # the second call, once the agent's imports loaded them
print(json.dumps({"before": before, "after": threads_report(), "omp": torch.__config__.parallel_info()}))
"""


@pytest.mark.parametrize("order", ["torch-first", "torch-later"])
def test_limit_threads_sets_torch_interop_numba_and_the_environment(order: str) -> None:
    # A fresh interpreter: torch allows one inter-op setting per process, and the machine's defaults
    # must be what the child starts from (no thread variables inherited from this process).
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV_VARS and k != "NUMBA_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, order], capture_output=True, text=True, env=env, check=True
    ).stdout
    got = json.loads(out)
    assert report_matches(got["after"], 1)
    assert got["after"]["torch"] == 1 and got["after"]["interop"] == 1 and got["after"]["numba"] == 1
    assert "omp_get_max_threads() : 1" in got["omp"] and "mkl_get_max_threads() : 1" in got["omp"]
    if order == "torch-first":  # torch's own defaults before: one thread per core
        assert got["before"]["torch"] == cpu_count() and got["before"]["OMP_NUM_THREADS"] is None
    else:
        assert got["before"]["torch"] is None  # never imported by the helper itself


_PLAY_CHILD = """
import json, numba, torch
from agents.threads import limit_threads
print(json.dumps(limit_threads(2, 1)))
"""


@pytest.mark.skipif(cpu_count() < 2, reason="numba cannot run two threads on one core")
def test_a_play_process_runs_numba_at_its_share_and_torch_on_one_thread() -> None:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV_VARS and k != "NUMBA_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", _PLAY_CHILD], capture_output=True, text=True, env=env, check=True
    ).stdout
    got = json.loads(out)
    assert (got["numba"], got["torch"], got["interop"], got["OMP_NUM_THREADS"]) == (2, 1, 1, "1")
    assert report_matches(got, 2, 1)


@pytest.fixture
def torch_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AgentSpec:
    """The stand-in torch agent, its workers meeting in ``tmp_path`` before the first game."""
    register(thread_fakes.TorchRandomAgent.name, thread_fakes.TARGET)
    folder = tmp_path / "rendezvous"
    folder.mkdir()
    monkeypatch.setenv(thread_fakes.RENDEZVOUS, str(folder))
    monkeypatch.setenv(thread_fakes.WORKERS, "2")
    return AgentSpec(thread_fakes.TorchRandomAgent.name, target=thread_fakes.TARGET)


def test_each_evaluation_worker_reports_its_share_of_the_cores(torch_fake: AgentSpec) -> None:
    one = evaluate(torch_fake, games=4, seed=3, workers=1)
    assert one.worker_threads == ()  # played here: this process runs with what its caller set
    result = evaluate(torch_fake, games=4, seed=3, workers=2)
    share = cpu_share(2)  # 1 on the 2-core machine
    reports = result.worker_threads
    assert len(reports) == 2 and len({r["pid"] for r in reports}) == 2
    assert os.getpid() not in {r["pid"] for r in reports}
    for r in reports:
        assert r["torch"] == PLAY_TORCH_THREADS == r["interop"] and r["numba"] == share, r
        assert report_matches(r, share, PLAY_TORCH_THREADS), r
    assert result.to_dict()["worker_threads"] == [dict(r) for r in reports]
    # The shares changed nothing the games depend on.
    assert result.scores.tolist() == one.scores.tolist()


def test_each_selfplay_worker_process_reports_its_share_of_the_cores() -> None:
    from agents.mcts import MCTSAgent, MCTSConfig
    from agents.mcts.selfplay import LocalPool

    agent = MCTSAgent(MCTSConfig.from_dict({"filters": 8, "simulations": 4}), seed=0)
    pool = LocalPool(agent._worker_spec(), 2)
    try:
        reports = pool.threads_reports()
    finally:
        pool.close()
    share = cpu_share(2)
    assert len({r["pid"] for r in reports}) == 2
    for r in reports:
        assert r["torch"] == PLAY_TORCH_THREADS == r["interop"] and r["numba"] == share, r
        assert report_matches(r, share, PLAY_TORCH_THREADS), r


def test_the_periodic_evaluator_plays_on_one_core(tmp_path: Path) -> None:
    from agents.dqn import DQNAgent
    from agents.runner import EVALUATOR_THREADS, _evaluator_main

    path = DQNAgent(seed=0).save(tmp_path / "dqn.npz")
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_evaluator_main, args=(send, str(path), 1, 0, "dqn", None), daemon=True)
    proc.start()
    send.close()
    try:
        assert recv.poll(180), "the evaluator did not answer"
        out = recv.recv()
    finally:
        proc.join(10)
    assert "error" not in out, out
    threads = out["threads"]
    assert threads["pid"] == proc.pid and threads["torch"] == EVALUATOR_THREADS == 1
    assert report_matches(threads, EVALUATOR_THREADS), threads
    assert len(out["scores"]) == 1


def test_limit_threads_costs_no_imports() -> None:
    # A worker that plays without torch (random, greedy, n-tuple) must not pay torch's import.
    code = "import sys; from agents.threads import limit_threads; limit_threads(1); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
