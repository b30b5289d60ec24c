"""Baselines: uniform random (seeds 000 and 004, baseline A) and greedy merges (seed 004, baseline B)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents.base import Agent
from agents.config import AgentConfig
from engine import DIRECTIONS, Direction, Game, slide
from engine.fast import count_empty, move, step_bits


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


@dataclass
class GreedyConfig(AgentConfig):
    """The greedy agent has no settings."""


class GreedyAgent(Agent):
    """Seed 004's baseline B: the move with the most merges; ties by score gain, then action order."""

    name = "greedy"
    config_cls = GreedyConfig
    description = (
        "The move that merges the most tiles, then the one that scores most (seed 004's baseline B)."
    )

    def move_values(self, game: Game) -> dict[Direction, float]:
        """``merges + gain / (board sum + 1)``: the whole part counts merges, the fraction ranks score gain.

        A move's gain never exceeds the board's sum, so the fraction stays below 1 and the order is
        exactly "most merges, then most score"; the base ``act`` breaks the remaining ties by action order.
        """
        board = game.board
        scale = float(board.sum()) + 1.0
        packed = getattr(game, "packed", None)
        if packed is not None and not step_bits(np.uint64(packed)) >> 4:  # 4x4 fast path, no 65536 in reach
            return self._packed_values(np.uint64(packed), scale)
        tiles = int(np.count_nonzero(board))
        values: dict[Direction, float] = {}
        for d in DIRECTIONS:
            after, gain = slide(board, d)
            if not np.array_equal(after, board):
                merges = tiles - int(np.count_nonzero(after))  # each merge removes one tile
                values[d] = merges + gain / scale
        return values

    @staticmethod
    def _packed_values(b: np.uint64, scale: float) -> dict[Direction, float]:
        bits = step_bits(b)
        empty = int(count_empty(b))
        values: dict[Direction, float] = {}
        for d in DIRECTIONS:
            if bits >> d & 1:
                after, gain = move(b, int(d))
                values[d] = (int(count_empty(np.uint64(after))) - empty) + int(
                    gain
                ) / scale  # a merge frees a cell
        return values
