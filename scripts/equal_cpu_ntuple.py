"""The studio's n-tuple learner against the C++ trainer ziap/2048-tdl at equal CPU time.

    python scripts/equal_cpu_ntuple.py --cpp-repo PATH_TO_2048-tdl --cpu-seconds 300 --work DIR

Both train side by side from a fresh network (the C++ README's settings, the studio's defaults), each
until its process has used ``--cpu-seconds`` of CPU time: the studio's counted from its process start
(imports and compilation included), the C++ trainer stopped by its measuring copy
(:mod:`agents.ntuple.cpp_reference`, ``TDL_MAX_CPU_SECONDS``). Then each network plays ``--games``
1-ply games (the studio's on seeds 1,000,000 + i in the jitted loop of ``eval --fast``, the C++ one with
its own ``agent`` command). CPU time, not wall time, so a busy machine slows both without favouring
either. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def train_studio(cpu_seconds: float, work: Path, seed: int) -> None:
    """Train a fresh default n-tuple agent in this process until it has used ``cpu_seconds``."""
    from agents.base import Budget
    from agents.ntuple import NTupleAgent

    agent = NTupleAgent(seed=seed)
    for _ in agent.train(Budget(seconds=1e8)):  # the CPU clock below ends it, not the wall clock
        if time.process_time() >= cpu_seconds:
            break
    used = time.process_time()
    agent.save(work / "studio.npz")
    figures = {"cpu_seconds": used, "moves": agent.counters.steps, "games": agent.counters.episodes}
    (work / "studio_train.json").write_text(json.dumps(figures))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpp-repo", type=Path, default=None, help="a checkout of ziap/2048-tdl")
    parser.add_argument("--cpu-seconds", type=float, required=True)
    parser.add_argument("--work", type=Path, required=True, help="a folder for the networks and builds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--studio-only", action="store_true", help=argparse.SUPPRESS)  # the child
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.studio_only:
        train_studio(args.cpu_seconds, args.work, args.seed)
        return 0
    from agents.fast_eval import evaluate_fast
    from agents.ntuple import cpp_reference as cref
    from agents.spec import AgentSpec

    if args.cpp_repo is None or not cref.is_checkout(args.cpp_repo):
        parser.error("--cpp-repo must be a checkout of ziap/2048-tdl (src/network/learning.h)")
    binary = cref.build(args.cpp_repo, args.work / "cpp-build")
    env = {"TDL_MAX_CPU_SECONDS": str(args.cpu_seconds), "OMP_NUM_THREADS": "1"}
    t0 = time.time()
    cpp = cref.start(binary, list(cref.TRAIN_ARGS), args.work / "cpp", env, None)
    child = [sys.executable, __file__, "--studio-only", "--cpu-seconds", str(args.cpu_seconds)]
    subprocess.run(
        [*child, "--work", str(args.work), "--seed", str(args.seed)],
        env={**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"},
        check=True,
    )
    theirs_run = cref.finish(cpp)
    wall = time.time() - t0
    mine = json.loads((args.work / "studio_train.json").read_text())
    # 1-ply on the games of seeds 1,000,000 + i: eval --fast's jitted loop
    spec = AgentSpec.from_checkpoint(args.work / "studio.npz", "ntuple")
    mine_played = evaluate_fast(spec, args.games, seed=1_000_000).result
    out = subprocess.run(
        [str(binary), "agent", "-e", str(args.games)],
        cwd=args.work / "cpp",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    theirs = cref.parse_eval(out)
    row = {
        "cpu": cref.cpu_model(),
        "cpu_seconds": args.cpu_seconds,
        "wall_seconds": round(wall),
        "studio": {
            **mine,
            "mean_score": mine_played.mean_score,
            **{str(t): f for t, f in mine_played.tile_at_least((2048, 8192, 16384, 32768)).items()},
        },
        "cpp": {"moves": theirs_run.moves, "cpu_seconds": theirs_run.cpu_seconds, **theirs},
    }
    row["studio_over_cpp"] = round(row["studio"]["mean_score"] / theirs["mean_score"], 3)
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
