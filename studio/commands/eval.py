"""``python main.py eval --agent NAME [--agent NAME2 ...] [--checkpoint PATH ...] --games N --seed S --workers K``.

Plays N games per contestant in K processes (:mod:`agents.arena`), or on K Ray actors with
``--backend ray`` (a local Ray, or the cluster at ``--ray-address``: the same games and figures as
local play for the same seed), logs them to the store as ``source="evaluation"``, and prints one
column per contestant: the mean score with its 95 % interval ("12,345 ± 678", normal approximation),
median and max score, moves per game, seconds per move, and the share of games whose max tile
reached at least 32, 64, ... (seed 004's table). The figures are :class:`agents.arena.EvalResult`'s,
the same the Arena tab shows. ``--json`` prints the same as one JSON object (``mean_score_ci95`` is
the interval's half-width) and ``worker_threads``: the thread counts each worker process ran its
math libraries with (its share of the cores, :mod:`agents.threads`). With ``--workers`` K > 1 the
same K processes play every contestant's games, one after another; with one worker the games play in
this process, pinned to its share (all the cores) the same way, and ``worker_threads`` is its report.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import threading
from collections.abc import Callable
from typing import Any

from agents.arena import (
    BACKENDS,
    MAX_GAMES,
    EvalPool,
    EvalResult,
    GameOutcome,
    evaluate,
    tile_thresholds,
)
from agents.checkpoint import read_checkpoint
from agents.config import load_preset
from agents.ray_util import RAY_MISSING
from agents.spec import AgentSpec
from agents.threads import cpu_share, limit_threads, threads_report
from engine.store import GameStore
from studio.cli import MAX_SEED, MAX_WORKERS, CliError, ctrl_c_stops, whole
from studio.commands import _agent_flags as flags
from studio.progress import ProgressLine
from studio.text import table

DESCRIPTION = """Evaluate agents: N games each, the same N seeds for every contestant.

Contestants: each --agent (its defaults + the settings given here), each --preset (that preset's
agent and settings + the settings given here) and each --checkpoint (the saved agent, its own
settings). An --agent named by a given --preset or --checkpoint is that contestant, not another one
(--agent dqn --checkpoint dqn.npz evaluates the checkpoint). A setting flag applies to every fresh
contestant that has that setting. Give --agent NAME with --help to list its settings."""


def register(subparsers: Any) -> None:
    flags.register_two_stage(
        subparsers,
        "eval",
        help="evaluate agents side by side (N games, K processes)",
        build=build_parser,
        run=run,
    )


def build_parser(first: argparse.Namespace) -> argparse.ArgumentParser:
    p = flags.new_parser("eval", DESCRIPTION)
    p.add_argument(
        "--agent", action="append", default=[], help=f"an agent to evaluate: {flags.agent_list_text()}"
    )
    p.add_argument("--preset", action="append", default=[], help="evaluate a preset's agent and settings")
    p.add_argument("--checkpoint", action="append", default=[], metavar="PATH", help="evaluate a saved agent")
    p.add_argument(
        "--games", type=whole(1, MAX_GAMES), default=100, help="games per contestant (default 100)"
    )
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=0, help="seed of the game seeds (default 0)")
    p.add_argument(
        "--workers", type=whole(1, MAX_WORKERS), default=1, help="processes playing games (default 1)"
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="where the games play: local processes (default) or Ray actors (optional extra)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="a running Ray cluster to play on, e.g. 10.0.0.5:6379 (implies --backend ray)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--no-log", action="store_true", help="do not record the games in the store")
    flags.add_rules_flags(p)
    flags.add_agent_flags(p, [*first.agent, *flags.preset_agents(first.preset)])
    return p


def _label(name: str, overrides: dict[str, Any], base: str | None = None) -> str:
    text = base or name
    if overrides:
        text += " " + " ".join(
            f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in overrides.items()
        )
    return text


def contestants(args: argparse.Namespace) -> list[AgentSpec]:
    if not (args.agent or args.preset or args.checkpoint):
        raise CliError("give something to evaluate: --agent NAME, --preset P or --checkpoint PATH")
    cli_rules = flags.rules_from(args)
    specs: list[AgentSpec] = []
    covered: set[str] = set()
    presets = [(p, load_preset(p)) for p in args.preset]
    for path in args.checkpoint:
        meta, _ = read_checkpoint(path)
        covered.add(str(meta.get("agent")))
    covered.update(str(data["agent"]) for _, data in presets)
    for name in dict.fromkeys(args.agent):  # once each, in order
        if name in covered:
            continue
        over = flags.overrides_for(args, name)
        specs.append(AgentSpec(name, over, rules=cli_rules, label=_label(name, over)))
    for pname, data in presets:
        name = str(data["agent"])
        over = flags.overrides_for(args, name)
        specs.append(
            AgentSpec(
                name,
                {**data.get("config", {}), **over},
                rules=flags.rules_from(args, data),
                label=_label(name, over, f"{name} ({pname})"),
            )
        )
    for path in args.checkpoint:
        meta, _ = read_checkpoint(path)
        specs.append(AgentSpec(str(meta.get("agent")), checkpoint=path, rules=cli_rules))
    return specs


def _seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def format_table(results: list[EvalResult]) -> str:
    def pct(share: float, games: int) -> str:
        return f"{share * 100:.0f}%" if games <= 100 else f"{share * 100:.1f}%"

    rows: list[list[str]] = [
        ["games", *(f"{r.games:,}" for r in results)],
        ["mean score", *(r.mean_text for r in results)],
        ["median score", *(f"{r.median_score:,.0f}" for r in results)],
        ["max score", *(f"{r.max_score:,}" for r in results)],
        ["moves / game", *(f"{r.moves_per_game:,.0f}" for r in results)],
        ["seconds / move", *(_seconds(r.seconds_per_move) for r in results)],
    ]
    # "Reached at least": from 32 (lower on small boards) to the largest tile any game reached.
    thresholds = tile_thresholds(*(r.max_tiles for r in results))
    shares = [r.tile_at_least(thresholds) for r in results]
    for t in thresholds:
        rows.append([f"max tile >= {t}", *(pct(s[t], r.games) for s, r in zip(shares, results))])
    return table(["", *(r.label for r in results)], rows, right=set(range(1, len(results) + 1)))


def _progress(line: ProgressLine) -> Callable[[int, int, GameOutcome], None]:
    scores: list[int] = []

    def progress(done: int, total: int, game: GameOutcome) -> None:
        scores.append(game.score)
        line.update(done, f"mean score {sum(scores) / len(scores):,.0f}", force=done == total)

    return progress


def _pin_threads(specs: list[AgentSpec]) -> None:
    """One worker playing in this process: its math libraries get its share of the cores, as each
    :class:`agents.arena.EvalPool` worker does. The agents' modules are imported first (torch with the
    learners), so the limit binds torch's pools and not only the environment."""
    for spec in specs:
        if spec.name is not None:
            flags.config_class(spec.name)
    limit_threads(cpu_share(1))


