"""``python main.py sweep --agent NAME --grid K=V1,V2 ... [--random K=LO:HI[:log] --samples N]`` and
``python main.py sweeps list | show ID | delete ID``.

A sweep trains one agent many times over a grid or a random search (:mod:`studio.services.sweep`):
each trial is an ordinary run (``runs list`` shows it with its sweep), trials run ``--workers`` at a
time in local processes or on Ray (``--backend ray [--ray-address ADDR]``), and the points are ranked
by ``--metric`` (default: each trial's own evaluation at its end). Ctrl-C stops every trial cleanly
(each saves a checkpoint); ``sweep --resume ID`` continues: finished trials stay, unfinished ones
resume from their last checkpoint.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Iterator
from typing import Any

from agents.runner import DEFAULT_EVAL_GAMES
from engine import jsonsafe
from engine.store import GameStore, format_time
from studio.cli import CliError, ctrl_c_stops, whole
from studio.commands import _agent_flags as flags
from studio.commands import _records as records
from studio.progress import ProgressLine
from studio.services.sweep import (
    AUTO,
    PointResult,
    SweepEvent,
    SweepProgress,
    SweepRequest,
    TrialProgress,
    knob_text,
    parse_grids,
    parse_point,
    parse_ranges,
    rank_sweep,
    run_sweep,
    swept_knobs,
)
from studio.text import duration, number, plural, table

#: The run options a sweep's trials take from the command line (the sweep sets the others: a trial's
#: evaluation comes at its end), with a sweep's words for them.
SWEEP_OPTIONS = ("eval_games", "eval_seed", "checkpoint_every_s")
SWEEP_OPTION_HELP = {
    "eval_games": f"greedy games that end each trial (0 = rank by training score; default {DEFAULT_EVAL_GAMES})",
    "eval_seed": "seed of those games",
    "checkpoint_every_s": "seconds between a trial's checkpoints (default %(default)g)",
}
HELP = "train one agent over a grid or random search of settings and rank the trials"
DESCRIPTION = """Train one agent many times over a grid or a random search and rank the results.

  python main.py sweep --agent dqn --grid lr=1e-4,5e-4,1e-3 gamma=0.95,0.99 --seeds 2 --minutes 3
  python main.py sweep --agent ntuple --random lr=0.01:1:log lam=0:0.9 --samples 8 --episodes 2000
  python main.py sweep --agent ntuple --point "" --point "tc=false" --steps 40000000 --workers 2  # A/B

