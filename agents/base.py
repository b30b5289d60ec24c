"""The contract every agent meets: config, act / move_values, a training generator, save / load.

Training is a plain generator of :class:`MetricEvent` records. It checks a :class:`Control` between
steps (pause blocks, stop ends the generator cleanly) and never prints or imports Qt, so the same
loop runs under the GUI's worker thread and under ``python main.py train``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from agents.checkpoint import load_checkpoint, save_checkpoint
from agents.config import AgentConfig
from agents.counters import Counters as Counters  # part of the contract; defined apart (see agents.counters)
from agents.guard import best_move, checked_values
from agents.metrics import MetricInfo, complete_declarations
from engine import DIRECTIONS, Direction, Game, Rules

if TYPE_CHECKING:
    from engine.records import GameTrace


# --------------------------------------------------------------------------------------------- events

#: Metric names with a fixed meaning across agents (agents may add their own).
STANDARD_METRICS = {
    "score": "final score of the episode (game) just finished",
    "max_tile": "largest tile of that episode",
    "moves": "moves in that episode",
    "loss": "training loss of the last update",
    "epsilon": "exploration rate",
    "lr": "learning rate",
    "steps_per_s": "environment steps (moves) per second, recent average",
}


@dataclass(frozen=True)
class MetricEvent:
    """One training report.

    ``kind``: ``"episode"`` (a game finished), ``"update"`` (a learning step / epoch without a game),
    ``"info"`` (a status message in ``message``). ``episode`` / ``step`` are the agent's lifetime
    counters (games finished, moves made); ``elapsed`` is lifetime training seconds; ``progress`` is the
    fraction of this call's budget used (0..1). ``board`` (optional) is a board being played now, for
    live display; ``game`` (optional) the finished game's trajectory, for the store.
    """

    kind: str
    episode: int
    step: int
    elapsed: float
    metrics: Mapping[str, float]
    progress: float = 0.0
    message: str = ""
    board: np.ndarray | None = None
    game: GameTrace | None = None


#: The largest episode or step count a budget may name: what SQLite's integers hold.
MAX_COUNT = 2**63 - 1


@dataclass(frozen=True)
class Budget:
    """How much to train in one call: any of episodes, moves (steps), seconds and CPU-seconds; the first
    reached ends it.

    ``cpu_seconds`` is this process's CPU time (every thread's, ``time.process_time``) since the call
    started: a budget that means the same on a busy shared machine as on an idle one, and that a
    2-thread learner spends twice as fast as wall time.
    """

    episodes: int | None = None
    steps: int | None = None
    seconds: float | None = None
    cpu_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.episodes is None and self.steps is None and self.seconds is None and self.cpu_seconds is None:
            raise ValueError("a training budget needs episodes, steps, seconds or cpu_seconds")
        for name in ("episodes", "steps", "seconds", "cpu_seconds"):
            v = getattr(self, name)
            if v is None:
                continue
            if name in ("seconds", "cpu_seconds"):
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                kind = "a finite number of seconds"
            else:
                ok = isinstance(v, (int, np.integer)) and not isinstance(v, bool) and bool(v <= MAX_COUNT)
                kind = f"a whole number up to {MAX_COUNT:,}"
            if not ok:
                raise ValueError(f"budget {name} must be {kind}, got {v!r}")
            if v <= 0:
                raise ValueError(f"budget {name} must be > 0, got {v}")

    def progress(self, episodes: int, steps: int, seconds: float, cpu_seconds: float = 0.0) -> float:
        """Fraction used (the largest of the ratios), clipped to [0, 1]."""
        used = (episodes, steps, seconds, cpu_seconds)
        limits = (self.episodes, self.steps, self.seconds, self.cpu_seconds)
        parts = [u / limit for u, limit in zip(used, limits) if limit]
        return float(min(1.0, max(parts))) if parts else 0.0

    def done(self, episodes: int, steps: int, seconds: float, cpu_seconds: float = 0.0) -> bool:
        """Whether the budget is used after ``episodes`` games, ``steps`` moves, ``seconds`` and
        ``cpu_seconds`` of training in this call: the first limit reached ends it (a limit left None
        never does; callers that measure no CPU time leave ``cpu_seconds`` 0)."""
        used = (episodes, steps, seconds, cpu_seconds)
        limits = (self.episodes, self.steps, self.seconds, self.cpu_seconds)
        return any(limit is not None and u >= limit for u, limit in zip(used, limits))


class Control:
    """Pause / resume / stop, shared between a training loop and whoever drives it (GUI, CLI, tests).

    Loops call :meth:`checkpoint` between steps: it blocks while paused and returns False once a stop
    was asked for (the loop then returns, leaving the agent in a consistent, saveable state).
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        self._stop.set()
        self._running.set()  # wake a paused loop so that it can see the stop

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def checkpoint(self) -> bool:
        """Block while paused; True = carry on, False = stop now."""
        while not self._running.wait(0.05):
            if self._stop.is_set():
                return False
        return not self._stop.is_set()


