"""Plug-in agents that break the contract, for the Play tab's fault tests: one plays an illegal move, one
raises, one gives values that are not numbers. Registered by the tests that use them."""

from __future__ import annotations

import numpy as np

from agents.base import Agent, legal_values
from agents.config import AgentConfig
from engine import DIRECTIONS, Direction, Game


class IllegalAgent(Agent):
    """Always plays the first move that is *not* legal (up, on the tests' boards) and rates nothing."""

    name = "test_illegal"
    config_cls = AgentConfig
    description = "test agent that plays an illegal move"

    def act(self, game: Game) -> Direction:
        mask = game.legal_mask()
        return next(d for d in DIRECTIONS if not mask[d])


class RaisingAgent(Agent):
    """Its network is broken: every question raises."""

    name = "test_raising"
    config_cls = AgentConfig
    description = "test agent that raises"

    def move_values(self, game: Game) -> dict[Direction, float]:
        raise RuntimeError("bad weights")


class NanAgent(Agent):
    """A diverged network: NaN for down, numbers for the other legal moves (right is its best)."""

    name = "test_nan"
    config_cls = AgentConfig
    description = "test agent whose values are not numbers"

    def move_values(self, game: Game) -> dict[Direction, float]:
        return legal_values(game, np.array([1.0, 2.0, np.nan, 4.0]))


AGENTS = {
    "test_illegal": "tests.studio.faulty_agents:IllegalAgent",
    "test_raising": "tests.studio.faulty_agents:RaisingAgent",
    "test_nan": "tests.studio.faulty_agents:NanAgent",
}
