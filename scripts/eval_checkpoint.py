"""Play N games with a checkpoint whose play settings are changed first (e.g. a deeper search).

    python scripts/eval_checkpoint.py CHECKPOINT --games 100 --set play=switching-ply
    python scripts/eval_checkpoint.py CHECKPOINT --games 100 --set search_depth=2

``python main.py eval --checkpoint`` plays a checkpoint with the settings it was saved with; this plays
it with some of them replaced (``--set NAME=VALUE``, parsed like the CLI flags). Games go through
``agent.act`` on ``Game(seed=seed + i)``. Prints one JSON object: mean / median / max score, rates of
reaching 1024 ... 32768, moves per game and seconds per move (CPU and wall).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.base import Agent
from engine import Game


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1_000_000, help="game i uses seed + i (default 1000000)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="config change")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:  # pragma: no cover - torch is a dependency; n-tuple agents do not need it
        pass
    try:
        agent = Agent.load(args.checkpoint)
    except ValueError as e:  # CheckpointError: one line saying why
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    changes = {}
    try:
        for item in args.set:
            name, _, text = item.partition("=")
            changes[name.strip()] = agent.config.spec(name.strip()).parse(text)
        agent.config = agent.config.replace(**changes)
    except KeyError as e:
        parser.error(f"--set: {agent.name} has no setting {e.args[0]!r}")
    except ValueError as e:
        parser.error(f"--set: {e}")
    scores, tiles, moves = [], [], []
    c0, w0 = time.process_time(), time.perf_counter()
    for i in range(args.games):
        g = Game(seed=args.seed + i, rules=agent.rules)
        while not g.game_over:
            g.step(agent.act(g))
        scores.append(g.score)
        tiles.append(g.max_tile)
        moves.append(g.moves)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    s, t = np.array(scores), np.array(tiles)
    out = {
        "checkpoint": str(args.checkpoint),
        "agent": agent.name,
        "changes": {k: list(v) if isinstance(v, tuple) else v for k, v in changes.items()},
        "games": args.games,
        "mean_score": float(s.mean()),
        "median_score": float(np.median(s)),
        "max_score": int(s.max()),
        "rates": {str(x): float((t >= x).mean()) for x in (1024, 2048, 4096, 8192, 16384, 32768)},
        "moves_per_game": float(np.mean(moves)),
        "seconds_per_move_cpu": cpu / max(1, sum(moves)),
        "seconds_per_move_wall": wall / max(1, sum(moves)),
        "trained": {
            "games": agent.counters.episodes,
            "moves": agent.counters.steps,
            "seconds": agent.counters.seconds,
        },
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
