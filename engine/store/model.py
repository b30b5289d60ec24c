"""What the store hands out: game summaries and records, run summaries, checkpoints, and its error type."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.core import Rules, Spawn
from engine.records import GameTrace

#: Where a game came from. ``training`` = a game played while an agent learned (linked to its run);
#: ``imported`` = read from a file (the original source is kept in ``GameSummary.origin``).
SOURCES: tuple[str, ...] = ("human", "agent", "evaluation", "training", "imported")
GAME_STATUSES: tuple[str, ...] = ("playing", "finished", "abandoned")
RUN_STATUSES: tuple[str, ...] = ("running", "paused", "stopped", "finished", "failed")


class StoreError(ValueError):
    """The store cannot do what was asked; the message is one line that says why.

    A ValueError so that the CLI prints it as a one-line error like any other bad input.
    """


def format_time(ts: float | None) -> str:
    """Unix seconds -> local ``YYYY-MM-DD HH:MM:SS`` (``-`` for None)."""
    if ts is None:
        return "-"
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


@dataclass(frozen=True)
class GameSummary:
    """One row of the games table: everything about a game except its moves.

    Times are Unix seconds (``started``: first board; ``ended``: finished or abandoned, None while playing).
    ``score``, ``max_tile`` and ``n_moves`` are kept up to date move by move, so a game that was
    interrupted still shows how far it got.
    """

    id: int
    source: str
    agent: str | None
    checkpoint: str | None
    rules: Rules
    seed: int | None
    started: float
    ended: float | None
    status: str
    score: int
    max_tile: int
    n_moves: int
    run_id: int | None = None
    #: imported games: where they came from, e.g. ``{"file": "games.npz", "id": 12, "source": "human"}``
    origin: dict[str, Any] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.rules.shape


@dataclass(frozen=True, eq=False)
class GameRecord:
    """A whole game as numpy arrays (n = number of moves).

    ``layouts[i]``: board (values) before move ``i``, shape (n, rows, cols) int64; ``moves``: (n,) int8
    directions in action order (up, left, down, right); ``rewards``: (n,) int64 merge reward of each
    move; ``scores``: (n,) int64 score after each move; ``spawns``: (n, S, 3) int64 rows ``(row, col,
    value)`` of the tiles that appeared after each move (S = most spawns after one move in this game;
    rows with value 0 are padding); ``initial_board`` / ``final_board``: (rows, cols) int64.
    """

    summary: GameSummary
    initial_board: np.ndarray
    layouts: np.ndarray
    moves: np.ndarray
    rewards: np.ndarray
    scores: np.ndarray
    spawns: np.ndarray
    final_board: np.ndarray

    @property
    def id(self) -> int:
        return self.summary.id

    @property
    def rules(self) -> Rules:
        return self.summary.rules

    @property
    def n_moves(self) -> int:
        return int(self.moves.shape[0])

    def spawns_of(self, i: int) -> tuple[Spawn, ...]:
        """The tiles that appeared after move ``i``."""
        return tuple(Spawn(int(r), int(c), int(v)) for r, c, v in self.spawns[i] if v)

    def board_after(self, i: int) -> np.ndarray:
        """The board after move ``i`` (and its spawns)."""
        return self.layouts[i + 1] if i + 1 < self.n_moves else self.final_board

    def to_trace(self) -> GameTrace:
        """The same game as an in-memory :class:`engine.records.GameTrace`."""
        return GameTrace(
            rules=self.rules,
            seed=self.summary.seed,
            initial_board=self.initial_board.copy(),
            layouts=[b.copy() for b in self.layouts],
            moves=[int(m) for m in self.moves],
            rewards=[int(r) for r in self.rewards],
            scores=[int(s) for s in self.scores],
            spawns=[self.spawns_of(i) for i in range(self.n_moves)],
            final_board=self.final_board.copy(),
        )


@dataclass(frozen=True)
class RunSummary:
    """One training run: what was trained how, its status, and where its counters stand.

    ``episodes`` / ``steps`` / ``elapsed`` are the counters of the last logged event; ``last_metrics``
    holds the last reported value of every metric name seen so far.
    """

    id: int
    agent: str
    config: dict[str, Any]
    rules: Rules
    budget: dict[str, Any]
    seed: int | None
    status: str
    error: str | None
    created: float
    updated: float
    n_events: int = 0
    episodes: int = 0
    steps: int = 0
    elapsed: float = 0.0
    last_metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint file saved during a run (``final``: the one written when the run ended)."""

    id: int
    run_id: int
    path: Path
    episode: int
    step: int
    final: bool
    created: float


@dataclass(frozen=True)
class RunMessage:
    """A status message a run reported (an ``info`` event, or any event with a message)."""

    seq: int
    kind: str
    episode: int
    step: int
    message: str
