"""Strength along training: each checkpoint of a run played on the same seeded games, as a table and a plot.

    python scripts/checkpoint_curve.py RUN [RUN ...] [--games 300] [--threads 2] [--every-minutes 10]
        [--depth D | --depths-policy 3,3,2] [--downgrade-from 16384] [--cache FILE.jsonl]
        [--out PNG] [--x time|moves] [--size 1600x900] [--title TEXT] [--json]

RUN is a run's checkpoint folder (``DATA/checkpoints/run-N``) or one checkpoint file, optionally named
for the legend: ``"5x6, 2 h=/data/checkpoints/run-1"``. Every n-tuple checkpoint in it is played by
:func:`evaluate` (``eval --fast``'s jitted games, :mod:`agents.fast_eval`: game ``i`` on seed
``--seed + i``), in the order it was trained; ``--every-minutes M`` keeps one checkpoint per ``M``
minutes of training (and always the last), so a run saved every 5 minutes and one saved every 10 can
be drawn side by side. The table gives per checkpoint the training time, moves, games, the mean
score and the rates of 16384 and 32768; ``--json`` prints the rows instead.

``--out`` draws the mean score and the two tile rates against training time (``--x moves``: against
the moves trained, the axis of an A/B at equal moves whose arms train at different speeds) with the
studio's own curves widget (offscreen), one line per run. ``--cache`` keeps each result in a
JSON-lines file, keyed by the checkpoint's path, size and time and the games, seed and search asked
for, so drawing again (or adding a run) does not play the same games twice.

A folder with no checkpoint, a file that is not an n-tuple checkpoint, or a bad option is a one-line
error (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agents.arena import MAX_GAMES  # noqa: E402
from agents.checkpoint import read_checkpoint  # noqa: E402
from agents.fast_eval import evaluate_fast  # noqa: E402
from agents.spec import AgentSpec  # noqa: E402

#: The tile rates the table and the plot show (the low ones are ~100 % past the first minutes).
TILES = (16384, 32768)

#: ``--x``: the curves widget's x axis and the caption's words for it.
X_AXES = {
    "time": ("elapsed", "training time"),
    "moves": ("step", "moves trained"),
    # A run with a CPU-seconds budget on a shared machine: its wall time says how busy the machine was.
    "cpu": ("elapsed", "training CPU time (all threads)"),
}


class UsageError(Exception):
    """What the command line asked for cannot be done; the message is the one line said."""


@dataclass
class Run:
    """One line of the plot: a label and its checkpoints, oldest first, with their evaluations."""

    label: str
    files: list[Path]
    rows: list[dict[str, Any]] = field(default_factory=list)


def parse_run(text: str) -> Run:
    """``[LABEL=]PATH``: a checkpoint folder (every ``*.npz`` in it) or one checkpoint file."""
    label, sep, path_text = text.partition("=")
    if not sep or Path(text).expanduser().exists():  # a path with "=" in it is a path
        label, path_text = "", text
    path = Path(path_text).expanduser()
    if path.is_dir():
        files = sorted(path.glob("*.npz"))
        if not files:
            raise UsageError(f"{path} holds no checkpoint (*.npz)")
    elif path.is_file():
        files = [path]
    else:
        raise UsageError(f"no checkpoint or checkpoint folder at {path}")
    return Run(label.strip() or str(path), files)


def trained(path: Path) -> dict[str, float]:
    """A checkpoint's counters (games, moves, seconds), from its metadata only."""
    try:
        meta, _ = read_checkpoint(path, arrays=False)
    except ValueError as e:  # CheckpointError: one line
        raise UsageError(str(e)) from None
    if meta.get("agent") != "ntuple":
        raise UsageError(f"{path.name} is a {meta.get('agent')} checkpoint, not an ntuple one")
    c = meta.get("counters") or {}
    return {
        "games": int(c.get("episodes", 0)),
        "moves": int(c.get("steps", 0)),
        "seconds": float(c.get("seconds", 0.0)),
        # older checkpoints did not count CPU time: NaN, not a made-up zero
        "cpu_seconds": float(c.get("cpu_seconds", math.nan)),
    }


