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
own; the studio's rows carry the ratio studio / C++ in moves per CPU-second), and times both searches
on the same boards (every board of ``games`` 1-ply games, at most 5,000: the fairer figure, as each
program's own games differ in their boards), ``cores`` (the two cores of ``vs_cpp``, default ``0,1``:
C++ on the first, the studio on the second), ``scaling`` (N: a 1-thread and an N-thread network,
fresh or two copies of ``checkpoint``, learn in alternation, ``--seconds`` of wall time each per
round; each round's moves per wall-second of both, their ratio, the cores each got (CPU / wall time)
and moves per CPU-second, then the median ratio against the goal: 1.8x for 2 threads on 2 cores. On a
machine busier than its cores the ratio measures the neighbours: the load average is printed beside it).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine import Game
from studio.commands.bench import (
    CLOCK_OPTION,
    CLOCKS,
    BenchOptions,
    BenchReport,
    Clock,
    Measurement,
    Option,
    _machine,
    load_average,
    parse_options,
    report_info,
)
from studio.progress import ProgressLine

OPTIONS = {
    "layout": Option("text"),
    "tc": Option("bool"),
    "checkpoint": Option("text"),
    "clock": CLOCK_OPTION,
    "threads": Option("int", None, 1, 256),
    "search": Option("ints", [], 1, 5),
    "games": Option("int", 5, 1, 100_000),
    "play_threads": Option("int", 1, 1, 64),
    "vs_cpp": Option("text"),
    "cores": Option("text", "0,1"),
    "cpp_net": Option("choice", "studio", choices=("studio", "own")),
    "scaling": Option("int", None, 2, 256),
}

#: ``-o scaling=2``: what 2 threads should make of 2 cores, in moves per wall-second over 1 thread.
SCALING_GOAL = 1.8


def _cores(text: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"cores must be two CPU numbers like 0,1, got {text!r}") from None
    n = os.cpu_count() or 1
    if a == b or not (0 <= a < n and 0 <= b < n):
        raise ValueError(f"cores must be two different CPUs of 0..{n - 1}, got {text!r}")
    return a, b


def _options(extra: dict[str, str]) -> dict[str, Any]:
    """The typed ``-o`` options, ``vs_cpp`` checked against the others (ValueError, one line)."""
    from agents.ntuple import cpp_reference as cpp

    opts = parse_options("ntuple", extra, OPTIONS)
    if opts["checkpoint"] is not None and (opts["layout"] is not None or opts["tc"] is not None):
        raise ValueError("a checkpoint keeps its own tuples and TC: no layout or tc with it")
    if opts["scaling"] is not None and (opts["vs_cpp"] is not None or opts["threads"] is not None):
        raise ValueError("scaling compares N threads with 1 itself: no threads or vs_cpp with it")
    if opts["vs_cpp"] is None:
        return opts
    repo = opts["vs_cpp"] = Path(opts["vs_cpp"])
    if not cpp.is_checkout(repo):
        raise ValueError(f"{repo} is not a checkout of ziap/2048-tdl (no src/network/learning.h)")
    if opts["checkpoint"] is not None or opts["threads"] not in (None, 1):
        raise ValueError("vs_cpp trains a fresh one-thread network on each side (no checkpoint, threads 1)")
    if opts["layout"] not in (None, "4x6") or opts["tc"] is False:
        raise ValueError("vs_cpp compares the C++ trainer's 4x6 network with TC: layout 4x6, tc 1")
    opts["cores"] = _cores(opts["cores"])
    return opts


def _fresh_agent(opts: dict[str, Any], seed: int) -> Any:
    """A fresh network with the options' layout, TC and threads (the defaults where not given)."""
    from agents.ntuple import NTupleAgent, NTupleConfig

    changes = {k: opts[k] for k in ("layout", "tc", "threads") if opts[k] is not None}
    return NTupleAgent(NTupleConfig(**changes), seed=seed)


def _first_agent(opts: dict[str, Any], seed: int) -> Any:
    """The checkpoint's network (``-o checkpoint``) with the options' threads, else a fresh one."""
    from agents.base import Agent
    from agents.ntuple import NTupleAgent

    if opts["checkpoint"] is None:
        return _fresh_agent(opts, seed)
    loaded = Agent.load(opts["checkpoint"])
    if not isinstance(loaded, NTupleAgent):
        raise ValueError(f"{opts['checkpoint']} is not an ntuple checkpoint")
    if opts["threads"] is not None:  # the workers are a setting of the run, not of the network
        loaded.config.threads = int(opts["threads"])
    return loaded


@dataclass
class _Cpp:
    """The C++ trainer's measuring copy (``-o vs_cpp``): its binary, run folder and the two cores."""

    binary: Path
    run_dir: Path
    cores: tuple[int, int]


