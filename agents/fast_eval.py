"""Evaluation games played in one jitted loop, for the agents that have one (``play_fast``: n-tuple,
expectimax): ``eval --fast`` and the checkpoint curves.

Game ``i`` has the spawns of ``Game(seed=seed + i)`` and the moves ``agent.act`` would choose on it (the
agents' tests check their loop against ``act``), without the per-move Python of :func:`agents.arena.
evaluate`; so a deeper search over hundreds of games fits on a laptop. These are not the games the arena
plays for the same seed (it derives each game's seeds from ``(seed, i)``), and they are not recorded:
the loop keeps no move list.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.arena import MAX_GAMES, EvalResult
from agents.base import Agent
from agents.spec import AgentSpec


@dataclass(frozen=True)
class FastEval:
    """The games' figures (:class:`agents.arena.EvalResult`: per-game seconds are the loop's wall time
    shared out by moves) and the CPU seconds the loop used, all threads together."""

    result: EvalResult
    cpu_seconds: float
    threads: int


def check_fast(agent: type[Agent] | Agent, threads: int = 1) -> None:
    """ValueError, one line, unless ``agent`` (an agent or its class) has a jitted game loop that
    ``threads`` threads can share."""
    play = getattr(agent, "play_fast", None)
    if not callable(play):
        raise ValueError(
            f"{agent.name} has no jitted game loop (the fast games are n-tuple's and expectimax's)"
        )
    if threads > 1 and "threads" not in inspect.signature(play).parameters:
        raise ValueError(f"{agent.name}'s jitted loop plays on one thread (threads are n-tuple's)")


#: Seconds of play between two looks at ``should_stop`` (a jitted loop cannot be interrupted inside).
CHUNK_SECONDS = 2.0


def evaluate_fast(
    spec: AgentSpec,
    games: int,
    seed: int,
    threads: int = 1,
    *,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> FastEval:
    """Play ``games`` games of ``spec`` in its jitted loop, ``threads`` threads sharing them (the same
    games, the same results). ValueError, one line, when the agent has no such loop or cannot share it,
    or the counts are out of range.

    The games are played in chunks of about :data:`CHUNK_SECONDS` (game ``i`` is the same in any
    chunk: its board comes from ``seed + i``): ``progress(done, games)`` is called after each, and
    when ``should_stop()`` returns True the result holds the finished games, ``cancelled``."""
    if not 1 <= games <= MAX_GAMES:
        raise ValueError(f"games must be between 1 and {MAX_GAMES:,}, got {games:,}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    agent = spec.build()  # a bad checkpoint or setting: ValueError with the reason
    check_fast(agent, threads)
    kw: dict[str, Any] = {"threads": threads} if threads > 1 else {}
    play = agent.play_fast  # type: ignore[attr-defined]
    play(1, seed=seed, **kw)  # compile or load the kernels outside the clock
    parts: list[dict[str, np.ndarray]] = []
    done, size, cancelled = 0, 4 * threads, False
    c0, w0 = time.process_time(), time.perf_counter()
    while done < games:
        if should_stop is not None and should_stop():
            cancelled = True
            break
        n = min(size, games - done)
        t0 = time.perf_counter()
        parts.append(play(n, seed=seed + done, **kw))
        per_game = (time.perf_counter() - t0) / n
        done += n
        size = max(4 * threads, int(CHUNK_SECONDS / max(per_game, 1e-9)))
        if progress is not None:
            progress(done, games)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0

    def joined(key: str) -> np.ndarray:
        return np.concatenate([np.asarray(p[key], dtype=np.int64) for p in parts] or [np.zeros(0, np.int64)])

    moves = joined("moves")
    result = EvalResult(
        label=spec.display,
        agent=agent.name,
        checkpoint=spec.checkpoint,
        config=agent.config.to_dict(),
        rules=agent.rules,
        seed=seed,
        workers=1,
        scores=joined("score"),
        moves=moves,
        max_tiles=joined("max_tile"),
        seconds=wall * moves / max(1, int(moves.sum())),
        wall_seconds=wall,
        planned=games,
        cancelled=cancelled,
    )
    return FastEval(result, cpu, threads)
