"""``python main.py bench NAME [--json] [--seconds S]``: timed benchmarks, one sub-command each.

Adding a benchmark is one line in :data:`BENCHMARKS`: ``name: ("module:function", "one-line help")``.
The function takes ``(options: BenchOptions, progress: ProgressLine)`` and returns a
:class:`BenchReport`; this module parses the flags, shows progress on stderr, and prints the report
as a table or (``--json``) as one JSON object on stdout. Benchmark-specific settings travel as
``-o KEY=VALUE`` (``options.extra``), so a new benchmark needs no new flags here.

``bench engine`` measures random-play steps per second of the 2048 engine's paths against a
plain-Python reference (:mod:`engine._reference`, the same module the tests trust):

(a) plain Python, (b) the public ``Game`` API one game at a time, (c) the jitted whole-game playout
(``engine.fast.playout``, one call per game), (d) ``BatchEngine`` at N = 1, 64, 1024, 8192 (one
``step`` moves N games; ``sample_actions`` picks random legal moves). Compile time is excluded (every
path runs once before the clock starts). The paths are measured in interleaved rounds and each keeps
its best round. Rates count the process's CPU time by default, because on a shared machine wall time
mostly measures the neighbours (everything here runs on one thread); ``-o clock=wall`` for wall time.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from studio.cli import MAX_SEED, number, whole
from studio.progress import ProgressLine

# name -> ("module:function", help). One line per benchmark.
BENCHMARKS: dict[str, tuple[str, str]] = {
    "engine": (
        "studio.commands.bench:engine_benchmark",
        "random-play steps/s: plain Python vs Game vs jitted vs batched (-o sizes=1,64,1024,8192 -o clock=cpu|wall)",
    ),
    "eval": (
        "studio.commands.bench_eval:eval_benchmark",
        "evaluation games/s of every agent: 1 worker and 2 worker processes, ratio, start-up (-o games=16 -o agents=a,b)",
    ),
    "mcts": (
        "studio.commands.bench_mcts:mcts_benchmark",
        "MCTS self-play games/s: 1 and 2 local workers, Ray",
    ),
    "ntuple": ("studio.commands.bench_ntuple:ntuple_benchmark", "n-tuple TD training moves/s on one core"),
    "review": (
        "studio.commands.bench_review:review_benchmark",
        "seconds to review a 1,000-move game: expectimax depth 2, n-tuple 2-ply (-o checkpoint=PATH)",
    ),
    "sweep": (
        "studio.commands.bench_sweep:sweep_benchmark",
        "sweep overhead per trial (s) and trials/hour: local 1 and 2 workers, Ray Tune (-o trials=4 -o episodes=200)",
    ),
    "torch": (
        "studio.commands.bench_torch:torch_benchmark",
        "DQN and MCTS training moves/s and gradient updates/s on each torch device (cpu, cuda), ratio to the CPU",
    ),
    "gui": (
        "studio.commands.bench_gui:gui_benchmark",
        "window stalls and key-to-paint latency (ms) while agents train, with a competing process",
    ),
    "person": (
        "studio.commands.bench_person:person_benchmark",
        "a person's random actions on fresh-profile windows: failures by seed (-o sessions=20 -o actions=300)",
    ),
    "store": ("studio.commands.bench_store:store_benchmark", "seconds to list 10^5 games (-o games=N)"),
    "memory": (
        "studio.commands.bench_memory:memory_benchmark",
        "MB of an n-tuple network loaded to play and of the window (-o checkpoint=PATH)",
    ),
    "startup": ("studio.commands.bench_startup:startup_benchmark", "seconds to start: commands, the window"),
    "gui-speed": (
        "studio.commands.bench_gui:speed_benchmark",
        "training moves/s of the same run from the Train tab and from `train`, interleaved",
    ),
}


@dataclass(frozen=True)
class BenchOptions:
    """What every benchmark is told: seconds per measurement, rounds, seed, and ``-o`` extras."""

    seconds: float = 1.0
    rounds: int = 3
    seed: int = 0
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Measurement:
    """One figure: ``value`` in the report's unit; ``ratio`` against the report's baseline."""

    key: str  # stable JSON key, e.g. "batch_1024"
    label: str  # for people
    value: float
    ratio: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class BenchReport:
    benchmark: str
    unit: str
    measurements: list[Measurement]
    baseline: str | None = None  # key of the measurement the ratios divide by
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "unit": self.unit,
            "baseline": self.baseline,
            "results": {
                m.key: {"label": m.label, self.unit: m.value, "ratio": m.ratio, **m.detail}
                for m in self.measurements
            },
            "info": self.info,
        }

    #: How a value is printed (seconds and milliseconds want decimals), and the info keys printed
    #: after the figures (None: every one, for a benchmark whose info is its point).
    value_format: ClassVar[str] = "{:14,.0f}"
    info_keys: ClassVar[tuple[str, ...] | None] = (
        "clock",
        "warmup_s",
        "seconds_per_round",
        "load_average",
        "machine",
    )
    #: Whether the title says "best of N rounds" (a benchmark that keeps no best says nothing).
    best_of_rounds: ClassVar[bool] = True

    def render_text(self) -> str:
        """One line a figure: label, value, ratio, the goal (``detail["goal_s"]``: met or MISSED) and a
        note (``detail["note"]``); then the info lines."""
        width = max(len(m.label) for m in self.measurements)
        rounds = f", best of {self.info.get('rounds', 1)} rounds" if self.best_of_rounds else ""
        lines = [f"bench {self.benchmark} ({self.unit}{rounds})"]
        for m in self.measurements:
            ratio = "" if m.ratio is None else f"  {m.ratio:10.1f}x"
            goal = m.detail.get("goal_s")
            mark = "" if goal is None else f"  (goal <= {goal:g} s{'' if m.value <= goal else ': MISSED'})"
            note = f"  {m.detail['note']}" if m.detail.get("note") else ""
            lines.append(f"  {m.label:<{width}}  {self.value_format.format(m.value)}{ratio}{mark}{note}")
        keys = self.info if self.info_keys is None else [k for k in self.info_keys if k in self.info]
        lines.extend(f"  {k}: {self.info[k]}" for k in keys)
        return "\n".join(lines)


#: Words a yes/no option takes.
_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Option:
    """One ``-o KEY=VALUE`` a benchmark takes: its kind, default and bounds.

    Kinds: ``int`` (a whole number from ``low`` to ``high``), ``float`` (a finite number from ``low``
    to ``high``), ``bool`` (1/true/yes/on or 0/false/no/off), ``choice`` (one of ``choices``), ``text``
    (any text: a path, a layout name), ``ints`` (comma-separated whole numbers, each from ``low`` to
    ``high``), ``names`` (comma-separated words, each one of ``choices`` when it has any; ``what``
    names them in the error). ``default`` is the value when the option is not given (None: absent).
    """

    kind: str
    default: Any = None
    low: float = 0
    high: float = 2**62
    choices: tuple[str, ...] = ()
    what: str = "name"

    def parse(self, key: str, text: str) -> Any:
        """The value of ``text``; ValueError (one line naming ``key``) when it is not one."""
        if self.kind in ("int", "float"):
            return self._number(key, text, int if self.kind == "int" else float)
        if self.kind == "bool":
            if text.lower() not in (*_YES, *_NO):
                raise ValueError(f"{key} must be 1 or 0 (true/false, yes/no, on/off), got {text!r}")
            return text.lower() in _YES
        if self.kind == "choice":
            if text not in self.choices:
                raise ValueError(f"{key} must be {' or '.join(self.choices)}, got {text!r}")
            return text
        if self.kind == "ints":
            values = [self._number(key, t.strip(), int) for t in text.split(",") if t.strip()]
            if not values:
                raise ValueError(f"{key} must be whole numbers like 1,2, got {text!r}")
            return values
        if self.kind == "names":
            names = [t.strip() for t in text.split(",") if t.strip()]
            bad = [n for n in names if self.choices and n not in self.choices]
            if bad:
                raise ValueError(f"unknown {self.what} {bad[0]!r}: choose from {', '.join(self.choices)}")
            if not names:
                raise ValueError(f"{key} names no {self.what}")
            return names
        return text

    def _number(self, key: str, text: str, kind: type) -> Any:
        try:
            value = kind(text)
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise ValueError(f"{key} must be {noun}, got {text!r}") from None
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise ValueError(f"{key} must be from {self.low:,} to {self.high:,}, got {text}")
        return value


def parse_options(
    bench: str, extra: dict[str, str], known: dict[str, Option], *, prefixes: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Every option of ``known`` typed (its default when not given) from a benchmark's ``-o`` words;
    ValueError, one line, for an unknown key or a bad value. Keys ``PREFIX.NAME`` with a prefix of
    ``prefixes`` (an agent's knobs) pass unchecked: the benchmark reads them from ``extra``."""
    unknown = sorted(k for k in extra if k not in known and k.partition(".")[0] not in prefixes)
    if unknown:
        also = "".join(f", {p}.KNOB" for p in prefixes)
        raise ValueError(
            f"bench {bench} has no option {unknown[0]!r} (known: {', '.join(sorted(known))}{also})"
        )
    return {
        key: opt.default if key not in extra else opt.parse(key, extra[key]) for key, opt in known.items()
    }


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", help="timed benchmarks (engine, ...)", description=__doc__.split("\n")[0]
    )
    names = parser.add_subparsers(dest="benchmark", metavar="NAME", required=True)
    for name, (_, help_text) in BENCHMARKS.items():
        p = names.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--json", action="store_true", help="print one JSON object (progress still goes to stderr)"
        )
        p.add_argument(
            "--seconds",
            type=number(0, 3600, above=True),
            default=1.0,
            help="seconds per measurement (default 1)",
        )
        p.add_argument(
            "--rounds", type=whole(1, 1000), default=3, help="interleaved rounds, best kept (default 3)"
        )
        p.add_argument(
            "--seed", type=whole(0, MAX_SEED), default=0, help="seed of the games played (default 0)"
        )
        p.add_argument(
            "-o",
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="benchmark-specific setting, repeatable (the benchmark's description lists them)",
        )
        p.set_defaults(func=run)