@contextlib.contextmanager
def _cpp_side(opts: dict[str, Any], progress: ProgressLine, info: dict[str, Any]) -> Iterator[_Cpp | None]:
    """With ``vs_cpp``: the C++ copy built in a scratch folder, and this process on its core (the C++
    program gets the other) until the end; without it, None."""
    from agents.ntuple import cpp_reference as cpp

    if opts["vs_cpp"] is None:
        yield None
        return
    cores: tuple[int, int] = opts["cores"]
    progress.update(0, "building the C++ trainer's measuring copy", force=True)
    with tempfile.TemporaryDirectory(prefix="bench-ntuple-cpp-") as tmp:
        binary = cpp.build(opts["vs_cpp"], Path(tmp) / "build")
        info["cpp_repo"] = str(opts["vs_cpp"])
        info["cpp_cores_studio_core"] = list(cores)
        old_affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        try:
            if old_affinity is not None:
                os.sched_setaffinity(0, {cores[1]})  # the studio on its core, the C++ program on the other
            yield _Cpp(binary, Path(tmp) / "run", cores)
        finally:
            if old_affinity is not None:
                os.sched_setaffinity(0, old_affinity)


def ntuple_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    from agents.ntuple import cpp_reference as cpp
    from agents.ntuple.cpu import host_verdict

    opts = _options(options.extra)
    if opts["scaling"] is not None:
        return _scaling_benchmark(opts, options, progress)
    agent = _first_agent(opts, options.seed)
    info: dict[str, Any] = {}
    measurements: list[Measurement] = []
    with _cpp_side(opts, progress, info) as side:
        for k in range(options.rounds):
            if side is not None:
                agent = _fresh_agent(opts, options.seed)  # a fresh network on both sides every round
            measurements += _train_round(agent, k, side, options, CLOCKS[opts["clock"]], progress)
        studio_rounds = [m for m in measurements if m.key.startswith("round_")]
        best = max(studio_rounds, key=lambda m: m.value)
        measurements.append(Measurement(key="best", label="best round", value=best.value, ratio=best.ratio))
        if side is not None and opts["search"]:
            if opts["cpp_net"] == "studio":
                # both play the same network (the same values, so the same kind of boards): the time
                # per move compares the searches, not two networks' games
                cpp.export_weights(agent.weights, agent.layout.tuples, side.run_dir / "nw4x6" / "weights.bin")
            info["cpp_plays"] = "the studio's network" if opts["cpp_net"] == "studio" else "its own network"
        boards = (
            _positions(agent, opts["games"], options.seed) if side is not None and opts["search"] else None
        )
        for depth in opts["search"]:
            progress.update(options.rounds, f"playing {opts['games']} games at {depth}-ply", force=True)
            measurements.extend(_play(agent, depth, opts["games"], opts["play_threads"], options.seed, side))
            if side is not None and boards is not None:
                progress.update(options.rounds, f"{depth}-ply search of the same boards", force=True)
                measurements.extend(_same_boards(agent, depth, boards, side))
    stats = agent.recent_stats()
    info = report_info(
        {
            **info,
            "rounds": options.rounds,
            "clock": opts["clock"],
            "seconds_per_round": options.seconds,
            "layout": agent.config.layout,
            "tc": agent.config.tc,
            "threads": agent.config.threads,
            "games_trained": agent.counters.episodes,
            "mean_score_recent": round(stats.get("mean_score", 0.0)),
        },
        # in "machine", which the text report prints: a ratio holds only for the CPU it was measured on
        cpu_model=cpp.cpu_model(),
        feature_extraction=host_verdict()[1],
    )
    return BenchReport("ntuple", "moves_per_s", measurements, baseline=None, info=info)


