"""``bench ntuple -o scaling=N`` (issue 49): a 1-thread and an N-thread network learn in alternation in
one run; each round's moves per wall-second, their ratio, and the median ratio against the goal."""

from __future__ import annotations

import json
import statistics

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
