"""``python main.py review GAME_ID [--reviewer NAME|CHECKPOINT] [--depth D] [--json]``.

Every move of a logged game graded by a strong agent in expected points given up (see
:mod:`agents.review` for the unit, grades and accuracy, :mod:`studio.services.review` for the default
reviewer): a header naming the game, who played, the reviewer and the moves reviewed; a table of move
number, who played it, the move, the reviewer's best move, the loss in points, the move's accuracy and
the grade (an agent's move in a game the person played in is marked "not counted"); then the accuracy
(the person's moves only in such a game), per player and per phase, and the moves per grade.
Reviews are stored: the same reviewer answers again at once, and a review that was interrupted goes
on from where it stopped. ``review --source human --since 2024-05-01`` reviews many games (one
summary line each; ``--json``: one object with a ``games`` list).

``review --prepare-reviewer [--minutes M]`` trains an n-tuple network for M minutes (4 by default) as a
recorded run, which then reviews as the default reviewer; ``review --calibrate [--reviewer X] [--depth
D]`` fits a reviewer's map from its values to points (default: expectimax at depths 1-3) on games it
plays out, written to the data dir (``DATA/calibrations/<agent>-<hash>.json``), which is read before
the shipped defaults (``resources/review_calibration.json``, never written).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agents.review import GRADES
from engine.store import SOURCE_FILTERS, GameFilter, GameStore
from studio.cli import CliError, record_id, whole
from studio.commands import _records as records
from studio.progress import ProgressLine
from studio.services.review import (
    DEFAULT_RULE,
    PHASES,
    PREPARE_MINUTES,
    GameReview,
    calibrate,
    earlier_default_review,
    prepare_reviewer,
    resolve_reviewer,
    review_game,
    review_games,
)

HELP = "grade every move of a game with a strong agent (accuracy, mistakes, blunders)"
DESCRIPTION = "Review a logged game: every move graded against a strong agent's best move."


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("review", help=HELP, description=DESCRIPTION)
    p.add_argument("id", type=record_id, nargs="?", help="game id (see: python main.py games list)")
    records.add_reviewer_flags(
        p,
        f"agent name or checkpoint file (default: {DEFAULT_RULE})",
        "the reviewer's search depth (default 2 for the default)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--source", choices=SOURCE_FILTERS, help="review every game of this source")
    p.add_argument("--since", metavar="DATE", help="review games started on or after DATE (YYYY-MM-DD)")
    p.add_argument("--until", metavar="DATE", help="review games started on or before DATE")
    p.add_argument(
        "--limit", type=whole(1, records.MAX_GAMES), default=1000, help="most games to review (1000)"
    )
    p.add_argument(
        "--prepare-reviewer",
        action="store_true",
        help="train an n-tuple network to review with (a recorded run; it becomes the default reviewer)",
    )
    p.add_argument(
        "--minutes",
        type=_minutes,
        default=PREPARE_MINUTES,
        help=f"minutes of training for --prepare-reviewer (default {PREPARE_MINUTES:g})",
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="fit the map from --reviewer's values to points on games it plays out, at --depth (default: "
        "expectimax at depths 1-3), into the data dir",
    )
    p.add_argument("--games", type=whole(2, 1000), default=12, help="games per depth for --calibrate (12)")
    p.set_defaults(func=run)


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1440:
        raise argparse.ArgumentTypeError(f"minutes must be in (0, 1440], got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    if args.prepare_reviewer or args.calibrate:
        if args.id is not None or args.source or args.since or args.until:
            raise CliError("--prepare-reviewer and --calibrate review no game: give no game id or filters")
        return _calibrate(args) if args.calibrate else _prepare(args)
    many = args.source is not None or args.since is not None or args.until is not None
    if args.id is not None and many:
        raise CliError("give a game id or --source/--since/--until, not both")
    if args.id is None and not many:
        raise CliError("give a game id, or --source/--since/--until to review many games")
    with GameStore.open(args.data_dir) as store:
        if args.id is not None:
            rules = store.get_game(args.id).rules  # "no game N" before any reviewer is built
            reviewer = resolve_reviewer(store, args.reviewer, args.depth, rules)
            n = store.get_game(args.id).n_moves
            with ProgressLine(f"reviewing game #{args.id} with {reviewer.label}", total=max(n, 1)) as line:
                review = review_game(
                    store, args.id, reviewer, progress=lambda d, n: line.update(d, f"{d:,}/{n:,} moves")
                )
            # the default changed since the game was last reviewed: say whose figure that was
            earlier = earlier_default_review(store, args.id, reviewer) if reviewer.default else None
            if args.json:
                out = review.to_json()
                if earlier is not None:
                    out["earlier_default"] = {
                        "reviewer": earlier.label,
                        "key": earlier.reviewer.get("key"),
                        "accuracy": round(earlier.accuracy, 2),
                        "given_up": round(earlier.given_up, 6),
                    }
                print(json.dumps(out))
            else:
                print(render(review, earlier))
            return 0
        named = None if args.reviewer is None else resolve_reviewer(store, args.reviewer, args.depth)
        match = GameFilter(source=args.source, since=args.since, until=args.until)
        games = store.list_games(match, limit=args.limit)
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


def _prepare(args: argparse.Namespace) -> int:
    from agents.base import Control

    control = Control()
    with GameStore.open(args.data_dir) as store:
        with ProgressLine(
            f"preparing a reviewer ({args.minutes:g} min of n-tuple training)", total=1.0
        ) as line:

            def each(ev: Any) -> None:
                mean = ev.metrics.get("mean_score")
                text = "" if mean is None else f"mean score {mean:,.0f}"
                line.update(ev.progress, text)

            try:
                run_id = prepare_reviewer(store, args.minutes, control=control, on_event=each)
            except KeyboardInterrupt:
                control.stop()
                raise
        chosen = resolve_reviewer(store, None)
    out = {
        "run": run_id,
        "reviewer": {"label": chosen.label, "key": chosen.key(), "fallback": chosen.fallback},
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"run {run_id} trained; the default reviewer is now {chosen.label}")
        if chosen.fallback:
            print(f"note: {chosen.fallback}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    # the data dir's calibrations folder, never the installed package (its file is a read-only default)
    with GameStore.open(args.data_dir) as store:
        reviewer = resolve_reviewer(store, args.reviewer or "expectimax")
    if args.reviewer is None and args.depth is None:
        depths: list[int | None] = [1, 2, 3]  # the depths the reviewer boxes offer expectimax at
    else:
        depths = [args.depth]  # None: the reviewer's own depth
    with ProgressLine(f"calibrating {reviewer.label}") as line:
        out = calibrate(
            reviewer, depths, games=args.games, progress=lambda text: line.update(0, text, force=True)
        )
    if args.json:
        print(json.dumps(out))
    else:
        for d in out["fitted"]:
            cal = out["depths"][str(d)]
            print(
                f"{reviewer.label} depth {d}: {len(cal['xs'])} knots over {cal['positions']:,} positions of "
                f"{cal['games']} games, {cal['ys'][0]:,.0f} .. {cal['ys'][-1]:,.0f} points"
            )
        print(f"written to {out['path']}")
    return 0


def render(review: GameReview, earlier: GameReview | None = None) -> str:
    """The header, the per-move table and the summary lines; ``earlier``: this game's review by an
    earlier default reviewer (the default has changed since: its figure is said beside this one)."""
    width = max([3, *(len(g.player) for g in review.moves)])
    lines = [review.header(), ""]
    if review.fallback:
        lines += [f"note: {review.fallback}", ""]
    lines.append(
        f"{'move':>5}  {'who':<{width}}  {'played':<6}  {'best':<6}  {'loss (pts)':>10}  {'acc':>5}  grade"
    )
    for g in review.moves:
        loss = "-" if g.grade in ("best", "forced") else f"{g.loss:,.0f}"
        acc = "-" if g.forced else f"{g.score:.0f}"
        mark = " (may lose the game)" if g.risky else ""
        counted = "" if g.counted else " (not counted)"
        lines.append(
            f"{g.index + 1:>5}  {g.player:<{width}}  {g.played.label:<6}  {g.best.label:<6}  {loss:>10}  "
            f"{acc:>5}  {g.grade}{mark}{counted}"
        )
    counts = review.counts
    lines.append("")
    lines.append(
        f"accuracy ({review.subject}): {review.accuracy:.1f} % · gave up {review.given_up_text()} · "
        f"reviewer {review.label}"
    )
    if review.superseded:
        lines.append(f"note: {review.superseded}")
    if earlier is not None:
        lines.append(
            f"note: reviewed before by {earlier.label} (the default then): accuracy {earlier.accuracy:.1f} %, "
            f"gave up {100 * earlier.given_up:.1f} %; the default is now {review.label}"
        )
    if review.mixed:
        for who, row in review.by_player().items():
            state = "" if row["counted"] else ", not counted"
            lines.append(f"  {who}: {row['moves']:,} moves, accuracy {row['accuracy']:.1f} %{state}")
    phases = review.phase_accuracy()
    lines.append(
        "by phase (highest tile): "
        + "  ".join(f"{p}: {'-' if phases[p] is None else format(phases[p], '.1f') + ' %'}" for p in PHASES)
    )
    lines.append("moves: " + ", ".join(f"{counts[g]} {g}" for g in GRADES))
    r = review.reviewer
    # the checkpoint's path on a line of its own: after the label it ran past 100 columns and the
    # terminal broke it in the middle
    where = f", checkpoint:\n{r['checkpoint']}" if r.get("checkpoint") else ""
    lines.append(f"reviewer: {review.label} (key {r.get('key')}){where}")
    if not review.complete:
        lines.append(
            f"unfinished: {len(review.moves)} of {review.n_moves} moves reviewed (run again to go on)"
        )
    return "\n".join(lines)
