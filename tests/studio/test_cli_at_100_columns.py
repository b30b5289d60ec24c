"""The command line read in a 100-column terminal (issue 44): ``runs list`` rows fit, an --agent typo
gets "did you mean", a short run's summary counts its games, ``runs show`` says what its checkpoint
files are and what the n-tuple's score leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.store.model import format_size
from studio.cli import main
from tests.agents.fake_learner import registered


def cli(command: str) -> int:
    """``python main.py COMMAND`` in this process (words split on spaces)."""
    return main(command.split())


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    registered(monkeypatch)
    monkeypatch.setenv("COLUMNS", "100")


def test_three_episode_run_says_last_3_games_and_runs_list_fits_100_columns(
    capsys: pytest.CaptureFixture[str], data_dir: Path, fake: None
) -> None:
    assert cli("train --agent fake-learner --episodes 3 --rows 2 --cols 2 --seed 3") == 0
    out = capsys.readouterr().out
    assert "run 1 finished: 3 episodes" in out
    # the last event was counted twice: "last 4 episodes" for a 3-episode run
    summary = next(ln for ln in out.splitlines() if ln.startswith("last "))
    assert summary.startswith("last 3 games: mean score ")
    assert cli("runs list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert max(len(ln) for ln in lines) <= 100, lines
    assert lines[0].split()[-1] == "CREATED"
    # the creation time to the minute ("2026-11-28 19:31"), as the Train tab's runs table says it
    created = lines[1].split()[-2:]
    assert len(created[0]) == 10 and len(created[1]) == 5 and created[1][2] == ":"


def test_runs_show_lists_each_checkpoint_files_size_and_what_is_kept(
    capsys: pytest.CaptureFixture[str], data_dir: Path, fake: None
) -> None:
    assert cli("train --agent fake-learner --episodes 2 --rows 2 --cols 2 --seed 3") == 0
    capsys.readouterr()
    assert cli("runs show 1") == 0
    out = capsys.readouterr().out.splitlines()
    head = next(i for i, ln in enumerate(out) if ln.strip().startswith("ID  EPISODE"))
    assert out[head].split() == ["ID", "EPISODE", "STEP", "EVAL", "SAVED", "SIZE", "PATH"]
    row = out[head + 1]
    path = Path(row.split()[-1])
    size = path.stat().st_size
    assert row.endswith(f"  {format_size(size)}  {path}"), row
    assert any(ln.startswith("checkpoint files: ") and "1 kept" in ln for ln in out)


@pytest.mark.parametrize("command", ["train", "eval", "sweep"])
def test_an_agent_typo_gets_did_you_mean(capsys: pytest.CaptureFixture[str], command: str) -> None:
    assert cli(f"{command} --agent ntupel") == 2
    err = capsys.readouterr().err
    assert "unknown agent 'ntupel': did you mean ntuple? (agents: random, greedy," in err


def test_an_agent_name_far_from_every_one_lists_them_without_a_guess(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli("train --agent zzzzzz --episodes 1") == 2
    err = capsys.readouterr().err
    assert "unknown agent 'zzzzzz': choose one of random" in err and "did you mean" not in err
