"""Check the review's accuracy against players of known strength, through the command line only.

    python scripts/review_calibration.py --data-dir /tmp/review-check [--games 9] [--seed 0] [--minutes 4]

In a scratch data dir: when the store has no n-tuple network yet, ``train --agent ntuple --minutes M``
makes one (it becomes the default reviewer); ``eval`` plays ``--games`` fixed-seed games each of random,
greedy, expectimax depth 1, expectimax depth 2 and the default reviewer's own network with 2-ply search
(``eval --checkpoint CK --set search_depth=2``); ``review ID --json`` grades every game with the default reviewer. Prints per player the mean (min-max)
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
from typing import Any

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


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, help="a scratch data dir (games and a run are added)")
    p.add_argument("--games", type=int, default=9, help="games per player (default 9)")
    p.add_argument("--seed", type=int, default=0, help="seed of the game seeds (default 0)")
    p.add_argument("--minutes", type=float, default=4.0, help="n-tuple training when the store has none")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p.parse_args()


def default_reviewer(d: str, args: argparse.Namespace) -> dict[str, Any]:
    """The default reviewer (an n-tuple network, trained here when the store has none), as ``review``
    names it; exits when it is not an n-tuple checkpoint."""
    if "ntuple" not in cli(d, "runs", "list"):
        print(f"training an n-tuple reviewer for {args.minutes:g} minutes…", file=sys.stderr)
        cli(d, "train", "--agent", "ntuple", "--minutes", str(args.minutes), "--eval-games", "10")
    # Which network reviews: ask review itself, about any game (one random game when there is none).
    ids = game_ids(d)
    if not ids:
        cli(d, "eval", "--agent", "random", "--games", "1", "--seed", str(args.seed + 99))
        ids = game_ids(d)
    reviewer: dict[str, Any] = json.loads(cli(d, "review", str(min(ids)), "--json"))["reviewer"]
    if reviewer.get("name") != "ntuple" or not reviewer.get("checkpoint"):
        sys.exit(f"the default reviewer is not an n-tuple network: {reviewer.get('label')}")
    return reviewer


def play(d: str, args: argparse.Namespace, players: list[tuple[str, list[str]]]) -> dict[str, list[int]]:
    """``--games`` games of each player (the same seeds); the new games' ids per player."""
    groups: dict[str, list[int]] = {}
    before = game_ids(d)
    for name, flags in players:
        print(f"eval {name}: {args.games} games…", file=sys.stderr)
        cli(d, "eval", *flags, "--games", str(args.games), "--seed", str(args.seed))
        after = game_ids(d)
        groups[name] = sorted(after - before)
        before = after
    return groups


def review(d: str, groups: dict[str, list[int]]) -> dict[str, list[dict[str, float]]]:
    """Every game reviewed by the default reviewer: its accuracy, final score and blunders."""
    listed = cli(d, "games", "list", "--json", "--limit", "1000000").splitlines()
    scores = {int(g["id"]): int(g["score"]) for g in (json.loads(line) for line in listed if line.strip())}
    results: dict[str, list[dict[str, float]]] = {}
    for name, ids in groups.items():
        results[name] = []
        for gid in ids:
            r = json.loads(cli(d, "review", str(gid), "--json"))
            results[name].append(
                {
                    "game": gid,
                    "accuracy": r["accuracy"],
                    "score": scores[gid],
                    "blunders": r["counts"]["blunder"],
                }
            )
    return results


def figures_of(
    reviewer: dict[str, Any],
    order: list[str],
    results: dict[str, list[dict[str, float]]],
    own: list[dict[str, Any]],
) -> dict[str, Any]:
    """The calibration's figures: per player, the checks, the correlation, the self-reviews."""
    means = {n: float(np.mean([g["accuracy"] for g in rows])) for n, rows in results.items()}
    every = [g for rows in results.values() for g in rows]
    return {
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


def print_figures(figures: dict[str, Any], order: list[str]) -> None:
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


def main() -> int:
    args = parse_args()
    d = args.data_dir
    Path(d).mkdir(parents=True, exist_ok=True)
    reviewer = default_reviewer(d, args)
    # the reviewer's own network at 2-ply: its checkpoint with the search settings replaced
    two_ply = ["--checkpoint", reviewer["checkpoint"], "--set", "search_depth=2", "--set", "depths_policy="]
    players = [*PLAYERS, (NTUPLE, two_ply)]
    groups = play(d, args, players)
    results = review(d, groups)
    own = [
        json.loads(cli(d, "review", str(gid), "--reviewer", "expectimax", "--depth", "2", "--json"))
        for gid in groups["expectimax d2"]
    ]
    order = [n for n, _ in players]
    figures = figures_of(reviewer, order, results, own)
    if args.json:
        print(json.dumps(figures))
    else:
        print_figures(figures, order)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
