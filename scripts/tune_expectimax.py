"""Tune the expectimax heuristic's weights by an evolution strategy over seeded games.

    python scripts/tune_expectimax.py --generations 10 --population 12 --games 300 --depth 2 --workers 2

A cross-entropy style evolution strategy in log space (every nneonneo weight is positive): each
generation draws ``--population`` weight sets around the current centre (log-normal, one step size per
weight), plays each on the same ``--games`` seeded games (common random numbers: a generation's
candidates meet the same spawns, and each generation gets fresh seeds, so no set can learn its games),
keeps the best quarter and moves the centre and step sizes to them. Fitness is the rate of reaching
2048 (``--objective rate2048``, the agent's goal at depth 2) with the mean score as a tie-break, or the
mean score (``--objective score``).

At the end the final centre and the starting weights (the studio's defaults) play ``--check-games``
games on seeds no generation used (1,000,000 + i, the same for both): the winner is only worth keeping
if it wins there. Prints one JSON line per generation and a summary with the ``--set`` text of the
winner. Games run in the jitted loop of :meth:`agents.expectimax.ExpectimaxAgent.play_fast`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.expectimax import ExpectimaxAgent, ExpectimaxConfig

KNOBS = (
    "nn_empty_weight",
    "nn_merges_weight",
    "nn_monotonicity_weight",
    "nn_monotonicity_power",
    "nn_sum_weight",
    "nn_sum_power",
)
CHECK_SEED = 1_000_000


def play(weights: tuple[float, ...], depth: int, games: int, seed: int) -> dict[str, float]:
    """Mean score and 2048 / 4096 rates of ``weights`` on games ``seed .. seed + games - 1``."""
    changes: dict[str, Any] = dict(zip(KNOBS, weights, strict=True))
    cfg = dataclasses.replace(ExpectimaxConfig(depth=depth), **changes)
    res = ExpectimaxAgent(cfg).play_fast(games, seed=seed)
    return {
        "mean_score": float(res["score"].mean()),
        "rate2048": float((res["max_tile"] >= 2048).mean()),
        "rate4096": float((res["max_tile"] >= 4096).mean()),
    }


def fitness(result: dict[str, float], objective: str) -> float:
    if objective == "score":
        return result["mean_score"]
    return result["rate2048"] + result["mean_score"] * 1e-9  # the score only breaks ties


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--generations", type=int, default=10)
    parser.add_argument("--population", type=int, default=12)
    parser.add_argument("--games", type=int, default=300, help="games per candidate and generation")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--sigma", type=float, default=0.3, help="first step size, in log units")
    parser.add_argument("--objective", choices=("rate2048", "score"), default="rate2048")
    parser.add_argument("--check-games", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="the strategy's own random draws")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    if min(args.generations, args.population, args.games, args.check_games) < 1 or args.population < 4:
        parser.error("generations, games and check games must be at least 1 and the population at least 4")

    defaults = ExpectimaxConfig()
    start = np.array([float(getattr(defaults, k)) for k in KNOBS])
    centre = np.log(start)
    sigma = np.full(len(KNOBS), args.sigma)
    rng = np.random.default_rng(args.seed)
    n_elite = max(2, args.population // 4)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for gen in range(args.generations):
            # candidate 0 is the centre itself, so each line also shows how the centre plays
            logs = centre + sigma * rng.standard_normal((args.population, len(KNOBS)))
            logs[0] = centre
            seed = 10_000 + gen * args.games
            jobs = [
                pool.submit(play, tuple(float(x) for x in np.exp(row)), args.depth, args.games, seed)
                for row in logs
            ]
            results = [j.result() for j in jobs]
            scores = np.array([fitness(r, args.objective) for r in results])
            order = np.argsort(-scores, kind="stable")
            elite = logs[order[:n_elite]]
            centre = elite.mean(axis=0)
            # step sizes follow the elites' spread, but never collapse to nothing in one generation
            sigma = np.maximum(0.7 * sigma + 0.3 * elite.std(axis=0), 0.02)
            best = results[int(order[0])]
            print(
                json.dumps(
                    {
                        "generation": gen + 1,
                        "centre_played": results[0],
                        "best": best,
                        "best_weights": dict(
                            zip(KNOBS, np.exp(logs[order[0]]).round(4).tolist(), strict=True)
                        ),
                        "new_centre": dict(zip(KNOBS, np.exp(centre).round(4).tolist(), strict=True)),
                        "seconds": round(time.perf_counter() - t0, 1),
                    }
                ),
                flush=True,
            )
        winner = tuple(float(x) for x in np.exp(centre))
        # the check games are split over the workers in blocks; every block has its own fixed seeds
        blocks = [
            (s, min(250, CHECK_SEED + args.check_games - s))
            for s in range(CHECK_SEED, CHECK_SEED + args.check_games, 250)
        ]

        def check(weights: tuple[float, ...]) -> dict[str, float]:
            parts = [pool.submit(play, weights, args.depth, n, s) for s, n in blocks]
            rs = [p.result() for p in parts]
            sizes = np.array([n for _, n in blocks], dtype=float)
            return {k: float(np.average([r[k] for r in rs], weights=sizes)) for k in rs[0]}

        won = check(winner)
        base = check(tuple(float(x) for x in start))
    summary = {
        "depth": args.depth,
        "check_games": args.check_games,
        "check_seeds": f"{CHECK_SEED}..{CHECK_SEED + args.check_games - 1}",
        "defaults": {**dict(zip(KNOBS, start.tolist(), strict=True)), **base},
        "winner": {**dict(zip(KNOBS, [round(x, 4) for x in winner], strict=True)), **won},
        "winner_wins": fitness(won, args.objective) > fitness(base, args.objective),
        "set": " ".join(f"{k}={round(v, 4)}" for k, v in zip(KNOBS, winner, strict=True)),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
