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

``--set KNOB=VALUE`` changes a play setting of every contestant that has it after it is built or
loaded, checkpoints included (a deeper search for a trained network). ``--fast`` plays the contestants
that have a jitted game loop (n-tuple, expectimax) in it (:mod:`agents.fast_eval`: game ``i`` on
``Game(seed=--seed + i)``, shared by ``--fast-threads`` threads, not recorded). A ``--checkpoint`` folder
stands for every checkpoint in it, in the order they were trained (a strength curve along a run).
With ``--json``, a checkpoint's result carries its training counters (``trained``) and a fast one the
loop's ``cpu_seconds``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agents.arena import (
    BACKENDS,
    MAX_GAMES,
    MOVE_LIMIT_S,
    EvalPool,
    EvalResult,
    GameOutcome,
    evaluate,
    tile_thresholds,
)
from agents.checkpoint import read_checkpoint
from agents.config import ConfigError, load_preset
from agents.fast_eval import check_fast, evaluate_fast
from agents.ray_util import RAY_MISSING
from agents.spec import AgentSpec
from agents.threads import PLAY_TORCH_THREADS, cpu_share, limit_threads, threads_report
from engine.store import GameStore
from studio.cli import MAX_WORKERS, CliError, ctrl_c_stops, whole
from studio.commands import _agent_flags as flags
from studio.progress import ProgressLine
from studio.text import table

HELP = "evaluate agents side by side (N games, K processes)"
DESCRIPTION = """Evaluate agents: N games each, the same N seeds for every contestant.

Contestants: each --agent (its defaults + the settings given here), each --preset (that preset's
agent and settings + the settings given here) and each --checkpoint (the saved agent, its own
settings). An --agent named by a given --preset or --checkpoint is that contestant, not another one
(--agent dqn --checkpoint dqn.npz evaluates the checkpoint). A setting flag applies to every fresh
contestant that has that setting; --set KNOB=VALUE changes a play setting of every contestant that has
it, checkpoints included. A --checkpoint folder (DATA/checkpoints/run-N) stands for each checkpoint in
it, oldest first. Give --agent NAME with --help to list its settings.

  python main.py eval --checkpoint CK --set search_depth=2 --games 100
  python main.py eval --checkpoint DATA/checkpoints/run-3 --fast --fast-threads 2 --games 300 --json

--fast plays n-tuple and expectimax contestants in their jitted game loop: game i on the board of
Game(seed=SEED + i) (not the games plain eval plays for that seed), --fast-threads threads sharing them,
no game recorded; hundreds of deep-search games in minutes."""


def register(subparsers: Any) -> None:
    flags.register_two_stage(subparsers, "eval", HELP, build_parser, run)


def build_parser(first: argparse.Namespace) -> argparse.ArgumentParser:
    p = flags.new_parser("eval", DESCRIPTION)
    flags.add_agent_choice(p, "to evaluate", many=True)
    p.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="PATH",
        help="evaluate a saved agent (a folder: each checkpoint in it, oldest first)",
    )
    p.add_argument(
        "--games", type=whole(1, MAX_GAMES), default=100, help="games per contestant (default 100)"
    )
    flags.add_seed_flag(p, 0, "seed of the game seeds (default 0)")
    flags.add_parallel_flags(
        p,
        (1, "processes playing games (default 1)"),
        ("local", "where the games play: local processes (default) or Ray actors (optional extra)"),
        "a running Ray cluster to play on, e.g. 10.0.0.5:6379 (implies --backend ray)",
        BACKENDS,
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help="change a play setting of every contestant that has it, checkpoints included (repeatable), "
        "e.g. --set search_depth=2",
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help="play in the agents' jitted game loop (ntuple, expectimax): game i on Game(seed=SEED + i), not recorded",
    )
    p.add_argument(
        # not --threads: the n-tuple and td-afterstate agents have a "threads" setting (their training's)
        "--fast-threads",
        type=whole(1, MAX_WORKERS),
        default=1,
        metavar="T",
        help="with --fast: threads sharing the games (n-tuple; the same games, the same results)",
    )
    p.add_argument(
        "--move-limit",
        type=_positive_seconds,
        default=MOVE_LIMIT_S,
        metavar="SECONDS",
        help=f"an agent whose move takes longer fails (default {MOVE_LIMIT_S:g})",
    )
    flags.add_json_flag(p)
    p.add_argument("--no-log", action="store_true", help="do not record the games in the store")
    flags.add_rules_flags(p)
    flags.add_agent_flags(p, [*first.agent, *flags.preset_agents(first.preset)])
    return p


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text} is out of range: more than 0 seconds")
    return value


