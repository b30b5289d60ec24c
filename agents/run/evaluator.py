"""The periodic evaluator: when an evaluation is due, and the background process that plays it.

A run saves a checkpoint and a spawned process plays ``eval_games`` greedy games of it (the ``eval``
command's code path, :func:`agents.arena.evaluate`, on the same seeds every time) while training goes
on; one evaluator at a time (one still playing when the next is due: that one is skipped). The
closing evaluation of a finished budget is played here instead (:meth:`Evaluator.play_here`).
"""

from __future__ import annotations

import logging
import math
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.base import Counters, MetricEvent
from agents.metrics import EVALUATION
from agents.play_only import set_play_only
from agents.run.settings import DEFAULT_EVAL_SEED
from agents.threads import limit_threads

if TYPE_CHECKING:
    import numpy.typing as npt

    from agents.arena import EvalResult

log = logging.getLogger(__name__)

#: How often (seconds) the training loop looks for a finished evaluation.
EVAL_POLL_S = 0.2
#: Threads of the background evaluator's math libraries: one core; training keeps the others.
EVALUATOR_THREADS = 1
#: The metrics of an ``"evaluation"`` event: mean score, its 95 % half-width (NaN under two games),
#: median max tile, share of games that reached 2048, mean moves per game, games played, wall seconds.
EVAL_METRICS: tuple[str, ...] = tuple(m.name for m in EVALUATION)

#: What an evaluation sends back: per-game lists and the wall time, or ``{"error": "one line"}``.
EvalOutput = dict[str, Any]


def evaluation_metrics(
    scores: npt.ArrayLike, max_tiles: npt.ArrayLike, moves: npt.ArrayLike, wall_seconds: float = math.nan
) -> dict[str, float]:
    """The metrics of an ``"evaluation"`` event (:data:`EVAL_METRICS`) from per-game results."""
    import numpy as np

    from agents.arena import mean_ci95, reached_at_least

    score_arr = np.asarray(scores, dtype=float)
    tiles = np.asarray(max_tiles, dtype=float)
    mean, half = mean_ci95(score_arr)
    return {
        "eval_score": float(mean),
        "eval_score_ci95": math.nan if half is None else float(half),
        "eval_max_tile": float(np.median(tiles)),
        "eval_2048_rate": float(reached_at_least(tiles.astype(np.int64), (2048,))[2048]),
        "eval_moves": float(np.mean(np.asarray(moves, dtype=float))),
        "eval_games": float(score_arr.size),
        "eval_seconds": float(wall_seconds),
    }


def evaluate_checkpoint(
    path: str | os.PathLike[str],
    games: int,
    seed: int = DEFAULT_EVAL_SEED,
    *,
    agent: str | None = None,
    target: str | None = None,
) -> EvalOutput:
    """Play ``games`` greedy games of a checkpoint file, as ``eval`` does (:func:`agents.arena.evaluate`,
    one process, game ``i`` seeded from ``(seed, i)``): the per-game lists and the wall time. What a
    run's evaluator process does; the same checkpoint and seed always give the same games."""
    from agents.arena import evaluate
    from agents.spec import AgentSpec

    result = evaluate(AgentSpec.from_checkpoint(str(path), agent, target=target), games, seed, workers=1)
    return per_game(result)


def per_game(result: EvalResult) -> EvalOutput:
    """An evaluation's per-game lists and wall time, as an evaluation event is made from."""
    return {
        "scores": result.scores.tolist(),
        "max_tiles": result.max_tiles.tolist(),
        "moves": result.moves.tolist(),
        "wall_seconds": float(result.wall_seconds),
    }


def one_line(e: BaseException) -> str:
    """An error as the run reports it: its type and the first line of its message."""
    return f"{type(e).__name__}: {e}".splitlines()[0]


