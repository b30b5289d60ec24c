"""``python main.py bench ntuple``: training moves/s of the n-tuple TD learner on one core; play speed by
search depth; the C++ trainer ziap/2048-tdl side by side.

A fresh agent (default settings: four 6-tuples, temporal coherence, TD(λ), restarts) learns for
``--seconds`` per round; the first second (compilation or cache load, the first games) is left out.
Moves/s count the process's CPU time by default (``-o clock=wall`` for wall time), because on a shared
machine wall time mostly measures the neighbours; the wall-clock rate is reported beside it.
Rounds follow each other on the same agent, so later rounds measure a network that has learnt longer
(longer games, more weights touched): the report shows every round and keeps the best.
Options (``-o KEY=VALUE``): ``layout`` (4x6, 2x6+2x4, 5x6, 8x6, 4x4), ``tc`` (1/0), ``checkpoint``
(an ntuple checkpoint to continue training instead of a fresh network), ``clock`` (cpu|wall),
``threads`` (self-play workers: the CPU clock then counts every worker's time, so moves/s stays a
per-core figure and the wall rate shows how the workers scale), ``search`` (play depths after the
training, e.g. ``1,2,3``: ``games`` games each with the trained network, moves per CPU-second and µs
per move; ``play_threads`` plays them on that many threads), ``games`` (default 5), ``vs_cpp`` (a
checkout of ziap/2048-tdl: builds its measuring copy, :mod:`agents.ntuple.cpp_reference`, and runs it
beside the studio, one core each (``taskset``), for the same CPU time per round (a fresh network on
both sides every round), then plays the ``search`` depths with both networks (the C++ ``agent -d
depth-1``, by default with the studio's trained network exported to it, ``-o cpp_net=own`` for its
own; the studio's rows carry the ratio studio / C++ in moves per CPU-second), ``cores`` (the two
cores of ``vs_cpp``, default ``0,1``: C++ on the first, the studio on the second).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from studio.commands.bench import BenchOptions, BenchReport, Measurement, _machine, int_option
from studio.progress import ProgressLine

_KNOWN = {
    "layout",
    "tc",
    "checkpoint",
    "clock",
    "threads",
    "search",
    "games",
    "play_threads",
    "vs_cpp",
    "cores",
}


def _depths(text: str) -> list[int]:
    try:
        depths = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"search must be depths like 1,2,3, got {text!r}") from None
    if not depths or any(not 1 <= d <= 5 for d in depths):
        raise ValueError(f"search depths must be 1 to 5, got {text!r}")
    return depths


def _cores(text: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"cores must be two CPU numbers like 0,1, got {text!r}") from None
    n = os.cpu_count() or 1
    if a == b or not (0 <= a < n and 0 <= b < n):
        raise ValueError(f"cores must be two different CPUs of 0..{n - 1}, got {text!r}")
    return a, b


def ntuple_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    from agents.base import Agent, Budget
    from agents.ntuple import NTupleAgent, NTupleConfig, bench_training
    from agents.ntuple import cpp_reference as cpp
    from agents.ntuple.cpu import host_verdict

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
    depths = _depths(extra["search"]) if "search" in extra else []
    games = int_option(extra, "games", 5, 1, 100_000)
    play_threads = int_option(extra, "play_threads", 1, 1, 64)
    cpp_repo = Path(extra["vs_cpp"]) if "vs_cpp" in extra else None
    if cpp_repo is not None and not cpp.is_checkout(cpp_repo):
        raise ValueError(f"{cpp_repo} is not a checkout of ziap/2048-tdl (no src/network/learning.h)")
    if cpp_repo is not None and ("checkpoint" in extra or extra.get("threads", "1") != "1"):
        raise ValueError("vs_cpp trains a fresh one-thread network on each side (no checkpoint, threads 1)")
    if cpp_repo is not None and (extra.get("layout", "4x6") != "4x6" or extra.get("tc", "1") != "1"):
        raise ValueError("vs_cpp compares the C++ trainer's 4x6 network with TC: layout 4x6, tc 1")
    cores = _cores(extra.get("cores", "0,1")) if cpp_repo is not None else None

    def fresh_agent() -> NTupleAgent:
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
        return NTupleAgent(NTupleConfig(**changes), seed=options.seed)  # type: ignore[arg-type]

    if "checkpoint" in extra:
        loaded = Agent.load(extra["checkpoint"])
        if not isinstance(loaded, NTupleAgent):
            raise ValueError(f"{extra['checkpoint']} is not an ntuple checkpoint")
        agent = loaded
    else:
        agent = fresh_agent()
    info: dict[str, Any] = {}
    binary = None
    tmp = None
    if cpp_repo is not None:
        progress.update(0, "building the C++ trainer's measuring copy", force=True)
        tmp = tempfile.TemporaryDirectory(prefix="bench-ntuple-cpp-")
        binary = cpp.build(cpp_repo, Path(tmp.name) / "build")
        info["cpp_repo"] = str(cpp_repo)
        info["cpp_cores_studio_core"] = list(cores or ())
    old_affinity = os.sched_getaffinity(0) if cores is not None and hasattr(os, "sched_getaffinity") else None
    measurements: list[Measurement] = []
    try:
        if old_affinity is not None and cores is not None:
            os.sched_setaffinity(0, {cores[1]})  # the studio on its core, the C++ program on the other
        cpp_dir = Path(tmp.name) / "run" if tmp is not None else None
        for k in range(options.rounds):
            progress.update(k, f"round {k + 1}/{options.rounds}", force=True)
            cpp_proc = None
            if binary is not None and cpp_dir is not None and cores is not None:
                agent = fresh_agent()  # a fresh network on both sides every round
                if cpp_dir.exists():
                    import shutil

                    shutil.rmtree(cpp_dir)
                # the same CPU time: the studio's warm-up second and its measured seconds
                cpp_proc = cpp.start(
                    binary,
                    list(cpp.TRAIN_ARGS),
                    cpp_dir,
                    {"TDL_MAX_CPU_SECONDS": str(options.seconds + 1.0), "OMP_NUM_THREADS": "1"},
                    cores[0],
                )
            if k == 0 or cpp_proc is not None:
                progress.update(k, "warming up (compile or cache load)", force=True)
                for _ in agent.train(Budget(seconds=1.0)):
                    pass
            r = bench_training(agent, options.seconds, clocks[clock_name])
            ratio = None
            if cpp_proc is not None:
                run = cpp.finish(cpp_proc)
                ratio = r["moves_per_s"] / run.moves_per_cpu_s if run.moves_per_cpu_s else None
                measurements.append(
                    Measurement(
                        key=f"cpp_round_{k + 1}",
                        label=f"round {k + 1} C++ trainer ({run.moves:,} moves in {run.cpu_seconds:.1f} CPU-s)",
                        value=run.moves_per_cpu_s,
                        detail={"moves": run.moves, "cpu_seconds": run.cpu_seconds},
                    )
                )
            measurements.append(
                Measurement(
                    key=f"round_{k + 1}",
                    label=(
                        f"round {k + 1}{' studio' if cpp_proc is not None else ''} ({int(r['games'])} games, "
                        f"{r['moves_per_wall_s']:,.0f} moves/wall-s)"
                    ),
                    value=r["moves_per_s"],
                    ratio=ratio,
                    detail={
                        "games": r["games"],
                        "moves": r["moves"],
                        "moves_per_wall_s": r["moves_per_wall_s"],
                    },
                )
            )
        studio_rounds = [m for m in measurements if m.key.startswith("round_")]
        best = max(studio_rounds, key=lambda m: m.value)
        measurements.append(Measurement(key="best", label="best round", value=best.value, ratio=best.ratio))
        cpp_net = extra.get("cpp_net", "studio")
        if cpp_net not in ("studio", "own"):
            raise ValueError(f"cpp_net must be studio or own, got {cpp_net!r}")
        if binary is not None and cpp_dir is not None and depths:
            if cpp_net == "studio":
                # both play the same network (the same values, so the same kind of boards): the time
                # per move compares the searches, not two networks' games
                cpp.export_weights(agent.weights, agent.layout.tuples, cpp_dir / "nw4x6" / "weights.bin")
            info["cpp_plays"] = "the studio's network" if cpp_net == "studio" else "its own network"
        for depth in depths:
            progress.update(options.rounds, f"playing {games} games at {depth}-ply", force=True)
            measurements.extend(
                _play(agent, depth, games, play_threads, options.seed, binary, cpp_dir, cores)
            )
    finally:
        if old_affinity is not None:
            os.sched_setaffinity(0, old_affinity)
        if tmp is not None:
            tmp.cleanup()
    stats = agent.recent_stats()
    info.update(
        {
            "rounds": options.rounds,
            "clock": clock_name,
            "seconds_per_round": options.seconds,
            "layout": agent.config.layout,
            "tc": agent.config.tc,
            "threads": agent.config.threads,
            "games_trained": agent.counters.episodes,
            "mean_score_recent": round(stats.get("mean_score", 0.0)),
            # in "machine", which the text report prints: a ratio holds only for the CPU it was measured on
            "machine": {**_machine(), "cpu_model": cpp.cpu_model(), "feature_extraction": host_verdict()[1]},
        }
    )
    if hasattr(os, "getloadavg"):
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return BenchReport("ntuple", "moves_per_s", measurements, baseline=None, info=info)


def _play(
    agent: Any,
    depth: int,
    games: int,
    threads: int,
    seed: int,
    binary: Path | None,
    cpp_dir: Path | None,
    cores: tuple[int, int] | None,
) -> list[Measurement]:
    """``games`` games at ``depth`` with the agent (and, with ``binary``, the C++ agent at the same
    depth on the other core, at the same time): moves per CPU-second and µs per move of each."""
    from agents.ntuple import cpp_reference as cpp

    agent.config.search_depth = depth
    agent.config.depths_policy = ()
    agent.play_fast(1, seed=seed + 10_000, threads=threads)  # compiles (or loads) the search kernels
    proc = None
    if binary is not None and cpp_dir is not None and cores is not None:
        proc = cpp.start(binary, ["agent", "-d", str(depth - 1), "-e", str(games)], cpp_dir, {}, cores[0])
    c0 = time.process_time()
    out = agent.play_fast(games, seed=seed, threads=threads)
    used = time.process_time() - c0
    moves = int(out["moves"].sum())
    rate = moves / used if used > 0 else 0.0
    rows = []
    ratio = None
    if proc is not None:
        run = cpp.finish(proc)
        ratio = rate / run.moves_per_cpu_s if run.moves_per_cpu_s else None
        us = 1e6 * run.cpu_seconds / run.moves if run.moves else 0.0
        mean = cpp.parse_eval(run.output)["mean_score"]
        rows.append(
            Measurement(
                key=f"cpp_play_{depth}ply",
                label=f"C++ agent -d {depth - 1} ({us:,.2f} µs/move, {run.moves:,} moves, mean {mean:,.0f})",
                value=run.moves_per_cpu_s,
                detail={"us_per_move": us, "moves": run.moves, "mean_score": mean},
            )
        )
    us = 1e6 * used / moves if moves else 0.0
    rows.append(
        Measurement(
            key=f"play_{depth}ply",
            label=(
                f"{depth}-ply play{f' on {threads} threads' if threads > 1 else ''} ({us:,.2f} µs/move, "
                f"{moves:,} moves, mean {float(out['score'].mean()):,.0f})"
            ),
            value=rate,
            ratio=ratio,
            detail={
                "us_per_move": us,
                "moves": moves,
                "mean_score": float(out["score"].mean()),
                "threads": threads,
            },
        )
    )
    return rows