def _scaling_benchmark(opts: dict[str, Any], options: BenchOptions, progress: ProgressLine) -> BenchReport:
    """``-o scaling=N``: a 1-thread and an N-thread network learn in alternation (the order swapped
    every round, so a neighbour's burst does not always land on the same side), ``--seconds`` of wall
    time each; the median of the rounds' ratios of moves per wall-second is the figure."""
    import statistics

    n = int(opts["scaling"])
    agents = {}
    for threads in (1, n):
        progress.update(0, f"warming up {threads} thread(s) (compile or cache load)", force=True)
        # With -o checkpoint both sides start from the same trained network (each its own copy), where
        # games are as long as they will be and the rate is steady: from a fresh one the N-thread side
        # learns N times faster, so it measures a different network as the rounds go on.
        agents[threads] = _first_agent({**opts, "threads": threads}, options.seed)
        _learn_for(agents[threads], 1.0)
    load0 = load_average()
    measurements: list[Measurement] = []
    ratios, cpu_ratios = [], []
    for k in range(options.rounds):
        progress.update(k, f"round {k + 1}/{options.rounds}", force=True)
        order = (1, n) if k % 2 == 0 else (n, 1)
        rates = {t: _learn_for(agents[t], options.seconds) for t in order}
        one, many = rates[1], rates[n]
        ratio = many["moves_per_wall_s"] / one["moves_per_wall_s"] if one["moves_per_wall_s"] else 0.0
        cpu_ratio = many["moves_per_cpu_s"] / one["moves_per_cpu_s"] if one["moves_per_cpu_s"] else 0.0
        ratios.append(ratio)
        cpu_ratios.append(cpu_ratio)
        for t in (1, n):
            r = rates[t]
            measurements.append(
                Measurement(
                    key=f"round_{k + 1}_{t}_threads",
                    label=(
                        f"round {k + 1}, {t} thread{'s' if t > 1 else ''} ({r['cores']:.2f} cores, "
                        f"{r['moves_per_cpu_s']:,.0f} moves/CPU-s)"
                    ),
                    value=r["moves_per_wall_s"],
                    ratio=ratio if t == n else None,
                    detail=r,
                )
            )
    median, cpu_median = statistics.median(ratios), statistics.median(cpu_ratios)
    met = median >= SCALING_GOAL if n == 2 else None
    verdict = "" if met is None else f" (goal >= {SCALING_GOAL:g}x on 2 cores{'' if met else ': MISSED'})"
    measurements.append(
        Measurement(
            key="scaling",
            label=(
                f"{n} threads / 1 thread, median of {len(ratios)} rounds: {median:.2f}x{verdict}; "
                f"per CPU-second {cpu_median:.2f}x"
            ),
            value=statistics.median(m.value for m in measurements if m.key.endswith(f"_{n}_threads")),
            ratio=median,
            detail={
                "ratio": median,
                "ratios": ratios,
                # per CPU-second: what the threads cost each other (1.0 = nothing), whatever the load
                "cpu_ratio": cpu_median,
                "goal": SCALING_GOAL if n == 2 else None,
            },
        )
    )
    info: dict[str, Any] = {
        "rounds": options.rounds,
        "clock": "wall",
        "seconds_per_round": options.seconds,
        "layout": agents[1].config.layout,
        "tc": agents[1].config.tc,
        "threads": [1, n],
        "checkpoint": None if opts["checkpoint"] is None else str(opts["checkpoint"]),
        "machine": _machine(),
    }
    load1 = load_average()
    if load0 is not None and load1 is not None:
        # busier than its cores, the machine shares them out: the ratio then measures the neighbours
        info["load_average"] = {"before": load0, "after": load1}
    return _ScalingReport("ntuple", "moves_per_wall_s", measurements, baseline=None, info=info)


class _ScalingReport(BenchReport):
    """``-o scaling``'s report: every round is a figure and the median their summary (no best kept)."""

    best_of_rounds = False


def _learn_for(agent: Any, seconds: float) -> dict[str, float]:
    """Train ``agent`` for ``seconds`` of wall time: moves per wall-second and per CPU-second (this
    process's, every thread's), and the cores it kept busy on average (CPU / wall time)."""
    from agents.ntuple import bench_training

    c0 = time.process_time()
    r = bench_training(agent, seconds, time.perf_counter)
    cpu = time.process_time() - c0
    return {
        "moves": r["moves"],
        "moves_per_wall_s": r["moves_per_wall_s"],
        "moves_per_cpu_s": r["moves"] / cpu if cpu > 0 else 0.0,
        "cores": cpu / r["wall_seconds"] if r["wall_seconds"] > 0 else 0.0,
    }


def _train_round(
    agent: Any, k: int, side: _Cpp | None, options: BenchOptions, clock: Clock, progress: ProgressLine
) -> list[Measurement]:
    """Round ``k``: the agent learns for ``--seconds`` (after a warm-up second on the first round and on
    every fresh network); with ``side``, the C++ trainer learns for the same CPU time on its core."""
    from agents.base import Budget
    from agents.ntuple import bench_training
    from agents.ntuple import cpp_reference as cpp

    progress.update(k, f"round {k + 1}/{options.rounds}", force=True)
    cpp_proc = None
    if side is not None:
        if side.run_dir.exists():
            shutil.rmtree(side.run_dir)
        # the same CPU time: the studio's warm-up second and its measured seconds
        env = {"TDL_MAX_CPU_SECONDS": str(options.seconds + 1.0), "OMP_NUM_THREADS": "1"}
        cpp_proc = cpp.start(side.binary, list(cpp.TRAIN_ARGS), side.run_dir, env, side.cores[0])
    if k == 0 or cpp_proc is not None:
        progress.update(k, "warming up (compile or cache load)", force=True)
        for _ in agent.train(Budget(seconds=1.0)):
            pass
    r = bench_training(agent, options.seconds, clock)
    rows = []
    ratio = None
    if cpp_proc is not None:
        run = cpp.finish(cpp_proc)
        ratio = r["moves_per_s"] / run.moves_per_cpu_s if run.moves_per_cpu_s else None
        rows.append(
            Measurement(
                key=f"cpp_round_{k + 1}",
                label=f"round {k + 1} C++ trainer ({run.moves:,} moves in {run.cpu_seconds:.1f} CPU-s)",
                value=run.moves_per_cpu_s,
                detail={"moves": run.moves, "cpu_seconds": run.cpu_seconds},
            )
        )
    rows.append(
        Measurement(
            key=f"round_{k + 1}",
            label=(
                f"round {k + 1}{' studio' if cpp_proc is not None else ''} ({int(r['games'])} games, "
                f"{r['moves_per_wall_s']:,.0f} moves/wall-s)"
            ),
            value=r["moves_per_s"],
            ratio=ratio,
            detail={"games": r["games"], "moves": r["moves"], "moves_per_wall_s": r["moves_per_wall_s"]},
        )
    )
    return rows


