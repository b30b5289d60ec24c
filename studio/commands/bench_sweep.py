"""``python main.py bench sweep``: what a sweep costs besides training, and how many trials an hour.

Each configuration runs one real sweep (:func:`studio.services.sweep.run_sweep`) in a scratch store: an
n-tuple grid of ``trials`` points (``lr`` values), one seed each, every trial ``episodes`` episodes and
``eval_games`` closing evaluation games. Measured per configuration (local processes with 1 and 2
workers, then Ray Tune with 2 when Ray is installed):

* **overhead per trial**: the sweep's wall time times its workers, less the time the trials' runs
  trained and evaluated (their own clocks), over the trials: starting a trial (a process or a Ray
  task, imports, the agent), reporting its metrics and writing them and its checkpoints to the store.
  Goal locally: <= 2 s.
* **trials per hour**: trials over the sweep's wall time, for this trial size.

Options (``-o KEY=VALUE``): ``trials`` (default 4), ``episodes`` (default 200), ``eval_games``
(default 5), ``backends`` (default ``local1,local2,ray2``; any of those).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, _machine, parse_options
from studio.progress import ProgressLine

_CONFIGS = {"local1": ("local", 1), "local2": ("local", 2), "ray2": ("ray", 2)}
OPTIONS = {
    "trials": Option("int", 4, 1, 64),
    "episodes": Option("int", 200, 1, 1_000_000),
    "eval_games": Option("int", 5, 0, 10_000),
    "backends": Option("names", list(_CONFIGS), choices=tuple(_CONFIGS), what="backend"),
}
#: Goal for the local overhead per trial (seconds).
GOAL_OVERHEAD_S = 2.0


def _one_sweep(
    backend: str, workers: int, trials: int, episodes: int, eval_games: int, progress: ProgressLine
) -> dict[str, Any]:
    from agents.base import Budget
    from engine.store import GameStore
    from studio.services.sweep import SweepFinished, SweepRequest, TrialDone, TrialStarted, run_sweep

    lrs = tuple(round(0.1 * 0.7**k, 6) for k in range(trials))
    request = SweepRequest(
        agent="ntuple",
        budget=Budget(episodes=episodes),
        grid={"lr": lrs},
        seeds=1,
        seed=1,
        eval_games=eval_games,
        workers=workers,
        backend=backend,
    )
    with (
        tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp,
        GameStore(Path(tmp) / "s.sqlite3") as store,
    ):
        t0 = time.perf_counter()
        status = "failed"
        sweep_id = 0
        for ev in run_sweep(request, store):
            sweep_id = ev.sweep_id
            if isinstance(ev, TrialStarted | TrialDone):
                progress.update(
                    ev.finished_trials / trials,
                    f"{backend} x{workers}: {ev.finished_trials}/{trials} trials",
                    force=True,
                )
            if isinstance(ev, SweepFinished):
                status = ev.status or status
        wall = time.perf_counter() - t0
        if status != "finished":
            raise RuntimeError(f"the {backend} sweep ended {status}")
        busy = 0.0
        for t in store.sweep_trials(sweep_id):
            assert t.run_id is not None
            run = store.get_run(t.run_id)
            cols = store.run_metrics(t.run_id, ["evaluation"])
            eval_s = (
                float(cols["eval_seconds"][-1])
                if "eval_seconds" in cols and len(cols["eval_seconds"])
                else 0.0
            )
            busy += run.elapsed + eval_s
    overhead = max(0.0, (wall * workers - busy) / trials)
    return {"wall_s": wall, "busy_s": busy, "overhead_s": overhead, "trials_per_hour": 3600.0 * trials / wall}


def sweep_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    from studio.services.runs import have_ray

    opts = parse_options("sweep", options.extra, OPTIONS)
    trials, episodes, eval_games = opts["trials"], opts["episodes"], opts["eval_games"]
    names: list[str] = opts["backends"]
    info: dict[str, Any] = {
        "rounds": 1,
        "trials": trials,
        "episodes_per_trial": episodes,
        "eval_games": eval_games,
    }
    measurements: list[Measurement] = []
    for name in names:
        backend, workers = _CONFIGS[name]
        if backend == "ray" and not have_ray():
            info[name] = "skipped: Ray is not installed"
            continue
        r = _one_sweep(backend, workers, trials, episodes, eval_games, progress)
        goal = f" (goal <= {GOAL_OVERHEAD_S:g} s)" if backend == "local" else ""
        measurements.append(
            Measurement(
                key=name,
                label=(
                    f"{backend} x{workers}: {r['overhead_s']:.2f} s overhead per trial{goal}, "
                    f"{r['wall_s']:.1f} s for {trials} trials"
                ),
                value=r["trials_per_hour"],
                detail=r,
            )
        )
    info["machine"] = _machine()
    return BenchReport("sweep", "trials_per_hour", measurements, baseline=None, info=info)
