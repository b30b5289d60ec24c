"""``python main.py games list | show ID | export IDS|--all --out FILE | import FILE | delete IDS``.

The game-record store from a terminal: every human, agent, evaluation and training game. A game a
person shared with an agent is one record of source ``mixed``; ``show --moves`` says who made each move.
``--source imported`` lists the games read from files (they keep their own source too); ``--source mine``
the person's games, alone (``human``) or shared with an agent (``mixed``), as ``progress`` counts them.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import numpy as np

from engine import jsonsafe
from engine.core import DIRECTIONS
from engine.store import GameFilter, GameRecord, GameStore, GameSummary, format_time
from engine.store.filters import FILTER_SOURCES
from studio.cli import MAX_ID, CliError, whole
from studio.commands import _records as records
from studio.text import (
    GAME_STATUS_WORDS,
    board_lines,
    duration,
    game_status,
    side_by_side,
    store_status,
    table,
)

HELP = "list, show, export, import and delete recorded games"
DESCRIPTION = "The game records: every game played by a person or an agent, move by move."


def register(subparsers: Any) -> None:
    sub = records.action_group(subparsers, "games", HELP, DESCRIPTION)

    p = sub.add_parser("list", help="list games, newest first (filters combine)")
    _add_filters(p)
    records.add_limit_flag(p)
    p.add_argument("--json", action="store_true", help="print one JSON object per game instead of a table")
    p.set_defaults(func=run_list)

    what = "one game: who played, rules, score, boards (--moves: every move)"
    p = records.add_id_action(sub, "show", what, "game id (see games list)", run_show)
    p.add_argument("--moves", action="store_true", help="also print every move")

    p = sub.add_parser("export", help="write games with their reviews to .npz (seed 003's layout) or .jsonl")
    p.add_argument("ids", nargs="*", help="game ids: 3 7 12, 3,7,12 or 3-12")
    p.add_argument("--all", action="store_true", help="every game that passes the filters below")
    _add_filters(p)
    p.add_argument("--out", required=True, help="output file, .npz or .jsonl")
    p.set_defaults(func=run_export)

    p = sub.add_parser(
        "import", help="read games (and their reviews) from .npz or .jsonl (checked; all or nothing)"
    )
    p.add_argument("file", help="an .npz or .jsonl file")
    p.set_defaults(func=run_import)

    p = sub.add_parser("delete", help="delete games and their moves")
    p.add_argument("ids", nargs="+", help="game ids: 3 7 12, 3,7,12 or 3-12")
    p.set_defaults(func=run_delete)


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--source",
        choices=FILTER_SOURCES,
        help="who played (mine: your games, alone or shared with an agent; mixed: a person and an "
        "agent in turn; imported: read from a file)",
    )
    p.add_argument("--agent", help="agent name (e.g. expectimax): games it made a move in")
    p.add_argument(
        "--status",
        type=_status_word,
        choices=tuple(GAME_STATUS_WORDS.values()),
        help="playing (being played now), finished (game over) or unfinished (left before game over)",
    )
    p.add_argument("--min-score", type=whole(0), metavar="N", help="score at least N")
    p.add_argument("--min-tile", type=whole(0), metavar="T", help="max tile at least T (e.g. 2048)")
    p.add_argument("--since", metavar="DATE", help="started on or after DATE (YYYY-MM-DD[THH:MM])")
    p.add_argument(
        "--until", metavar="DATE", help="started on or before DATE (a bare date includes that day)"
    )


def game_filter(args: argparse.Namespace) -> GameFilter:
    """The games the filter flags of :func:`_add_filters` let through."""
    return GameFilter(
        source=args.source,
        agent=args.agent,
        status=None if args.status is None else store_status(args.status),
        min_score=args.min_score,
        min_max_tile=args.min_tile,
        since=args.since,
        until=args.until,
    )


def _status_word(text: str) -> str:
    """A ``--status`` word; ``abandoned`` (what the list said before) still means unfinished."""
    return "unfinished" if text == "abandoned" else text


def parse_ids(tokens: list[str]) -> list[int]:
    """``["3", "7,9", "12-14"] -> [3, 7, 9, 12, 13, 14]`` (order kept, duplicates dropped)."""
    out: list[int] = []
    seen: set[int] = set()
    for token in tokens:
        for part in filter(None, re.split(r"[,\s]+", token)):
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise CliError(f"{part!r} is not a game id or range (e.g. 7 or 3-12)")
            a, b = int(m.group(1)), int(m.group(2) or m.group(1))
            if not 1 <= a <= MAX_ID or not 1 <= b <= MAX_ID:
                raise CliError(f"{part!r} is not a game id (ids run from 1 to {MAX_ID})")
            if b < a:
                raise CliError(f"range {part!r} runs backwards")
            if b - a > 1_000_000:
                raise CliError(f"range {part!r} is too long")
            if len(seen) + (b - a) > 1_000_000:
                raise CliError("at most 1,000,000 game ids at once")
            for i in range(a, b + 1):
                if i not in seen:
                    seen.add(i)
                    out.append(i)
    return out


def _who(g: GameSummary) -> str:
    return ", ".join(g.agents) or "-"


def _source(g: GameSummary) -> str:
    return f"{g.source} (imported)" if g.imported else g.source


# ------------------------------------------------------------------------------------------ actions


def run_list(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        match = game_filter(args)
        games = store.list_games(match, limit=args.limit)
        total = store.count_games(match)
    if args.json:
        for g in games:
            print(jsonsafe.dumps(_summary_json(g)))
        return 0
    if not games:
        print("no games" + (" yet" if match.is_empty() else " match these filters"))
        return 0
    rows = [
        (
            g.id,
            _source(g),
            _who(g),
            game_status(g.status),
            g.score,
            g.max_tile,
            g.n_moves,
            f"{g.rules.rows}x{g.rules.cols}",
            format_time(g.started),
        )
        for g in games
    ]
    print(
        table(
            ("ID", "SOURCE", "AGENT", "STATUS", "SCORE", "MAX TILE", "MOVES", "BOARD", "STARTED"),
            rows,
            right={0, 4, 5, 6},
        )
    )
    if total > len(games):
        print(f"showing {len(games)} of {total} games (--limit N for more)")
    return 0


def _summary_json(g: GameSummary) -> dict[str, Any]:
    return {
        "id": g.id,
        "source": g.source,
        "agent": g.agent,
        "checkpoint": g.checkpoint,
        "run_id": g.run_id,
        "rules": g.rules.to_dict(),
        "seed": g.seed,
        "started": g.started,
        "ended": g.ended,
        "status": g.status,
        "score": g.score,
        "max_tile": g.max_tile,
        "n_moves": g.n_moves,
        "origin": g.origin,
        "players": [p.to_json() for p in g.players],
    }


def run_show(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        rec = store.load_game(args.id)
    print(describe_game(rec, moves=args.moves))
    return 0


def describe_game(rec: GameRecord, moves: bool = False) -> str:
    """The text of ``games show``."""
    g = rec.summary
    r = g.rules
    who = g.who if g.source == "mixed" else g.agent
    lines = [f"game {g.id}: {g.source}" + (f" ({who})" if who else "") + f", {game_status(g.status)}"]
    if g.source == "mixed":
        counts = np.bincount(rec.move_players, minlength=len(g.players))
        lines.append("players: " + ", ".join(f"{p.label} {int(k)} moves" for p, k in zip(g.players, counts)))
    elif g.checkpoint:
        lines.append(f"checkpoint: {g.checkpoint}")
    if g.run_id is not None:
        lines.append(f"training run: {g.run_id}")
    if g.origin:
        lines.append(
            f"imported from {g.origin.get('file')} (game {g.origin.get('id')}, {g.origin.get('source')})"
        )
    lines.append(
        f"rules: {r.rows}x{r.cols}, p4 {r.p4:g}, {r.start_tiles} start tiles, "
        f"{r.spawn_per_move} spawn per move; seed {g.seed if g.seed is not None else '-'}"
    )
    when = f"started {format_time(g.started)}"
    if g.ended is not None:
        when += f", ended {format_time(g.ended)} ({duration(g.ended - g.started)})"
    lines.append(when)
    counts = (
        np.bincount(rec.moves.astype(np.int64), minlength=4) if rec.n_moves else np.zeros(4, dtype=np.int64)
    )
    per_dir = ", ".join(f"{d.label} {int(counts[d])}" for d in DIRECTIONS)
    lines.append(f"score {g.score}, max tile {g.max_tile}, {g.n_moves} moves ({per_dir})")
    last_spawns = {(s.row, s.col) for s in rec.spawns_of(rec.n_moves - 1)} if rec.n_moves else set()
    lines.append("")
    lines.append(
        side_by_side(
            [
                ("start", board_lines(rec.initial_board)),
                ("end (* = last new tile)", board_lines(rec.final_board, last_spawns)),
            ]
        )
    )
    if moves and rec.n_moves:
        rows = []
        for i in range(rec.n_moves):
            spawn = ", ".join(f"{s.value}@({s.row},{s.col})" for s in rec.spawns_of(i)) or "-"
            rows.append(
                (
                    i + 1,
                    DIRECTIONS[int(rec.moves[i])].label,
                    int(rec.rewards[i]),
                    int(rec.scores[i]),
                    int(rec.layouts[i].max()),
                    spawn,
                    rec.player_of(i).label,
                )
            )
        lines.append("")
        lines.append(
            table(
                ("#", "MOVE", "REWARD", "SCORE", "MAX BEFORE", "NEW TILE", "PLAYER"), rows, right={0, 2, 3, 4}
            )
        )
    return "\n".join(lines)


def run_export(args: argparse.Namespace) -> int:
    if args.all == bool(args.ids):
        raise CliError("give game ids or --all (not both)")
    with GameStore.open(args.data_dir) as store:
        if args.all:
            ids = sorted(g.id for g in store.list_games(game_filter(args)))
            if not ids:
                raise CliError("no games to export (none match)")
        else:
            if not game_filter(args).is_empty():
                raise CliError("filters go with --all; with ids, the ids choose the games")
            ids = parse_ids(args.ids)
        path = store.export_file(ids, args.out)
        n_moves = sum(store.get_game(i).n_moves for i in ids)
    print(f"exported {len(ids)} game{'s' * (len(ids) != 1)} ({n_moves} moves) to {path}")
    return 0


def id_ranges(ids: list[int]) -> str:
    """``[3, 4, 5, 9] -> "3-5, 9"`` (sorted, each id once)."""
    runs: list[list[int]] = []
    for i in sorted(set(ids)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def run_import(args: argparse.Namespace) -> int:
    with GameStore.open(args.data_dir) as store:
        result = store.import_games(args.file)
    ids, already = result.ids, result.already
    text = f"imported {len(ids)} game{'s' * (len(ids) != 1)} from {args.file}"
    if ids:
        text += f" as id {id_ranges(ids)}"
    if already:  # the same games (moves, tiles, rules) are in the library: not added twice
        text += f", {len(already)} already in the library (id {id_ranges(already)})"
    print(text)
    return 0


def run_delete(args: argparse.Namespace) -> int:
    ids = parse_ids(args.ids)
    with GameStore.open(args.data_dir) as store:
        n = store.delete_games(ids)
    print(f"deleted {n} game{'s' * (n != 1)}")
    return 0
