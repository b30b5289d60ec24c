"""A run's budget starts after its learner's start-up (issue 44): the n-tuple network's first slice
compiled its kernels for ~30 s inside a 2-minute budget. Modelled here by a learner whose first
training call anywhere in the process is slow (a compile that is then cached)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import ClassVar

import pytest

from agents.base import Agent, Budget, Control, MetricEvent, TrainContext
from agents.run.loop import WARM_UP_STEPS, run_training, warm_up_steps, warm_up_training
from agents.training import TrainTracker
from engine import Direction, Game

#: The slow start, far longer than the budget, so a budget that counted it would end at once.
SLOW_START_S = 2.0


class SlowStartLearner(Agent):
    """Its first ``train`` call in the process sleeps (a compile) after its budget clock started."""

    name = "slow_start"
    trainable = True
    warm_up_steps: ClassVar[int] = 3
    compiled: ClassVar[bool] = False
    instances_that_compiled: ClassVar[int] = 0

    def move_values(self, game: Game) -> dict[Direction, float]:
        return {d: 0.0 for d in game.legal_moves()}

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        tracker = TrainTracker(self.counters, budget, control)  # the budget's clock starts here
        if not SlowStartLearner.compiled:
            time.sleep(SLOW_START_S)
            SlowStartLearner.compiled = True
            SlowStartLearner.instances_that_compiled += 1
        while tracker.proceed():
            time.sleep(0.005)
            self.counters.steps += 1
            self.counters.episodes += 1
            yield tracker.event("episode", {"score": 4.0, "max_tile": 4.0})


@pytest.fixture
def slow_start(monkeypatch: pytest.MonkeyPatch) -> type[SlowStartLearner]:
    monkeypatch.setattr(SlowStartLearner, "compiled", False)
    monkeypatch.setattr(SlowStartLearner, "instances_that_compiled", 0)
    return SlowStartLearner


def test_the_budget_clock_starts_after_the_warm_up(store, slow_start) -> None:
    agent = slow_start(seed=1)
    run = run_training(agent, Budget(seconds=0.3), store, eval_games=0)
    events = list(run)
    assert run.status == "finished"
    assert slow_start.instances_that_compiled == 1  # compiled once, by the warm-up's throwaway twin
    assert run.warm_up_s >= SLOW_START_S
    # The start-up was not charged: the run trained its whole budget after it. Charged, it would
    # have ended after one event whose clock read more than SLOW_START_S.
    assert len(events) > 1
    assert max(e.elapsed for e in events) < SLOW_START_S
    assert events[-1].progress == 1.0
    # the warm-up trained a twin: the run's own agent counts only its own moves
    assert agent.counters.steps == len(events)


def test_only_jitted_learners_warm_up(slow_start) -> None:
    from agents.ntuple.agent import NTupleAgent
    from tests.agents.fake_learner import RandomLearner

    assert warm_up_steps(slow_start) == 3
    assert warm_up_steps(NTupleAgent) == WARM_UP_STEPS["ntuple"] > 0
    assert warm_up_steps(RandomLearner) == 0
    assert warm_up_training(RandomLearner(seed=0)) == 0.0
