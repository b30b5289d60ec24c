"""Mean score after the first N moves (seed 001's proof-of-concept measure), for a checkpoint or a fresh agent.

    python scripts/first_moves.py --checkpoint run.npz --games 2000 --moves 20
    python scripts/first_moves.py --preset policy-seed001-20moves --agent-seed 1 --games 2000

Reports two numbers: ``sampled`` plays the policy's move distribution (as seed 001 measured its batches
while training; policy agents only) and ``greedy`` plays ``agent.act`` (the most probable legal move).
Game seeds are ``seed, seed + 1, ...`` so two calls with the same --seed play the same spawns.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.base import Agent, Budget
from agents.config import load_preset
from agents.registry import create_agent
from agents.training import TrainTracker
from engine import Game


def greedy_scores(agent: Agent, games: int, moves: int, seed: int) -> np.ndarray:
    out = []
    for k in range(games):
        game = Game(seed=seed + k, rules=agent.rules)
        while not game.game_over and (moves == 0 or game.moves < moves):
            game.step(agent.act(game))
        out.append(game.score)
    return np.asarray(out, dtype=np.float64)


def sampled_scores(agent: Agent, games: int, moves: int) -> np.ndarray | None:
    from agents.policy import PolicyAgent

    if not isinstance(agent, PolicyAgent):
        return None
    agent.config = agent.config.replace(max_moves=moves)
    tracker = TrainTracker(agent.counters, Budget(seconds=1e9), None)
    played = agent.play_batch(games, False, tracker, keep_traces=False)
    assert played is not None
    return np.asarray([g.score for g in played], dtype=np.float64)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", help="a saved agent")
    src.add_argument("--preset", help="a fresh (untrained) agent from this preset")
    p.add_argument("--agent-seed", type=int, default=0, help="seed of the fresh agent (--preset)")
    p.add_argument("--games", type=int, default=2000)
    p.add_argument("--moves", type=int, default=20, help="moves per game (0 = whole games)")
    p.add_argument("--seed", type=int, default=0, help="first game seed (greedy play)")
    args = p.parse_args()
    if args.checkpoint:
        try:
            agent = Agent.load(args.checkpoint)
        except ValueError as e:  # CheckpointError: one line saying why
            print(f"{p.prog}: error: {e}", file=sys.stderr)
            return 2
    else:
        preset = load_preset(args.preset)
        agent = create_agent(preset["agent"], preset["config"], seed=args.agent_seed)
    report = {"agent": agent.name, "games": args.games, "moves": args.moves}
    greedy = greedy_scores(agent, args.games, args.moves, args.seed)
    report["greedy_mean"] = round(float(greedy.mean()), 2)
    report["greedy_sem"] = round(float(greedy.std(ddof=1) / np.sqrt(len(greedy))), 2)
    sampled = sampled_scores(agent, args.games, args.moves)
    if sampled is not None:
        report["sampled_mean"] = round(float(sampled.mean()), 2)
        report["sampled_sem"] = round(float(sampled.std(ddof=1) / np.sqrt(len(sampled))), 2)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
