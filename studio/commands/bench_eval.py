"""``python main.py bench eval``: evaluation games/s of every agent with 1 and 2 worker processes.

For each agent of the registry (or ``-o agents=random,dqn``), the same games (same seeds) are played by
:func:`agents.arena.evaluate` twice: by one worker, in this process, and by ``-o workers=2`` worker
processes (an :class:`agents.arena.EvalPool`). The table shows games/s of each and their ratio (the goal
of issue #35: two workers at least 1.7x one on a 2-core machine), and the pool's start-up: the seconds
to start its processes and build the agent in each (Python, numpy/numba, torch for the learners),
measured on its own before the clock runs, as ``eval --workers 2`` pays it once per run. The same scores
from both are checked (``same games``). ``cores used`` (CPU-seconds per wall second, of this process
for one worker, of the workers and this process for two) says how much of the machine the run got:
on a machine shared with other work, two workers cannot be twice as fast when they get no more CPU
than one (with autogroup scheduling, as on the team machine, Linux shares the CPU out per session
first, then among its processes). ``per CPU-s`` compares the games per CPU-second of the workers with
one worker's: 1.00x means that parallel play costs nothing extra.

Every path is warm: this process built the agent and played a game before the clock, the pool's
workers too. This process runs its math libraries on one thread (:func:`agents.threads.limit_threads`),
like each of two workers on two cores, so the ratio says what the second worker adds and not what
oversubscription costs the first. The learners (td-afterstate, dqn, policy, imitation, mcts) play a
fresh network of seed ``--seed`` saved as a checkpoint, so that every worker plays the same network;
search settings that make a game take seconds are lowered (expectimax depth 2, MCTS 4 simulations).

Each agent plays at least ``-o games=16`` games and at least ``--seconds`` of one worker's play (its
game length is measured on two untimed games first): a random agent's 16 games last a fifth of a
second, too short a run to measure (the CPU clock ticks in 10 ms; the pool's first and last games
leave a worker idle). Options (``-o KEY=VALUE``): ``games`` (default 16), ``agents`` (comma-separated
registry names; default all), ``workers`` (the parallel count, default 2). ``--rounds`` R plays each
agent's games R times, 1 and 2 workers in turn, and keeps each one's best.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, parse_options, report_info
from studio.progress import ProgressLine

OPTIONS = {
    "games": Option("int", 16, 1, 100_000),
    "workers": Option("int", 2, 2, 64),
    "agents": Option("names", None, what="agent"),  # default: every registered agent
}
#: Games played (one worker, untimed) to learn how long a game of the agent takes.
CALIBRATION_GAMES = 2
#: The most games one measurement plays (a random agent plays a few hundred a second).
MAX_GAMES = 20_000

#: Play settings that keep a game under a second or two (the ratio, not the strength, is measured).
PLAY: dict[str, dict[str, Any]] = {
    "expectimax": {"depth": 2},
    "mcts": {"eval_simulations": 4},
}


@dataclass
class EvalBenchReport(BenchReport):
    """A :class:`BenchReport` printed as one row per agent: games/s of 1 and N workers side by side."""

    def render_text(self) -> str:
        workers = self.info.get("workers", 2)
        rows = [m for m in self.measurements if m.key.endswith(f"_{workers}")]
        head = (
            f"bench eval (games/s, best of {self.info.get('rounds', 1)} rounds; per agent and round at "
            f"least {self.info.get('min_games')} games and {self.info.get('seconds')} s of one worker's play)"
        )
        lines = [
            head,
            f"  {'agent':<14} {'1 worker':>9} {f'{workers} workers':>10} {'ratio':>6} {'cores used':>11} "
            f"{'per CPU-s':>9} {'start-up':>8} {'games':>6} {'moves/game':>10}  same games",
        ]
        for m in rows:
            d = m.detail
            eff = d.get("cpu_efficiency")
            lines.append(
                f"  {d['agent']:<14} {d['one_worker_games_per_s']:>9.2f} {m.value:>10.2f} {m.ratio:>5.2f}x "
                f"{d['one_worker_cores_used']:>4.2f} / {d['cores_used']:<4.2f} "
                f"{'-' if eff is None or math.isnan(eff) else f'{eff:.2f}x':>9} {d['startup_s']:>7.1f}s "
                f"{d['games']:>6} {d['moves_per_game']:>10.0f}  {'yes' if d['same_games'] else 'NO'}"
            )
        ratios = [m.ratio for m in rows if m.ratio is not None]
        if ratios:
            lines.append(f"  lowest ratio: {min(ratios):.2f}x (goal: 1.7x)")
        lines.append(
            "  cores used: CPU-s per wall second of 1 worker / of the workers and this process; per CPU-s:"
            " games per CPU-second of the workers against one worker's (1.00x: no overhead)"
        )
        for k in ("threads", "load_average", "machine"):
            if k in self.info:
                lines.append(f"  {k}: {self.info[k]}")
        return "\n".join(lines)


def _cpu_seconds(pids: list[int]) -> float | None:
    """CPU seconds (user + system) the processes ``pids`` used so far; None where /proc cannot tell."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15 of stat)
    return total


def _spec(name: str, seed: int, folder: Path) -> Any:
    """What the bench plays for agent ``name``: a learner's fresh network of ``seed`` as a checkpoint (every
    worker loads the same weights), other agents by name; :data:`PLAY`'s settings applied."""
    from agents.registry import create_agent
    from agents.spec import AgentSpec

    play = PLAY.get(name, {})
    agent = create_agent(name, {}, None, seed)
    arrays, _ = agent.get_state()
    if not arrays:
        return AgentSpec(name, play=play)
    path = agent.save(folder / f"{name}.npz")
    return AgentSpec.from_checkpoint(path, name, play=play)


