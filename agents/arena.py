"""The evaluation arena: N games of one agent, in K processes, summarised like seed 004's results table.

Game ``i`` of an evaluation with seed ``S`` always gets the same spawn seed and the same agent random
stream (both derived from ``(S, i)``), whichever worker plays it, so the results do not depend on
the number of workers, nor on where they run. Workers are separate processes (``spawn`` context: the
same on every platform, and no inherited locks or threads) or, with ``backend="ray"``, Ray actors on
this machine or a cluster; they send finished games back to the parent, which alone writes them to
the store (``source="evaluation"``), keeping one writer (an actor on another machine never sees the
SQLite file).

The summary figures (mean with its 95 % interval, median, "max tile reached at least T") are computed
here once, by :class:`EvalResult` and the functions beside it, for ``eval`` and the Arena tab alike.
While games play, ``evaluate`` reports snapshots of the finished games and the moves played so far
(games in flight included) for a live table and an ETA; ``should_stop`` ends it early, keeping what
finished.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import multiprocessing as mp
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.base import Agent
from agents.guard import AgentFault, agent_name, play_move
from agents.play_only import set_play_only
from agents.ray_util import RAY_TASK_CPUS
from agents.spec import AgentSpec
from agents.threads import PLAY_TORCH_THREADS, cpu_share, limit_threads
from engine import Game, Rules
from engine.records import GameTrace, play_recorded

if TYPE_CHECKING:
    from engine.store import GameStore

log = logging.getLogger(__name__)

#: The most games one evaluation plays (a day of 1-ply n-tuple play; far past any arena figure).
MAX_GAMES = 10_000_000
#: Max-tile thresholds of the distribution (seed 004's table, extended to 65536).
TILE_THRESHOLDS: tuple[int, ...] = tuple(2**k for k in range(5, 17))
#: z of a two-sided 95 % normal interval.
Z95 = 1.96
#: How often (seconds) ``evaluate`` reports a snapshot and polls ``should_stop`` while games play.
LIVE_EVERY = 0.25
#: Worker processes add their moves to the shared count in steps of this many (and at each game's end).
_MOVES_STEP = 32
#: Seconds of games a job hands a worker at most, once their length is known (see Chunker).
JOB_SECONDS = 0.05
#: Games a job hands a worker at most.
MAX_JOB_GAMES = 256
#: Seconds a worker that built its agent in EvalPool.prepare waits for the others to have built theirs.
PREPARE_TIMEOUT_S = 600.0
#: Where the games play: worker processes on this machine, or Ray actors.
BACKENDS: tuple[str, ...] = ("local", "ray")
#: Seconds one move may take before the agent is failed for it (``evaluate(move_limit_s=...)``): far
#: past any built-in agent's deepest search, short of an evaluation that looks hung.
MOVE_LIMIT_S = 60.0


class WorkerError(ChildProcessError):
    """A worker process could not play: it could not build its agent, or it died mid-game."""


class Stopped(Exception):
    """A game given up because the evaluation was asked to stop (never leaves :func:`evaluate`)."""


# --------------------------------------------------------------------------------------- figures


def mean_ci95(scores: Sequence[float] | np.ndarray) -> tuple[float, float | None]:
    """Mean and the half-width of its 95 % interval, normal approximation ``1.96 * s / sqrt(n)``
    (``s``: the sample standard deviation). The half-width is None under two games; NaN mean for none."""
    x = np.asarray(scores, dtype=np.float64)
    if x.size == 0:
        return math.nan, None
    mean = float(x.mean())
    if x.size < 2:
        return mean, None
    return mean, float(Z95 * x.std(ddof=1) / math.sqrt(x.size))


def mean_ci_text(mean: float, half: float | None) -> str:
    """``"12,345 ± 678"`` (no ``±`` part without an interval, ``"-"`` without games)."""
    if math.isnan(mean):
        return "-"
    return f"{mean:,.0f}" if half is None else f"{mean:,.0f} ± {half:,.0f}"


def reached_at_least(max_tiles: Sequence[int] | np.ndarray, thresholds: Iterable[int]) -> dict[int, float]:
    """Share of games whose max tile is >= each threshold (seed 004's table: "reached at least")."""
    tiles = np.asarray(max_tiles, dtype=np.int64)
    n = tiles.size
    return {int(t): (float(np.count_nonzero(tiles >= t)) / n if n else 0.0) for t in thresholds}


def tile_thresholds(*max_tiles: Sequence[int] | np.ndarray) -> tuple[int, ...]:
    """The rows of a "reached at least" table for these games: powers of two from 32 (seed 004's first
    row; lower when a game ended below it, as on small boards) up to the largest max tile reached."""
    seen = [int(v) for arr in max_tiles for v in np.asarray(arr).ravel() if int(v) > 0]
    if not seen:
        return ()
    low = min(32, 1 << (min(seen).bit_length() - 1))
    high = max(seen)
    out, t = [], low
    while t <= high:
        out.append(t)
        t *= 2
    return tuple(out)


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
    #: The thread counts of the process that played it (:func:`agents.threads.threads_report`); None when
    #: this process played it (it runs with whatever the caller set).
    threads: dict[str, Any] | None = None


def game_seeds(seed: int, index: int) -> tuple[int, np.random.Generator]:
    """The spawn seed and the agent's random generator of game ``index`` of an evaluation seeded ``seed``."""
    seq = np.random.SeedSequence([int(seed) & 0xFFFFFFFFFFFFFFFF, int(index)])
    spawn_seed = int(seq.generate_state(1, np.uint64)[0] >> np.uint64(1))  # a non-negative int63
    return spawn_seed, np.random.default_rng(seq.spawn(1)[0])


def warm_up(agent: Agent, rules: Rules) -> None:
    """One untimed move, so one-time costs (loading jitted kernels, building tables) are not counted as
    thinking time. Every game then starts from its own seeds, so this changes no result. Checked like
    every move (:func:`agents.guard.play_move`): a faulty agent fails here, named."""
    try:
        play_move(agent, Game(seed=0, rules=rules))
    except AgentFault as e:
        e.where = e.where or "its warm-up move"
        raise


def play_game(
    agent: Agent,
    rules: Rules,
    seed: int,
    index: int,
    *,
    record: bool = False,
    on_move: Callable[[], bool] | None = None,
    move_limit_s: float | None = None,
) -> GameOutcome:
    """Play game ``index`` of an evaluation to the end.

    ``on_move()`` is called after each move; when it returns True the game is given up
    (:class:`Stopped` is raised). Every move is checked (:func:`agents.guard.play_move`): an illegal
    one, a value that is not a finite number, an exception of the agent's, or a move slower than
    ``move_limit_s`` raises :class:`agents.guard.AgentFault` naming the agent, the move and the game."""
    spawn_seed, agent.rng = game_seeds(seed, index)
    game = Game(seed=spawn_seed, rules=rules)
    trace = GameTrace.start(game) if record else None
    thinking = 0.0
    while not game.game_over:
        t0 = time.perf_counter()
        try:
            move = play_move(agent, game)
        except AgentFault as e:
            e.where = f"move {game.moves} of game {index}"
            raise
        took = time.perf_counter() - t0
        if move_limit_s is not None and took > move_limit_s:
            # Seen once the move is made (a call cannot be cut short in this thread), so an agent that
            # never returns is the caller's to stop; one that is only slow is named here.
            raise AgentFault(
                agent_name(agent),
                "act",
                f"took {took:.1f} s over one move; the limit is {move_limit_s:g} s",
                f"move {game.moves} of game {index}",
            )
        thinking += took
        if trace is not None:
            play_recorded(game, move, trace)
        else:
            game.step(move)
        if on_move is not None and on_move():
            raise Stopped(f"game {index} given up after {game.moves} moves")
    return GameOutcome(index, spawn_seed, game.score, game.moves, game.max_tile, thinking, trace)


@dataclass(frozen=True)
class EvalResult:
    """Per-game arrays (in game order) and the summary figures derived from them.

    A snapshot while games still play, or an evaluation stopped early, holds the finished games only:
    ``planned`` is how many were asked for, ``cancelled`` says it was stopped before the end.
    """

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
    planned: int = 0
    cancelled: bool = False
    #: What each worker process (or Ray actor) ran with, one :func:`agents.threads.threads_report` each,
    #: in the order they first finished a game; empty when the games played in this process.
    worker_threads: tuple[dict[str, Any], ...] = ()
    #: Why the agent was stopped, one line naming it (an :class:`agents.guard.AgentFault`: an illegal
    #: move, an exception, a non-finite value, a move over the limit); None when it played fairly.
    #: The games it finished before are kept, but they are not its result.
    failure: str | None = None

    @property
    def games(self) -> int:
        return int(self.scores.size)

    @property
    def complete(self) -> bool:
        """Every planned game finished (a snapshot under way, a cancelled or failed evaluation is not)."""
        return not self.cancelled and self.failure is None and self.games >= self.planned

    @property
    def mean_score(self) -> float:
        return mean_ci95(self.scores)[0]

    @property
    def score_ci95(self) -> float | None:
        """Half-width of the mean score's 95 % interval (``1.96 * s / sqrt(n)``); None under two games."""
        return mean_ci95(self.scores)[1]

    @property
    def score_std(self) -> float | None:
        """Sample standard deviation of the scores; None under two games."""
        return float(self.scores.std(ddof=1)) if self.games >= 2 else None

    @property
    def mean_text(self) -> str:
        """``"12,345 ± 678"``: the mean and its 95 % interval, as the window and ``eval`` print it."""
        return mean_ci_text(*mean_ci95(self.scores))

    @property
    def median_score(self) -> float:
        return float(np.median(self.scores)) if self.games else math.nan

    @property
    def max_score(self) -> int:
        return int(self.scores.max()) if self.games else 0

    @property
    def best_tile(self) -> int:
        return int(self.max_tiles.max()) if self.games else 0

    @property
    def moves_per_game(self) -> float:
        return float(self.moves.mean()) if self.games else math.nan

    @property
    def seconds_per_move(self) -> float:
        return float(self.seconds.sum() / max(1, int(self.moves.sum())))

    def tile_at_least(self, thresholds: Iterable[int] = TILE_THRESHOLDS) -> dict[int, float]:
        """Share of games whose max tile is >= each threshold (seed 004's table, cumulative)."""
        return reached_at_least(self.max_tiles, thresholds)

    def tile_exactly(self) -> dict[int, float]:
        """Share of games whose max tile is exactly each tile value."""
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
            "planned_games": self.planned,
            "cancelled": self.cancelled,
            "seed": self.seed,
            "workers": self.workers,
            "mean_score": self.mean_score,
            "mean_score_ci95": self.score_ci95,
            "score_std": self.score_std,
            "median_score": self.median_score,
            "max_score": self.max_score,
            "moves_per_game": self.moves_per_game,
            "seconds_per_move": self.seconds_per_move,
            "wall_seconds": self.wall_seconds,
            "max_tile_at_least": {str(k): v for k, v in self.tile_at_least().items()},
            "max_tile_exactly": {str(k): v for k, v in self.tile_exactly().items()},
            "game_ids": list(self.game_ids),
            "worker_threads": [dict(t) for t in self.worker_threads],
            "failure": self.failure,
        }