def run(args: argparse.Namespace) -> int:
    from studio.services.runs import have_ray  # here: the commands' module imports stay light

    backend = "ray" if args.ray_address else args.backend
    if backend == "ray" and not have_ray():
        # Before any contestant is built or game played: one line says what to install.
        raise CliError(RAY_MISSING)
    specs = contestants(args)
    in_process = backend == "local" and min(args.workers, args.games) == 1
    if in_process:
        _pin_threads(specs)
    results: list[EvalResult] = []
    stop = threading.Event()
    stopping = "stopping: the games in flight are given up, the finished ones are kept and summed up"
    # One set of worker processes for every contestant: each start costs seconds (torch's import,
    # the agent), paid once here instead of once per contestant.
    local_pool = backend == "local" and min(args.workers, args.games) > 1
    pool = EvalPool(min(args.workers, args.games)) if local_pool else None
    with (
        GameStore.open(args.data_dir) as store,
        ctrl_c_stops(stop.set, stop.is_set, stopping),
        pool if pool is not None else contextlib.nullcontext(),
    ):
        for spec in specs:
            with ProgressLine(f"eval {spec.display}", total=args.games) as line:
                result = evaluate(
                    spec,
                    args.games,
                    args.seed,
                    args.workers,
                    None if args.no_log else store,
                    _progress(line),
                    should_stop=stop.is_set,
                    backend=backend,
                    ray_address=args.ray_address,
                    pool=pool,
                )
            if result.games:
                if in_process:  # what this process played with, as a worker process reports it
                    result = dataclasses.replace(result, worker_threads=(threads_report(),))
                results.append(result)
            if stop.is_set():
                break
    if not results:
        print("stopped before any game finished", file=sys.stderr)
        return 0
    if args.json:
        out = {
            "games": args.games,
            "seed": args.seed,
            "workers": args.workers,
            "backend": backend,
            "results": [r.to_dict() for r in results],
        }
        print(json.dumps(out))
        return 0
    print(format_table(results))
    if stop.is_set():
        played = ", ".join(f"{r.label} {r.games:,}" for r in results)
        print(f"\nstopped by Ctrl-C: games finished of {args.games:,} each: {played}", file=sys.stderr)
    if not args.no_log:
        print(
            f"\n{sum(r.games for r in results):,} games recorded (source evaluation): "
            "python main.py games list --source evaluation",
            file=sys.stderr,
        )
    return 0