def pick(files: Sequence[Path], every_minutes: float) -> list[tuple[Path, dict[str, float]]]:
    """The checkpoints in training order; with ``every_minutes``, the first at or past each further
    ``every_minutes`` of training (5 % early counts: saves drift by seconds) and always the last."""
    found = sorted(((f, trained(f)) for f in files), key=lambda ft: (ft[1]["moves"], ft[1]["seconds"]))
    if every_minutes <= 0 or len(found) <= 1:
        return found
    step = every_minutes * 60.0
    kept: list[tuple[Path, dict[str, float]]] = []
    nxt = step
    for f, t in found[:-1]:
        if t["seconds"] >= nxt - 0.05 * step:
            kept.append((f, t))
            nxt = t["seconds"] + step
    kept.append(found[-1])
    return kept


def check_counts(games: int, threads: int) -> None:
    """ValueError unless 1 <= games <= the arena's MAX_GAMES and threads >= 1 (a mistyped count asked
    for gigabytes of result arrays and hours of play)."""
    if not 1 <= games <= MAX_GAMES:
        raise ValueError(f"games must be between 1 and {MAX_GAMES:,}, got {games:,}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")


def parse_depths_policy(text: str) -> tuple[int, ...]:
    """``"3,3,2,2,1" -> (3, 3, 2, 2, 1)``; ``""`` -> ``()`` (no policy); ValueError saying what it is not."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"depths policy {text!r} is not depths by free cells, e.g. 3,3,2,2,1") from None


def evaluate(
    checkpoint: str | Path,
    *,
    games: int = 100,
    seed: int = 1_000_000,
    depth: int = 1,
    depths_policy: tuple[int, ...] = (),
    downgrade_from: int = 0,
    threads: int = 1,
) -> dict[str, Any]:
    """One n-tuple checkpoint's figures with this search (the checkpoint's own search settings are
    replaced): what ``eval --checkpoint CK --fast --set search_depth=D ...`` plays (ValueError, one line,
    when it cannot)."""
    check_counts(games, threads)
    play = {"search_depth": depth, "depths_policy": tuple(depths_policy), "downgrade_from": downgrade_from}
    fast = evaluate_fast(AgentSpec.from_checkpoint(checkpoint, "ntuple", play=play), games, seed, threads)
    r = fast.result
    moves = max(1, int(r.moves.sum()))
    return {
        "checkpoint": str(checkpoint),
        "games": games,
        "search": {"depth": depth, "depths_policy": list(depths_policy), "downgrade_from": downgrade_from},
        "threads": threads,
        "mean_score": r.mean_score,
        "median_score": r.median_score,
        "max_score": r.max_score,
        "rates": {str(t): float((r.max_tiles >= t).mean()) for t in (2048, 4096, 8192, 16384, 32768, 65536)},
        "moves_per_game": r.moves_per_game,
        "seconds_per_move_cpu": fast.cpu_seconds / moves,
        "seconds_per_move_wall": r.wall_seconds / moves,
        "cpu_seconds": fast.cpu_seconds,
        "wall_seconds": r.wall_seconds,
        "trained": trained(Path(checkpoint)),
    }


def cache_key(path: Path, games: int, seed: int, search: dict[str, Any]) -> str:
    st = path.stat()
    return json.dumps([str(path.resolve()), st.st_size, st.st_mtime_ns, games, seed, search], sort_keys=True)


def read_cache(path: Path | None) -> dict[str, dict[str, Any]]:
    """The results kept in a cache file; a line that does not read (a run killed mid-write) is passed by."""
    if path is None or not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read the cache {path}: {e.strerror or e}") from None
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            out[str(entry["key"])] = dict(entry["result"])
        except (ValueError, KeyError, TypeError):
            continue
    return out


def append_line(path: Path, line: str) -> None:
    """One line at the end of ``path``, on a line of its own even after a torn last line."""
    try:
        with open(path, "a+b") as fh:
            torn = False
            if fh.seek(0, os.SEEK_END) > 0:
                fh.seek(-1, os.SEEK_END)
                torn = fh.read(1) != b"\n"
            fh.write((b"\n" if torn else b"") + line.encode("utf-8") + b"\n")
    except OSError as e:
        raise UsageError(f"cannot write the cache {path}: {e.strerror or e}") from None


def evaluate_runs(
    runs: Sequence[Run],
    *,
    games: int,
    seed: int,
    search: dict[str, Any],
    threads: int,
    every_minutes: float,
    cache: Path | None = None,
    play: Callable[..., dict[str, Any]] = evaluate,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Fill each run's rows (one per picked checkpoint); results in ``cache`` are not played again,
    and each new one is appended to it at once (a stopped evaluation keeps what it finished)."""
    kept = read_cache(cache)
    for run in runs:
        for path, counters in pick(run.files, every_minutes):
            key = cache_key(path, games, seed, search)
            result = kept.get(key)
            if result is None:
                try:
                    result = play(
                        path,
                        games=games,
                        seed=seed,
                        depth=search["depth"],
                        depths_policy=tuple(search["depths_policy"]),
                        downgrade_from=search["downgrade_from"],
                        threads=threads,
                    )
                except ValueError as e:
                    raise UsageError(str(e)) from None
                if cache is not None:
                    append_line(cache, json.dumps({"key": key, "result": result}))
                kept[key] = result
            run.rows.append(
                {
                    "checkpoint": str(path),
                    "minutes": counters["seconds"] / 60.0,
                    "cpu_minutes": counters["cpu_seconds"] / 60.0,
                    "moves": counters["moves"],
                    "games_trained": counters["games"],
                    "mean_score": float(result["mean_score"]),
                    **{f"rate_{t}": float(result["rates"][str(t)]) for t in TILES},
                }
            )
            if progress is not None:
                progress(
                    f"{run.label}: {run.rows[-1]['minutes']:.0f} min, mean {run.rows[-1]['mean_score']:,.0f}"
                )


