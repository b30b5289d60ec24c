"""``python main.py train`` and ``python main.py eval`` through studio.cli.main, with expected output."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

from agents.arena import evaluate
from agents.checkpoint import load_checkpoint
from agents.spec import AgentSpec
from engine.store import GameStore
from studio.cli import main
from tests.agents.fake_learner import registered


def cli(command: str) -> int:
    """``python main.py COMMAND`` in this process (words split on spaces)."""
    return main(command.split())


def test_eval_side_by_side_table(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    assert cli("eval --agent random --agent greedy --games 4 --seed 3") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["random", "greedy"]
    rows = {ln[:16].strip(): re.split(r"\s{2,}", ln[16:].strip()) for ln in lines[1:]}
    greedy = evaluate(AgentSpec("greedy"), games=4, seed=3)
    assert rows["games"] == ["4", "4"]
    # the mean with its 95 % interval, as the Arena tab shows it (one function: EvalResult.mean_text)
    assert rows["mean score"][1] == greedy.mean_text
    half = 1.96 * float(greedy.scores.std(ddof=1)) / 2  # sqrt(4) games
    assert greedy.mean_text == f"{greedy.mean_score:,.0f} ± {half:,.0f}"
    assert rows["median score"][1] == f"{greedy.median_score:,.0f}"
    assert rows["max tile >= 32"] == ["100%", "100%"]
    # "reached at least": every row up to the largest tile reached, falling from top to bottom
    top = int(greedy.max_tiles.max())
    assert rows[f"max tile >= {top}"][1] == f"{100 * float(np.mean(greedy.max_tiles >= top)):.0f}%"
    assert f"max tile >= {top * 2}" not in rows
    with GameStore.open(data_dir) as store:
        assert len(store.list_games(source="evaluation")) == 8


def test_ctrl_c_during_eval_keeps_and_sums_up_the_finished_games(
    capsys: pytest.CaptureFixture[str], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import studio.commands.eval as eval_command

    real = eval_command._progress

    def progress_then_ctrl_c(line):  # the user presses Ctrl-C as the third game ends
        inner = real(line)

        def progress(done, total, game):
            inner(done, total, game)
            if done == 3:
                os.kill(os.getpid(), signal.SIGINT)

        return progress

    monkeypatch.setattr(eval_command, "_progress", progress_then_ctrl_c)
    assert cli("eval --agent greedy --agent random --games 50 --seed 3") == 0
    captured = capsys.readouterr()
    assert "stopping: the games in flight are given up" in captured.err
    assert "stopped by Ctrl-C: games finished of 50 each: greedy 3" in captured.err
    assert "3 games recorded (source evaluation)" in captured.err
    lines = captured.out.splitlines()
    assert lines[0].split() == ["greedy"]  # the second contestant never started
    rows = {ln[:16].strip(): re.split(r"\s{2,}", ln[16:].strip()) for ln in lines[1:]}
    assert rows["games"] == ["3"]
    # the three finished games are the first three of a full evaluation on the same seed
    assert rows["mean score"] == [evaluate(AgentSpec("greedy"), games=3, seed=3).mean_text]
    with GameStore.open(data_dir) as store:
        assert len(store.list_games(source="evaluation")) == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


def test_eval_json_is_one_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("eval --agent greedy --games 3 --seed 3 --workers 1 --json --no-log") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["games"] == 3 and len(data["results"]) == 1
    r = data["results"][0]
    expected = evaluate(AgentSpec("greedy"), games=3, seed=3)
    assert r["mean_score"] == expected.mean_score and r["game_ids"] == []
    assert r["mean_score_ci95"] == pytest.approx(1.96 * float(expected.scores.std(ddof=1)) / 3**0.5)
    assert r["median_score"] == expected.median_score and r["score_std"] == pytest.approx(expected.score_std)
    assert r["planned_games"] == 3 and r["cancelled"] is False
    assert set(r["max_tile_at_least"]) == {str(2**k) for k in range(5, 17)}


def test_eval_config_flags_and_presets(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("eval --agent expectimax --depth 1 --preset expectimax-seed004 --games 1 --no-log --json") == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r["label"] for r in results] == ["expectimax (expectimax-seed004) depth=1"]
    assert results[0]["config"]["heuristic"] == "seed004" and results[0]["config"]["depth"] == 1


def test_eval_checkpoint_stands_for_its_agent(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from agents.baselines import GreedyAgent

    path = GreedyAgent().save(tmp_path / "greedy.npz")
    assert (
        main(
            [
                "eval",
                "--agent",
                "greedy",
                "--agent",
                "random",
                "--checkpoint",
                str(path),
                "--games",
                "2",
                "--no-log",
                "--json",
            ]
        )
        == 0
    )
    labels = [r["label"] for r in json.loads(capsys.readouterr().out)["results"]]
    assert labels == ["random", "greedy (greedy.npz)"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "--agent", "nope"], "unknown agent 'nope'"),
        (
            ["eval", "--agent", "expectimax", "--depth", "99", "--games", "1"],
            r"depth: must be in [1, 8]; got 99",
        ),
        (["eval", "--games", "1"], "give something to evaluate"),
        (["train", "--agent", "greedy", "--episodes", "1"], "agent 'greedy' does not learn"),
        (["train", "--agent", "expectimax", "--episodes", "1"], "does not learn"),
    ],
)
def test_one_line_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]


def test_train_help_lists_the_agents_settings(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli("train --agent expectimax --help")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--depth INT" in out and "--heuristic STR" in out and "--episodes" in out
    with pytest.raises(SystemExit):
        cli("train --help")
    out = capsys.readouterr().out
    assert "--depth" not in out and "Give --agent NAME" in out


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake learner is in the registry for the test."""
    registered(monkeypatch)


