"""The studio's n-tuple learner against the C++ trainer ziap/2048-tdl, at the same number of real moves.

    python scripts/ab_cpp_ntuple.py --cpp-repo PATH_TO_2048-tdl --moves 40000000 --pairs 3

Each pair trains both learners side by side, one core each (4x6 tuples, alpha 1.0 with temporal
coherence, lambda 0.5, restarts: the C++ README's settings, and the studio's defaults), stops both at
``--moves`` moves, then plays ``--eval-games`` 1-ply games with each network (the C++ one with its own
``agent`` command). Prints one JSON line per pair and a summary.

The C++ trainer runs as a measuring copy (:mod:`agents.ntuple.cpp_reference` builds it: a counter
of every move, including the restart segments its own progress lines leave out, and a stop at
``TDL_MAX_MOVES``); its learning code is untouched. Speed side by side (moves per CPU-second, play
time per move): ``python main.py bench ntuple -o vs_cpp=PATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.ntuple import cpp_reference as cref  # noqa: E402


def run_pair(binary: Path, moves: int, seed: int, games: int, work: Path) -> dict[str, object]:
    cpp_dir = work / f"cpp{seed}"
    ours_dir = work / f"ours{seed}"
    limits = {"TDL_MAX_MOVES": str(moves), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    cpp = cref.start(binary, list(cref.TRAIN_ARGS), cpp_dir, limits, None)
    ours = subprocess.run(
        [
            *(sys.executable, str(ROOT / "main.py"), "--data-dir", str(ours_dir), "train"),
            *("--agent", "ntuple", "--seed", str(seed), "--steps", str(moves), "--log-every", "0"),
        ],
        env={**os.environ, **limits},
        capture_output=True,
        text=True,
        check=True,
    )
    try:
        trained = cref.finish(cpp)
    except RuntimeError as exc:
        raise SystemExit(f"the C++ trainer failed: {exc}") from None
    wall = time.perf_counter() - t0
    reported = re.findall(r"m/s:\s+(\d+)\s+elapsed: (\d+)s", trained.output)
    ck = sorted((ours_dir / "checkpoints").rglob(f"*step{moves}.npz"))
    if not ck:
        raise SystemExit(f"no checkpoint at {moves} moves in {ours_dir}: {ours.stdout[-400:]}")
    # 1-ply without downgrading on the games of seeds 1,000,000 + i (eval --fast's jitted loop)
    play = ["--set", "search_depth=1", "--set", "depths_policy=", "--set", "downgrade_from=0"]
    mine = json.loads(
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "main.py"),
                "eval",
                "--checkpoint",
                str(ck[-1]),
                "--games",
                str(games),
                "--seed",
                "1000000",
                "--fast",
                *play,
                "--json",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["results"][0]
    cpp_eval = subprocess.run(
        [str(binary), "agent", "-e", str(games)], cwd=cpp_dir, capture_output=True, text=True, check=True
    ).stdout
    theirs = cref.parse_eval(cpp_eval)
    return {
        "seed": seed,
        "wall_seconds": round(wall, 1),
        "studio": {
            "moves": moves,
            "train_cpu_seconds": round(mine["trained"]["seconds"], 1),
            "mean_score": mine["mean_score"],
            "2048": mine["max_tile_at_least"]["2048"],
            "8192": mine["max_tile_at_least"]["8192"],
            "16384": mine["max_tile_at_least"]["16384"],
        },
        "cpp": {
            "moves": trained.moves,
            "train_cpu_seconds": round(trained.cpu_seconds, 1),
            "moves_its_progress_lines_count": sum(int(a) * int(b) for a, b in reported),
            "mean_score": theirs["mean_score"],
            "2048": theirs.get("2048", 0.0),
            "8192": theirs.get("8192", 0.0),
            "16384": theirs.get("16384", 0.0),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpp-repo", required=True, type=Path, help="a checkout of ziap/2048-tdl")
    parser.add_argument("--moves", type=int, default=40_000_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--eval-games", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1, help="the studio's seed of pair k is seed + k")
    parser.add_argument("--keep", type=Path, help="keep the networks and logs here (default: a temp dir)")
    args = parser.parse_args(argv)
    if not cref.is_checkout(args.cpp_repo):
        parser.error(f"{args.cpp_repo} is not a checkout of ziap/2048-tdl (no src/network/learning.h)")
    with tempfile.TemporaryDirectory(prefix="ab-cpp-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        binary = cref.build(args.cpp_repo, work / "cpp-build")
        rows = []
        for k in range(args.pairs):
            row = run_pair(binary, args.moves, args.seed + k, args.eval_games, work)
            print(json.dumps(row), flush=True)
            rows.append(row)
    ours = [float(r["studio"]["mean_score"]) for r in rows]  # type: ignore[index]
    theirs = [float(r["cpp"]["mean_score"]) for r in rows]  # type: ignore[index]
    summary = {
        "moves": args.moves,
        "pairs": args.pairs,
        "studio_mean": round(statistics.mean(ours)),
        "cpp_mean": round(statistics.mean(theirs)),
        "studio_over_cpp": round(statistics.mean(ours) / statistics.mean(theirs), 3),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
