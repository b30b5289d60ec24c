"""Small faulty agents, as other people's plug-ins may be: each breaks the contract one way.

A module of its own (worker processes import it by name); :func:`register_all` registers every one
with :func:`agents.registry.register`, as a plug-in's entry point would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from agents.base import Agent, Budget, Control, MetricEvent, TrainContext
from agents.baselines import GreedyAgent
from agents.nn.state import numpy_rng_state, set_numpy_rng_state
from agents.registry import register
from agents.training import TrainTracker
from engine import DIRECTIONS, Direction, Game

MODULE = __name__


class StringKeysAgent(GreedyAgent):
    """Rates moves by their names ("up"), not by Direction."""

    name = "fault-str-keys"

    def move_values(self, game: Game) -> dict[Any, float]:
        return {d.label: v for d, v in super().move_values(game).items()}


class ListValuesAgent(GreedyAgent):
    """Returns its values as a list."""

    name = "fault-list"

    def move_values(self, game: Game) -> Any:
        return list(super().move_values(game).values())


class NoneValueAgent(GreedyAgent):
    """Rates one legal move None."""

    name = "fault-none"

    def move_values(self, game: Game) -> Any:
        values: dict[Direction, Any] = dict(super().move_values(game))
        values[next(iter(values))] = None
        return values


class IllegalAgent(GreedyAgent):
    """Rates "up" best even where up changes nothing."""

    name = "fault-illegal"

    def move_values(self, game: Game) -> dict[Direction, float]:
        return {**super().move_values(game), DIRECTIONS[0]: 1e9}


class RaisingAgent(Agent):
    """Its act raises (a bug in someone's code)."""

    name = "fault-raises"
    description = "raises"

    def act(self, game: Game) -> Direction:
        raise ZeroDivisionError("division by zero in my_agent.py line 12")


class NanAgent(GreedyAgent):
    """Every move value NaN (a diverged network)."""

    name = "fault-nan"

    def move_values(self, game: Game) -> dict[Direction, float]:
        return {d: float("nan") for d in super().move_values(game)}


class SlowAgent(GreedyAgent):
    """Each move takes SLOW_S seconds."""

    name = "fault-slow"
    SLOW_S = 0.3

    def act(self, game: Game) -> Direction:
        time.sleep(self.SLOW_S)
        return super().act(game)


class ForgetfulLearner(GreedyAgent):
    """A learner whose get_state saves its weights but which keeps set_state at the default: a loaded
    checkpoint restores nothing, yet plays as greedy (the weights do not steer its moves)."""

    name = "fault-forgetful"
    trainable = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.weights = np.zeros(4)

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        tracker = TrainTracker(self.counters, budget, control)
        while tracker.proceed():
            game = Game(seed=int(self.rng.integers(1 << 30)), rules=self.rules)
            while not game.game_over:
                game.step(self.act(game))
                self.counters.steps += 1
            self.counters.episodes += 1
            self.weights += self.rng.random(4)  # what it learnt
            yield tracker.event("episode", {"score": game.score})

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {"weights": self.weights}, {"games": self.counters.episodes}


class ValueForgetfulLearner(ForgetfulLearner):
    """Saves and restores its generator but not the weights that shade its move values: the state
    round trips (it holds no array), the moves too (the shades never change the order), the values not."""

    name = "fault-value-forgetful"

    def move_values(self, game: Game) -> dict[Direction, float]:
        return {d: v + float(self.weights[d]) * 1e-6 for d, v in super().move_values(game).items()}

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {}, {"rng": numpy_rng_state(self.rng)}

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        set_numpy_rng_state(self.rng, meta["rng"])


class SlowReviewer(GreedyAgent):
    """Its review_values raises: check-agent must call it when the agent has it."""

    name = "fault-review"
    value_kind = "points"
    reviews_in_points = True

    def review_values(self, game: Game) -> dict[Direction, float]:
        return {"up": 1.0}  # type: ignore[dict-item]


ALL: tuple[type[Agent], ...] = (
    StringKeysAgent,
    ListValuesAgent,
    NoneValueAgent,
    IllegalAgent,
    RaisingAgent,
    NanAgent,
    SlowAgent,
    ForgetfulLearner,
    ValueForgetfulLearner,
    SlowReviewer,
)


def register_all() -> None:
    for cls in ALL:
        register(cls.name, f"{MODULE}:{cls.__name__}")


class RngForgetfulLearner(ForgetfulLearner):
    """Saves its weights and generator, restores the weights only."""

    name = "fault-rng-forgetful"

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {"weights": self.weights}, {"rng": numpy_rng_state(self.rng)}

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        self.weights = np.array(arrays["weights"], dtype=float)


ALL = (*ALL, RngForgetfulLearner)
