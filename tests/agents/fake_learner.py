"""A tiny trainable agent for runner and CLI tests: plays random 2x2-ish games, "learns" a counter.

Register it for a test with :func:`registered` (a fixture helper that undoes itself). Its base,
:class:`RandomLearner`, is what every test learner shares (``tests/studio/train_fakes.py`` too).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from agents import registry
from agents.base import Agent, Budget, Clock, Control, MetricEvent, TrainContext
from agents.config import AgentConfig, knob
from engine import Direction, Game, Rules
from engine.records import GameTrace, play_recorded

NAME = "fake-learner"
TARGET = "tests.agents.fake_learner:FakeLearner"


@dataclass
class FakeConfig(AgentConfig):
    """Knobs that let a test steer the training loop."""

    fail_at: int = knob(0, "raise RuntimeError when this episode is reached (0 = never)", low=0, high=10**6)
    pause_s: float = knob(0.0, "seconds to sleep after each episode", low=0.0, high=60.0)
    diverge_at: int = knob(0, "from this episode on, report a NaN loss (0 = never)", low=0, high=10**6)
    stall_at: int = knob(0, "from this episode on, play 0-move episodes (0 = never)", low=0, high=10**6)


class RandomLearner(Agent):
    """A test learner's frame: plays uniformly at random; its state is one weight array (``weights``,
    one cell a direction) that its ``train`` counts updates into."""

    trainable = True

    def __init__(
        self, config: AgentConfig | None = None, rules: Rules | None = None, seed: int | None = None
    ) -> None:
        super().__init__(config, rules, seed)
        self.weights = np.zeros(4)

    def act(self, game: Game) -> Direction:
        moves = game.legal_moves()
        return moves[int(self.rng.integers(len(moves)))]

    def episode_event(
        self, clock: Clock, played: Game, progress: float, metrics: Mapping[str, float], **shown: Any
    ) -> MetricEvent:
        """The "episode" event of the finished game ``played``: its score and top tile, then ``metrics``;
        ``shown`` is its board or its trace (``board=`` or ``game=``)."""
        return MetricEvent(
            "episode",
            self.counters.episodes,
            self.counters.steps,
            clock.tick(),
            {"score": float(played.score), "max_tile": float(played.max_tile), **metrics},
            progress=progress,
            **shown,
        )

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {"weights": self.weights.copy()}, {"note": "fake"}

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        self.weights = np.array(arrays["weights"], dtype=float)


class FakeLearner(RandomLearner):
    """Counts episodes into a weight; plays uniformly at random."""

    name = NAME
    config_cls = FakeConfig
    description = "test double"
    config: FakeConfig

    def move_values(self, game: Game) -> dict[Direction, float]:
        return {d: float(self.weights[0]) for d in game.legal_moves()}

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        control = control or Control()
        clock = Clock(self.counters)
        start_ep, start_steps = self.counters.episodes, self.counters.steps
        while not budget.done(
            self.counters.episodes - start_ep, self.counters.steps - start_steps, clock.call_seconds
        ):
            if not control.checkpoint():
                return
            game = Game(rules=self.rules, seed=int(self.rng.integers(1 << 30)))
            trace = GameTrace.start(game)
            stalled = bool(self.config.stall_at) and self.counters.episodes + 1 >= self.config.stall_at
            while not game.game_over and not stalled:
                play_recorded(game, self.act(game), trace)
            self.counters.episodes += 1
            self.counters.steps += game.moves
            self.weights[0] += 1
            if self.config.fail_at and self.counters.episodes == self.config.fail_at:
                raise RuntimeError(f"boom at episode {self.counters.episodes}")
            if self.config.pause_s:
                time.sleep(self.config.pause_s)
            diverged = self.config.diverge_at and self.counters.episodes >= self.config.diverge_at
            loss = float("nan") if diverged else 1.0 / self.counters.episodes
            progress = budget.progress(
                self.counters.episodes - start_ep, self.counters.steps - start_steps, clock.call_seconds
            )
            yield self.episode_event(clock, game, progress, {"loss": loss}, game=trace)


def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the fake learner for one test (monkeypatch restores the registry afterwards)."""
    monkeypatch.setattr(registry, "_default", registry.default_registry().with_agents({NAME: TARGET}))


def learner(**kw: object) -> FakeLearner:
    """The fake learner on a 2x2 board, seed 1, with config ``kw``: the runner tests' usual subject."""
    return FakeLearner(FakeConfig(**kw), Rules(rows=2, cols=2), seed=1)  # type: ignore[arg-type]


def train_argv(episodes: int) -> list[str]:
    """``main.py train`` arguments for ``episodes`` episodes of the fake learner on a 2x2 board, seed 3."""
    board = ["--rows", "2", "--cols", "2", "--seed", "3"]
    return ["train", "--agent", NAME, "--episodes", str(episodes), *board]
