"""``python main.py eval``: threads of the in-process worker, play settings (``--set``), the jitted loop
(``--fast``, ``--fast-threads``) and the rest of what scripts/eval_checkpoint.py and eval_ntuple.py did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.arena import evaluate
from agents.base import Agent
from agents.checkpoint import read_checkpoint
from agents.spec import AgentSpec
from agents.threads import THREAD_ENV_VARS
from engine.store import GameStore
from studio.cli import main
from tests.agents.act_games import act_games


def test_one_worker_pins_this_process_to_its_share(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The games play in this process: torch, numba and the OpenMP/MKL variables get the worker's share,
    # as each process of a pool does (a share of 1 here, so that it differs from torch's default).
    import torch

    import studio.commands.eval as eval_command

    for var in THREAD_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(eval_command, "cpu_share", lambda workers: 1)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert main(["eval", "--agent", "dqn", "--games", "1", "--workers", "1", "--no-log", "--json"]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    (report,) = json.loads(capsys.readouterr().out)["results"][0]["worker_threads"]
    assert report["torch"] == 1 and report["numba"] in (None, 1)
    assert all(report[var] == "1" for var in THREAD_ENV_VARS)


@pytest.fixture(scope="module")
def ntuple_ck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny n-tuple network trained a little, saved with its default play settings (1-ply)."""
    from agents.base import Budget
    from agents.ntuple import NTupleAgent, NTupleConfig

    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=11)
    list(agent.train(Budget(steps=6000)))
    return agent.save(tmp_path_factory.mktemp("ck") / "tiny.npz")


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["eval", *argv, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_set_changes_a_checkpoints_play_settings(capsys: pytest.CaptureFixture[str], ntuple_ck: Path) -> None:
    # scripts/eval_checkpoint.py CK --set search_depth=2, now: eval --checkpoint CK --set search_depth=2
    out = _json(capsys, "--checkpoint", str(ntuple_ck), "--set", "search_depth=2", "--games", "3", "--no-log")
    (r,) = out["results"]
    assert r["label"] == "ntuple (tiny.npz) search_depth=2" and r["config"]["search_depth"] == 2
    want = evaluate(AgentSpec.from_checkpoint(ntuple_ck, play={"search_depth": 2}), games=3, seed=0)
    assert r["mean_score"] == want.mean_score and r["max_score"] == want.max_score
    one_ply = evaluate(AgentSpec.from_checkpoint(ntuple_ck), games=3, seed=0)
    assert one_ply.config["search_depth"] == 1  # what the file holds: --set changed it
    trained = read_checkpoint(ntuple_ck, arrays=False)[0]["counters"]
    assert r["trained"] == {
        "games": trained["episodes"],
        "moves": trained["steps"],
        "seconds": trained["seconds"],
    }


def test_set_reaches_every_contestant_that_has_the_setting(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(
        capsys, "--agent", "expectimax", "--agent", "greedy", "--set", "depth=1", "--games", "1", "--no-log"
    )
    labels = [r["label"] for r in out["results"]]
    assert labels == ["expectimax depth=1", "greedy"] and out["results"][0]["config"]["depth"] == 1


def test_fast_plays_the_games_act_plays_on_consecutive_seeds(
    capsys: pytest.CaptureFixture[str], ntuple_ck: Path, data_dir: Path
) -> None:
    # scripts/eval_ntuple.py CK --games 4 --depth 2, now: eval --checkpoint CK --fast --set search_depth=2
    argv = ["--checkpoint", str(ntuple_ck), "--fast", "--games", "4", "--seed", "1000000"]
    out = _json(capsys, *argv, "--set", "search_depth=2")
    assert out["fast"] is True
    (r,) = out["results"]
    agent = Agent.load(ntuple_ck)
    agent.config = agent.config.replace(search_depth=2)
    scores, tiles = act_games(agent, 4, 1_000_000)
    assert r["mean_score"] == sum(scores) / 4 and r["max_score"] == max(scores)
    assert r["max_tile_at_least"]["256"] == sum(t >= 256 for t in tiles) / 4
    assert r["moves_per_game"] > 0 and r["cpu_seconds"] > 0 and r["threads"] == 1
    assert r["game_ids"] == [] and r["config"]["search_depth"] == 2
    # two threads share the same games: the same figures
    two = _json(capsys, *argv, "--set", "search_depth=2", "--fast-threads", "2")["results"][0]
    assert two["mean_score"] == r["mean_score"] and two["threads"] == 2
    # the table, and nothing recorded
    assert main(["eval", *argv]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split() == ["ntuple", "(tiny.npz)"] and "mean score" in text
    with GameStore.open(data_dir) as store:
        assert store.list_games(source="evaluation") == []


def test_fast_expectimax_is_act_on_consecutive_seeds(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(capsys, "--agent", "expectimax", "--depth", "1", "--fast", "--games", "2", "--seed", "5")[
        "results"
    ][0]
    scores, _ = act_games(AgentSpec("expectimax", {"depth": 1}).build(), 2, 5)
    assert r["mean_score"] == sum(scores) / 2


def test_a_checkpoint_folder_is_each_checkpoint_oldest_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from agents.base import Budget
    from agents.ntuple import NTupleAgent, NTupleConfig

    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=3)
    for name in ("b.npz", "a.npz"):  # a.npz is the later one: the order comes from the files' counters
        list(agent.train(Budget(steps=2000)))
        agent.save(tmp_path / name)
    out = _json(capsys, "--checkpoint", str(tmp_path), "--games", "2", "--no-log")
    assert [r["label"] for r in out["results"]] == ["ntuple (b.npz)", "ntuple (a.npz)"]
    assert [r["trained"]["moves"] for r in out["results"]] == [2000, 4000]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agent", "greedy", "--set", "depth"], "--set expects KNOB=VALUE, got 'depth'"),
        (["--agent", "greedy", "--set", "nope=1"], "--set: no contestant has a setting 'nope'"),
        (["--agent", "expectimax", "--set", "depth=x"], "--set: depth: cannot read 'x'"),
        (["--agent", "dqn", "--fast"], "dqn has no jitted game loop"),
        (
            ["--agent", "expectimax", "--fast", "--fast-threads", "2"],
            "expectimax's jitted loop plays on one thread",
        ),
        (["--agent", "expectimax", "--fast", "--workers", "2"], "--fast plays in this process"),
        (["--agent", "expectimax", "--fast-threads", "2"], "--fast-threads goes with --fast"),
        (["--checkpoint", "{empty}"], "holds no checkpoint"),
    ],
)
def test_bad_eval_flags_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    argv = [a.format(empty=tmp_path / "empty") for a in argv]
    assert main(["eval", *argv, "--games", "1", "--no-log"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