def _resolve(target: str) -> Callable[[BenchOptions, ProgressLine], BenchReport]:
    module, _, func = target.partition(":")
    fn: Callable[[BenchOptions, ProgressLine], BenchReport] = getattr(importlib.import_module(module), func)
    return fn


def run(args: argparse.Namespace) -> int:
    extra: dict[str, str] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"-o expects KEY=VALUE, got {item!r}")
        extra[key.strip()] = value.strip()
    options = BenchOptions(seconds=args.seconds, rounds=args.rounds, seed=args.seed, extra=extra)
    bench = _resolve(BENCHMARKS[args.benchmark][0])
    with ProgressLine(f"bench {args.benchmark}") as progress:
        report = bench(options, progress)
    print(json.dumps(report.to_dict()) if args.json else report.render_text())
    return 0


# --------------------------------------------------------------------------------------------------
# bench engine

_PICKS = 4096  # precomputed random ints: the move choice costs the same on every path


def _machine() -> dict[str, Any]:
    import numba
    import numpy

    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def load_average() -> list[float] | None:
    """The machine's 1, 5 and 15-minute load averages (None where the OS has none): printed with
    every benchmark's figures, since a busy machine changes them."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def with_load(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with the load average added (where the OS has one)."""
    load = load_average()
    return info if load is None else {**info, "load_average": load}


