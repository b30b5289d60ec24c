"""A training budget in CPU-seconds (issue 49): ``Budget(cpu_seconds=...)`` counts this process's CPU
time since the training call started, ends a run once used, is kept across a resume, and is given by
``--cpu-seconds`` on the command line (train and sweep)."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator

import pytest

from agents import registry
from agents.base import Budget, Control, Counters, MetricEvent, TrainContext
from agents.checkpoint import load_checkpoint
from agents.runner import remaining_budget, resume_run, run_training
from agents.training import TrainTracker
from engine import Rules
from engine.store import GameStore
from studio.commands import _agent_flags as flags
from tests.agents.fake_learner import RandomLearner

#: CPU time one "move" of the burner spends (busy work, not sleep: sleeping costs no CPU time).
BURN_S = 0.01


def burn(cpu_seconds: float) -> None:
    """Busy work until this process has used ``cpu_seconds`` more CPU time."""
    t0 = time.process_time()
    while time.process_time() - t0 < cpu_seconds:
        pass


class CpuBurner(RandomLearner):
    """Each move burns ~``BURN_S`` of CPU; its budget is kept by the shared TrainTracker."""

    name = "cpu-burner"
    description = "test double that spends CPU time"

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        tracker = TrainTracker(self.counters, budget, control)
        while tracker.proceed():
            burn(BURN_S)
            self.counters.steps += 1
            self.counters.episodes += 1
            self.weights[0] += 1
            yield tracker.event("episode", {"score": 4.0, "max_tile": 4.0})
        tracker.clock.tick()


@pytest.fixture
def store(store: GameStore, monkeypatch: pytest.MonkeyPatch) -> GameStore:
    reg = registry.default_registry().with_agents({CpuBurner.name: f"{__name__}:CpuBurner"})
    monkeypatch.setattr(registry, "_default", reg)
    return store


def burner() -> CpuBurner:
    return CpuBurner(rules=Rules(rows=2, cols=2), seed=1)


def test_done_and_progress_count_cpu_seconds() -> None:
    b = Budget(cpu_seconds=10.0)
    assert not b.done(10**6, 10**6, 10**6, 9.99)  # only the CPU limit is set: nothing else ends it
    assert b.done(0, 0, 0.0, 10.0)
    assert not b.done(0, 0, 0.0)  # a caller that measures no CPU time never ends it by CPU
    assert b.progress(0, 0, 50.0, 2.5) == 0.25
    assert b.progress(0, 0, 0.0, 40.0) == 1.0
    both = Budget(seconds=100.0, cpu_seconds=10.0)
    assert both.progress(0, 0, 20.0, 5.0) == 0.5  # the larger share
    assert both.progress(0, 0, 80.0, 5.0) == 0.8
    assert both.done(0, 0, 100.0, 1.0) and both.done(0, 0, 1.0, 10.0) and not both.done(0, 0, 99.0, 9.9)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "60"])
def test_cpu_seconds_are_checked_like_seconds(bad: object) -> None:
    with pytest.raises(ValueError, match="budget cpu_seconds must be"):
        Budget(cpu_seconds=bad)  # type: ignore[arg-type]


def test_a_cpu_budget_alone_is_a_budget() -> None:
    assert Budget(cpu_seconds=3).cpu_seconds == 3
    with pytest.raises(ValueError, match="episodes, steps, seconds or cpu_seconds"):
        Budget()


def test_a_run_ends_when_its_cpu_seconds_are_used_and_records_them(store: GameStore) -> None:
    run = run_training(burner(), Budget(cpu_seconds=0.3), store, eval_games=0)
    events = list(run)
    assert run.status == "finished"
    assert events[-1].progress == 1.0
    assert run.last_checkpoint is not None
    cpu = load_checkpoint(run.last_checkpoint).counters.cpu_seconds
    # used to the end, and not much more: one move past the limit at most
    assert 0.3 <= cpu < 0.3 + 0.2
    assert len(events) >= 0.3 / BURN_S * 0.5  # moves were made, each burning CPU
    assert store.get_run(run.run_id).budget["cpu_seconds"] == 0.3


def test_cpu_seconds_spent_paused_do_not_count() -> None:
    """Paused, the loop blocks: the CPU time other threads use meanwhile is not training time."""
    control = Control()
    tracker = TrainTracker(burner().counters, Budget(cpu_seconds=0.2), control)

    def busy_then_resume() -> None:  # another thread's work while the training loop waits
        burn(0.25)
        control.resume()

    control.pause()
    other = threading.Thread(target=busy_then_resume)
    other.start()
    assert tracker.proceed()  # blocked until resumed; the 0.25 s of the pause are not charged
    other.join()
    assert tracker.clock.call_cpu_seconds < 0.1
    burn(0.2)
    assert not tracker.proceed()  # what the loop itself burns is


def test_resume_keeps_what_is_left_of_the_cpu_seconds(store: GameStore) -> None:
    control = Control()
    run = run_training(burner(), Budget(cpu_seconds=0.6), store, control, eval_games=0)
    for event in run:
        if event.episode == 10:
            control.stop()
    assert run.status == "stopped" and run.last_checkpoint is not None
    used = load_checkpoint(run.last_checkpoint).counters.cpu_seconds
    assert 0.1 <= used < 0.6
    resumed = resume_run(run.run_id, store, eval_games=0)
    assert resumed.budget.cpu_seconds == pytest.approx(0.6 - used)
    assert resumed.budget == Budget(cpu_seconds=resumed.budget.cpu_seconds)  # nothing else limits it
    list(resumed)
    assert resumed.status == "finished" and resumed.last_checkpoint is not None
    total = load_checkpoint(resumed.last_checkpoint).counters.cpu_seconds
    assert 0.6 <= total < 0.6 + 0.2
    with pytest.raises(ValueError, match="whole budget"):
        resume_run(run.run_id, store)


def test_remaining_budget_counts_cpu_seconds() -> None:
    start = {"episodes": 0, "steps": 0, "seconds": 0.0, "cpu_seconds": 20.0}
    stored = {"episodes": None, "steps": None, "seconds": None, "cpu_seconds": 100.0, "start": start}
    assert remaining_budget(stored, Counters(cpu_seconds=50.0, seconds=999.0)) == Budget(cpu_seconds=70.0)
    assert remaining_budget(stored, Counters(cpu_seconds=120.0)) is None
    # a budget stored before CPU-seconds existed has no such key: it is left as it was
    old = {"seconds": 60.0, "start": {"episodes": 0, "steps": 0, "seconds": 0.0}}
    assert remaining_budget(old, Counters(seconds=15.0, cpu_seconds=5.0)) == Budget(seconds=45.0)


def test_cpu_seconds_flag_gives_the_budget() -> None:
    parser = argparse.ArgumentParser()
    flags.add_budget_flags(parser)
    assert flags.budget_from(parser.parse_args(["--cpu-seconds", "14400"])) == Budget(cpu_seconds=14400.0)
    both = flags.budget_from(parser.parse_args(["--cpu-seconds", "30", "--minutes", "2"]))
    assert both == Budget(seconds=120.0, cpu_seconds=30.0)
    assert flags.budget_from(parser.parse_args([])) is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--cpu-seconds", "0"])


def test_train_command_with_cpu_seconds(store: GameStore, capsys: pytest.CaptureFixture[str]) -> None:
    from studio.cli import main

    argv = ["train", "--agent", CpuBurner.name, "--rows", "2", "--cols", "2", "--cpu-seconds", "0.2"]
    assert main(argv) == 0
    (summary,) = store.list_runs()
    assert summary.status == "finished" and summary.budget["cpu_seconds"] == 0.2
    (final,) = [c for c in store.run_checkpoints(summary.id) if c.final]
    assert load_checkpoint(final.path).counters.cpu_seconds >= 0.2
    assert main(["runs", "show", str(summary.id)]) == 0
    assert "cpu_seconds 0.2" in capsys.readouterr().out


def test_a_sweep_keeps_its_cpu_budget_in_the_store() -> None:
    from studio.services.sweep import SweepRequest, sweep_request_from_spec

    request = SweepRequest(agent="ntuple", budget=Budget(cpu_seconds=90.0), grid={"lr": (0.1, 0.2)})
    assert sweep_request_from_spec(request.spec()).budget == Budget(cpu_seconds=90.0)
