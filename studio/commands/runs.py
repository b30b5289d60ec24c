"""``python main.py runs list | show ID | export ID FILE.csv | stop ID``: training runs in the store.

``export`` writes a run's metric history as CSV (what the Train tab's "Export CSV…" writes), or with
``--tensorboard`` as TensorBoard event files in a folder (the optional extra); ``stop``
asks a run training in another process (a `train` in a terminal, or a run the window left training
headless) to stop after its current step and save a checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from typing import Any

import numpy as np

from engine.fsutil import UnsafePath
from engine.store import RUN_STATUSES, GameStore, RunSummary, format_time
from engine.store.model import format_size
from studio.cli import CliError
from studio.commands import _records as records
from studio.services.runs import export_run_tensorboard, stop_elsewhere, write_metrics_csv
from studio.text import duration, number, sparkline, table

#: Metrics shown first (in this order) in summaries; others follow alphabetically.
PREFERRED = ("score", "eval_score", "max_tile", "moves", "loss", "epsilon", "lr", "steps_per_s")
MAX_CURVE_COLUMNS = 6
PARTS = 10

HELP = "list training runs, or show one (config, status, curves)"
DESCRIPTION = "Training runs recorded in the store."


def register(subparsers: Any) -> None:
    sub = records.action_group(subparsers, "runs", HELP, DESCRIPTION)
    p = sub.add_parser("list", help="list runs, newest first")
    p.add_argument("--agent", help="only runs of this agent")
    p.add_argument("--status", choices=RUN_STATUSES, help="only runs with this status")
    records.add_limit_flag(p)
    p.set_defaults(func=run_list)
    what = "one run: config, status, last metrics, checkpoints, curve summary"
    records.add_id_action(sub, "show", what, "run id (see runs list)", run_show)
    p = records.add_id_action(
        sub,
        "export",
        "a run's metric history as CSV (one row per event), or as TensorBoard event files",
        "run id",
        run_export,
        description="A run's metric history as CSV, or with --tensorboard as TensorBoard scalars in "
        "DEST/run-ID-AGENT (then: tensorboard --logdir DEST; every run exported to DEST is one to compare).",
    )
    p.add_argument("file", metavar="DEST", help="the .csv file to write (with --tensorboard: a folder)")
    p.add_argument(
        "--tensorboard",
        action="store_true",
        help="write TensorBoard event files instead (needs the optional extra: pip install -e '.[tensorboard]')",
    )
    what = "ask a run training in another process to stop and save"
    records.add_id_action(sub, "stop", what, "run id", run_stop)


def run_export(args: argparse.Namespace) -> int:
    if not args.file.strip():  # "" would mean the working directory, and the hint would end in nothing
        raise CliError("the export destination is empty: give a file (with --tensorboard: a folder)")
    if args.tensorboard:
        return _export_tensorboard(args)
    with GameStore.open(args.data_dir) as store:
        columns = store.run_metrics(args.id)
    try:
        out = write_metrics_csv(columns, args.file)
    except OSError as e:
        raise CliError(f"cannot write {args.file}: {e.strerror or e}") from None
    print(f"run {args.id}: {len(columns['episode']):,} events written to {out}")
    return 0


def _export_tensorboard(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        n = store.get_run(args.id).n_events
        try:
            out = export_run_tensorboard(store, args.id, args.file)
        except OSError as e:
            raise CliError(f"cannot write {args.file}: {e.strerror or e}") from None
        except UnsafePath as e:
            raise CliError(str(e)) from None
    print(
        f"run {args.id}: {n:,} events written to {out.parent} (tensorboard --logdir {shlex.quote(args.file)})"
    )
    return 0


def run_stop(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        summary = store.get_run(args.id)
    print(stop_elsewhere(summary))
    return 0


def _metric_order(names: list[str]) -> list[str]:
    return [m for m in PREFERRED if m in names] + sorted(m for m in names if m not in PREFERRED)


def run_list(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        runs = store.list_runs(agent=args.agent, status=args.status, limit=args.limit)
        disk = store.runs_disk_use([r.id for r in runs])
        sweeps = store.sweep_of_runs([r.id for r in runs])
    if not runs:
        print("no training runs yet" if args.agent is None and args.status is None else "no runs match")
        return 0
    rows = [
        (
            r.id,
            r.agent,
            r.status,
            r.episodes,
            r.steps,
            duration(r.elapsed),
            number(r.last_metrics.get("score")),
            number(r.last_metrics.get("eval_score")),
            format_size(disk.get(r.id, 0)),
            f"{sweeps[r.id][0]}#{sweeps[r.id][1]}" if r.id in sweeps else "-",
            # to the minute, as the Train tab's runs table: with seconds a row was 101 characters,
            # one past a 100-column terminal (runs show ID has the second)
            format_time(r.created)[:16],
        )
        for r in runs
    ]
    print(
        table(
            (
                "ID",
                "AGENT",
                "STATUS",
                "EPISODES",
                "STEPS",
                "TIME",
                "LAST SCORE",
                "EVAL",
                "DISK",
                "SWEEP",
                "CREATED",
            ),
            rows,
            right={0, 3, 4, 5, 6, 7, 8},
        )
    )
    return 0


def run_show(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        run = store.get_run(args.id)
        cols = store.run_metrics(args.id)
        checkpoints = store.run_checkpoints(args.id)
        messages = store.run_messages(args.id)
        n_games = store.count_games(run_id=args.id)
        disk = store.run_disk_use(args.id)
    lines = [describe_run(run), ""]
    if n_games:
        lines.append(f"training games in the store: {n_games} (python main.py games list --source training)")
    if checkpoints:
        lines.append("checkpoints:")
        rows = [
            (
                c.id,
                c.episode,
                c.step,
                " ".join(w for w, on in (("final", c.final), ("best", c.best)) if on),
                _score(c.eval_score),
                format_time(c.created),
                _file_size(c.path),
                c.path,
            )
            for c in checkpoints
        ]
        lines.append(
            _indent(
                table(
                    ("ID", "EPISODE", "STEP", "", "EVAL", "SAVED", "SIZE", "PATH"),
                    rows,
                    right={0, 1, 2, 4, 6},
                )
            )
        )
        lines.append(
            f"checkpoint files: {format_size(disk)} on disk, {len(checkpoints)} kept "
            "(the newest few and the best evaluated; train --keep-checkpoints N)"
        )
        best = next((c for c in checkpoints if c.best), None)
        if best is not None:
            lines.append(
                f"best checkpoint: {best.id} (episode {best.episode}, evaluation mean score "
                f"{_score(best.eval_score)}): {best.path}"
            )
    else:
        lines.append("checkpoints: none")
    curves = curve_summary(cols)
    if curves:
        lines += ["", curves]
    if messages:
        last = messages[-1]
        lines += ["", f"last message (episode {last.episode}): {last.message}"]
    print("\n".join(lines))
    return 0


def describe_run(run: RunSummary) -> str:
    r = run.rules
    lines = [f"run {run.id}: {run.agent}, {run.status}" + (f" ({run.error})" if run.error else "")]
    lines.append(f"created {format_time(run.created)}, updated {format_time(run.updated)}")
    lines.append(
        f"rules: {r.rows}x{r.cols}, p4 {r.p4:g}; seed {run.seed if run.seed is not None else '-'}; "
        f"budget: {_kv(run.budget) or '-'}"
    )
    lines.append(
        f"progress: {run.episodes} episodes, {run.steps} steps, {duration(run.elapsed)} of training, "
        f"{run.n_events} events logged"
    )
    if run.last_metrics:
        names = _metric_order(list(run.last_metrics))
        lines.append("last metrics: " + ", ".join(f"{m} {number(run.last_metrics[m])}" for m in names))
        if "restarted_games" in run.last_metrics:
            # n-tuple restarts: a replay from a game's middle starts with that game's score so far
            lines.append("  score, max_tile, moves, mean_score, rate_*: of games played from the start only;")
            lines.append("  restarted games (replays from a game's middle) count in episodes and games only")
    lines.append("config:")
    lines += [f"  {k} = {json.dumps(v)}" for k, v in sorted(run.config.items())] or ["  (defaults)"]
    return "\n".join(lines)


def _score(v: float | None) -> str:
    """A mean score as people read one: ``52,510`` (``-`` for none)."""
    return "-" if v is None or v != v else f"{v:,.0f}"


def _file_size(path: str | os.PathLike[str]) -> str:
    """A checkpoint file's size as ``format_size`` writes it; ``gone`` when the file is missing."""
    try:
        return format_size(os.stat(path).st_size)
    except OSError:
        return "gone"


