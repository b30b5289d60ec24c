"""When a run's metric first reached a level: the training time it took, from the run's stored history.

    python scripts/metric_reached.py RUN_ID batch_mean_score --window 200 --gain 1.6 --level 87
    python scripts/metric_reached.py RUN_ID mean_score --window 1 --level 100000

The metric is smoothed by a rolling mean over ``--window`` of its reports (seed 001's batch scores
are noisy: 10 games each). ``--gain G`` asks when the smoothed value first stood G above its first
smoothed value (the "85.4 -> 87" of seed 001 is a gain of 1.6); ``--level V`` when it first reached V.
Prints one JSON object: the first / last / best smoothed values and, per target, the elapsed training
seconds, the episode and the report number where it was first met (null when never).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.paths import data_dir
from engine.store import GameStore


def reached(
    roll: np.ndarray, elapsed: np.ndarray, episodes: np.ndarray, window: int, target: float
) -> dict[str, Any] | None:
    """First report where the rolling mean ``roll`` (over ``window`` reports, ending there) is >= target, or None."""
    hit = np.flatnonzero(roll >= target)
    if hit.size == 0:
        return None
    i = int(hit[0]) + window - 1
    return {
        "target": round(target, 4),
        "seconds": round(float(elapsed[i]), 1),
        "episode": int(episodes[i]),
        "report": i + 1,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=int)
    parser.add_argument("metric")
    parser.add_argument(
        "--window", type=int, default=1, help="rolling mean over this many reports (default 1)"
    )
    parser.add_argument(
        "--gain", type=float, action="append", default=[], help="target: first smoothed value + G"
    )
    parser.add_argument("--level", type=float, action="append", default=[], help="target: the value V")
    parser.add_argument("--data-dir", help="the studio's data folder (default: as the app)")
    args = parser.parse_args(argv)
    if args.window < 1:
        parser.error("--window must be at least 1")
    with GameStore.open(data_dir(args.data_dir)) as store:
        cols = store.run_metrics(args.run)
    if args.metric not in cols:
        parser.error(f"run {args.run} has no metric {args.metric!r}")
    sel = ~np.isnan(cols[args.metric])
    values, elapsed, episodes = cols[args.metric][sel], cols["elapsed"][sel], cols["episode"][sel]
    if values.size < args.window:
        parser.error(f"run {args.run} reported {args.metric} {values.size} times, fewer than --window")
    roll = np.convolve(values, np.ones(args.window) / args.window, mode="valid")
    targets = [roll[0] + g for g in args.gain] + list(args.level)
    out = {
        "run": args.run,
        "metric": args.metric,
        "window": args.window,
        "reports": int(values.size),
        "first": round(float(roll[0]), 4),
        "last": round(float(roll[-1]), 4),
        "best": round(float(roll.max()), 4),
        "reached": [
            reached(roll, elapsed, episodes, args.window, t) or {"target": round(t, 4), "seconds": None}
            for t in targets
        ],
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