The base settings come from the agent's defaults, then --preset, then the agent's flags; --grid and
--random vary knobs over them (a tuple knob takes values separated by ';'). A value holding commas
goes in quotes ('KNOB="a,b",c'); a choice holding commas may also go as it is: KNOB=down,left,up,right
is one choice when the knob has that choice. Budget flags are per trial.
Each trial is a run (runs list), --seeds runs per point with seeds --seed, --seed + 1, ... Each trial
ends with --eval-games greedy games on the same seeds for every trial, and points are ranked by the mean
of their trials' figures (--metric; default: that evaluation, or the training score with 0 games).
Ctrl-C stops every trial after its current step (each saves a checkpoint); --resume ID continues."""


def register(subparsers: Any) -> None:
    flags.register_two_stage(subparsers, "sweep", HELP, build_parser, run)
    sub = records.action_group(
        subparsers, "sweeps", "list sweeps, or show one ranked", "Sweeps recorded in the store."
    )
    p = sub.add_parser("list", help="list sweeps, newest first")
    records.add_limit_flag(p)
    p.set_defaults(func=run_list)
    what = "one sweep: its spec and its points ranked by its metric"
    p = records.add_id_action(sub, "show", what, "sweep id (see sweeps list)", run_show)
    p.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    what = "delete a sweep's record (its runs stay, as ordinary runs)"
    records.add_id_action(sub, "delete", what, "sweep id", run_delete)


def build_parser(first: argparse.Namespace) -> argparse.ArgumentParser:
    names, epilog = flags.one_agent(first)
    p = flags.new_parser("sweep", DESCRIPTION, epilog)
    flags.add_agent_choice(p, "to sweep")
    p.add_argument(
        "--grid",
        nargs="+",
        default=[],
        metavar="KNOB=V1,V2",
        help="knob values to try, all combinations; a value with commas in quotes: 'KNOB=\"a,b\",c'",
    )
    p.add_argument(
        "--random",
        nargs="+",
        default=[],
        metavar="KNOB=LOW:HIGH[:log]",
        help="random search: numeric ranges (with --samples; --grid knobs are then drawn from their lists)",
    )
    p.add_argument("--samples", type=whole(1, 1000), default=None, help="points of a random search")
    p.add_argument(
        "--point",
        action="append",
        default=[],
        metavar='"KNOB=V KNOB2=V2"',
        help='an explicit point instead of --grid / --random (repeat it; "" is the base settings): '
        "an A/B comparison is two --point",
    )
    p.add_argument("--seeds", type=whole(1, 100), default=1, help="runs per point (default 1)")
    flags.add_seed_flag(p, 1, "first seed of each point's runs, and the draws (default 1)")
    p.add_argument(
        "--metric", default=AUTO, help="rank by this metric (default auto: the trials' evaluation)"
    )
    flags.add_budget_flags(p, "each trial")
    flags.add_rules_flags(p)
    flags.add_run_option_flags(p, SWEEP_OPTIONS, SWEEP_OPTION_HELP)
    flags.add_parallel_flags(
        p,
        (None, "trials at once (default 1)"),
        (None, "local processes (default) or Ray Tune"),
        "a Ray cluster (implies --backend ray)",
    )
    flags.add_resume_flag(p, "SWEEP_ID", "continue this sweep's unfinished trials")
    flags.add_json_flag(p, "print the result as one JSON object")
    flags.add_agent_flags(p, names)
    return p


def request_from_args(args: argparse.Namespace) -> SweepRequest:
    """The command line as a sweep request (what the Train tab's Sweep dialog builds)."""
    name, preset = flags.agent_and_preset(args)
    if not name:
        raise CliError("give the agent to sweep (--agent NAME) or a preset")
    cls = flags.config_class(name)
    grid = parse_grids(args.grid, cls)
    ranges = parse_ranges(args.random, cls)
    points = tuple(parse_point(t, cls) for t in args.point)
    if ranges and args.samples is None:
        raise CliError("a random search needs --samples N")
    if args.samples is not None and not ranges:
        raise CliError("--samples goes with --random ranges (a grid tries every combination)")
    return SweepRequest(
        agent=args.agent,
        preset=args.preset,
        config=flags.overrides_for(args, name),
        rules=flags.rules_from(args, preset),
        budget=flags.budget_from(args),
        grid=grid,
        ranges=ranges,
        samples=args.samples or 0,
        points=points,
        seeds=args.seeds,
        seed=args.seed,
        metric=args.metric,
        workers=args.workers or 1,
        backend=args.backend or "local",
        ray_address=args.ray_address,
        **flags.run_options_from(args, SWEEP_OPTIONS),
    )


def _with_ctrl_c(events: Iterator[SweepEvent], stop: threading.Event) -> Iterator[SweepEvent]:
    """The first Ctrl-C stops every trial cleanly (each saves); the second aborts."""
    with ctrl_c_stops(stop.set, stop.is_set, "stopping every trial after its current step"):
        yield from events


def run(args: argparse.Namespace) -> int:
    stop = threading.Event()
    with GameStore.open(args.data_dir) as store:
        if args.resume is not None:
            if args.agent or args.preset or args.grid or args.random or args.point:
                raise CliError("a resumed sweep keeps its own agent, knobs and budget: give only --resume ID")
            events = run_sweep(
                None,
                store,
                resume=args.resume,
                stop=stop,
                workers=args.workers,
                backend=args.backend,
                ray_address=args.ray_address,
            )
        else:
            events = run_sweep(request_from_args(args), store, stop=stop)
        progress, failures = SweepProgress(), []
        with ProgressLine("sweep", total=1.0) as line:
            for ev in _with_ctrl_c(events, stop):
                progress.update(ev)
                if ev.failure:
                    failures.append(ev.failure)
                line.label = f"sweep {ev.sweep_id}"
                line.update(progress.fraction, progress.text(), force=not isinstance(ev, TrialProgress))
        for f in failures:
            print(f, file=sys.stderr)
        sweep_id, status = progress.sweep_id, progress.final_status
        assert sweep_id is not None
        metric, points = rank_sweep(store, sweep_id)
        if args.json:
            print(jsonsafe.dumps(_as_json(store, sweep_id, metric, points)))
        else:
            print(f"sweep {sweep_id} {status}: ranked by {metric}")
            print(_points_table(points))
            if status == "stopped":
                print(f"resume with: python main.py sweep --resume {sweep_id}")
        if status == "failed":
            # Last, on stderr: a sweep that trained nothing must not read as one that ranked its points.
            print(f"sweep {sweep_id} failed: {progress.error or 'see logs/studio.log'}", file=sys.stderr)
    return 0 if status in ("finished", "stopped") else 1


def _as_json(store: GameStore, sweep_id: int, metric: str, points: list[PointResult]) -> dict[str, Any]:
    info = store.get_sweep(sweep_id)
    best = next((p for p in points if p.rank == 1), None)
    return {
        "sweep": sweep_id,
        "agent": info.agent,
        "status": info.status,
        "error": info.error,
        "metric": metric,
        "spec": info.spec,
        "best": None if best is None else best.to_dict(),
        "points": [p.to_dict() for p in points],
    }


def _points_table(points: list[PointResult]) -> str:
    knobs = list(dict.fromkeys(k for p in points for k in p.params))
    rows = []
    for p in points:
        values = " ".join(number(v) for v in p.values)
        runs = ",".join("-" if r is None else str(r) for r in p.run_ids)
        rows.append(
            (
                "-" if p.rank is None else p.rank,
                *(knob_text(p.params.get(k)) for k in knobs),
                number(p.mean),
                number(p.std),
                values,
                runs,
            )
        )
    n = len(knobs)
    return table(
        ("RANK", *(k.upper() for k in knobs), "MEAN", "STD", "PER SEED", "RUNS"),
        rows,
        right={0, n + 1, n + 2},
    )


def run_list(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        sweeps = store.list_sweeps(limit=args.limit)
        rows = []
        for s in sweeps:
            metric, points = rank_sweep(store, s.id)
            best = next((p for p in points if p.rank == 1), None)
            knobs = ", ".join(swept_knobs(s.spec))
            rows.append(
                (
                    s.id,
                    s.agent,
                    s.status,
                    f"{s.n_finished}/{s.n_trials}",
                    knobs,
                    metric,
                    "-" if best is None else number(best.mean),
                    "-" if best is None else " ".join(f"{k}={knob_text(v)}" for k, v in best.params.items()),
                    format_time(s.created),
                )
            )
    if not rows:
        print("no sweeps yet (python main.py sweep --help)")
        return 0
    print(
        table(
            ("ID", "AGENT", "STATUS", "DONE", "KNOBS", "METRIC", "BEST", "BEST POINT", "CREATED"),
            rows,
            right={0, 6},
        )
    )
    return 0


def run_show(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        info = store.get_sweep(args.id)
        metric, points = rank_sweep(store, args.id)
        if args.json:
            print(jsonsafe.dumps(_as_json(store, args.id, metric, points)))
            return 0
        spec = info.spec
        budget = spec.get("budget") or {}
        b = ", ".join(
            f"{k} {duration(v) if k == 'seconds' else f'{v:,}'}" for k, v in budget.items() if v is not None
        )
        print(f"sweep {info.id}: {info.agent}, {spec.get('search')} search, {info.status}")
        if info.error:
            print(f"  {info.error}")
        print(
            f"  trials: {info.n_finished}/{info.n_trials} finished; "
            f"{plural(int(spec.get('seeds') or 1), 'seed')} per point; budget {b}"
        )
        print(f"  backend: {spec.get('backend')} x {spec.get('workers')}; ranked by {metric}")
        print(_points_table(points) if points else "  no trials")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        store.delete_sweep(args.id)
    print(f"sweep {args.id} deleted (its runs stay: runs list)")
    return 0
