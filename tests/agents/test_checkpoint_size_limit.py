"""A checkpoint size limit (issue #45: an agent wrote 839 MB checkpoints without a word): a file past
the limit is refused and not written, the run goes on and says so in its log; one past half the limit
is saved with a one-line warning, once a run."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents import registry
from agents.base import Budget
from agents.checkpoint import CheckpointTooLarge, load_checkpoint, npz_size, save_checkpoint
from agents.run.errors import RunError
from agents.runner import run_training
from engine import Rules
from engine.store import GameStore
from tests.agents.fake_learner import FakeConfig, FakeLearner

#: float64 entries of the bulk array by episode: none, then 64 kB (past half of 0.1 MB), then 400 kB
BULK = {0: 0, 3: 8_000, 5: 50_000}


class BulkyLearner(FakeLearner):
    """A fake learner whose checkpoint grows with its episodes (a network that swells as it trains)."""

    name = "bulky-learner"

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays, meta = super().get_state()
        size = max(n for ep, n in BULK.items() if self.counters.episodes >= ep)
        arrays["bulk"] = np.zeros(size)
        return arrays, meta

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        super().set_state(arrays, meta)


@pytest.fixture(autouse=True)
def bulky_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bulky learner in the registry (checkpoints and the command line find it by name)."""
    target = f"{__name__}:BulkyLearner"
    monkeypatch.setattr(
        registry, "_default", registry.default_registry().with_agents({BulkyLearner.name: target})
    )


def messages(store: GameStore, run_id: int) -> list[tuple[str, int, str]]:
    return [(m.kind, m.episode, m.message) for m in store.run_messages(run_id)]


def test_npz_size_is_an_upper_bound_within_a_kilobyte(tmp_path: Path) -> None:
    agent = BulkyLearner(FakeConfig(), Rules(rows=2, cols=2), seed=1)
    agent.counters.episodes = 5
    path = save_checkpoint(agent, tmp_path / "a.npz")
    arrays, _ = agent.get_state()
    with np.load(path) as npz:
        written = {k: npz[k] for k in npz.files}
    estimate = npz_size(written)
    assert 0 <= estimate - path.stat().st_size < 1024
    assert estimate > sum(a.nbytes for a in arrays.values())


def test_save_past_the_limit_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    agent = BulkyLearner(FakeConfig(), Rules(rows=2, cols=2), seed=1)
    agent.counters.episodes = 5
    with pytest.raises(CheckpointTooLarge) as err:
        save_checkpoint(agent, tmp_path / "big.npz", max_bytes=100_000)
    assert (
        str(err.value) == "bulky-learner's checkpoint would be 0.383 MB, past the 0.0954 MB limit: not saved"
    )
    assert 400_000 < err.value.size < 402_000
    assert list(tmp_path.iterdir()) == []
    assert save_checkpoint(agent, tmp_path / "big.npz", max_bytes=500_000).stat().st_size < 500_000


def test_a_run_refuses_checkpoints_past_its_limit_and_goes_on(data_dir: Path) -> None:
    with GameStore.open(data_dir) as store:
        agent = BulkyLearner(FakeConfig(), Rules(rows=2, cols=2), seed=1)
        run = run_training(
            agent,
            Budget(episodes=7),
            store,
            checkpoint_every_s=1e-9,
            eval_games=0,
            keep_checkpoints=0,
            max_checkpoint_mb=0.1,
        )
        events = list(run)
        assert run.status == "finished" and agent.counters.episodes == 7
        # saved up to episode 4; 5, 6, 7 refused, never written (the final one at 7: not said twice)
        assert [c.episode for c in store.run_checkpoints(run.run_id)] == [1, 2, 3, 4]
        assert run.last_checkpoint is not None and run.last_checkpoint.name.startswith("bulky-learner-ep4-")
        assert all(p.stat().st_size < 0.1 * 2**20 for p in run.checkpoint_dir().iterdir())
        logged = messages(store, run.run_id)
        assert [(kind, ep) for kind, ep, _ in logged] == [("info", 3), ("info", 5), ("info", 6), ("info", 7)]
        warning = logged[0][2]
        step3 = next(e.step for e in events if e.kind == "episode" and e.episode == 3)
        assert warning == f"warning: checkpoint at step {step3:,} is 0.0622 MB, near the 0.1 MB size limit"
        for _, ep, text in logged[1:]:
            step = next(e.step for e in events if e.kind == "episode" and e.episode == ep)
            assert text == (
                f"checkpoint at step {step:,} refused: bulky-learner's checkpoint would be 0.383 MB, past "
                "the 0.1 MB limit: not saved (raise the checkpoint size limit to keep it)"
            )
        # yielded as events too: what the window and the progress line show
        assert [e.message for e in events if e.kind == "info"] == [text for _, _, text in logged]
        assert load_checkpoint(run.last_checkpoint).counters.episodes == 4


