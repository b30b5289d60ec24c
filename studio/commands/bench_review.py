"""``python main.py bench review``: how long a game review takes, on one core.

A 1,000-move game (the first seeded game of expectimax depth 2 that lasts 1,000 moves, cut there) is
stored in a scratch store and reviewed end to end by :func:`studio.services.review.review_game`
(every position evaluated, values committed chunk by chunk, grades computed) with two reviewers:
heuristic expectimax at depth 2 (goal: <= 5 s) and an n-tuple network with 2-ply search (goal:
<= 2 s; a fresh 4x6 network filled with seeded noise, so that its 268 MB of weights are real memory
rather than the shared zero page of an untouched array, unless ``-o checkpoint=PATH`` names one; what
the weights are does not change the work). One untimed review first (numba compilation or cache load); each round then deletes the
stored review and times a new one. The figure is moves/s; the label gives seconds per game.
Options (``-o KEY=VALUE``): ``checkpoint`` (an ntuple checkpoint), ``moves`` (game length, default
1000), ``clock`` (cpu|wall, default cpu: wall time on a shared machine mostly measures neighbours).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from studio.commands.bench import (
    CLOCK_OPTION,
    CLOCKS,
    BenchOptions,
    BenchReport,
    Measurement,
    Option,
    _machine,
    parse_options,
)
from studio.progress import ProgressLine

OPTIONS = {"checkpoint": Option("text"), "moves": Option("int", 1000, 10, 20_000), "clock": CLOCK_OPTION}


def _long_game(moves: int, seed: int, progress: ProgressLine) -> object:
    """A GameTrace of exactly ``moves`` moves by expectimax depth 2 (trying seeds from ``seed``)."""
    from agents.registry import create_agent
    from engine import Game
    from engine.records import GameTrace, play_recorded

    agent = create_agent("expectimax", {"depth": 2})
    for s in range(seed, seed + 50):
        progress.update(0, f"playing a {moves:,}-move game (seed {s})", force=True)
        game = Game(seed=s)
        trace = GameTrace.start(game)
        while not game.game_over and game.moves < moves:
            play_recorded(game, agent.act(game), trace)
        if trace.n_moves >= moves:
            trace.final_board = game.board
            return trace
    raise ValueError(f"no game of expectimax depth 2 lasted {moves} moves in 50 seeds")


def review_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    from agents.spec import AgentSpec
    from engine.store import GameStore
    from studio.services.review import Reviewer, review_game

    opts = parse_options("review", options.extra, OPTIONS)
    clock_name = opts["clock"]
    clock = CLOCKS[clock_name]
    n_moves: int = opts["moves"]
    if opts["checkpoint"] is not None:
        path = Path(opts["checkpoint"]).expanduser()
        if not path.is_file():
            raise ValueError(f"{path}: no such checkpoint file")
        ntuple = Reviewer(AgentSpec.from_checkpoint(str(path.resolve()), "ntuple"), 2)
    else:
        ntuple = Reviewer(AgentSpec(name="ntuple"), 2)
    reviewers = {"expectimax_d2": Reviewer(AgentSpec(name="expectimax"), 2), "ntuple_2ply": ntuple}
    goals = {"expectimax_d2": 5.0, "ntuple_2ply": 2.0}
    trace = _long_game(n_moves, options.seed, progress)
    measurements: list[Measurement] = []
    info: dict[str, object] = {"rounds": options.rounds, "clock": clock_name, "game_moves": n_moves}
    with (
        tempfile.TemporaryDirectory(prefix="bench-review-") as tmp,
        GameStore(Path(tmp) / "s.sqlite") as store,
    ):
        game_id = store.record_trace(trace, "agent", "expectimax")  # type: ignore[arg-type]
        for key, reviewer in reviewers.items():
            progress.update(0, f"{key}: warming up", force=True)
            agent = reviewer.build(store.get_game(game_id).rules)
            weights = getattr(agent, "weights", None)
            if opts["checkpoint"] is None and isinstance(weights, np.ndarray):
                rng = np.random.default_rng(options.seed)
                rng.standard_normal(dtype=np.float32, out=weights)
                weights *= 100
            review_game(store, game_id, reviewer, agent=agent)
            best = float("inf")
            wall_best = float("inf")
            for k in range(options.rounds):
                progress.update(k, f"{key}: round {k + 1}/{options.rounds}", force=True)
                stored = store.get_review(game_id, reviewer.key())
                if stored is not None:
                    store.delete_review(stored.id)
                t0, w0 = clock(), time.perf_counter()
                review = review_game(store, game_id, reviewer, agent=agent)
                seconds, wall = clock() - t0, time.perf_counter() - w0
                if review.evaluated != n_moves:
                    raise RuntimeError(f"{key} evaluated {review.evaluated} positions, not {n_moves}")
                best, wall_best = min(best, seconds), min(wall_best, wall)
            measurements.append(
                Measurement(
                    key=key,
                    label=(
                        f"{key.replace('_', ' ')}: {best:.2f} s per {n_moves:,}-move game "
                        f"(goal <= {goals[key]:g} s; wall {wall_best:.2f} s)"
                    ),
                    value=n_moves / max(best, 1e-9),
                    detail={
                        "seconds_per_game": best,
                        "wall_seconds_per_game": wall_best,
                        "goal_s": goals[key],
                    },
                )
            )
            info[f"{key}_reviewer"] = reviewer.label
    info["machine"] = _machine()
    return BenchReport("review", "moves_per_s", measurements, baseline=None, info=info)