def report_info(info: dict[str, Any], **machine: Any) -> dict[str, Any]:
    """``info`` with what a report prints after its figures: ``machine`` (Python, numpy, numba, CPU and
    core count, and the benchmark's own ``machine`` entries, which win) and the load average."""
    return with_load({**info, "machine": {**_machine(), **machine}})


Clock = Callable[[], float]


def _play_games(
    new_game: Callable[[int], Any], seconds: float, seed: int, picks: list[int], clock: Clock
) -> tuple[int, float]:
    """Random legal moves, whole games, for ``seconds``: ``-> (steps, elapsed)``. The same loop
    drives the plain-Python reference and ``Game`` (both have ``legal_moves()`` / ``step(d)``)."""
    steps = 0
    i = 0
    t0 = clock()
    while True:
        g = new_game(seed)
        seed += 1
        legal = g.legal_moves()
        while legal:
            g.step(legal[picks[i & (_PICKS - 1)] % len(legal)])
            i += 1
            legal = g.legal_moves()
        steps += g.moves
        elapsed = clock() - t0
        if elapsed >= seconds:
            return steps, elapsed


def _playout_starts(seed: int, count: int = 256) -> list[tuple[Any, Any, Any]]:
    """Start boards and both generator states for ``count`` games, made before the clock runs."""
    import numpy as np

    from engine import fast
    from engine.core import seed_to_state

    starts = []
    for k in range(count):
        board, spawn_state = fast.new_board(np.uint64(seed_to_state(seed + 2 * k)), 0.1, 2)
        # numba hands uint64 results back as Python ints; np.uint64 keeps them >= 2**63 passable.
        starts.append((np.uint64(board), np.uint64(spawn_state), np.uint64(seed_to_state(seed + 2 * k + 1))))
    return starts


def _jitted_playouts(seconds: float, starts: list[tuple[Any, Any, Any]], clock: Clock) -> tuple[int, float]:
    """One ``engine.fast.playout`` call per game (a whole game each), cycling through ``starts``."""
    from engine.fast import playout

    steps = 0
    t0 = clock()
    while True:
        for board, spawn_state, move_state in starts[:32]:  # 32 games between clock reads
            steps += playout(board, spawn_state, move_state, 0.1, 1)[4]
        starts = starts[32:] + starts[:32]
        elapsed = clock() - t0
        if elapsed >= seconds:
            return steps, elapsed