class _Tally:
    """The finished games of one evaluation, turned into :class:`EvalResult` snapshots on demand."""

    def __init__(
        self, spec: AgentSpec, agent: Agent, rules: Rules, seed: int, workers: int, games: int
    ) -> None:
        self.head: dict[str, Any] = {
            "label": spec.display,
            "agent": agent.name,
            "checkpoint": spec.checkpoint,
            "config": agent.config.to_dict(),
            "rules": rules,
            "seed": seed,
            "workers": workers,
            "planned": games,
        }
        self.planned = games
        self.outcomes: list[GameOutcome] = []
        self.game_ids: dict[int, int] = {}
        self.threads: dict[int, dict[str, Any]] = {}  # worker pid -> its threads report
        self.t0 = time.perf_counter()
        self._snap: EvalResult | None = None

    def add(self, outcome: GameOutcome, game_id: int | None) -> None:
        # Keep no boards once stored: a long game's layouts would stay in memory to the end.
        self.outcomes.append(dataclasses.replace(outcome, trace=None, threads=None))
        if outcome.threads is not None:
            self.threads.setdefault(int(outcome.threads.get("pid", 0)), dict(outcome.threads))
        if game_id is not None:
            self.game_ids[outcome.index] = game_id
        self._snap = None

    def result(self, cancelled: bool = False, failure: str | None = None) -> EvalResult:
        """The games finished so far, in game order (cached until the next game)."""
        wall = time.perf_counter() - self.t0
        if self._snap is not None and (self._snap.cancelled, self._snap.failure) == (cancelled, failure):
            return dataclasses.replace(self._snap, wall_seconds=wall)
        outs = sorted(self.outcomes, key=lambda o: o.index)
        self._snap = EvalResult(
            **self.head,
            scores=np.array([o.score for o in outs], dtype=np.int64),
            moves=np.array([o.moves for o in outs], dtype=np.int64),
            max_tiles=np.array([o.max_tile for o in outs], dtype=np.int64),
            seconds=np.array([o.seconds for o in outs], dtype=np.float64),
            wall_seconds=wall,
            game_ids=tuple(self.game_ids[i] for i in sorted(self.game_ids)),
            cancelled=cancelled,
            worker_threads=tuple(self.threads.values()),
            failure=failure,
        )
        return self._snap


