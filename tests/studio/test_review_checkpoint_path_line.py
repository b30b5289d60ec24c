"""``python main.py review N`` with a checkpoint as the reviewer (issue 44): the checkpoint's path is
a line of its own, so a 100-column terminal does not break it in the middle of the reviewer line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.registry import create_agent
from engine import Game
from engine.records import GameTrace, play_recorded
from engine.store import GameStore
from studio.cli import main


def test_the_reviewers_checkpoint_path_is_a_line_of_its_own(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "a fairly long folder name for the reviewer" / "checkpoints" / "run-12"
    path = create_agent("ntuple", {"layout": "4x4"}).save(folder / "ntuple-ep51321-step136958727.npz")
    with GameStore.open(data_dir) as store:
        game, greedy = Game(seed=2), create_agent("greedy")
        trace = GameTrace.start(game)
        while not game.game_over and game.moves < 6:
            play_recorded(game, greedy.act(game), trace)
        trace.final_board = game.board
        gid = store.record_trace(trace, "human")
    argv = ["--data-dir", str(data_dir), "review", str(gid), "--reviewer", str(path), "--depth", "1"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("reviewer: "))
    assert lines[at].endswith(", checkpoint:") and str(path) not in lines[at]
    assert len(lines[at]) <= 100
    assert Path(lines[at + 1]).resolve() == path.resolve()  # the path alone, whole, at the line's start
