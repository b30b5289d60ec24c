"""Baselines: uniform random (seeds 000 and 004, baseline A)."""

from __future__ import annotations

from dataclasses import dataclass

from agents.base import Agent
from agents.config import AgentConfig
from engine import Direction, Game


@dataclass
class RandomConfig(AgentConfig):
    """The random agent has no settings."""


class RandomAgent(Agent):
    """Uniform over the legal moves."""

    name = "random"
    config_cls = RandomConfig
    description = "Uniformly random legal moves (the baseline every learner must beat)."

    def move_values(self, game: Game) -> dict[Direction, float]:
        # Every legal move is equally good to a random player.
        return {d: 0.0 for d in game.legal_moves()}

    def act(self, game: Game) -> Direction:
        moves = game.legal_moves()
        if not moves:
            raise ValueError("no legal move: the game is over")
        return moves[int(self.rng.integers(len(moves)))]
