"""``python main.py bench eval``: games/s with 1 and 2 worker processes per agent, and their ratio."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from agents.threads import PLAY_TORCH_THREADS, cpu_share, report_matches
from studio.cli import main


@pytest.fixture(autouse=True)
def threads_restored() -> Iterator[None]:
    """The bench limits this process to one thread per library: give the next tests theirs back."""
    import torch

    env, intra = dict(os.environ), torch.get_num_threads()
    yield
    os.environ.clear()
    os.environ.update(env)
    torch.set_num_threads(intra)


def test_bench_eval_json_per_agent_one_and_two_workers(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "bench",
        "eval",
        "--json",
        "--rounds",
        "1",
        "--seconds",
        "0.1",
        "-o",
        "games=4",
        "-o",
        "agents=random,policy",
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "bench eval" in err  # progress on stderr, the JSON alone on stdout
    report = json.loads(out)
    assert report["benchmark"] == "eval" and report["unit"] == "games_per_s"
    results = report["results"]
    assert list(results) == ["random_1", "random_2", "policy_1", "policy_2"]
    for name in ("random", "policy"):
        one, two = results[f"{name}_1"], results[f"{name}_2"]
        assert one["games_per_s"] > 0 and two["games_per_s"] > 0 and one["ratio"] is None
        assert two["ratio"] == pytest.approx(two["games_per_s"] / one["games_per_s"], rel=0.01)
        assert two["one_worker_games_per_s"] == one["games_per_s"]
        assert two["same_games"] is True  # the same seeds, the same network: the same scores
        assert two["startup_s"] > 0 and two["cores_used"] > 0 and two["games"] >= 4
        assert len(two["worker_threads"]) >= 1
        assert all(report_matches(t, cpu_share(2), PLAY_TORCH_THREADS) for t in two["worker_threads"])
    # the policy network is torch's: its workers play on one torch thread
    assert all(t["torch"] == PLAY_TORCH_THREADS for t in results["policy_2"]["worker_threads"])
    info = report["info"]
    assert info["workers"] == 2 and info["min_games"] == 4 and info["threads"]["torch"] == 1
    assert info["machine"]["cpus"] >= 1 and info["machine"]["cpu"]


def test_bench_eval_text_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["bench", "eval", "--rounds", "1", "--seconds", "0.1", "-o", "games=2", "-o", "agents=greedy"])
        == 0
    )
    out = capsys.readouterr().out
    assert "1 worker" in out and "2 workers" in out and "lowest ratio" in out and "goal: 1.7x" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("greedy"))
    assert row.rstrip().endswith("yes") and "x" in row


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("agents=nope", "unknown agent 'nope'"),
        ("workers=1", "workers must be from 2"),
        ("games=0", "games must be from 1"),
        ("speed=9", "no option 'speed'"),
    ],
)
def test_bench_eval_bad_options_are_one_line_errors(
    option: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "eval", "-o", option]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
