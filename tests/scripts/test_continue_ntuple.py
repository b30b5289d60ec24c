"""scripts/continue_ntuple.py and NTupleAgent.add_stages: a checkpoint goes on training with other
settings as a new recorded run; an added weight stage is promoted from the first when a game reaches
its tile; bad input is one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.base import Budget
from agents.checkpoint import load_checkpoint
from agents.config import ConfigError
from agents.ntuple import NTupleAgent, NTupleConfig
from engine.store import GameStore
from tests.scripts import load_script


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ck") / "tiny.npz"
    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=5)
    list(agent.train(Budget(steps=3000)))
    agent.save(path)
    return path


def test_an_added_stage_starts_as_a_copy_of_the_first_when_a_game_reaches_its_tile(checkpoint: Path) -> None:
    agent = load_checkpoint(checkpoint)
    assert isinstance(agent, NTupleAgent)
    first = agent.weights.copy()
    stage = agent.layout.stage_size
    agent.add_stages((64,))
    assert agent.layout.n_stages == 2 and agent.weights.shape[0] == 2 * stage and agent.n_live == 1
    np.testing.assert_array_equal(agent.weights[:stage], first)
    assert not agent.weights[stage:].any()
    # a run with the stage from the start promotes the same way: the continued one's first game that
    # reaches 64 copies the first stage, then the two learn apart
    list(agent.train(Budget(steps=500)))
    assert agent.n_live == 2
    assert agent.weights[stage:].any() and not np.array_equal(agent.weights[:stage], agent.weights[stage:])
    with pytest.raises(ConfigError, match="must add stages after"):
        agent.add_stages((64,))
    with pytest.raises(ConfigError, match="must add stages after"):
        agent.add_stages((128, 256))


def test_promoted_now_an_added_stage_is_the_first_one_with_its_rates(checkpoint: Path) -> None:
    agent = load_checkpoint(checkpoint)
    assert isinstance(agent, NTupleAgent) and agent._tc is not None
    first, tc = agent.weights.copy(), agent._tc.copy()
    stage = agent.layout.stage_size
    agent.add_stages((64, 128), promote_now=True)
    assert agent.n_live == 3 and agent.layout.n_stages == 3
    for k in (1, 2):
        np.testing.assert_array_equal(agent.weights[k * stage : (k + 1) * stage], first)
        np.testing.assert_array_equal(agent._tc[k * stage : (k + 1) * stage], tc)
    # every board values the same as before (each stage holds the same weights)
    board = np.array([[2, 4, 8, 16], [32, 64, 128, 0], [0, 0, 0, 0], [0, 0, 2, 2]])
    before = load_checkpoint(checkpoint)
    assert agent.value(board) == pytest.approx(before.value(board), rel=1e-6)


def test_the_script_records_a_new_run_with_the_settings_and_the_counters_going_on(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("continue_ntuple")
    data = tmp_path / "data"
    argv = [
        str(checkpoint),
        "--data-dir",
        str(data),
        "--steps",
        "2000",
        "--set",
        "restart=1",
        "--set",
        "stage_tiles=64",
    ]
    assert script.main(argv) == 0
    last = Path(capsys.readouterr().out.strip())
    agent = load_checkpoint(last)
    assert isinstance(agent, NTupleAgent)
    assert agent.config.restart == 1.0 and agent.config.stage_tiles == (64,) and agent.layout.n_stages == 2
    assert agent.counters.steps == 3000 + 2000
    runs = GameStore.open(data).list_runs()
    assert len(runs) == 1 and runs[0].agent == "ntuple"
    # --promote-now: the added stage is live from the first move
    argv = [
        str(checkpoint),
        "--data-dir",
        str(data),
        "--steps",
        "10",
        "--set",
        "stage_tiles=1024",
        "--promote-now",
    ]
    assert script.main(argv) == 0
    agent = load_checkpoint(Path(capsys.readouterr().out.strip()))
    assert isinstance(agent, NTupleAgent) and agent.n_live == 2 and agent.config.stage_tiles == (1024,)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--set", "layout=5x6"], "keeps its tuples"),
        (["--set", "restart=2"], "--set: restart"),
        (["--set", "nonsense=1"], "expects KNOB=VALUE with an n-tuple setting"),
        ([], "give a budget"),
    ],
)
def test_bad_input_is_one_line(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    script = load_script("continue_ntuple")
    budget = ["--steps", "10"] if extra else []
    assert script.main([str(checkpoint), "--data-dir", str(tmp_path), *budget, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_a_file_that_is_no_checkpoint_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a checkpoint")
    assert load_script("continue_ntuple").main([str(bad), "--data-dir", str(tmp_path), "--steps", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("continue_ntuple.py: ") and "\n" not in err


def test_set_threads_changes_the_workers_of_a_checkpoint_trained_with_others(tmp_path: Path) -> None:
    # the ntuple-2h checkpoints are trained with 2 workers; `--set threads=1` goes on with one
    path = tmp_path / "two.npz"
    two = NTupleAgent(NTupleConfig(layout="4x4", threads=2), seed=6)
    list(two.train(Budget(steps=2000)))
    two.save(path)
    agent = load_script("continue_ntuple").continued(str(path), ["threads=1"])
    assert agent.config.threads == 1
    list(agent.train(Budget(steps=500)))
    assert agent._game_u.shape[0] == 1 and agent.counters.steps == 2500