def moves_text(moves: int) -> str:
    """``4083753976 -> "4.08 G"``, ``12000 -> "12,000"``: a run's move count at a glance."""
    if moves >= 1e9:
        return f"{moves / 1e9:.2f} G"
    return f"{moves / 1e6:.1f} M" if moves >= 1e6 else f"{moves:,}"


def table(runs: Sequence[Run]) -> str:
    """Per run, a row per checkpoint: training time, moves, games, mean score, tile rates."""
    from studio.text import duration
    from studio.text import table as text_table

    blocks = []
    for run in runs:
        rows = [
            [
                duration(60.0 * r["minutes"]),
                moves_text(r["moves"]),
                f"{r['games_trained']:,}",
                f"{r['mean_score']:,.0f}",
                *(f"{100 * r[f'rate_{t}']:.1f} %" for t in TILES),
            ]
            for r in run.rows
        ]
        headers = ["trained", "moves", "games", "mean", *(f"{t}" for t in TILES)]
        blocks.append(run.label + "\n" + text_table(headers, rows, right=range(len(headers))))
    return "\n\n".join(blocks)


# ------------------------------------------------------------------ the plot
def draw(
    runs: Sequence[Run],
    out: Path,
    size: tuple[int, int],
    title: str,
    search_text: str,
    games: int,
    x: str = "time",
) -> None:
    """Mean score and tile rates against training time or moves (``x``, a key of :data:`X_AXES`), one
    line per run, with the studio's curves."""
    import numpy as np
    from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

    from agents.metrics import MetricInfo
    from docs.make_learning_curves import UsageError as DrawError
    from docs.make_learning_curves import hide_toolbar, render
    from studio.widgets.curves import CurvesPanel, RunSeries

    class _CpuTimeCurves(CurvesPanel):
        """The curves with their time axis named for what it holds here: CPU time, not wall time."""

        @property
        def x_title(self) -> str:
            return "CPU time"

    infos = (
        MetricInfo(
            "ckpt_mean_score",
            f"Mean score ({search_text})",
            group="Mean score",
            kind="evaluation",
            smoothable=False,
        ),
        *(
            MetricInfo(
                f"ckpt_rate_{t}",
                f"{t // 1024}k reached",
                group="Tile rates",
                kind="evaluation",
                smoothable=False,
            )
            for t in TILES
        ),
    )
    app = QApplication.instance() or QApplication(sys.argv[:1])
    figure = QWidget()
    figure.setObjectName("checkpointCurve")
    figure.setStyleSheet("QWidget#checkpointCurve { background: white; }")
    lay = QVBoxLayout(figure)
    lay.setContentsMargins(12, 10, 12, 8)
    heading = QLabel(title or "Strength along training")
    heading.setStyleSheet("font-size: 15pt; font-weight: bold; color: #222;")
    lay.addWidget(heading)
    x_axis, x_words = X_AXES[x]
    caption = QLabel(
        f"x axis: {x_words} · each point: a checkpoint playing the same {games:,} seeded games, {search_text}"
    )
    caption.setStyleSheet("color: #555;")
    lay.addWidget(caption)
    curves = _CpuTimeCurves() if x == "cpu" else CurvesPanel()
    hide_toolbar(curves)
    lay.addWidget(curves, 1)
    shown = []
    for i, run in enumerate(runs):
        series = RunSeries(run.label, agent="ntuple", infos=infos)
        series.add_columns(
            {
                "episode": np.array([r["games_trained"] for r in run.rows], dtype=np.float64),
                "step": np.array([r["moves"] for r in run.rows], dtype=np.float64),
                "elapsed": np.array(
                    [60.0 * r["cpu_minutes" if x == "cpu" else "minutes"] for r in run.rows], dtype=np.float64
                ),
                "ckpt_mean_score": np.array([r["mean_score"] for r in run.rows]),
                **{f"ckpt_rate_{t}": np.array([r[f"rate_{t}"] for r in run.rows]) for t in TILES},
            }
        )
        shown.append((i, series))
    curves.set_x_axis(x_axis)
    curves.set_runs(shown)
    try:
        render(figure, curves, size, out)
    except DrawError as e:  # the file cannot be written
        raise UsageError(str(e)) from None
    finally:
        figure.close()
        figure.deleteLater()
        app.processEvents()


