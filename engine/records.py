"""Game trajectories in memory: what one game was, move by move (the store persists these)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.core import Direction, Rules, Spawn, StepResult
from engine.game import Game


@dataclass
class GameTrace:
    """One game's trajectory.

    ``layouts[i]`` is the board (values) before move ``i``; ``moves[i]`` its direction (action order);
    ``rewards[i]`` the merge reward; ``scores[i]`` the score after it; ``spawns[i]`` what appeared.
    Shapes: layouts (n, rows, cols) int64, moves (n,) int8, rewards (n,) int64, scores (n,) int64.
    """

    rules: Rules
    seed: int | None
    initial_board: np.ndarray
    layouts: list[np.ndarray] = field(default_factory=list)
    moves: list[int] = field(default_factory=list)
    rewards: list[int] = field(default_factory=list)
    scores: list[int] = field(default_factory=list)
    spawns: list[tuple[Spawn, ...]] = field(default_factory=list)
    final_board: np.ndarray | None = None

    @classmethod
    def start(cls, game: Game) -> GameTrace:
        return cls(rules=game.rules, seed=game.seed, initial_board=game.board, final_board=game.board)

    def record(self, before: np.ndarray, result: StepResult, score_after: int, after: np.ndarray) -> None:
        self.layouts.append(before)
        self.moves.append(int(result.direction))
        self.rewards.append(int(result.reward))
        self.scores.append(int(score_after))
        self.spawns.append(result.spawns)
        self.final_board = after

    @property
    def n_moves(self) -> int:
        return len(self.moves)

    @property
    def final_score(self) -> int:
        return self.scores[-1] if self.scores else 0

    @property
    def max_tile(self) -> int:
        board = self.final_board if self.final_board is not None else self.initial_board
        return int(np.max(board))


def play_recorded(game: Game, direction: Direction | int | str, trace: GameTrace) -> StepResult:
    """``game.step(direction)`` that also appends the move to ``trace``."""
    before = game.board
    result = game.step(direction)
    trace.record(before, result, game.score, game.board)
    return result