def _evaluator_main(
    conn: Connection, path: str, games: int, seed: int, agent: str, target: str | None
) -> None:
    """The evaluator process: one evaluation, its result (or its error, one line) sent back on ``conn``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle; the run ends us
    # One core (training keeps the others): the environment before the agent's imports read it, torch's
    # and numba's pools once they are loaded (the agent's module, imported first, loads torch).
    limit_threads(EVALUATOR_THREADS)
    set_play_only()  # it only plays the checkpoint: torch learners skip their optimiser (a CPU-second)
    try:
        from agents.registry import get_agent_class, register

        if target:
            register(agent, target)
        get_agent_class(agent)  # its module's imports (torch) now, so that their pools are set below
        threads = limit_threads(EVALUATOR_THREADS)
        out = evaluate_checkpoint(path, games, seed, agent=agent, target=target)
        out["threads"] = threads
    except BaseException as e:  # everything goes back to the run as one line, which the run logs
        out = {"error": one_line(e)}
    try:
        conn.send(out)
    finally:
        conn.close()


@dataclass(frozen=True)
class EvalJob:
    """The checkpoint an evaluation plays (its counters are those of the evaluation event)."""

    checkpoint_id: int
    path: Path
    episode: int
    step: int
    elapsed: float


class EvalSchedule:
    """When periodic evaluations are due: every ``every_s`` seconds of training and/or every
    ``every_episodes`` episodes (0 = not by that measure), counted from the agent's counters."""

    def __init__(self, games: int, every_s: float, every_episodes: int, start: Counters) -> None:
        self.games = games
        self.every_s = every_s
        self.every_episodes = every_episodes
        self._next_s = start.seconds + every_s
        self._next_episode = start.episodes + every_episodes

    def due(self, event: MetricEvent) -> bool:
        """Whether an evaluation is due after ``event`` (and if so, the next one is counted from it)."""
        if self.games <= 0:
            return False
        by_time = bool(self.every_s) and event.elapsed >= self._next_s
        by_episodes = bool(self.every_episodes) and event.episode >= self._next_episode
        if not (by_time or by_episodes):
            return False
        self._next_s = event.elapsed + self.every_s
        self._next_episode = event.episode + self.every_episodes
        return True


@dataclass(eq=False)
class Evaluator:
    """At most one background evaluation: a spawned process that plays a checkpoint file's games.

    ``agent`` / ``target``: the registry name and ``module:Class`` of the agent the checkpoints hold."""

    agent: str
    target: str | None
    games: int
    seed: int
    #: the evaluation under way (None: idle)
    job: EvalJob | None = field(default=None, init=False)
    _proc: BaseProcess | None = field(default=None, init=False, repr=False)
    _conn: Connection | None = field(default=None, init=False, repr=False)
    _next_poll: float = field(default=0.0, init=False, repr=False)

    @property
    def busy(self) -> bool:
        return self.job is not None

    def protected(self) -> Sequence[int]:
        """The checkpoint being evaluated, which retention must not delete."""
        return () if self.job is None else (self.job.checkpoint_id,)

    def start(self, job: EvalJob) -> None:
        ctx = mp.get_context("spawn")  # no inherited threads, locks or CUDA state
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_evaluator_main,
            args=(send, str(job.path), self.games, self.seed, self.agent, self.target),
            name=f"evaluate-{job.path.name}",
            daemon=True,
        )
        proc.start()
        send.close()  # ours closed: a child that dies unheard reads as end of file
        self.job, self._proc, self._conn = job, proc, recv

    def poll(self, timeout: float = 0.0) -> tuple[EvalJob, EvalOutput] | None:
        """The finished job and its result (``{"error": ...}`` when it failed), or None while it plays."""
        if self.job is None or self._conn is None or self._proc is None:
            return None
        try:
            if not self._conn.poll(timeout):
                return None
            out = self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(5)
            out = {"error": f"the evaluator process ended without a result (exit code {self._proc.exitcode})"}
        job = self.job
        self._close()
        if "error" in out:
            log.warning("evaluation of %s failed: %s", job.path.name, out["error"])
        return job, out

    def finished(self) -> tuple[EvalJob, EvalOutput] | None:
        """:meth:`poll`, at most every :data:`EVAL_POLL_S` (the loop asks after every event)."""
        if self.job is None or time.monotonic() < self._next_poll:
            return None
        self._next_poll = time.monotonic() + EVAL_POLL_S
        return self.poll()

    def wait(self, should_stop: Callable[[], bool]) -> tuple[EvalJob, EvalOutput] | None:
        """Wait for the evaluation in flight; None (and the evaluator ended) once ``should_stop()``."""
        while self.job is not None:
            if should_stop():
                self.stop()
                return None
            done = self.poll(EVAL_POLL_S)
            if done is not None:
                return done
        return None

    def play_here(self, path: Path, should_stop: Callable[[], bool]) -> EvalOutput | None:
        """Play the games of checkpoint ``path`` in this process, on the same seeded games as every
        periodic evaluation; None when ``should_stop()`` cut them short, ``{"error": ...}`` on failure."""
        from agents.arena import evaluate
        from agents.spec import AgentSpec

        try:
            spec = AgentSpec.from_checkpoint(str(path), self.agent, target=self.target)
            result = evaluate(spec, self.games, self.seed, workers=1, should_stop=should_stop)
        except Exception as e:  # reported like a failed background evaluation: one line, the run goes on
            log.exception("closing evaluation of %s failed", path.name)
            return {"error": one_line(e)}
        return None if result.cancelled else per_game(result)

    def stop(self) -> None:
        """End the evaluation in flight, if any (its result is lost)."""
        if self._proc is not None and self._proc.is_alive():
            self._proc.terminate()
        self._close()

    def _close(self) -> None:
        if self._proc is not None:
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self.job, self._proc, self._conn = None, None, None
