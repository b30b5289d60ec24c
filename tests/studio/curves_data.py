"""Made-up runs for the curves tests: the columns every run logs plus any metrics a test adds."""

from __future__ import annotations

import numpy as np

from studio.widgets.curves import RunSeries


def metric_run(agent: str, run_id: int, step: np.ndarray, **metrics: np.ndarray | float) -> RunSeries:
    """Run ``run_id`` of ``agent`` at steps ``step``: episodes 0.., half a second an episode, a score rising
    from 100 to 2000, a 256 tile, 900-1100 steps a second, and ``metrics`` (a constant is repeated)."""
    n = len(step)
    run = RunSeries(f"run {run_id} {agent}", agent=agent, run_id=run_id)
    cols: dict[str, np.ndarray] = {
        "episode": np.arange(n, dtype=float),
        "step": np.asarray(step, dtype=float),
        "elapsed": np.arange(n) * 0.5,
        "score": np.linspace(100, 2000, n),
        "max_tile": np.full(n, 256.0),
        "steps_per_s": np.linspace(900, 1100, n),
    }
    for name, v in metrics.items():
        cols[name] = np.broadcast_to(np.asarray(v, dtype=float), (n,)).copy()
    run.add_columns(cols)
    return run
