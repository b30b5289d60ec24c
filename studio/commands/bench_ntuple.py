"""``python main.py bench ntuple``: training moves/s of the n-tuple TD learner on one core.

A fresh agent (default settings: four 6-tuples, temporal coherence, TD(λ), restarts) learns for
``--seconds`` per round; the first second (compilation or cache load, the first games) is left out.
Moves/s count the process's CPU time by default (``-o clock=wall`` for wall time), because on a shared
machine wall time mostly measures the neighbours; the wall-clock rate is reported beside it.
Rounds follow each other on the same agent, so later rounds measure a network that has learnt longer
(longer games, more weights touched): the report shows every round and keeps the best.
Options (``-o KEY=VALUE``): ``layout`` (4x6, 2x6+2x4, 5x6, 8x6, 4x4), ``tc`` (1/0), ``checkpoint``
(an ntuple checkpoint to continue training instead of a fresh network), ``clock`` (cpu|wall),
``threads`` (self-play workers: the CPU clock then counts every worker's time, so moves/s stays a
per-core figure and the wall rate shows how the workers scale).
"""

from __future__ import annotations

import os
import time

from studio.commands.bench import BenchOptions, BenchReport, Measurement, _machine
from studio.progress import ProgressLine

_KNOWN = {"layout", "tc", "checkpoint", "clock", "threads"}


def ntuple_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    from agents.base import Agent, Budget
    from agents.ntuple import NTupleAgent, NTupleConfig, bench_training

    extra = options.extra
    unknown = set(extra) - _KNOWN
    if unknown:
        raise ValueError(
            f"bench ntuple has no option {sorted(unknown)[0]!r} (known: {', '.join(sorted(_KNOWN))})"
        )
    clocks = {"cpu": time.process_time, "wall": time.perf_counter}
    clock_name = extra.get("clock", "cpu")
    if clock_name not in clocks:
        raise ValueError(f"clock must be cpu or wall, got {clock_name!r}")
    if "checkpoint" in extra:
        loaded = Agent.load(extra["checkpoint"])
        if not isinstance(loaded, NTupleAgent):
            raise ValueError(f"{extra['checkpoint']} is not an ntuple checkpoint")
        agent = loaded
    else:
        changes: dict[str, object] = {}
        if "layout" in extra:
            changes["layout"] = extra["layout"]
        if "tc" in extra:
            changes["tc"] = extra["tc"].lower() in ("1", "true", "yes", "on")
        if "threads" in extra:
            try:
                changes["threads"] = int(extra["threads"])
            except ValueError:
                raise ValueError(f"threads must be a whole number, got {extra['threads']!r}") from None
        agent = NTupleAgent(NTupleConfig(**changes), seed=options.seed)  # type: ignore[arg-type]
    progress.update(0, "warming up (compile or cache load)", force=True)
    for _ in agent.train(Budget(seconds=1.0)):
        pass
    measurements = []
    for k in range(options.rounds):
        progress.update(k, f"round {k + 1}/{options.rounds}", force=True)
        r = bench_training(agent, options.seconds, clocks[clock_name])
        measurements.append(
            Measurement(
                key=f"round_{k + 1}",
                label=f"round {k + 1} ({int(r['games'])} games, {r['moves_per_wall_s']:,.0f} moves/wall-s)",
                value=r["moves_per_s"],
                detail={"games": r["games"], "moves": r["moves"], "moves_per_wall_s": r["moves_per_wall_s"]},
            )
        )
    best = max(measurements, key=lambda m: m.value)
    measurements.append(Measurement(key="best", label="best round", value=best.value))
    stats = agent.recent_stats()
    info = {
        "rounds": options.rounds,
        "clock": clock_name,
        "seconds_per_round": options.seconds,
        "layout": agent.config.layout,
        "tc": agent.config.tc,
        "threads": agent.config.threads,
        "games_trained": agent.counters.episodes,
        "mean_score_recent": round(stats.get("mean_score", 0.0)),
        "machine": _machine(),
    }
    if hasattr(os, "getloadavg"):
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return BenchReport("ntuple", "moves_per_s", measurements, baseline=None, info=info)
