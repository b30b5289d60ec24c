"""What the store hands out: game summaries and records, run summaries, checkpoints, and its error type."""

from __future__ import annotations

import datetime as _dt
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.core import Rules, Spawn
from engine.records import GameTrace

#: Who can make a move. ``training`` = an agent playing while it learns (its game is linked to the run);
#: ``unknown`` = imported from a file that does not say who played (e.g. a bare seed-003 ``.npz``).
PLAYER_KINDS: tuple[str, ...] = ("human", "agent", "evaluation", "training", "unknown")
#: A game's source: the kind of its one player, or ``mixed`` when more than one player moved in it
#: (a person who let an agent play for a while). Imported games keep their original source; that they
#: came from a file is ``GameSummary.origin`` (see :data:`SOURCE_FILTERS`).
SOURCES: tuple[str, ...] = ("human", "agent", "evaluation", "training", "mixed", "unknown")
#: What the store's ``source`` filter accepts: a source, or ``imported`` = every game read from a file.
SOURCE_FILTERS: tuple[str, ...] = (*SOURCES, "imported")
GAME_STATUSES: tuple[str, ...] = ("playing", "finished", "abandoned")
#: The status a :class:`GameSummary` shows for a games row the store cannot read back as it is (a field
#: of the wrong type, absurd or unreadable JSON: a damaged file, or one edited by hand); never stored.
#: ``GameSummary.problem`` says what is wrong, and loading the game's moves is a one-line StoreError.
DAMAGED = "damaged"
RUN_STATUSES: tuple[str, ...] = ("running", "paused", "stopped", "finished", "failed")


class StoreError(ValueError):
    """The store cannot do what was asked; the message is one line that says why.

    A ValueError so that the CLI prints it as a one-line error like any other bad input.
    """


#: The latest time a store accepts (9999-12-31 UTC): later ones break the platform's time functions.
MAX_TIME = 253_402_300_799.0


def format_time(ts: float | None) -> str:
    """Unix seconds -> local ``YYYY-MM-DD HH:MM:SS`` (``-`` for None, ``?`` for a time no clock shows,
    so one bad row cannot take a listing down)."""
    if ts is None:
        return "-"
    try:
        return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return "?"


@dataclass(frozen=True)
class Player:
    """Who made a move: the person (``kind="human"``), or an agent by registry name and checkpoint file.

    ``kind`` is one of :data:`PLAYER_KINDS`; an agent playing for an evaluation or while training is a
    different player from the same agent played in the Play tab, so statistics and imitation can tell
    them apart. Frozen and hashable: a game's players are compared by value.
    """

    kind: str = "human"
    agent: str | None = None
    checkpoint: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in PLAYER_KINDS:
            raise StoreError(f"a player is one of {', '.join(PLAYER_KINDS)}, got {_short(self.kind)}")

    @property
    def is_human(self) -> bool:
        return self.kind == "human"

    @property
    def label(self) -> str:
        """``you``, ``greedy``, ``dqn (run3-final.pt)``: what a replay shows as the player of a move."""
        if self.is_human:
            return "you"
        name = self.agent or self.kind
        return f"{name} ({Path(self.checkpoint).name})" if self.checkpoint else name

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "agent": self.agent, "checkpoint": self.checkpoint}

    @classmethod
    def from_json(cls, obj: Any) -> Player:
        """The inverse of :meth:`to_json`; a StoreError (one line) for anything else."""
        if not isinstance(obj, dict):
            raise StoreError(f"a player must be a JSON object, got {_short(obj)}")
        kind, agent, checkpoint = obj.get("kind"), obj.get("agent"), obj.get("checkpoint")
        for key, v in (("agent", agent), ("checkpoint", checkpoint)):
            if v is not None and not isinstance(v, str):
                raise StoreError(f"a player's {key} must be text, got {_short(v)}")
        if not isinstance(kind, str):
            raise StoreError(f"a player is one of {', '.join(PLAYER_KINDS)}, got {_short(kind)}")
        return cls(kind, agent, checkpoint)


HUMAN = Player()


def _short(value: Any) -> str:
    """A value read from a file or a row, for a one-line message: short however big or deep it is."""
    return " ".join(reprlib.repr(value).split())


def source_of(players: Sequence[Player]) -> str:
    """A game's source from its players: the one player's kind, or ``mixed``."""
    if not players:
        raise StoreError("a game needs a player")
    return players[0].kind if len(players) == 1 else "mixed"


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
    #: everyone who moved in the game, in order of their first move (``GameRecord.move_players`` indexes it)
    players: tuple[Player, ...] = ()
    #: what is wrong with a damaged row (``status`` is then :data:`DAMAGED`; unreadable fields hold
    #: stand-ins: 0, None, the classic rules), None for a sound one
    problem: str | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.rules.shape

    @property
    def imported(self) -> bool:
        return self.origin is not None

    @property
    def agents(self) -> tuple[str, ...]:
        """The names of the agents that moved in this game, each once."""
        return tuple(dict.fromkeys(p.agent for p in self.players if p.agent))

    @property
    def who(self) -> str:
        """Who played, in words: ``you``, ``greedy``, ``you + greedy (greedy-1.npz)``."""
        return " + ".join(p.label for p in self.players) or (self.agent or self.source)


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
    #: (n,) int64: who made each move, an index into ``summary.players`` (None: all by the first player)
    move_players: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.move_players is None:
            object.__setattr__(self, "move_players", np.zeros(len(self.moves), dtype=np.int64))

    @property
    def id(self) -> int:
        return self.summary.id

    @property
    def rules(self) -> Rules:
        return self.summary.rules

    @property
    def n_moves(self) -> int:
        return int(self.moves.shape[0])

    def player_of(self, i: int) -> Player:
        """Who made move ``i``."""
        players = self.summary.players
        return players[int(self.move_players[i])] if players else Player("unknown")

    def moves_by(self, kind: str | None = None, agent: str | None = None) -> np.ndarray:
        """(n,) bool: the moves whose player is of ``kind`` and (when given) the agent ``agent``.

        ``kind=None`` / ``agent=None`` do not filter. How imitation keeps only the person's moves of a
        game the person shared with an agent.
        """
        ok = np.array(
            [
                (kind is None or p.kind == kind) and (agent is None or p.agent == agent)
                for p in self.summary.players
            ],
            dtype=bool,
        )
        if not len(ok):
            return np.full(self.n_moves, kind is None and agent is None)
        return ok[self.move_players]

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
    #: the process that last wrote the run's status (a live run's owner) and its machine
    pid: int | None = None
    host: str | None = None


@dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint file saved during a run (``final``: the one written when the run ended).

    ``eval_score``: mean score of the run's periodic greedy evaluation of this checkpoint (None: not
    evaluated); ``best``: the run's checkpoint with the highest ``eval_score`` so far (at most one).
    """

    id: int
    run_id: int
    path: Path
    episode: int
    step: int
    final: bool
    created: float
    eval_score: float | None = None
    best: bool = False


def format_size(n_bytes: int | float | None) -> str:
    """Bytes in human units, as disks are sold (powers of 1000): ``"0 B"``, ``"812 kB"``, ``"168 MB"``,
    ``"1.2 GB"`` (``-`` for None)."""
    if n_bytes is None:
        return "-"
    value = float(n_bytes)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.1f} {unit}" if abs(value) < 10 else f"{value:.0f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class RunMessage:
    """A status message a run reported (an ``info`` event, or any event with a message)."""

    seq: int
    kind: str
    episode: int
    step: int
    message: str
