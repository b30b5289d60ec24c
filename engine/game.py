"""``Game``: a thin stateful wrapper over the pure rules in :mod:`engine.core`, owning its spawn RNG."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.core import (
    DIRECTIONS,
    Board,
    Direction,
    Rules,
    SpawnRng,
    StepResult,
    _slide_unchecked,
    seed_to_state,
    spawn_tiles,
    validate_board,
)


class IllegalMoveError(ValueError):
    """A move that would not change the board. The game is left as it was."""


class Game:
    """One game of 2048 on a ``rows x cols`` board.

    ``Game(seed=1)`` twice gives the same game for the same moves. The game does not stop at 2048:
    it is over only when no move is legal.

    Attributes read by callers: ``board`` (a copy, values), ``score``, ``moves``, ``max_tile``,
    ``game_over``, ``rules``, ``seed``, ``last_spawns``.
    """

    def __init__(
        self,
        rows: int = 4,
        cols: int = 4,
        seed: int | None = None,
        rules: Rules | None = None,
        *,
        board: Any = None,
        score: int = 0,
    ) -> None:
        if rules is None:
            rules = Rules(rows=rows, cols=cols)
        elif (rows, cols) != (4, 4) and (rows, cols) != rules.shape:
            raise ValueError(f"rows x cols {rows}x{cols} disagree with rules {rules.rows}x{rules.cols}")
        self.rules = rules
        self.seed = seed
        self._rng = SpawnRng(seed_to_state(seed))
        self.score = int(score)
        self.moves = 0
        self.last_spawns: tuple = ()
        self._legal_cache: list[tuple[Board, int]] | None = None
        if board is None:
            self._board = np.zeros(rules.shape, dtype=np.int64)
            self.last_spawns = spawn_tiles(self._board, self._rng, rules, rules.start_tiles)
        else:
            b = validate_board(board)
            if b.shape != rules.shape:
                raise ValueError(f"board shape {b.shape} does not match the rules' {rules.rows}x{rules.cols}")
            self._board = b.copy()

    # ---------------------------------------------------------------- state
    @property
    def board(self) -> Board:
        """The board as tile values (a copy: changing it does not change the game)."""
        return self._board.copy()

    @property
    def rows(self) -> int:
        return self.rules.rows

    @property
    def cols(self) -> int:
        return self.rules.cols

    @property
    def max_tile(self) -> int:
        return int(self._board.max())

    @property
    def rng_state(self) -> int:
        """The spawn generator's state: with the board and score, everything needed to resume."""
        return self._rng.state

    @rng_state.setter
    def rng_state(self, value: int) -> None:
        self._rng.state = int(value)

    def _results(self) -> list[tuple[Board, int]]:
        if self._legal_cache is None:
            self._legal_cache = [_slide_unchecked(self._board, d) for d in DIRECTIONS]
        return self._legal_cache

    def legal_mask(self) -> np.ndarray:
        return np.array([not np.array_equal(b, self._board) for b, _ in self._results()], dtype=bool)

    def legal_moves(self) -> list[Direction]:
        """Legal moves in action order (up, left, down, right)."""
        return [d for d, (b, _) in zip(DIRECTIONS, self._results()) if not np.array_equal(b, self._board)]

    @property
    def game_over(self) -> bool:
        return not self.legal_moves()

    # ---------------------------------------------------------------- moves
    def step(self, direction: Direction | int | str) -> StepResult:
        """Play one move: slide, add the reward to the score, spawn. Illegal moves raise IllegalMoveError."""
        d = Direction.parse(direction)
        new_board, reward = self._results()[d]
        if np.array_equal(new_board, self._board):
            legal = ", ".join(m.label for m in self.legal_moves()) or "none: the game is over"
            raise IllegalMoveError(f"move {d.label} changes nothing on this board (legal: {legal})")
        board = new_board.copy()
        spawns = spawn_tiles(board, self._rng, self.rules, self.rules.spawn_per_move)
        self._board = board
        self._legal_cache = None
        self.score += reward
        self.moves += 1
        self.last_spawns = spawns
        return StepResult(d, reward, spawns, self.game_over)

    def copy(self) -> Game:
        """An independent copy (same board, score, moves and spawn stream)."""
        g = Game.__new__(Game)
        g.rules = self.rules
        g.seed = self.seed
        g._rng = SpawnRng(self._rng.state)
        g.score = self.score
        g.moves = self.moves
        g.last_spawns = self.last_spawns
        g._board = self._board.copy()
        g._legal_cache = self._legal_cache
        return g

    def __repr__(self) -> str:
        return f"Game({self.rows}x{self.cols}, score={self.score}, moves={self.moves}, max_tile={self.max_tile})"

    def render_text(self) -> str:
        """A plain-text picture of the board (no printing here: callers decide where text goes)."""
        width = max(4, len(str(self.max_tile)))
        lines = []
        for row in self._board:
            lines.append(" ".join(("." if v == 0 else str(int(v))).rjust(width) for v in row))
        return "\n".join(lines)