def test_a_raised_limit_saves_them(data_dir: Path) -> None:
    with GameStore.open(data_dir) as store:
        agent = BulkyLearner(FakeConfig(), Rules(rows=2, cols=2), seed=1)
        run = run_training(agent, Budget(episodes=6), store, checkpoint_every_s=1e-9, eval_games=0)
        assert run.run_to_end() == "finished"
        assert [c.episode for c in store.run_checkpoints(run.run_id)][-1] == 6
        assert messages(store, run.run_id) == []  # 0.4 MB: far below the default 1 GB


@pytest.mark.parametrize("limit", [0.0, -1.0, float("nan"), float("inf"), 2.0**21])
def test_a_limit_that_is_not_a_size_is_refused(data_dir: Path, limit: float) -> None:
    with GameStore.open(data_dir) as store:
        agent = BulkyLearner(FakeConfig(), Rules(rows=2, cols=2), seed=1)
        with pytest.raises(RunError, match="checkpoint size limit must be more than 0") as err:
            run_training(agent, Budget(episodes=1), store, max_checkpoint_mb=limit)
        assert err.value.field == "max_checkpoint_mb"


def test_the_cli_flag_sets_the_limit(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from studio.cli import main

    board = ["--rows", "2", "--cols", "2", "--seed", "3", "--eval-games", "0", "--keep-checkpoints", "0"]
    argv = ["--data-dir", str(data_dir), "train", "--agent", BulkyLearner.name, "--episodes", "6", *board]
    assert main([*argv, "--max-checkpoint-mb", "0.1", "--checkpoint-every", "0.000001"]) == 0
    out = capsys.readouterr()
    with GameStore.open(data_dir) as store:
        run_id = store.list_runs()[0].id
        assert [c.episode for c in store.run_checkpoints(run_id)] == [1, 2, 3, 4]
        assert sum("refused" in m for _, _, m in messages(store, run_id)) == 2  # episodes 5 and 6
    assert "refused: bulky-learner's checkpoint would be 0.383 MB" in out.out + out.err
    with pytest.raises(SystemExit):
        main([*argv, "--max-checkpoint-mb", "0"])
    assert "--max-checkpoint-mb: 0 is out of range: (0, 1.04858e+06]" in capsys.readouterr().err


def test_a_refused_final_checkpoint_is_an_event_of_the_run(data_dir: Path) -> None:
    """A run shorter than its checkpoint period saves once, at its end: that refusal is yielded too."""
    with GameStore.open(data_dir) as store:
        agent = BulkyLearner(FakeConfig(), Rules(rows=2, cols=2), seed=1)
        run = run_training(agent, Budget(episodes=5), store, eval_games=0, max_checkpoint_mb=0.1)
        events = list(run)
        assert run.status == "finished" and run.last_checkpoint is None
        assert store.run_checkpoints(run.run_id) == []
        last = events[-1]
        assert (last.kind, last.episode, last.step) == ("info", 5, agent.counters.steps)
        assert last.message.startswith(f"checkpoint at step {agent.counters.steps:,} refused: ")
        assert [m.message for m in store.run_messages(run.run_id)] == [last.message]
