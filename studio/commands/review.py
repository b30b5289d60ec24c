"""``python main.py review GAME_ID [--reviewer NAME|CHECKPOINT] [--depth D] [--json]``.

Every move of a logged game graded by a strong agent (see :mod:`agents.review` for the grades and
the accuracy, :mod:`studio.services.review` for the default reviewer): a table of move number, move
played, the reviewer's best move, the loss and the grade, then the accuracy and the moves per grade.
Reviews are stored: the same reviewer answers again at once, and a review that was interrupted goes
on from where it stopped. ``review --source human --since 2024-05-01`` reviews many games (one
summary line each; ``--json``: one object with a ``games`` list).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agents.review import GRADES
from engine.store import SOURCE_FILTERS, GameStore
from studio.cli import CliError, record_id, whole
from studio.progress import ProgressLine
from studio.services.review import GameReview, resolve_reviewer, review_game, review_games

#: The most games one ``review`` may take on.
MAX_GAMES = 100_000


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "review",
        help="grade every move of a game with a strong agent (accuracy, mistakes, blunders)",
        description="Review a logged game: every move graded against a strong agent's best move.",
    )
    p.add_argument("id", type=record_id, nargs="?", help="game id (see: python main.py games list)")
    p.add_argument(
        "--reviewer",
        metavar="NAME|CHECKPOINT",
        help="agent name or checkpoint file (default: the best n-tuple checkpoint, else expectimax)",
    )
    p.add_argument(
        "--depth", type=whole(1, 5), help="the reviewer's search depth (default 2 for the default)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--source", choices=SOURCE_FILTERS, help="review every game of this source")
    p.add_argument("--since", metavar="DATE", help="review games started on or after DATE (YYYY-MM-DD)")
    p.add_argument("--until", metavar="DATE", help="review games started on or before DATE")
    p.add_argument("--limit", type=whole(1, MAX_GAMES), default=1000, help="most games to review (1000)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    many = args.source is not None or args.since is not None or args.until is not None
    if args.id is not None and many:
        raise CliError("give a game id or --source/--since/--until, not both")
    if args.id is None and not many:
        raise CliError("give a game id, or --source/--since/--until to review many games")
    with GameStore.open(args.data_dir) as store:
        if args.id is not None:
            rules = store.get_game(args.id).rules  # "no game N" before any reviewer is built
            reviewer = resolve_reviewer(store, args.reviewer, args.depth, rules)
            with ProgressLine(f"review game {args.id}") as line:
                review = review_game(
                    store, args.id, reviewer, progress=lambda d, n: line.update(d, f"{d}/{n} moves", total=n)
                )
            print(json.dumps(review.to_json()) if args.json else render(review))
            return 0
        named = None if args.reviewer is None else resolve_reviewer(store, args.reviewer, args.depth)
        games = store.list_games(source=args.source, since=args.since, until=args.until, limit=args.limit)
        ids = [g.id for g in reversed(games)]  # oldest first
        with ProgressLine("review") as line:

            def each(k: int, total: int, done: int, moves: int) -> None:
                # the share counts whole games and the finished part of the one under review
                line.update(
                    k + done / max(1, moves), f"game {k + 1}/{total}: {done}/{moves} moves", total=total
                )

            skipped: list[tuple[int, str]] = []
            reviews = review_games(
                store,
                ids,
                named,
                depth=args.depth,
                progress=each,
                on_skip=lambda gid, why: skipped.append((gid, why)),
            )
    if args.json:
        out = {
            "games": [r.to_json(moves=False) for r in reviews],
            "skipped": [{"game": gid, "reason": why} for gid, why in skipped],
        }
        print(json.dumps(out))
    else:
        for r in reviews:
            print(r.summary())
        if not reviews and not skipped:
            print("no games match", file=sys.stderr)
    for gid, why in skipped:
        print(f"game {gid} not reviewed: {why}", file=sys.stderr)
    return 0


def _loss_text(review: GameReview, loss: float, relative: float, grade: str) -> str:
    if grade in ("best", "forced"):
        return "-"
    return f"{loss:,.0f} pts" if review.points else f"{100 * relative:.1f} %"


def render(review: GameReview) -> str:
    """The per-move table and the summary lines."""
    lines = [f"{'move':>5}  {'played':<6}  {'best':<6}  {'loss':>10}  grade"]
    for g in review.moves:
        loss = _loss_text(review, g.loss, g.relative, g.grade)
        mark = " (may lose the game)" if g.risky else ""
        lines.append(f"{g.index + 1:>5}  {g.played.label:<6}  {g.best.label:<6}  {loss:>10}  {g.grade}{mark}")
    counts = review.counts
    lines.append("")
    lines.append(f"accuracy: {review.accuracy:.1f} %")
    lines.append("moves: " + ", ".join(f"{counts[g]} {g}" for g in GRADES))
    r = review.reviewer
    depth = "" if r.get("depth") is None else f", depth {r['depth']}"
    where = f", {r['checkpoint']}" if r.get("checkpoint") else ""
    lines.append(f"reviewer: {r.get('name')}{depth}{where} (key {r.get('key')})")
    if not review.complete:
        lines.append(
            f"unfinished: {len(review.moves)} of {review.n_moves} moves reviewed (run again to go on)"
        )
    return "\n".join(lines)
