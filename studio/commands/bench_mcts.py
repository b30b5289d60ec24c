"""``python main.py bench mcts``: self-play games/s of the MCTS agent with 1 and 2 local workers and with Ray.

The table shows games per minute (it prints whole numbers); ``--json`` also has ``games_per_s``.

Every path plays the same self-play games (same seeds, same untrained-but-seeded network, or a
checkpoint's) through the pools training uses (:mod:`agents.mcts.selfplay`). Worker start-up (process spawn,
torch import, Ray start) is excluded: each pool first plays one short warm-up game per worker.
Options (``-o KEY=VALUE``): ``games`` per round (default 4), ``simulations`` (16), ``max_moves`` per game
(200: games are cut so that a round has a predictable length), ``workers`` to try locally (``1,2``),
``ray`` (``1``: also Ray with the largest worker count; ``0``: skip), ``checkpoint`` (an MCTS
checkpoint to play with instead of a fresh network).
"""

from __future__ import annotations

import time
from typing import Any

from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, parse_options, report_info
from studio.progress import ProgressLine

OPTIONS = {
    "games": Option("int", 4, 1, 100_000),
    "simulations": Option("int", 16, 1, 100_000),
    "max_moves": Option("int", 200, 1, 1_000_000),
    "workers": Option("ints", [1, 2], 1, 256),
    "ray": Option("bool", True),
    "checkpoint": Option("text"),
}


def mcts_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    from agents.base import Agent
    from agents.mcts import MCTSAgent, MCTSConfig
    from agents.mcts.selfplay import LocalPool, RayPool, import_ray, make_pool
    from agents.nn.state import module_arrays

    opts = parse_options("mcts", options.extra, OPTIONS)
    games: int = opts["games"]
    worker_counts: list[int] = opts["workers"]
    changes = {"simulations": opts["simulations"], "max_moves": opts["max_moves"]}
    if opts["checkpoint"] is not None:
        agent = Agent.load(opts["checkpoint"])
        if not isinstance(agent, MCTSAgent):
            raise ValueError(f"{opts['checkpoint']} is not an MCTS checkpoint")
        agent.config = agent.config.replace(**changes)
    else:
        agent = MCTSAgent(MCTSConfig.from_dict(changes), seed=options.seed)
    weights = module_arrays(agent.net, "net/")
    spec = agent._worker_spec()

    paths: list[tuple[str, str, Any]] = [
        (f"local_{n}", f"{n} local worker{'s' if n > 1 else ''}", lambda n=n: make_pool(spec, n))
        for n in worker_counts
    ]
    if opts["ray"]:
        try:
            import_ray()
        except RuntimeError as e:
            progress.update(0, f"skipping Ray: {e}", force=True)
        else:
            n = max(worker_counts)
            paths.append((f"ray_{n}", f"{n} Ray actors (local cluster)", lambda n=n: RayPool(spec, n)))

    progress.total = len(paths) * options.rounds
    measurements = [
        _measure_pool(k, (key, label, new_pool), weights, games, options, progress)
        for k, (key, label, new_pool) in enumerate(paths)
    ]
    base = measurements[0].value
    measurements = [
        Measurement(m.key, m.label, m.value, round(m.value / base, 2), m.detail) for m in measurements
    ]
    info = report_info(
        {
            "rounds": options.rounds,
            "games_per_round": games,
            "config": {
                k: getattr(agent.config, k) for k in ("network", "filters", "simulations", "max_moves")
            },
            "checkpoint": opts["checkpoint"],
            "local_pool": LocalPool.__name__,
        }
    )
    return BenchReport("mcts", "games_per_min", measurements, baseline=measurements[0].key, info=info)


def _measure_pool(
    k: int,
    path: tuple[str, str, Any],
    weights: dict[str, Any],
    games: int,
    options: BenchOptions,
    progress: ProgressLine,
) -> Measurement:
    """The best of ``options.rounds`` rounds of ``games`` self-play games on the ``k``-th pool, in games
    per minute (the report's table prints whole numbers)."""
    from agents.mcts import SelfPlayTask

    key, label, new_pool = path
    done = k * options.rounds
    pool = new_pool()
    try:
        progress.update(done, f"{label}: starting workers", force=True)
        pool.set_weights(weights)
        # Warm-up: start every worker (spawn, torch import, compiled kernels) before the clock runs.
        list(pool.run([SelfPlayTask(10_000 + i) for i in range(pool.workers)]))
        best: tuple[float, int, int, float] | None = None
        for r in range(options.rounds):
            tasks = [SelfPlayTask(options.seed * 1_000_003 + r * games + i) for i in range(games)]
            t0 = time.perf_counter()
            moves = sum(g.moves for _, g in pool.run(tasks))
            elapsed = time.perf_counter() - t0
            rate = games / elapsed * 60.0
            if best is None or rate > best[0]:
                best = (rate, games, moves, elapsed)
            done += 1
            progress.update(done, f"{label}: {rate / 60.0:.3f} games/s")
    finally:
        pool.close()
    assert best is not None
    detail = {
        "games_per_s": round(best[0] / 60.0, 4),
        "moves_per_s": round(best[2] / best[3], 1),
        "games": best[1],
        "moves": best[2],
        "elapsed_s": round(best[3], 2),
        "pool": type(pool).__name__,
    }
    return Measurement(key, label, round(best[0], 2), None, detail)