class EtaModel:
    """Time left of an arena run (contestants one after another, ``games`` each), from moves played.

    A game's length grows with the agent's strength, so games done is a poor clock. For the contestant
    playing: moves per game so far (finished games) times its games gives the moves it will play;
    what is left of them at its move rate (moves played so far, games in flight included, per second)
    is its time left. A contestant still waiting is guessed at the seconds per game seen so far
    (the finished contestants' and the current one's estimate), until its own games tell.
    """

    def __init__(self, games: int, contestants: int) -> None:
        self.games = int(games)
        self.contestants = int(contestants)
        self.finished_seconds: list[float] = []  # wall seconds of each finished contestant
        self.current = 0
        self.done = 0
        self.finished_moves = 0
        self.moves_played = 0
        self.elapsed = 0.0

    def update(
        self, contestant: int, done: int, finished_moves: int, moves_played: int, elapsed: float
    ) -> None:
        """Contestant ``contestant`` has finished ``done`` games of ``finished_moves`` moves and played
        ``moves_played`` moves in all (games in flight too) in ``elapsed`` seconds."""
        self.current = int(contestant)
        self.done, self.finished_moves = int(done), int(finished_moves)
        self.moves_played, self.elapsed = max(int(moves_played), int(finished_moves)), float(elapsed)

    def finish(self, contestant: int, wall_seconds: float) -> None:
        """Contestant ``contestant`` ended after ``wall_seconds``; the next one starts from nothing."""
        while len(self.finished_seconds) <= contestant:
            self.finished_seconds.append(0.0)
        self.finished_seconds[contestant] = float(wall_seconds)
        self.update(contestant + 1, 0, 0, 0, 0.0)

    def current_left(self) -> float | None:
        """Seconds left of the contestant playing; None before its first game ends (no estimate yet)."""
        if self.done <= 0 or self.moves_played <= 0 or self.elapsed <= 0:
            return None
        per_game = self.finished_moves / self.done
        total_moves = max(per_game * self.games, float(self.moves_played))
        rate = self.moves_played / self.elapsed
        return (total_moves - self.moves_played) / rate

    def seconds_left(self) -> float | None:
        """Seconds left of the whole run; None while nothing says how long a game takes."""
        waiting = max(0, self.contestants - self.current - 1)
        known = [s / self.games for s in self.finished_seconds if s > 0]
        left = self.current_left()
        if self.current < self.contestants:
            if left is not None:
                known.append((self.elapsed + left) / self.games)
            elif not known:
                return None
            else:  # the current contestant has no finished game yet: guess it like a waiting one
                waiting += 1
                left = 0.0
        else:
            left = 0.0
        if waiting and not known:
            return None
        per_game = sum(known) / len(known) if known else 0.0
        return left + waiting * self.games * per_game

    def fraction(self) -> float:
        """Share of the run's time gone (0..1): what a progress bar shows; games done until an estimate."""
        gone = sum(self.finished_seconds) + self.elapsed
        left = self.seconds_left()
        if left is None or gone + left <= 0:
            total = self.games * self.contestants
            return min(1.0, (self.games * self.current + self.done) / total) if total else 0.0
        return min(1.0, gone / (gone + left))