def _batched(engine: Any, seconds: float, clock: Clock) -> tuple[int, float]:
    """``step(sample_actions())`` for ``seconds``; the clock is read every ~4096 moves, not every step
    (reading the CPU clock costs as much as a whole step at N = 1)."""
    steps = 0
    step, sample = engine.step, engine.sample_actions
    per_read = max(1, 4096 // engine.n)
    t0 = clock()
    while True:
        for _ in range(per_read):
            step(sample())
        steps += engine.n * per_read
        elapsed = clock() - t0
        if elapsed >= seconds:
            return steps, elapsed


CLOCKS: dict[str, Clock] = {"cpu": time.process_time, "wall": time.perf_counter}
#: ``-o clock=cpu|wall`` of the benchmarks that time with either clock.
CLOCK_OPTION = Option("choice", "cpu", choices=tuple(CLOCKS))

ENGINE_OPTIONS = {"sizes": Option("ints", [1, 64, 1024, 8192], 1, 1 << 20), "clock": CLOCK_OPTION}


def engine_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    """Random-play steps/s of every engine path, with ratios to the plain-Python reference."""
    from engine import BatchEngine, Game
    from engine import _reference as ref

    opts = parse_options("engine", options.extra, ENGINE_OPTIONS)
    sizes: list[int] = opts["sizes"]
    rnd = random.Random(options.seed)
    picks = [rnd.getrandbits(30) for _ in range(_PICKS)]
    seed = options.seed
    clock_name = opts["clock"]
    clock = CLOCKS[clock_name]
    starts = _playout_starts(seed)

    def reference(seconds: float) -> tuple[int, float]:
        return _play_games(lambda s: ref.RefGame(4, 4, seed=s), seconds, seed, picks, clock)

    def game_api(seconds: float) -> tuple[int, float]:
        return _play_games(lambda s: Game(seed=s), seconds, seed, picks, clock)

    def jitted(seconds: float) -> tuple[int, float]:
        return _jitted_playouts(seconds, starts, clock)

    engines = {n: BatchEngine(n, seed=seed) for n in sizes}
    paths: list[tuple[str, str, Callable[[float], tuple[int, float]]]] = [
        ("plain_python", "(a) plain Python reference", reference),
        ("game_api", "(b) Game API, one game at a time", game_api),
        ("jitted_playout", "(c) jitted playout, one call per game", jitted),
    ]
    for n in sizes:
        paths.append(
            (f"batch_{n}", f"(d) BatchEngine N={n}", functools.partial(_batched, engines[n], clock=clock))
        )

    # Warm-up: load / compile every kernel and touch every path before any clock runs.
    t0 = time.perf_counter()
    progress.update(0, "warming up (loading compiled kernels)", force=True)
    for _, _, fn in paths:
        fn(0.0)
    warmup = time.perf_counter() - t0

    per_round = options.seconds / options.rounds
    best = _best_rates(paths, options.rounds, per_round, progress)
    base = best["plain_python"][0]
    measurements = [
        Measurement(
            key,
            label,
            round(best[key][0], 1),
            round(best[key][0] / base, 2),
            {
                "us_per_step": round(1e6 / best[key][0], 4),
                "steps": best[key][1],
                "elapsed_s": round(best[key][2], 3),
            },
        )
        for key, label, _ in paths
    ]
    info = report_info(
        {
            "clock": {"cpu": "process CPU time", "wall": "wall clock"}[clock_name],
            "rounds": options.rounds,
            "seconds_per_round": round(per_round, 3),
            "warmup_s": round(warmup, 2),
            "seed": options.seed,
        }
    )
    return BenchReport("engine", "steps_per_s", measurements, baseline="plain_python", info=info)


def _best_rates(
    paths: Sequence[tuple[str, str, Callable[[float], tuple[int, float]]]],
    rounds: int,
    per_round: float,
    progress: ProgressLine,
) -> dict[str, tuple[float, int, float]]:
    """Each path's best (steps/s, steps, seconds) over ``rounds`` rounds of ``per_round`` seconds, the
    paths interleaved within a round (a busy moment of the machine hits every path alike)."""
    total = rounds * len(paths)
    progress.total = total
    best: dict[str, tuple[float, int, float]] = {}
    done = 0
    for _ in range(rounds):
        for key, label, fn in paths:
            steps, elapsed = fn(per_round)
            rate = steps / elapsed
            if key not in best or rate > best[key][0]:
                best[key] = (rate, steps, elapsed)
            done += 1
            progress.update(done, f"{label}: {rate:,.0f} steps/s")
    progress.update(total, "done", force=True)
    return best


if __name__ == "__main__":  # pragma: no cover - python -m studio.commands.bench engine
    from studio.cli import main

    sys.exit(main(["bench", *sys.argv[1:]]))
