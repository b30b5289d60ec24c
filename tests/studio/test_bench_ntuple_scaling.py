"""``bench ntuple -o scaling=N`` (issue 49): a 1-thread and an N-thread network learn in alternation in
one run; each round's moves per wall-second, their ratio, and the median ratio against the goal."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from studio.cli import main

ARGS = ["bench", "ntuple", "--seconds", "0.3", "--rounds", "2", "-o", "layout=4x4", "-o", "scaling=2"]


def test_scaling_measures_both_thread_counts_each_round(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    results = report["results"]
    assert report["unit"] == "moves_per_wall_s" and report["info"]["threads"] == [1, 2]
    ratios = []
    for k in (1, 2):
        one, two = results[f"round_{k}_1_threads"], results[f"round_{k}_2_threads"]
        assert one["moves"] > 0 and two["moves"] > 0 and one["cores"] > 0
        assert one["ratio"] is None
        assert two["ratio"] == pytest.approx(two["moves_per_wall_s"] / one["moves_per_wall_s"])
        ratios.append(two["ratio"])
    scaling = results["scaling"]
    assert scaling["ratios"] == pytest.approx(ratios)
    assert scaling["ratio"] == pytest.approx(statistics.median(ratios))
    assert scaling["goal"] == 1.8 and scaling["cpu_ratio"] > 0
    assert set(report["info"]["load_average"]) == {"before", "after"}


def test_scaling_text_names_the_median_and_the_goal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS[:5], "1", *ARGS[6:]]) == 0  # one round
    out = capsys.readouterr().out
    assert "bench ntuple (moves_per_wall_s" in out
    assert "round 1, 1 thread (" in out and "round 1, 2 threads (" in out
    assert "2 threads / 1 thread, median of 1 rounds: " in out and "goal >= 1.8x on 2 cores" in out
    assert "per CPU-second " in out


def test_scaling_refuses_threads_beside_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "-o", "threads=2"]) == 2
    assert "scaling compares N threads with 1 itself" in capsys.readouterr().err
    assert main([*ARGS[:-1], "scaling=1"]) == 2
    assert "scaling must be" in capsys.readouterr().err


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    from agents.base import Budget
    from agents.ntuple import NTupleAgent, NTupleConfig

    path = tmp_path_factory.mktemp("ck") / "small.npz"
    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=3)
    list(agent.train(Budget(steps=2000)))
    agent.save(path)
    return str(path)


def test_scaling_from_a_checkpoint_runs_both_sides_on_its_network(
    small_checkpoint: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both sides start from the checkpoint's network (its 4x4 layout, not the fresh default 4x6), each
    its own copy, the N-thread side with N workers whatever the checkpoint was trained with."""
    import studio.commands.bench_ntuple as bench

    learnt: list[tuple[int, int]] = []  # (id of the agent, its self-play workers) for each measurement
    real = bench._learn_for

    def counting(agent: Any, seconds: float) -> dict[str, float]:
        result = real(agent, seconds)
        learnt.append((id(agent), agent._game_u.shape[0]))
        return result

    monkeypatch.setattr(bench, "_learn_for", counting)
    args = ["bench", "ntuple", "--seconds", "0.3", "--rounds", "1", "-o", f"checkpoint={small_checkpoint}"]
    assert main([*args, "-o", "scaling=2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["info"]["layout"] == "4x4" and report["info"]["checkpoint"] == small_checkpoint
    results = report["results"]
    assert results["round_1_1_threads"]["moves"] > 0 and results["round_1_2_threads"]["moves"] > 0
    # warm-ups and the round: two agents, one with one worker and one with two
    assert sorted({workers for _, workers in learnt}) == [1, 2] and len({a for a, _ in learnt}) == 2


def test_a_checkpoint_refuses_a_layout_or_tc_beside_it(
    small_checkpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["bench", "ntuple", "--seconds", "0.3", "-o", f"checkpoint={small_checkpoint}"]
    for extra in ("layout=4x6", "tc=0"):
        assert main([*base, "-o", extra]) == 2
        assert "a checkpoint keeps its own tuples and TC" in capsys.readouterr().err