# --------------------------------------------------------------------------------------- workers

_worker_moves: Any = None  # a shared multiprocessing.Value("q"): moves played by all workers
_worker_threads_n = 1  # this worker's share of the cores
_worker_barrier: Any = None  # a multiprocessing.Barrier of the pool's workers (see EvalPool.prepare)
_worker_key: str | None = None  # the spec (and rules) this worker's agent was built from
_worker_agent: Agent | None = None
_worker_error: str | None = None  # why this worker could not build that agent (said by every game)
_worker_fault: AgentFault | None = None  # the agent's fault in its warm-up move (raised by every game)
_worker_threads: dict[str, Any] | None = None  # this worker's threads report, sent with every game


def _init_worker(moves: Any, threads: int, barrier: Any) -> None:
    global _worker_moves, _worker_threads_n, _worker_barrier, _worker_threads
    _worker_moves, _worker_threads_n, _worker_barrier = moves, threads, barrier
    set_play_only()  # its agents only play: torch learners skip their optimiser (a CPU-second of start)
    # This process's share of the cores, set before any agent's imports: torch reads the environment
    # when it loads (and again after each build, for the pools the build loaded).
    _worker_threads = limit_threads(threads, PLAY_TORCH_THREADS)


def _worker_agent_for(spec: AgentSpec, rules: Rules) -> Agent:
    """This worker's agent for ``spec``: built (and warmed up) on its first game, kept for the next."""
    global _worker_key, _worker_agent, _worker_error, _worker_threads, _worker_fault
    key = f"{spec.key()}|{rules.to_dict()}"
    if key != _worker_key:
        _worker_key, _worker_agent, _worker_error, _worker_fault = key, None, None, None
        try:
            agent = spec.build()
            _worker_threads = limit_threads(_worker_threads_n, PLAY_TORCH_THREADS)
            warm_up(agent, rules)
            _worker_agent = agent
        except AgentFault as e:  # the agent's own fault: the parent fails that agent, by name
            _worker_fault = e
        except Exception as e:
            # Kept, not raised at once: every game of this spec reports it, as a one-line error; the
            # traceback goes to the log (the parent only ever sees that line).
            log.exception("a worker process could not build %s", spec.display)
            _worker_error = f"{type(e).__name__}: {e}"
    if _worker_fault is not None:
        raise _worker_fault
    if _worker_agent is None:
        raise WorkerError(f"a worker process could not build the agent: {_worker_error or 'not initialised'}")
    return _worker_agent


def _worker_prepare(spec: AgentSpec, rules: Rules) -> dict[str, Any] | None:
    """Build the agent, then wait for every other worker to have done so (one call per worker: a worker
    held here takes no second one); this worker's threads report."""
    try:
        _worker_agent_for(spec, rules)
    finally:
        _worker_barrier.wait(PREPARE_TIMEOUT_S)
    return _worker_threads


def _add_moves(n: int) -> None:
    if _worker_moves is not None and n:
        with _worker_moves.get_lock():
            _worker_moves.value += n


def _worker_play(
    job: tuple[AgentSpec, Rules, int, Sequence[int], bool, float | None],
) -> tuple[list[GameOutcome], float]:
    """Play games ``indices`` of an evaluation, one after another: their outcomes and the wall seconds."""
    spec, rules, seed, indices, record, move_limit_s = job
    agent = _worker_agent_for(spec, rules)
    t0 = time.perf_counter()
    pending = 0

    def on_move() -> bool:
        nonlocal pending
        pending += 1
        if pending >= _MOVES_STEP:
            _add_moves(pending)
            pending = 0
        return False  # a worker is ended by the parent, never asked

    outcomes = []
    for index in indices:
        outcome = play_game(
            agent, rules, seed, index, record=record, on_move=on_move, move_limit_s=move_limit_s
        )
        _add_moves(pending)
        pending = 0
        outcomes.append(dataclasses.replace(outcome, threads=_worker_threads))
    return outcomes, time.perf_counter() - t0


