"""Strength of an n-tuple checkpoint at 1-ply / expectimax depths, games played in one jitted loop.

    python scripts/eval_ntuple.py CHECKPOINT --games 100 --depth 1
    python scripts/eval_ntuple.py CHECKPOINT --games 100 --depth 2
    python scripts/eval_ntuple.py CHECKPOINT --games 100 --depths-policy 3,3,2,2,1
    python scripts/eval_ntuple.py CHECKPOINT --games 1000 --depth 2 --downgrade-from 16384 --threads 2

The games are the ones ``agent.act`` plays on ``Game(seed=seed + i)`` (same spawns, same moves; a test
checks it), without the per-move Python overhead of ``python main.py eval``, so deeper searches over
100+ games fit on a laptop. Prints one JSON object: mean / median / max score, the rates of reaching
2048 ... 32768 (65536 counts games ended by a 32768 merge the packed board cannot hold), moves per game,
and seconds per move (CPU and wall).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.arena import MAX_GAMES
from agents.base import Agent
from agents.ntuple import NTupleAgent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1_000_000, help="game i uses seed + i (default 1000000)")
    parser.add_argument("--depth", type=int, default=1, help="player moves searched (1 = 1-ply)")
    parser.add_argument(
        "--depths-policy", default="", help="depth by free cells, e.g. 3,3,2,2,1 (overrides --depth)"
    )
    parser.add_argument(
        "--downgrade-from",
        type=int,
        default=0,
        help="tile downgrading once the max tile reaches this tile, e.g. 16384 (default: off)",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="threads sharing the games (same games, same results)"
    )
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}")
    try:
        out = evaluate(
            args.checkpoint,
            games=args.games,
            seed=args.seed,
            depth=args.depth,
            depths_policy=args.depths_policy,
            downgrade_from=args.downgrade_from,
            threads=args.threads,
        )
    except ValueError as e:  # a CheckpointError, another agent's checkpoint, a search out of range
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=1))
    return 0


def check_counts(games: int, threads: int) -> None:
    """ValueError unless 1 <= games <= the arena's MAX_GAMES and threads >= 1 (a mistyped count asked
    for gigabytes of result arrays and hours of play)."""
    if not 1 <= games <= MAX_GAMES:
        raise ValueError(f"games must be between 1 and {MAX_GAMES:,}, got {games:,}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")


def parse_depths_policy(text: str) -> tuple[int, ...]:
    """``"3,3,2,2,1" -> (3, 3, 2, 2, 1)``; ``""`` -> ``()`` (no policy); ValueError saying what it is not."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"depths policy {text!r} is not depths by free cells, e.g. 3,3,2,2,1") from None


def evaluate(
    checkpoint: str | Path,
    *,
    games: int = 100,
    seed: int = 1_000_000,
    depth: int = 1,
    depths_policy: str | tuple[int, ...] = (),
    downgrade_from: int = 0,
    threads: int = 1,
) -> dict[str, Any]:
    """The figures ``main`` prints for one checkpoint (ValueError, one line, when it cannot play)."""
    check_counts(games, threads)
    agent = Agent.load(checkpoint)  # CheckpointError (a ValueError): one line saying why
    if not isinstance(agent, NTupleAgent):
        raise ValueError(f"{checkpoint} is not an ntuple checkpoint")
    policy = parse_depths_policy(depths_policy) if isinstance(depths_policy, str) else tuple(depths_policy)
    agent.config = agent.config.replace(
        search_depth=depth, depths_policy=policy, downgrade_from=downgrade_from
    )
    agent.play_fast(1, seed=seed, threads=threads)  # compile / load the kernels outside the clock
    c0, w0 = time.process_time(), time.perf_counter()
    res = agent.play_fast(games, seed=seed, threads=threads)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    score, tiles, moves = res["score"], res["max_tile"], res["moves"]
    return {
        "checkpoint": str(checkpoint),
        "games": games,
        "search": {"depth": depth, "depths_policy": list(policy), "downgrade_from": downgrade_from},
        "threads": threads,
        "mean_score": float(score.mean()),
        "median_score": float(np.median(score)),
        "max_score": int(score.max()),
        "rates": {str(t): float((tiles >= t).mean()) for t in (2048, 4096, 8192, 16384, 32768, 65536)},
        "moves_per_game": float(moves.mean()),
        "seconds_per_move_cpu": cpu / max(1, int(moves.sum())),
        "seconds_per_move_wall": wall / max(1, int(moves.sum())),
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "trained": {
            "games": agent.counters.episodes,
            "moves": agent.counters.steps,
            "seconds": agent.counters.seconds,
        },
    }


if __name__ == "__main__":
    sys.exit(main())
