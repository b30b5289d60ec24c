"""The evaluation arena: N games of one agent, in K processes, summarised like seed 004's results table.

Game ``i`` of an evaluation with seed ``S`` always gets the same spawn seed and the same agent random
stream (both derived from ``(S, i)``), whichever worker plays it, so the results do not depend on
the number of workers. Workers are separate processes (``spawn`` context: the same on every
platform, and no inherited locks or threads); they send finished games back to the parent, which
alone writes them to the store (``source="evaluation"``), keeping one writer.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.base import Agent
from agents.spec import AgentSpec
from engine import Game, Rules
from engine.records import GameTrace, play_recorded

#: The most games one evaluation plays (a day of 1-ply n-tuple play; far past any arena figure).
MAX_GAMES = 10_000_000
#: Max-tile thresholds of the distribution (seed 004's table, extended to 65536).
TILE_THRESHOLDS: tuple[int, ...] = tuple(2**k for k in range(5, 17))


@dataclass(frozen=True)
class GameOutcome:
    """One finished evaluation game: ``seconds`` is the agent's thinking time (act calls) only."""

    index: int
    seed: int
    score: int
    moves: int
    max_tile: int
    seconds: float
    trace: GameTrace | None = None


def game_seeds(seed: int, index: int) -> tuple[int, np.random.Generator]:
    """The spawn seed and the agent's random generator of game ``index`` of an evaluation seeded ``seed``."""
    seq = np.random.SeedSequence([int(seed) & 0xFFFFFFFFFFFFFFFF, int(index)])
    spawn_seed = int(seq.generate_state(1, np.uint64)[0] >> np.uint64(1))  # a non-negative int63
    return spawn_seed, np.random.default_rng(seq.spawn(1)[0])


def warm_up(agent: Agent, rules: Rules) -> None:
    """One untimed move, so one-time costs (loading jitted kernels, building tables) are not counted as
    thinking time. Every game then starts from its own seeds, so this changes no result."""
    agent.act(Game(seed=0, rules=rules))


def play_game(agent: Agent, rules: Rules, seed: int, index: int, *, record: bool = False) -> GameOutcome:
    """Play game ``index`` of an evaluation to the end."""
    spawn_seed, agent.rng = game_seeds(seed, index)
    game = Game(seed=spawn_seed, rules=rules)
    trace = GameTrace.start(game) if record else None
    thinking = 0.0
    while not game.game_over:
        t0 = time.perf_counter()
        move = agent.act(game)
        thinking += time.perf_counter() - t0
        if trace is not None:
            play_recorded(game, move, trace)
        else:
            game.step(move)
    return GameOutcome(index, spawn_seed, game.score, game.moves, game.max_tile, thinking, trace)


@dataclass(frozen=True)
class EvalResult:
    """Per-game arrays (in game order) and the summary figures derived from them."""

    label: str
    agent: str
    checkpoint: str | None
    config: dict[str, Any]
    rules: Rules
    seed: int
    workers: int
    scores: np.ndarray
    moves: np.ndarray
    max_tiles: np.ndarray
    seconds: np.ndarray  # thinking time per game
    wall_seconds: float
    game_ids: tuple[int, ...] = ()

    @property
    def games(self) -> int:
        return int(self.scores.size)

    @property
    def mean_score(self) -> float:
        return float(self.scores.mean())

    @property
    def median_score(self) -> float:
        return float(np.median(self.scores))

    @property
    def max_score(self) -> int:
        return int(self.scores.max())

    @property
    def moves_per_game(self) -> float:
        return float(self.moves.mean())

    @property
    def seconds_per_move(self) -> float:
        return float(self.seconds.sum() / max(1, int(self.moves.sum())))

    def tile_at_least(self) -> dict[int, float]:
        """Share of games whose max tile is >= each threshold (seed 004's table, cumulative)."""
        return {t: float(np.mean(self.max_tiles >= t)) for t in TILE_THRESHOLDS}

    def tile_exactly(self) -> dict[int, float]:
        """Share of games whose max tile is exactly each tile value (seed 004's table as printed there)."""
        values, counts = np.unique(self.max_tiles, return_counts=True)
        return {int(v): float(c) / self.games for v, c in zip(values, counts)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "agent": self.agent,
            "checkpoint": self.checkpoint,
            "config": self.config,
            "rules": self.rules.to_dict(),
            "games": self.games,
            "seed": self.seed,
            "workers": self.workers,
            "mean_score": self.mean_score,
            "median_score": self.median_score,
            "max_score": self.max_score,
            "moves_per_game": self.moves_per_game,
            "seconds_per_move": self.seconds_per_move,
            "wall_seconds": self.wall_seconds,
            "max_tile_at_least": {str(k): v for k, v in self.tile_at_least().items()},
            "max_tile_exactly": {str(k): v for k, v in self.tile_exactly().items()},
            "game_ids": list(self.game_ids),
        }


