"""Check the review's accuracy against players of known strength, through the command line only.

    python scripts/review_calibration.py --data-dir /tmp/review-check [--games 9] [--seed 0] [--minutes 4]

In a scratch data dir: when the store has no n-tuple network yet, ``train --agent ntuple --minutes M``
makes one (it becomes the default reviewer); ``eval`` plays ``--games`` fixed-seed games each of random,
greedy, expectimax depth 1, expectimax depth 2 and the default reviewer's own network with 2-ply search
(a copy of its checkpoint whose settings say 2-ply: ``eval`` plays a checkpoint with its own settings);
``review ID --json`` grades every game with the default reviewer. Prints per player the mean (min-max)
accuracy and score, whether the means strictly increase in that order, random <= 30 %, expectimax
depth 2 >= 90 %, the Spearman correlation of game accuracy with final score over all the games, and
the reviewer's own games (the network at 2-ply reviewing itself: >= 99 % and no blunder), plus the
calibrated expectimax depth 2 reviewing its own games. ``--json`` prints the figures as one object.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PLAYERS: tuple[tuple[str, list[str]], ...] = (
    ("random", ["--agent", "random"]),
    ("greedy", ["--agent", "greedy"]),
    ("expectimax d1", ["--agent", "expectimax", "--depth", "1"]),
    ("expectimax d2", ["--agent", "expectimax", "--depth", "2"]),
)
NTUPLE = "n-tuple 2-ply"


def cli(data_dir: str, *args: str) -> str:
    """Run ``python main.py --data-dir D ARGS`` and return its stdout (exit on failure)."""
    cmd = [sys.executable, str(ROOT / "main.py"), "--data-dir", data_dir, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr.strip()[-2000:]}")
    return done.stdout


def game_ids(data_dir: str) -> set[int]:
    out = cli(data_dir, "games", "list", "--json", "--limit", "1000000")
    return {int(json.loads(line)["id"]) for line in out.splitlines() if line.strip()}


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1, ties sharing their mean rank (as Spearman's rho needs)."""
    order = np.argsort(x, kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(len(x), dtype=np.float64)
    for v in np.unique(x):
        tied = x == v
        r[tied] = r[tied].mean()
    return r


def spearman(a: list[float], b: list[float]) -> float:
    return float(np.corrcoef(ranks(np.asarray(a, float)), ranks(np.asarray(b, float)))[0, 1])


def two_ply_copy(checkpoint: str, dest: Path) -> str:
    """A copy of an n-tuple checkpoint whose settings play at 2-ply (the same weights)."""
    sys.path.insert(0, str(ROOT))
    from agents.spec import AgentSpec

    agent = AgentSpec.from_checkpoint(checkpoint).build(None, exact=False)
    agent.config = agent.config.replace(search_depth=2, depths_policy=())
    return str(agent.save(dest))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, help="a scratch data dir (games and a run are added)")
    p.add_argument("--games", type=int, default=9, help="games per player (default 9)")
    p.add_argument("--seed", type=int, default=0, help="seed of the game seeds (default 0)")
    p.add_argument("--minutes", type=float, default=4.0, help="n-tuple training when the store has none")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args()
    d = args.data_dir
    Path(d).mkdir(parents=True, exist_ok=True)

    if "ntuple" not in cli(d, "runs", "list"):
        print(f"training an n-tuple reviewer for {args.minutes:g} minutes…", file=sys.stderr)
        cli(d, "train", "--agent", "ntuple", "--minutes", str(args.minutes), "--eval-games", "10")
    # Which network reviews: ask review itself (a one-move game is not needed: --prepare prints it too).
    groups: dict[str, list[int]] = {}
    players = list(PLAYERS)
    before = game_ids(d)
    first = sorted(before)[0] if before else None
    if first is None:  # one game to learn the default reviewer from
        cli(d, "eval", "--agent", "random", "--games", "1", "--seed", str(args.seed + 99))
        first = sorted(game_ids(d))[0]
        before = game_ids(d)
    reviewer = json.loads(cli(d, "review", str(first), "--json"))["reviewer"]
    if reviewer.get("name") != "ntuple" or not reviewer.get("checkpoint"):
        sys.exit(f"the default reviewer is not an n-tuple network: {reviewer.get('label')}")
    copy = two_ply_copy(reviewer["checkpoint"], Path(d) / "reviewer-2ply.npz")
    players.append((NTUPLE, ["--checkpoint", copy]))
    for name, flags in players:
        print(f"eval {name}: {args.games} games…", file=sys.stderr)
        cli(d, "eval", *flags, "--games", str(args.games), "--seed", str(args.seed))
        after = game_ids(d)
        groups[name] = sorted(after - before)
        before = after

    listed = cli(d, "games", "list", "--json", "--limit", "1000000").splitlines()
    scores = {int(g["id"]): int(g["score"]) for g in (json.loads(line) for line in listed if line.strip())}
    results: dict[str, list[dict[str, float]]] = {}
    for name, ids in groups.items():
        results[name] = []
        for gid in ids:
            r = json.loads(cli(d, "review", str(gid), "--json"))
            score = scores[gid]
            results[name].append(
                {"game": gid, "accuracy": r["accuracy"], "score": score, "blunders": r["counts"]["blunder"]}
            )
    own = [
        json.loads(cli(d, "review", str(gid), "--reviewer", "expectimax", "--depth", "2", "--json"))
        for gid in groups["expectimax d2"]
    ]
    means = {n: float(np.mean([g["accuracy"] for g in rows])) for n, rows in results.items()}
    order = [n for n, _ in players]
    every = [g for rows in results.values() for g in rows]
    figures = {
        "reviewer": reviewer.get("label"),
        "players": {
            n: {
                "games": len(rows),
                "mean_accuracy": round(means[n], 2),
                "min_accuracy": min(g["accuracy"] for g in rows),
                "max_accuracy": max(g["accuracy"] for g in rows),
                "mean_score": round(float(np.mean([g["score"] for g in rows])), 1),
                "blunders": sum(g["blunders"] for g in rows),
            }
            for n, rows in results.items()
        },
        "strictly_increasing": all(means[a] < means[b] for a, b in itertools.pairwise(order)),
        "random_at_most_30": means["random"] <= 30.0,
        "expectimax_d2_at_least_90": means["expectimax d2"] >= 90.0,
        "spearman_accuracy_score": round(
            spearman([g["accuracy"] for g in every], [g["score"] for g in every]), 3
        ),
        "games": len(every),
        "self_review_ntuple": {
            "min_accuracy": min(g["accuracy"] for g in results[NTUPLE]),
            "blunders": sum(g["blunders"] for g in results[NTUPLE]),
        },
        "self_review_expectimax_d2": {
            "min_accuracy": min(r["accuracy"] for r in own),
            "blunders": sum(r["counts"]["blunder"] for r in own),
        },
    }
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"reviewer: {figures['reviewer']}")
    print(f"{'player':<16}{'games':>6}{'accuracy mean (min-max)':>28}{'mean score':>12}{'blunders':>10}")
    for n in order:
        f = figures["players"][n]
        acc = f"{f['mean_accuracy']:.1f} ({f['min_accuracy']:.1f}-{f['max_accuracy']:.1f})"
        print(f"{n:<16}{f['games']:>6}{acc:>28}{f['mean_score']:>12,.0f}{f['blunders']:>10}")
    print(f"strictly increasing: {figures['strictly_increasing']}")
    print(
        f"random <= 30 %: {figures['random_at_most_30']}   expectimax d2 >= 90 %: {figures['expectimax_d2_at_least_90']}"
    )
    print(
        f"Spearman(accuracy, final score) over {figures['games']} games: {figures['spearman_accuracy_score']}"
    )
    s1, s2 = figures["self_review_ntuple"], figures["self_review_expectimax_d2"]
    print(f"n-tuple 2-ply reviewing its own games: min {s1['min_accuracy']:.1f} %, {s1['blunders']} blunders")
    print(
        f"expectimax d2 (calibrated) reviewing its own games: min {s2['min_accuracy']:.1f} %, {s2['blunders']} blunders"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