class Chunker:
    """How many games each job hands a worker: one while games take long, more while they are short.

    A job costs the parent and the worker a fixed round trip (the games pickled both ways, a wake-up of
    each): a few hundred microseconds, as much as a whole random-agent game. Games are handed out in
    jobs of about :data:`JOB_SECONDS` each, from the seconds per game seen so far, so that the round
    trips cost a few percent at most; and never more than a share of what is left
    (``left / (2 * workers)``), so that the last jobs are short and no worker idles long while another
    plays out a large one at the end.
    """

    def __init__(self, workers: int, games: int) -> None:
        self.workers = workers
        self.left = games
        self.games_seen = 0
        self.seconds_seen = 0.0

    def played(self, games: int, seconds: float) -> None:
        self.games_seen += games
        self.seconds_seen += seconds

    def next_size(self) -> int:
        if self.games_seen == 0:
            size = 1  # nothing known yet: a game each (a slow agent's first games are not held back)
        else:
            per_game = max(self.seconds_seen / self.games_seen, 1e-6)
            size = max(1, int(JOB_SECONDS / per_game))
        size = max(1, min(size, self.left // (2 * self.workers), MAX_JOB_GAMES))
        size = min(size, self.left)
        self.left -= size
        return size


class EvalPool:
    """``workers`` spawned processes that play evaluation games, kept from one evaluation to the next.

    Starting a worker costs seconds (a Python process, numpy/numba, torch for the learners, the agent
    itself): an evaluation of several contestants (``eval --agent a --agent b``, the Arena tab) or a
    benchmark pays that once, not once per contestant. Each worker runs its math libraries on its share
    of the cores (:func:`agents.threads.cpu_share`), builds the agent of a spec on its first game of
    it and keeps it for the next. :meth:`prepare` builds an agent in every worker ahead of the games.

    The processes start on first use. A stopped or failed evaluation ends them (the games in flight are
    given up); the next one starts fresh ones. :meth:`close` (or leaving a ``with`` block) ends them.
    """

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = int(workers)
        self.threads = cpu_share(self.workers)
        self._ctx = mp.get_context("spawn")  # the same on every platform; no inherited locks or threads
        self._moves = self._ctx.Value("q", 0)
        self._executor: ProcessPoolExecutor | None = None

    @property
    def moves(self) -> int:
        """Moves played by the workers since the pool was made (games in flight included)."""
        return int(self._moves.value)

    @property
    def running(self) -> bool:
        return self._executor is not None

    def executor(self) -> ProcessPoolExecutor:
        if self._executor is None:
            barrier = self._ctx.Barrier(self.workers)
            self._executor = ProcessPoolExecutor(
                self.workers,
                mp_context=self._ctx,
                initializer=_init_worker,
                initargs=(self._moves, self.threads, barrier),
            )
        return self._executor

    def prepare(self, spec: AgentSpec, rules: Rules | None = None) -> list[dict[str, Any]]:
        """Start every worker and build ``spec``'s agent in each (the first game of it then starts at
        once); returns each worker's :func:`agents.threads.threads_report`. WorkerError when a worker
        cannot build it or dies."""
        if rules is None:
            rules = spec.rules if spec.rules is not None else spec.build().rules
        pool = self.executor()
        futures = [pool.submit(_worker_prepare, spec, rules) for _ in range(self.workers)]
        try:
            return [r for r in (_result_of(f) for f in futures) if r is not None]
        except BaseException:
            self.terminate()
            raise

    def terminate(self) -> None:
        """End the workers now, games in flight given up (the next use starts new ones)."""
        pool, self._executor = self._executor, None
        if pool is None:
            return
        # Python 3.14 has a public call for it; before, the pool's process table is the only handle.
        terminate_workers = getattr(pool, "terminate_workers", None)
        if terminate_workers is not None:
            terminate_workers()
        else:
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.terminate()

    def __enter__(self) -> EvalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _same_agent_spec(spec: AgentSpec, agent: Agent, folder: Path) -> AgentSpec:
    """The spec worker processes build: ``spec`` itself, or for a fresh agent with weights (a learner's
    untrained network, drawn at random when built) this process's ``agent`` saved in ``folder``, so that
    every worker plays the very network this one built, not one each of its own."""
    if spec.checkpoint is not None:
        return spec
    arrays, _ = agent.get_state()
    if not any(a.size for a in arrays.values()):  # no weights yet (search, baselines, an empty n-tuple net)
        return spec
    path = agent.save(folder / "agent.npz")
    return AgentSpec(spec.name, checkpoint=str(path), rules=spec.rules, target=spec.target, play=spec.play)


def _result_of(future: Future[Any]) -> Any:
    """A worker's answer; a dead worker is WorkerError (one line), not BrokenProcessPool."""
    try:
        return future.result()
    except BrokenProcessPool:
        raise WorkerError(
            "a worker process ended in the middle of its games (killed, or out of memory?)"
        ) from None


class _RayPlayer:
    """A Ray actor (see :func:`_ray_player_class`): one agent, built once on the actor's node as the local
    worker initialiser builds it, playing games by index. ``moves_played`` answers while a game plays
    (the actor runs two threads; the driver never gives it two games at once)."""

    def __init__(self, spec: AgentSpec, rules: Rules) -> None:
        limit_threads(RAY_TASK_CPUS)  # the actor's share: the CPUs Ray reserved for it
        set_play_only()  # an actor only plays: torch learners skip their optimiser
        self.agent = spec.build()
        self.threads = limit_threads(RAY_TASK_CPUS)
        self.rules = rules
        self.moves = 0
        warm_up(self.agent, rules)

    def play(self, seed: int, index: int, record: bool, move_limit_s: float | None = None) -> GameOutcome:
        def on_move() -> bool:
            self.moves += 1  # one int, read by the other thread: no lock needed under the GIL
            return False  # an actor is ended by the driver, never asked

        outcome = play_game(
            self.agent, self.rules, seed, index, record=record, on_move=on_move, move_limit_s=move_limit_s
        )
        return dataclasses.replace(outcome, threads=self.threads)

    def moves_played(self) -> int:
        return self.moves


def _ray_player_class(ray: Any) -> Any:
    # Made remote here, not at import: this module must not import Ray (seconds) for local play.
    return ray.remote(num_cpus=RAY_TASK_CPUS, max_concurrency=2)(_RayPlayer)


def _actor_spec(spec: AgentSpec) -> AgentSpec:
    """The spec as actors get it: a checkpoint path made absolute, since an actor's working directory
    is not the driver's (on a cluster the file must be at that path on every machine)."""
    if spec.checkpoint is None:
        return spec
    return dataclasses.replace(spec, checkpoint=str(Path(spec.checkpoint).resolve()))


# ------------------------------------------------------------------------------------------- API


def evaluate(
    spec: AgentSpec,
    games: int,
    seed: int,
    workers: int = 1,
    store: GameStore | None = None,
    progress: Callable[[int, int, GameOutcome], None] | None = None,
    *,
    should_stop: Callable[[], bool] | None = None,
    live: Callable[[EvalResult, int], None] | None = None,
    live_every: float = LIVE_EVERY,
    backend: str = "local",
    ray_address: str | None = None,
    pool: EvalPool | None = None,
    move_limit_s: float | None = MOVE_LIMIT_S,
) -> EvalResult:
    """Play ``games`` games of ``spec`` (seeded by ``seed``) in ``workers`` processes.

    A fault of the agent's while it plays (:class:`agents.guard.AgentFault`: an illegal move, a value
    that is not a finite number, an exception it raises, a move slower than ``move_limit_s`` seconds)
    ends its evaluation: the result holds the games finished before, with ``failure`` the one line that
    names the agent and the fault (the traceback goes to the log). Nothing is raised, so a caller
    evaluating several agents goes on with the next. A spec that cannot be built still raises.

    ``pool``: local play in these worker processes (its ``workers``, ``workers`` is not used), started
    already or kept for the next evaluation (see :class:`EvalPool`); without one, ``workers`` > 1 start
    processes for this evaluation alone.

    ``backend="ray"`` (implied by a ``ray_address``): on ``workers`` Ray actors instead (1 CPU each), on the
    cluster at ``ray_address``, or the Ray instance this process already started, or a local one of
    ``workers`` CPUs; never more actors than the cluster has CPUs. The games and the result are the same
    as local play's for the same seed (game order, not finish order); only the ``workers`` figure may differ.

    ``store`` (an :class:`engine.store.GameStore`, optional): each game is recorded there as it
    finishes, ``source="evaluation"``. ``progress(done, total, outcome)`` is called per game.

    ``live(snapshot, moves)``: called in this thread at most every ``live_every`` seconds while games
    play (also when none finished since: time goes on) and once at the end, with an
    :class:`EvalResult` of the games finished so far and the moves played so far, games in flight
    included (for an ETA). ``should_stop()``: polled after every move (one process) or every
    ``live_every`` seconds at most (several); when it returns True the games in flight are given up,
    the worker processes (or actors) end, and the result holds the finished games with ``cancelled=True``.
    """
    backend = _checked_backend(games, workers, backend, ray_address)
    agent = spec.build()  # in the parent too: a bad spec fails here, clearly, before any process starts
    rules = agent.rules if spec.rules is None else spec.rules
    ray = _init_ray(workers, games, ray_address) if backend == "ray" else None
    n_proc = _how_many_processes(ray, pool, workers, games)
    tally = _Tally(spec, agent, rules, seed, n_proc, games)
    feed = _Feed(tally, store, agent.name, spec.checkpoint, progress, live, live_every, should_stop)
    job = _Job(spec, rules, seed, games, record=store is not None, move_limit_s=move_limit_s)
    failure: str | None = None
    moves = 0
    try:
        if ray is not None:
            stopped, moves = _evaluate_on_ray(
                ray, job, n_proc, ray_address, feed, count_moves=live is not None
            )
        elif n_proc == 1 and pool is None:
            stopped, moves = _evaluate_here(agent, job, feed)
        else:
            stopped, moves = _evaluate_in_pool(pool, n_proc, agent, job, feed)
    except AgentFault as e:
        # The agent's fault, not the arena's: named in one line, the traceback (a worker's travels
        # with it as its cause) logged; the pool's processes were ended on the way out.
        # INFO: the file log keeps the traceback; the caller shows the one line (eval, the Arena tab).
        log.info("evaluation of %s failed: %s", spec.display, e, exc_info=e)
        stopped, failure = False, str(e)
        moves = max(moves, int(sum(o.moves for o in tally.outcomes)))
    result = tally.result(cancelled=stopped, failure=failure)
    if live is not None:
        live(result, moves)
    return result


def _checked_backend(games: int, workers: int, backend: str, ray_address: str | None) -> str:
    """The backend :func:`evaluate` uses (``"ray"`` when an address is given); ValueError for counts
    or a backend that make no sense, before anything is built."""
    if not 1 <= games <= MAX_GAMES:
        # Checked before anything is built: a mistyped count asked for gigabytes of job lists.
        raise ValueError(f"games must be between 1 and {MAX_GAMES:,}, got {games:,}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if ray_address:
        backend = "ray"
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: use 'local' or 'ray'")
    return backend


def _init_ray(workers: int, games: int, ray_address: str | None) -> Any:
    from agents.ray_util import init_ray  # lazily: Ray takes seconds to import

    return init_ray(min(workers, games), ray_address)


def _how_many_processes(ray: Any, pool: EvalPool | None, workers: int, games: int) -> int:
    """Worker processes (or Ray actors) an evaluation plays in."""
    if ray is not None:
        # An actor with no free CPU would hold its first game forever: no more actors than CPUs.
        cpus = int(ray.cluster_resources().get("CPU", 1))
        return max(1, min(workers, games, cpus))
    if pool is not None:
        return pool.workers
    return min(workers, games)


@dataclass(frozen=True)
class _Job:
    """What every game of an evaluation is played from: game ``i`` of ``games`` seeded from ``(seed, i)``."""

    spec: AgentSpec
    rules: Rules
    seed: int
    games: int
    record: bool
    move_limit_s: float | None = None


@dataclass(eq=False)
class _Feed:
    """The parent's side of an evaluation, whichever backend plays: finished games go to the store, the
    tally and ``progress``; ``live`` snapshots at most every ``live_every`` seconds; stop requests."""

    tally: _Tally
    store: GameStore | None
    agent: str
    checkpoint: str | None
    progress: Callable[[int, int, GameOutcome], None] | None
    live: Callable[[EvalResult, int], None] | None
    live_every: float
    should_stop: Callable[[], bool] | None
    _last_live: float = dataclasses.field(default_factory=time.perf_counter, init=False)

    @property
    def poll(self) -> float:
        """How long a backend waits for a game between checks: stop requests are seen within 0.1 s."""
        return max(0.01, min(self.live_every, 0.1))

    def collect(self, outcome: GameOutcome) -> None:
        """A finished game: recorded in the store (when there is one), tallied, reported."""
        gid = None
        if self.store is not None and outcome.trace is not None:
            gid = self.store.record_trace(
                outcome.trace, "evaluation", agent=self.agent, checkpoint=self.checkpoint
            )
        self.tally.add(outcome, gid)
        if self.progress is not None:
            self.progress(len(self.tally.outcomes), self.tally.planned, outcome)

    def tick(self, moves: int) -> None:
        """Time goes on (``moves`` played so far): a live snapshot when one is due."""
        now = time.perf_counter()
        if self.live is not None and now - self._last_live >= self.live_every:
            self._last_live = now
            self.live(self.tally.result(), moves)

    def asked_to_stop(self) -> bool:
        return self.should_stop is not None and bool(self.should_stop())


def _evaluate_here(agent: Agent, job: _Job, feed: _Feed) -> tuple[bool, int]:
    """:func:`evaluate`'s games in this process, one after another; returns (stopped, moves played)."""
    warm_up(agent, job.rules)
    played = 0  # moves of finished games + the game in flight

    def on_move() -> bool:
        nonlocal played
        played += 1
        feed.tick(played)
        return feed.asked_to_stop()

    for i in range(job.games):
        if feed.asked_to_stop():
            return True, played
        try:
            outcome = play_game(
                agent,
                job.rules,
                job.seed,
                i,
                record=job.record,
                on_move=on_move,
                move_limit_s=job.move_limit_s,
            )
            feed.collect(outcome)
        except Stopped:
            return True, played
        feed.tick(played)
    return False, played


def _evaluate_in_pool(
    pool: EvalPool | None, n_proc: int, agent: Agent, job: _Job, feed: _Feed
) -> tuple[bool, int]:
    """:func:`evaluate`'s games in ``pool``'s processes, or without one in ``n_proc`` started for this
    evaluation alone; every worker plays the agent built here (:func:`_same_agent_spec`)."""
    with tempfile.TemporaryDirectory(prefix="eval-agent-") as tmp, contextlib.ExitStack() as own:
        procs = pool if pool is not None else own.enter_context(EvalPool(n_proc))
        shared = dataclasses.replace(job, spec=_same_agent_spec(job.spec, agent, Path(tmp)))
        return _evaluate_in_processes(procs, shared, feed)


def _evaluate_in_processes(pool: EvalPool, job: _Job, feed: _Feed) -> tuple[bool, int]:
    """:func:`evaluate`'s games in ``pool``'s processes; returns (stopped, moves played).

    A worker that dies (killed, out of memory) raises WorkerError here, where
    :class:`multiprocessing.Pool` lost the game and waited for it forever. Two games per worker are
    queued at a time (jobs of one game, or of several short ones: :class:`Chunker`), so a stop or a
    failure does not leave thousands of jobs behind. A stop or a failure ends the pool's processes:
    the games in flight are given up now, not after they end.
    """
    executor = pool.executor()
    moves_before = pool.moves
    n_proc = pool.workers
    chunker = Chunker(n_proc, job.games)
    next_index = 0
    pending: set[Future[tuple[list[GameOutcome], float]]] = set()
    stopped = False
    finished = False

    def top_up() -> None:
        nonlocal next_index
        while len(pending) < 2 * n_proc and next_index < job.games:
            size = chunker.next_size()
            indices = range(next_index, next_index + size)
            next_index += size
            args = (job.spec, job.rules, job.seed, indices, job.record, job.move_limit_s)
            pending.add(executor.submit(_worker_play, args))

    try:
        top_up()
        while pending:
            if feed.asked_to_stop():
                stopped = True
                break
            done, _ = wait(pending, timeout=feed.poll, return_when=FIRST_COMPLETED)
            for future in done:
                pending.discard(future)
                outcomes, seconds = _result_of(future)
                chunker.played(len(outcomes), seconds)
                for outcome in outcomes:
                    feed.collect(outcome)
            top_up()
            feed.tick(pool.moves - moves_before)
        finished = not stopped
        return stopped, pool.moves - moves_before
    finally:
        if not finished:
            pool.terminate()


def _evaluate_on_ray(
    ray: Any, job: _Job, n_actors: int, address: str | None, feed: _Feed, count_moves: bool = True
) -> tuple[bool, int]:
    """:func:`evaluate`'s games on ``n_actors`` Ray actors; returns (stopped, moves played).

    Each actor plays one game at a time and gets the next index as it finishes one, so the games are
    shared out as local workers share them; ``feed.collect`` (the store, the tally) runs here, in the
    driver. ``count_moves``: ask the actors for their moves in flight (for ``live``'s ETA), else count
    finished games' moves only.
    """
    player = _ray_player_class(ray)
    actor_spec = _actor_spec(job.spec)
    actors = [player.remote(actor_spec, job.rules) for _ in range(n_actors)]
    pending: dict[Any, tuple[int, int]] = {}  # object ref of a game -> (actor, game index)
    counts = [0] * n_actors  # moves each actor had played when it last said (games in flight included)
    asking: dict[Any, int] = {}  # object ref of a moves_played call -> actor
    finished_moves = 0
    next_index = 0
    stopped = False

    def submit(slot: int) -> None:
        nonlocal next_index
        ref = actors[slot].play.remote(job.seed, next_index, job.record, job.move_limit_s)
        pending[ref] = (slot, next_index)
        next_index += 1

    def moves() -> int:
        # Never waits: read the answers that came, ask again the actors that answered.
        if not count_moves:
            return finished_moves
        if asking:
            done, _ = ray.wait(list(asking), num_returns=len(asking), timeout=0)
            for ref in done:
                slot = asking.pop(ref)
                with contextlib.suppress(ray.exceptions.RayError):  # a failing actor fails its game
                    counts[slot] = max(counts[slot], int(ray.get(ref)))
        busy = set(asking.values())
        for slot, actor in enumerate(actors):
            if slot not in busy:
                asking[actor.moves_played.remote()] = slot
        return max(sum(counts), finished_moves)

    try:
        for slot in range(n_actors):
            if next_index < job.games:
                submit(slot)
        while pending:
            if feed.asked_to_stop():
                stopped = True
                break  # the finally below kills the actors: the games in flight end now
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=feed.poll)
            if not ready:
                feed.tick(moves())
                continue
            slot, index = pending.pop(ready[0])
            try:
                outcome = ray.get(ready[0])
            except AgentFault:  # Ray raises the actor's exception as an instance of its own class too
                raise
            except ray.exceptions.RayError as e:
                where = f" at {address}" if address else ""
                raise RuntimeError(f"game {index} failed on Ray actor {slot}{where}: {e}") from e
            if next_index < job.games:
                submit(slot)  # before storing this one: the actor plays on meanwhile
            finished_moves += outcome.moves
            feed.collect(outcome)
            feed.tick(moves())
        moves_now = max(sum(counts), finished_moves)
    finally:
        for actor in actors:
            ray.kill(actor)
    return stopped, moves_now