# --------------------------------------------------------------------------------------- workers

_worker_agent: Agent | None = None


def _init_worker(spec: AgentSpec, rules: Rules) -> None:
    global _worker_agent
    _worker_agent = spec.build()
    warm_up(_worker_agent, rules)


def _worker_play(job: tuple[Rules, int, int, bool]) -> GameOutcome:
    assert _worker_agent is not None, "worker not initialised"
    rules, seed, index, record = job
    return play_game(_worker_agent, rules, seed, index, record=record)


# ------------------------------------------------------------------------------------------- API


def evaluate(
    spec: AgentSpec,
    games: int,
    seed: int,
    workers: int = 1,
    store: Any = None,
    progress: Callable[[int, int, GameOutcome], None] | None = None,
) -> EvalResult:
    """Play ``games`` games of ``spec`` (seeded by ``seed``) in ``workers`` processes.

    ``store`` (an :class:`engine.store.GameStore`, optional): each game is recorded there as it
    finishes, ``source="evaluation"``. ``progress(done, total, outcome)`` is called per game.
    """
    if not 1 <= games <= MAX_GAMES:
        # Checked before anything is built: a mistyped count asked for gigabytes of job lists.
        raise ValueError(f"games must be between 1 and {MAX_GAMES:,}, got {games:,}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    agent = spec.build()  # in the parent too: a bad spec fails here, clearly, before any process starts
    rules = agent.rules if spec.rules is None else spec.rules
    record = store is not None
    outcomes: list[GameOutcome] = []
    game_ids: dict[int, int] = {}
    t0 = time.perf_counter()

    def collect(outcome: GameOutcome) -> None:
        if store is not None and outcome.trace is not None:
            game_ids[outcome.index] = store.record_trace(
                outcome.trace, "evaluation", agent=agent.name, checkpoint=spec.checkpoint
            )
        # Keep no boards once stored: a long game's layouts would stay in memory to the end.
        outcomes.append(dataclasses.replace(outcome, trace=None))
        if progress is not None:
            progress(len(outcomes), games, outcome)

    jobs = ((rules, seed, i, record) for i in range(games))
    n_proc = min(workers, games)
    if n_proc == 1:
        warm_up(agent, rules)
        for _rules, _seed, i, rec in jobs:
            collect(play_game(agent, rules, seed, i, record=rec))
    else:
        ctx = mp.get_context("spawn")
        with ctx.Pool(n_proc, initializer=_init_worker, initargs=(spec, rules)) as pool:
            for outcome in pool.imap_unordered(_worker_play, jobs, chunksize=1):
                collect(outcome)
    outcomes.sort(key=lambda o: o.index)
    return EvalResult(
        label=spec.display,
        agent=agent.name,
        checkpoint=spec.checkpoint,
        config=agent.config.to_dict(),
        rules=rules,
        seed=seed,
        workers=n_proc,
        scores=np.array([o.score for o in outcomes], dtype=np.int64),
        moves=np.array([o.moves for o in outcomes], dtype=np.int64),
        max_tiles=np.array([o.max_tile for o in outcomes], dtype=np.int64),
        seconds=np.array([o.seconds for o in outcomes], dtype=np.float64),
        wall_seconds=time.perf_counter() - t0,
        game_ids=tuple(game_ids[i] for i in sorted(game_ids)),
    )