def test_train_runs_and_resumes(capsys: pytest.CaptureFixture[str], data_dir: Path, fake: None) -> None:
    assert cli("train --agent fake-learner --episodes 4 --rows 2 --cols 2 --log-every 1 --seed 3") == 0
    out = capsys.readouterr().out
    assert "run 1 finished: 4 episodes" in out
    assert "training games stored: 4" in out
    path = Path(out.split("checkpoint: ")[1].split()[0])
    assert path.exists() and path.is_relative_to(data_dir)
    with GameStore.open(data_dir) as store:
        run = store.get_run(1)
        assert run.status == "finished" and run.rules.shape == (2, 2) and run.episodes == 4

    assert cli("train --resume 1 --episodes 2") == 0
    out = capsys.readouterr().out
    assert "run 1 finished: 6 episodes" in out
    assert cli("train --resume 1") == 2
    assert "whole budget" in capsys.readouterr().err


def test_train_config_flags_reach_the_agent(
    capsys: pytest.CaptureFixture[str], data_dir: Path, fake: None
) -> None:
    assert cli("train --agent fake-learner --fail-at 2 --episodes 5 --rows 2 --cols 2") == 1
    err = capsys.readouterr().err
    # One line in the terminal; the agent's traceback is kept in a file for whoever fixes it.
    saved = data_dir / "logs" / "run-1-traceback.txt"
    assert err.splitlines()[-1] == f"run 1 failed: RuntimeError: boom at episode 2 (traceback: {saved})"
    assert "Traceback" not in err and "raise RuntimeError" in saved.read_text()
    with GameStore.open(data_dir) as store:
        run = store.get_run(1)
    assert run.status == "failed" and run.config["fail_at"] == 2
    assert cli("train --agent fake-learner --rows 2 --cols 2") == 2
    assert "give a budget" in capsys.readouterr().err


def test_ctrl_c_stops_cleanly_with_a_checkpoint(
    capsys: pytest.CaptureFixture[str], data_dir: Path, fake: None
) -> None:
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        rc = cli("train --agent fake-learner --pause-s 0.02 --episodes 100000 --rows 2 --cols 2")
    finally:
        timer.cancel()
    assert rc == 0
    captured = capsys.readouterr()
    assert "stopping after the current step" in captured.err
    assert "run 1 stopped:" in captured.out
    path = Path(captured.out.split("checkpoint: ")[1].split()[0])
    with GameStore.open(data_dir) as store:
        run = store.get_run(1)
        assert run.status == "stopped" and 0 < run.episodes < 100000
        assert store.last_checkpoint(1) == path
    assert load_checkpoint(path).counters.episodes == run.episodes
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