def eval_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    from agents.registry import agent_names
    from agents.threads import cpu_count, cpu_model, limit_threads

    opts = parse_options("eval", options.extra, OPTIONS)
    names: list[str] = opts["agents"] or agent_names()
    bad = [n for n in names if n not in agent_names()]
    if bad:
        raise ValueError(f"unknown agent {bad[0]!r}: choose from {', '.join(agent_names())}")
    # One worker is this process: one thread per library, like each worker of the pool on its core.
    limit_threads(1)
    progress.total = len(names) * options.rounds
    measurements: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        for k, name in enumerate(names):
            measurements += _measure_agent(name, opts, options, progress, k * options.rounds, Path(tmp))
    threads = limit_threads(1)
    info = report_info(
        {
            "rounds": options.rounds,
            "min_games": opts["games"],
            "seconds": options.seconds,
            "workers": opts["workers"],
            "seed": options.seed,
            "threads": {k: threads[k] for k in ("torch", "interop", "numba", "OMP_NUM_THREADS")},
        },
        cpu=cpu_model(),
        cpus=cpu_count(),
    )
    return EvalBenchReport("eval", "games_per_s", measurements, baseline=None, info=info)


def _games_for(spec: Any, min_games: int, seconds: float, seed: int) -> int:
    """Games enough for ``seconds`` of one worker's play (at least ``min_games``): a short run measures
    the clock's ticks and the first and last games' imbalance (the pool's tail), not the play."""
    from agents.arena import evaluate

    t0 = time.perf_counter()
    evaluate(spec, CALIBRATION_GAMES, seed + 2, workers=1)
    per_game = (time.perf_counter() - t0) / CALIBRATION_GAMES
    return min(MAX_GAMES, max(min_games, math.ceil(seconds / per_game)))


@dataclass
class _Best:
    """The fastest round of one side (one worker or the pool): games/s, cores used, games per CPU-s."""

    rate: float = 0.0
    cores: float = 0.0
    per_cpu: float = 0.0

    def offer(self, games: int, wall: float, cpu: float) -> float:
        rate = games / wall
        if rate > self.rate:
            self.rate, self.cores, self.per_cpu = rate, cpu / wall, games / max(cpu, 1e-9)
        return rate


def _measure_agent(
    name: str, opts: dict[str, Any], options: BenchOptions, progress: ProgressLine, done: int, folder: Path
) -> list[Measurement]:
    """Agent ``name``'s games/s with one worker (this process) and with the pool, best of the rounds."""
    from agents.arena import EvalPool, evaluate
    from agents.threads import limit_threads

    workers = opts["workers"]
    progress.update(done, f"{name}: building", force=True)
    spec = _spec(name, options.seed, folder)
    evaluate(spec, 1, options.seed + 1, workers=1)  # warm: imports, kernels, the agent
    limit_threads(1)  # the pools the agent's imports just loaded
    n_games = _games_for(spec, opts["games"], options.seconds, options.seed)
    one_best, pool_best = _Best(), _Best()
    same = True
    with EvalPool(workers) as pool:
        progress.update(done, f"{name}: starting {workers} workers", force=True)
        t0 = time.perf_counter()
        pids = [int(r["pid"]) for r in pool.prepare(spec)]
        startup = time.perf_counter() - t0
        for _ in range(options.rounds):
            t0, c0 = time.perf_counter(), time.process_time()
            one = evaluate(spec, n_games, options.seed, workers=1)
            rate1 = one_best.offer(n_games, time.perf_counter() - t0, time.process_time() - c0)
            t0, c0, w0 = time.perf_counter(), time.process_time(), _cpu_seconds(pids)
            two = evaluate(spec, n_games, options.seed, pool=pool)
            wall, w1 = time.perf_counter() - t0, _cpu_seconds(pids)
            # the workers' CPU and this process's (it hands out games and collects results)
            workers_cpu = w1 - w0 if w0 is not None and w1 is not None else math.nan
            rate2 = pool_best.offer(n_games, wall, time.process_time() - c0 + workers_cpu)
            same = same and one.scores.tolist() == two.scores.tolist()
            done += 1
            progress.update(done, f"{name}: {rate1:.2f} / {rate2:.2f} games/s ({rate2 / rate1:.2f}x)")
    detail = {
        "agent": name,
        "games": n_games,
        "moves_per_game": round(float(one.moves.mean()), 1),
        "play": PLAY.get(name, {}),
    }
    b1, b2 = one_best, pool_best
    return [
        Measurement(f"{name}_1", f"{name}, 1 worker", round(b1.rate, 3), None, {**detail}),
        Measurement(
            f"{name}_{workers}",
            f"{name}, {workers} workers",
            round(b2.rate, 3),
            round(b2.rate / b1.rate, 3),
            {
                **detail,
                "one_worker_games_per_s": round(b1.rate, 3),
                "startup_s": round(startup, 2),
                "cores_used": round(b2.cores, 2),
                "one_worker_cores_used": round(b1.cores, 2),
                "games_per_cpu_s": round(b2.per_cpu, 3),
                "one_worker_games_per_cpu_s": round(b1.per_cpu, 3),
                "cpu_efficiency": round(b2.per_cpu / b1.per_cpu, 3) if b1.per_cpu > 0 else None,
                "same_games": same,
                "worker_threads": [dict(t) for t in two.worker_threads],
            },
        ),
    ]