def _label(name: str, overrides: Mapping[str, Any], base: str | None = None) -> str:
    text = base or name
    if overrides:
        text += " " + " ".join(
            f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in overrides.items()
        )
    return text


def checkpoint_files(path: str) -> list[str]:
    """``path``, or with a folder every checkpoint (``*.npz``) in it in the order they were trained
    (by moves, then training time, from their metadata); a folder with none is a one-line error."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        return [path]
    files = list(folder.glob("*.npz"))
    if not files:
        raise CliError(f"{path} holds no checkpoint (*.npz)")

    def trained(f: Path) -> tuple[int, float]:
        counters = read_checkpoint(f, arrays=False)[0].get("counters") or {}
        return int(counters.get("steps", 0)), float(counters.get("seconds", 0.0))

    return [str(f) for f in sorted(files, key=trained)]


def _named(paths: list[str], given: str) -> list[tuple[str, str | None]]:
    """Each path with its label's tail: the file name for a folder's checkpoints, None for a file."""
    return [(p, None if p == given else Path(p).name) for p in paths]


def play_settings(texts: list[str], specs: list[AgentSpec]) -> list[AgentSpec]:
    """``--set KNOB=VALUE`` given to each contestant whose agent has the knob (parsed by its type);
    a knob no contestant has, or a value its type refuses, is a one-line error."""
    if not texts:
        return specs
    wanted: dict[str, str] = {}
    for text in texts:
        knob, sep, value = text.partition("=")
        if not sep or not knob.strip():
            raise CliError(f"--set expects KNOB=VALUE, got {text!r}")
        wanted[knob.strip().replace("-", "_")] = value.strip()
    used: set[str] = set()
    out = []
    for spec in specs:
        cls = flags.config_class(str(spec.name))
        names = {s.name for s in cls.specs()}
        try:
            play = {k: cls.spec(k).parse(v) for k, v in wanted.items() if k in names}
        except ConfigError as e:
            raise CliError(f"--set: {e}") from None
        used.update(play)
        base = spec.label or spec.display
        out.append(dataclasses.replace(spec, play={**spec.play, **play}, label=_label(base, play)))
    missing = sorted(set(wanted) - used)
    if missing:
        raise CliError(f"--set: no contestant has a setting {missing[0]!r}")
    return out


def contestants(args: argparse.Namespace) -> list[AgentSpec]:
    if not (args.agent or args.preset or args.checkpoint):
        raise CliError("give something to evaluate: --agent NAME, --preset P or --checkpoint PATH")
    cli_rules = flags.rules_from(args)
    specs: list[AgentSpec] = []
    presets = [(p, load_preset(p)) for p in args.preset]
    # (path, agent, label): a folder's checkpoints are told apart by their file names
    saved = [
        (path, str(read_checkpoint(path, arrays=False)[0].get("agent")), label)
        for given in args.checkpoint
        for path, label in _named(checkpoint_files(given), given)
    ]
    covered = {agent for _, agent, _ in saved} | {str(data["agent"]) for _, data in presets}
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
    specs += [
        AgentSpec(agent, checkpoint=path, rules=cli_rules, label=label and f"{agent} ({label})")
        for path, agent, label in saved
    ]
    return play_settings(args.set, specs)


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
    limit_threads(cpu_share(1), PLAY_TORCH_THREADS)


def run(args: argparse.Namespace) -> int:
    from studio.services.runs import have_ray  # here: the commands' module imports stay light

    backend = "ray" if args.ray_address else args.backend
    if backend == "ray" and not have_ray():
        # Before any contestant is built or game played: one line says what to install.
        raise CliError(RAY_MISSING)
    if args.fast and (args.workers > 1 or backend != "local"):
        raise CliError(
            "--fast plays in this process: share its games with --fast-threads, not --workers or Ray"
        )
    if args.fast_threads > 1 and not args.fast:
        raise CliError("--fast-threads goes with --fast (without it, --workers processes share the games)")
    specs = contestants(args)
    if args.fast:
        for spec in specs:  # every contestant, before any plays
            check_fast(flags.agent_class(str(spec.name)), args.fast_threads)
    stop = threading.Event()
    if args.fast:
        results, extra = _play_fast(args, specs, stop)
    else:
        results, extra = _play(args, specs, backend, stop), {}
    # A contestant that broke the contract while it played (agents.guard.AgentFault) was named in one
    # line as it failed; its games are no result. The others' are printed; the exit status says it.
    failed = [r for r in results if r.failure is not None]
    if not results:
        print("stopped before any game finished", file=sys.stderr)
        return 0
    if args.json:
        out = {
            "games": args.games,
            "seed": args.seed,
            "workers": args.workers,
            "backend": backend,
            "fast": args.fast,
            "results": [{**r.to_dict(), **extra.get(i, {}), **_trained(r)} for i, r in enumerate(results)],
        }
        print(json.dumps(out))
        return 1 if failed else 0
    fair = [r for r in results if r.failure is None]
    if fair:
        print(format_table(fair))
    if stop.is_set():
        played = ", ".join(f"{r.label} {r.games:,}" for r in results)
        print(f"\nstopped by Ctrl-C: games finished of {args.games:,} each: {played}", file=sys.stderr)
    if not args.no_log and not args.fast:
        print(
            f"\n{sum(r.games for r in results):,} games recorded (source evaluation): "
            "python main.py games list --source evaluation",
            file=sys.stderr,
        )
    if failed:
        names = ", ".join(r.label for r in failed)
        from engine.paths import data_dir
        from studio.logs import log_path

        where = log_path(data_dir(args.data_dir))
        print(f"\nfailed: {names} (the traceback is in {where})", file=sys.stderr)
    return 1 if failed else 0


def _stopping(stop: threading.Event) -> contextlib.AbstractContextManager[None]:
    stopping = "stopping: the games in flight are given up, the finished ones are kept and summed up"
    return ctrl_c_stops(stop.set, stop.is_set, stopping)


def _play(
    args: argparse.Namespace, specs: list[AgentSpec], backend: str, stop: threading.Event
) -> list[EvalResult]:
    """Every contestant's games through the arena, one contestant after another, until a Ctrl-C."""
    in_process = backend == "local" and min(args.workers, args.games) == 1
    if in_process:
        _pin_threads(specs)
    results: list[EvalResult] = []
    # One set of worker processes for every contestant: each start costs seconds (torch's import,
    # the agent), paid once here instead of once per contestant.
    local_pool = backend == "local" and min(args.workers, args.games) > 1
    pool = EvalPool(min(args.workers, args.games)) if local_pool else None
    with (
        GameStore.open(args.data_dir) as store,
        _stopping(stop),
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
                    move_limit_s=args.move_limit,
                )
            if result.failure is not None:
                print(f"eval: {result.label} failed: {result.failure}", file=sys.stderr, flush=True)
                results.append(result)
            elif result.games:
                if in_process:  # what this process played with, as a worker process reports it
                    result = dataclasses.replace(result, worker_threads=(threads_report(),))
                results.append(result)
            if stop.is_set():
                break
    return results


