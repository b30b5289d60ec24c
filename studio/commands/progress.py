"""``python main.py progress [--source mine|human|mixed|agent|...|all] [--since DATE] [--reviewer R] [--json]``.

A person's games over time, as the Progress tab shows them (:func:`studio.services.progress.progress`,
the same call): one line per game, oldest first (date, score, highest tile, the person's moves, the
accuracy of the person's moves by the default reviewer's stored review), the blunder share per game
phase (by the highest tile on the board) and a summary line. ``--source mine`` (the default) is every
game the person played a move in, shared games with an agent included; never an evaluation or
training game.
Nothing is reviewed here: ``python main.py review --source human`` reviews the games listed as
unreviewed. ``--json``: the service's figures as one object.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from engine.store import GameStore
from studio.cli import whole
from studio.commands import _records as records
from studio.services.progress import ALL, DEFAULT_LIMIT, MINE, PHASES, SOURCES, Progress, progress
from studio.services.review import resolve_reviewer

HELP = "your games over time: score, highest tile, review accuracy, blunders per game phase"
DESCRIPTION = "A person's games over time (the Progress tab's figures), oldest first."


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("progress", help=HELP, description=DESCRIPTION)
    p.add_argument(
        "--source",
        choices=SOURCES,
        default=MINE,
        help="whose games: mine (default: every game you played a move in), human (yours alone), "
        "mixed, agent, evaluation, training, imported, or all",
    )
    p.add_argument("--since", metavar="DATE", help="games started on or after DATE (YYYY-MM-DD)")
    records.add_reviewer_flags(
        p,
        "read this reviewer's stored reviews (default: the default reviewer, as review uses)",
        "the preferred reviewer's search depth",
    )
    p.add_argument(
        "--limit",
        type=whole(1, records.MAX_GAMES),
        default=DEFAULT_LIMIT,
        help=f"the newest this many games ({DEFAULT_LIMIT})",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        # A name or a file only: the reviewer is never built (nothing is reviewed), its key is enough.
        reviewer = None if args.reviewer is None else resolve_reviewer(store, args.reviewer, args.depth)
        result = progress(store, source=args.source, since=args.since, reviewer=reviewer, limit=args.limit)
    print(json.dumps(result.to_json()) if args.json else render(result))
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def render(result: Progress) -> str:
    """The per-game table, the blunder share per phase and the summary line."""
    lines = [
        f"{'game':>6}  {'date':<16}  {'source':<10}  {'score':>8}  {'tile':>6}  {'moves':>6}  {'accuracy':>8}"
    ]
    for g in result.games:
        acc = "-" if g.accuracy is None else f"{g.accuracy:.1f} %"
        state = " (playing)" if g.status == "playing" else ""
        lines.append(
            f"{g.game_id:>6}  {g.date:<16}  {g.source:<10}  {g.score:>8,}  {g.max_tile:>6}  {g.moves:>6,}  "
            f"{acc:>8}{state}"
        )
    lines.append("")
    lines.append(
        "blunders per phase (highest tile): "
        + "  ".join(
            f"{p}: {_pct(s)} ({b}/{n})"
            for p, s, b, n in zip(PHASES, result.shares, result.blunders, result.graded)
        )
    )
    lines.append(result.summary())
    if result.unreviewed:
        # review takes a store source, not "all"/"mine": every game is "every game since the epoch";
        # "mine" is the person's own games and the shared ones
        sources = {MINE: ["human", "mixed"], ALL: [""]}.get(result.source, [result.source])
        when = f"--since {result.since}" if result.since else ""
        for source in sources:
            which = f"--source {source}" if source else ""
            since = when or ("" if which else "--since 1970-01-01")
            lines.append(f"to review them: python main.py review {which} {since}".rstrip().replace("  ", " "))
    return "\n".join(lines)