# ------------------------------------------------------------------ command line
def parser() -> argparse.ArgumentParser:
    from docs.make_learning_curves import parse_size

    p = argparse.ArgumentParser(
        prog="checkpoint_curve.py",
        description=(__doc__ or "").split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="[LABEL=]checkpoint folder or file")
    p.add_argument("--games", type=int, default=300, help="games per checkpoint (default 300)")
    p.add_argument("--seed", type=int, default=1_000_000, help="game i uses seed + i (default 1000000)")
    p.add_argument("--depth", type=int, default=1, help="player moves searched (default 1: 1-ply)")
    p.add_argument("--depths-policy", default="", help="depth by free cells, e.g. 3,3,2,2,1")
    p.add_argument(
        "--downgrade-from", type=int, default=0, help="tile downgrading from this tile (default off)"
    )
    p.add_argument("--threads", type=int, default=1, help="threads sharing each checkpoint's games")
    p.add_argument(
        "--every-minutes", type=float, default=0.0, help="one checkpoint per M minutes of training"
    )
    p.add_argument("--cache", type=Path, default=None, help="JSON-lines file of results kept between calls")
    p.add_argument("--out", type=Path, default=None, help="PNG to draw (default: the table only)")
    p.add_argument(
        "--x",
        choices=tuple(X_AXES),
        default="time",
        help="x axis of the plot: training time, moves or CPU time",
    )
    p.add_argument("--size", type=parse_size, default=(1600, 900), help="image size WxH (default 1600x900)")
    p.add_argument("--title", default="", help="title over the plot")
    p.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if not (math.isfinite(args.every_minutes) and args.every_minutes >= 0):
            raise UsageError(f"--every-minutes must be a number of minutes >= 0, got {args.every_minutes}")
        try:
            check_counts(args.games, args.threads)
            policy = list(parse_depths_policy(args.depths_policy))
        except ValueError as e:
            raise UsageError(str(e)) from None
        search = {"depth": args.depth, "depths_policy": policy, "downgrade_from": args.downgrade_from}
        runs = [parse_run(text) for text in args.runs]
        evaluate_runs(
            runs,
            games=args.games,
            seed=args.seed,
            search=search,
            threads=args.threads,
            every_minutes=args.every_minutes,
            cache=args.cache,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
        if args.out is not None:
            how = (
                f"depths {args.depths_policy}"
                if policy
                else ("1-ply" if args.depth == 1 else f"{args.depth}-ply")
            )
            if args.downgrade_from:
                how += f", downgrading from {args.downgrade_from}"
            draw(runs, args.out, args.size, args.title, how, args.games, x=args.x)
    except UsageError as e:
        print(f"checkpoint_curve.py: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([{"label": run.label, "rows": run.rows} for run in runs], indent=1))
    else:
        print(table(runs))
        if args.out is not None:
            print(f"drew {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