def _play(
    agent: Any, depth: int, games: int, threads: int, seed: int, side: _Cpp | None
) -> list[Measurement]:
    """``games`` games at ``depth`` with the agent (and, with ``side``, the C++ agent at the same
    depth on the other core, at the same time): moves per CPU-second and µs per move of each."""
    from agents.ntuple import cpp_reference as cpp

    agent.config.search_depth = depth
    agent.config.depths_policy = ()
    agent.play_fast(1, seed=seed + 10_000, threads=threads)  # compiles (or loads) the search kernels
    proc = None
    if side is not None:
        proc = cpp.start(
            side.binary, ["agent", "-d", str(depth - 1), "-e", str(games)], side.run_dir, {}, side.cores[0]
        )
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


#: at most this many boards for the same-boards timing (3-ply: about a second a side)
SAME_BOARDS = 5000
#: alternations of the two programs on the same boards; each keeps its best (the least disturbed)
SAME_BOARD_ROUNDS = 3


def _positions(agent: Any, games: int, seed: int) -> np.ndarray:
    """Every board of ``games`` games the agent plays at 1-ply (seeds ``seed + i``), packed, at most
    :data:`SAME_BOARDS` of them evenly spaced: what both programs search for the same-boards timing."""
    from engine.fast import pack

    depth, policy = agent.config.search_depth, agent.config.depths_policy
    agent.config.search_depth, agent.config.depths_policy = 1, ()
    boards = []
    try:
        for i in range(games):
            game = Game(seed=seed + i)
            while not game.game_over:
                boards.append(pack(game.board))
                game.step(agent.act(game))
    finally:
        agent.config.search_depth, agent.config.depths_policy = depth, policy
    every = max(1, -(-len(boards) // SAME_BOARDS))
    return np.array(boards[::every], dtype=np.uint64)


def _same_boards(agent: Any, depth: int, boards: np.ndarray, side: _Cpp) -> list[Measurement]:
    """The studio's ``depth``-ply search and the C++ ``agent -d depth-1`` on the same boards, one after
    the other, :data:`SAME_BOARD_ROUNDS` times (each side's best kept): µs per search, and how often
    both chose the same move. Playing each its own games compares their games' boards as much as
    their searches: a game with more free cells costs more per move."""
    from agents.ntuple import cpp_reference as cpp

    agent.config.search_depth = depth
    agent.config.depths_policy = ()
    agent.search_positions(boards[:8])  # compiles (or loads) the kernel
    ours = theirs = math.inf
    same = 0.0
    for _ in range(SAME_BOARD_ROUNDS):
        c0 = time.process_time()
        mine = agent.search_positions(boards)
        ours = min(ours, time.process_time() - c0)
        seconds, chosen = cpp.search_positions(side.binary, side.run_dir, boards, depth - 1, side.cores[0])
        theirs = min(theirs, seconds)
        same = float(np.mean(mine == chosen))
    n = len(boards)
    us, cpp_us = 1e6 * ours / n, 1e6 * theirs / n
    return [
        Measurement(
            key=f"cpp_boards_{depth}ply",
            label=f"C++ agent -d {depth - 1}, the same {n:,} boards ({cpp_us:,.2f} µs/search)",
            value=n / theirs if theirs > 0 else 0.0,
            detail={"us_per_search": cpp_us, "boards": n},
        ),
        Measurement(
            key=f"boards_{depth}ply",
            label=f"{depth}-ply search, the same boards ({us:,.2f} µs/search, same move {100 * same:.1f}%)",
            value=n / ours if ours > 0 else 0.0,
            ratio=theirs / ours if ours > 0 else None,
            detail={"us_per_search": us, "boards": n, "same_move": same},
        ),
    ]
