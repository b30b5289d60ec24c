"""Tiny agents for the Train / Arena / worker tests: a fake learner with every kind of knob, and one that fails.

Registered per test in a copy of the default registry that monkeypatch puts in place (see ``register_fakes``),
so the registry is back to normal after each test.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import pytest

from agents import registry
from agents.base import Agent, Budget, Clock, Control, MetricEvent, TrainContext
from agents.config import AgentConfig, ConfigError, knob
from engine import Direction, Game
from tests.agents.fake_learner import RandomLearner


@dataclass
class FakeConfig(AgentConfig):
    lr: float = knob(1e-3, "learning rate of the fake learner", low=1e-6, high=1.0, log=True)
    batch: int = knob(32, "batch size", low=1, high=1024)
    network: str = knob("small", "which fake network", choices=("small", "big"))
    double: bool = knob(True, "use a second fake network")
    depths: tuple[int, ...] = knob((3, 2, 1), "search depth by free cells", low=0, high=8)
    tag: str = knob("run", "free text")
    gamma: float = knob(0.99, "discount", low=0.0, high=1.0, advanced=True)
    delay_ms: float = knob(
        2.0, "sleep per move (keeps the event rate testable)", low=0.0, high=1000.0, advanced=True
    )
    eps_start: float = knob(1.0, "first epsilon", low=0.0, high=1.0, advanced=True)
    eps_end: float = knob(0.1, "last epsilon", low=0.0, high=1.0, advanced=True)

    def validate(self) -> None:
        if self.eps_end > self.eps_start:
            raise ConfigError("eps_end", "must not exceed eps start")


class FakeLearner(RandomLearner):
    """Random play with a pretend loss and a decaying epsilon; one weight array that counts updates."""

    name = "fake_learner"
    config_cls = FakeConfig
    description = "A fake learner for tests."
    loss_metrics: ClassVar[tuple[str, ...]] = ("loss",)
    schedule_metrics: ClassVar[tuple[str, ...]] = ("epsilon",)

    def move_values(self, game: Game) -> dict[Direction, float]:
        return {d: float(self.weights[int(d)]) for d in game.legal_moves()}

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        control = control or Control()
        clock = Clock(self.counters)
        cfg: FakeConfig = self.config  # type: ignore[assignment]
        games = steps = 0
        while not budget.done(games, steps, clock.call_seconds):
            game = Game(rules=self.rules, seed=int(self.rng.integers(1 << 30)))
            t0 = time.perf_counter()
            n0 = steps
            while not game.game_over:
                if not control.checkpoint():
                    return
                game.step(self.act(game))
                steps += 1
                self.counters.steps += 1
                if cfg.delay_ms:
                    time.sleep(cfg.delay_ms / 1000)
                if steps % 20 == 0:
                    self.counters.updates += 1
                    self.weights += 1
                    frac = budget.progress(games, steps, clock.call_seconds)
                    eps = cfg.eps_start + (cfg.eps_end - cfg.eps_start) * frac
                    yield MetricEvent(
                        "update",
                        self.counters.episodes,
                        self.counters.steps,
                        clock.tick(),
                        {"loss": 1.0 / self.counters.updates, "epsilon": eps},
                        progress=frac,
                        board=game.board,
                    )
            games += 1
            self.counters.episodes += 1
            dt = max(1e-9, time.perf_counter() - t0)
            metrics = {"moves": float(game.moves), "steps_per_s": (steps - n0) / dt}
            progress = budget.progress(games, steps, clock.call_seconds)
            yield self.episode_event(clock, game, progress, metrics, board=game.board)


@dataclass
class FailingConfig(AgentConfig):
    fail_after: int = knob(3, "events before the exception", low=0, high=100)


class FailingLearner(Agent):
    """Yields a few events, then raises: the GUI must show the message and live on."""

    name = "failing_learner"
    config_cls = FailingConfig
    description = "Fails on purpose."
    trainable = True

    def move_values(self, game: Game) -> dict[Direction, float]:
        return {d: 0.0 for d in game.legal_moves()}

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        for i in range(self.config.fail_after):  # type: ignore[attr-defined]
            self.counters.episodes += 1
            self.counters.steps += 10
            yield MetricEvent(
                "episode",
                self.counters.episodes,
                self.counters.steps,
                0.01 * i,
                {"score": 10.0 * i, "max_tile": 8.0},
            )
        raise RuntimeError("boom: the fake learner exploded")


FAKES = {
    "fake_learner": "tests.studio.train_fakes:FakeLearner",
    "failing_learner": "tests.studio.train_fakes:FailingLearner",
}


def register_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the fake agents in the registry for one test (undone by monkeypatch)."""
    monkeypatch.setattr(registry, "_default", registry.default_registry().with_agents(FAKES))


def fake_learner_form(qtbot, monkeypatch: pytest.MonkeyPatch):
    """The settings form of ``fake_learner`` (registered for the test), shown and exposed."""
    from studio.widgets.config_form import ConfigForm

    register_fakes(monkeypatch)
    form = ConfigForm(FakeConfig, agent="fake_learner")
    qtbot.addWidget(form)
    form.show()
    qtbot.waitExposed(form)
    return form