def _kv(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items() if v is not None)


def _indent(text: str) -> str:
    return "\n".join("  " + ln for ln in text.splitlines())


def curve_summary(cols: dict[str, np.ndarray], parts: int = PARTS) -> str:
    """Each metric's mean over each tenth of the run (by steps, or events when steps do not move)."""
    n = len(cols.get("step", ()))
    names = _metric_order([k for k in cols if k not in ("episode", "step", "elapsed")])
    names = [m for m in names if np.any(~np.isnan(cols[m]))][:MAX_CURVE_COLUMNS]
    if n == 0 or not names:
        return ""
    step = cols["step"].astype(float)
    axis, label = (step, "STEPS") if step[-1] > step[0] else (np.arange(n, dtype=float), "EVENTS")
    edges = np.linspace(axis[0], axis[-1], parts + 1)
    bins = np.clip(np.searchsorted(edges, axis, side="right") - 1, 0, parts - 1)
    rows = []
    means: dict[str, list[float]] = {m: [] for m in names}
    for b in range(parts):
        sel = bins == b
        if not sel.any():
            continue
        row: list[Any] = [
            f"{b * 100 // parts}-{(b + 1) * 100 // parts}%",
            f"{number(edges[b])}-{number(edges[b + 1])}",
        ]
        for m in names:
            vals = cols[m][sel]
            vals = vals[~np.isnan(vals)]
            mean = float(vals.mean()) if vals.size else float("nan")
            means[m].append(mean)
            row.append(number(mean))
        rows.append(row)
    head = f"curves (mean per tenth of the run, by {label.lower()}):"
    body = table(("PART", label, *names), rows, right=set(range(2, 2 + len(names))))
    spark = "\n".join(f"  {m:<10} {sparkline(means[m])}" for m in names[:2])
    return "\n".join([head, _indent(body), spark])