@dataclass
class TrainContext:
    """What a training loop may need from outside the agent: where the data is, how to parallelise."""

    data_dir: Path | None = None
    workers: int = 1
    backend: str = "local"  # "local" processes or "ray"
    ray_address: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Clock:
    """Tracks elapsed training time (wall and this process's CPU) for one ``train`` call on top of the
    agent's lifetime seconds."""

    def __init__(self, counters: Counters) -> None:
        self.counters = counters
        self.start_seconds = counters.seconds
        self.start_cpu_seconds = counters.cpu_seconds
        self.t0 = time.perf_counter()
        self.cpu0 = time.process_time()

    def tick(self) -> float:
        """Update lifetime seconds and CPU-seconds; return lifetime seconds."""
        self.counters.seconds = self.start_seconds + self.call_seconds
        self.counters.cpu_seconds = self.start_cpu_seconds + self.call_cpu_seconds
        return self.counters.seconds

    @property
    def call_seconds(self) -> float:
        return time.perf_counter() - self.t0

    @property
    def call_cpu_seconds(self) -> float:
        """CPU time of every thread of this process since the call started (a Budget's cpu_seconds)."""
        return time.process_time() - self.cpu0


# ---------------------------------------------------------------------------------------------- agent


class Agent:
    """Base class of every agent.

    A subclass sets ``name``, ``config_cls`` and ``description``, and overrides :meth:`move_values`
    (or :meth:`act`). A learner also sets ``trainable = True`` and overrides :meth:`train`,
    :meth:`get_state` and :meth:`set_state`. Checkpoint I/O is shared (:mod:`agents.checkpoint`).
    """

    #: The registry knows the contract's root class by this marker (agents.registry.contract_root).
    __studio2048_agent_root__: ClassVar[bool] = True
    name: ClassVar[str] = ""
    config_cls: ClassVar[type[AgentConfig]] = AgentConfig
    description: ClassVar[str] = ""
    trainable: ClassVar[bool] = False
    #: what train() emits beyond the standard metrics, and how to draw it (agents.metrics.MetricInfo)
    metrics: ClassVar[tuple[MetricInfo, ...]] = ()
    #: names derived from ``metrics`` (kind "loss"; kinds "schedule" / "evaluation"), for older callers
    loss_metrics: ClassVar[tuple[str, ...]] = ()
    schedule_metrics: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        complete_declarations(cls)

    #: knob values that make one training step and one move quick (tiny networks, few simulations): what
    #: ``check-agent`` (agents.conformance) and the smoke tests run the agent with; any knob not named
    #: keeps its default
    smoke_config: ClassVar[Mapping[str, Any]] = {}

    #: plays its training games in parallel (TrainContext workers / backend / Ray address matter)
    parallel_play: ClassVar[bool] = False
    #: what :meth:`move_values` returns, for hints a player reads (:mod:`agents.hints`): ``"points"``
    #: (expected future score: a gap is points given up), ``"share"`` (probabilities or visit shares
    #: summing to 1), or ``"rank"`` (any other scale: only the order and relative gaps mean something)
    value_kind: ClassVar[str] = "rank"
    #: :meth:`review_values` gives each move's value in **points** (the score still to come, a game's
    #: end seen one move ahead) although :attr:`value_kind` is not "points": the game review can grade
    #: with this agent (an actor-critic's critic, looked one move ahead and mapped to points)
    reviews_in_points: ClassVar[bool] = False
    #: how the game review sets this agent to search ``depth`` plies: the config knob it sets (None: the
    #: agent has no search depth), the depth-by-free-cells knob it clears (it would override the depth),
    #: and the knobs a shipped calibration was fitted at (changed, the shipped fit does not apply)
    review_depth_knob: ClassVar[str | None] = None
    review_policy_knob: ClassVar[str | None] = None
    review_fit_knobs: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self, config: AgentConfig | None = None, rules: Rules | None = None, seed: int | None = None
    ):
        self.config = config if config is not None else self.config_cls()
        if not isinstance(self.config, self.config_cls):
            raise TypeError(
                f"{self.name} takes a {self.config_cls.__name__}, got {type(self.config).__name__}"
            )
        self.rules = rules if rules is not None else Rules()
        reason = self.unsupported_reason(self.rules)
        if reason:
            raise ValueError(f"{self.name} cannot play these rules: {reason}")
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.counters = Counters()

    # ------------------------------------------------------------------ rules
    @classmethod
    def unsupported_reason(cls, rules: Rules) -> str | None:
        """None when the agent can play ``rules``; otherwise why not (e.g. "n-tuple networks need 4x4")."""
        return None

    # ------------------------------------------------------------------ play
    def move_values(self, game: Game) -> dict[Direction, float]:
        """A value per **legal** move (higher is better): hints in the GUI, "why this move"."""
        raise NotImplementedError(f"{self.name} does not rate moves")

    def review_values(self, game: Game) -> dict[Direction, float]:
        """A value per legal move as the game review reads it: :meth:`move_values`, except for an agent
        that :attr:`reviews_in_points` (it returns points here)."""
        return self.move_values(game)

    def act(self, game: Game) -> Direction:
        """The move to play: always legal. Default: the best of :meth:`move_values`, ties by action order."""
        # Checked here, where they are used: keys that are no Direction, a value that is no number, an
        # illegal move are the agent's fault, named (agents.guard), not an internal error further on.
        # Non-finite values pass: a diverged network must still pick a legal move (best_move ranks
        # them last); the arena and check-agent, which call agents.guard.play_move, refuse them.
        values = checked_values(self, game, self.move_values(game), "move_values", finite=False)
        move = best_move(values)
        if move is None:
            raise ValueError("no legal move: the game is over")
        return move

    # ------------------------------------------------------------------ training
    def check_can_train(self, context: TrainContext | None) -> None:
        """Raise ConfigError(field, why) when training cannot start at all in ``context`` (no data to
        learn from); checked before a run is made, so a refusal leaves nothing in the store."""

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        """Train within ``budget``, yielding metric events; returns when the budget is used or on stop."""
        raise NotImplementedError(f"{self.name} does not learn")

    # ------------------------------------------------------------------ state
    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Arrays (weights, optimiser moments, buffers worth keeping) and JSON-able metadata."""
        return {}, {}

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        """Inverse of :meth:`get_state`."""

    def save(self, path: str | Path) -> Path:
        """Write a checkpoint of this agent to ``path`` (``.npz`` added when missing), atomically: its
        config, rules, counters, seed and :meth:`get_state` (:func:`agents.checkpoint.save_checkpoint`).
        The path written."""
        return save_checkpoint(self, path)

    @classmethod
    def load(cls, path: str | Path) -> Agent:
        """Load a checkpoint of this agent (``Agent.load`` accepts any agent's)."""
        agent = load_checkpoint(path)
        if cls is not Agent and not isinstance(agent, cls):
            raise ValueError(f"{Path(path).name} is a checkpoint of agent {agent.name!r}, not {cls.name!r}")
        return agent


def legal_values(game: Game, values: np.ndarray) -> dict[Direction, float]:
    """Keep ``values`` (one per action, in action order) of the legal moves only."""
    mask = game.legal_mask()
    return {d: float(values[d]) for d in DIRECTIONS if mask[d]}