def _play_fast(
    args: argparse.Namespace, specs: list[AgentSpec], stop: threading.Event
) -> tuple[list[EvalResult], dict[int, dict[str, Any]]]:
    """Every contestant's games in its jitted loop (a Ctrl-C stops after the chunk of games in play, about
    two seconds: a jitted loop cannot be given up halfway); with each result's CPU seconds and threads
    for the JSON."""
    results: list[EvalResult] = []
    extra: dict[int, dict[str, Any]] = {}
    with _stopping(stop):
        for spec in specs:
            label = f"eval {spec.display} ({args.games:,} games in the jitted loop, {args.fast_threads} thread(s))"
            with ProgressLine(label, total=args.games) as line:
                fast = evaluate_fast(
                    spec,
                    args.games,
                    args.seed,
                    args.fast_threads,
                    should_stop=stop.is_set,
                    progress=lambda done, total: line.update(done, f"{done:,} games", force=done == total),
                )
            if fast.result.games:
                extra[len(results)] = {"cpu_seconds": fast.cpu_seconds, "threads": fast.threads}
                results.append(fast.result)
            if stop.is_set():
                break
    return results, extra


def _trained(result: EvalResult) -> dict[str, Any]:
    """A checkpoint's training counters (games, moves, seconds), for the JSON; nothing for a fresh agent."""
    if result.checkpoint is None:
        return {}
    c = read_checkpoint(result.checkpoint, arrays=False)[0].get("counters") or {}
    return {
        "trained": {
            "games": int(c.get("episodes", 0)),
            "moves": int(c.get("steps", 0)),
            "seconds": float(c.get("seconds", 0.0)),
        }
    }
