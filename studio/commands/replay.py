"""``python main.py replay ID [--speed MOVES_PER_S | --step] [--from N] [--to N] [--verify]``.

Plays a logged game back in the terminal, move by move: the board, who made the move (``you`` or the
agent and its checkpoint file), the move taken, its reward, the score and the spawn (marked ``*``). ``--verify`` re-applies every move with ``engine.slide`` plus the
logged spawn and reports the first move where the record and the rules disagree.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

import numpy as np

from engine import DIRECTIONS, slide
from engine.store import GameRecord, GameStore
from studio.cli import CliError, number, record_id, whole
from studio.text import board_lines

#: The slowest replay: one move every 100 s (a slower --speed, like 1e-300, would sleep for ever).
MIN_SPEED = 0.01

ARROWS = {0: "↑ up", 1: "← left", 2: "↓ down", 3: "→ right"}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "replay",
        help="play a logged game back in the terminal (or check it against the rules)",
        description="Replay a logged game move by move: board, move, reward, score and spawn.",
    )
    p.add_argument("id", type=record_id, help="game id (see: python main.py games list)")
    speed = p.add_mutually_exclusive_group()
    speed.add_argument(
        "--speed",
        type=number(0, 1000),
        default=4.0,
        help=f"moves per second (default 4; 0 = no pause; else {MIN_SPEED:g} to 1000)",
    )
    speed.add_argument("--step", action="store_true", help="wait for Enter between moves (q + Enter quits)")
    p.add_argument("--from", dest="start", type=whole(0), default=0, help="first move to show (default 0)")
    p.add_argument(
        "--to", dest="stop", type=whole(0), default=None, help="last move to show (default: the end)"
    )
    p.add_argument(
        "--verify", action="store_true", help="only check every move against the rules and print the verdict"
    )
    p.set_defaults(func=run)


def verify(rec: GameRecord) -> str | None:
    """None when every logged move follows from the rules; otherwise what is wrong, at which move.

    Move i must turn ``layouts[i]`` into the next layout once its logged spawns are placed, with the
    logged reward, and the score must add up.
    """
    score = 0
    for i in range(rec.n_moves):
        moved, reward = slide(rec.layouts[i], DIRECTIONS[int(rec.moves[i])])
        for s in rec.spawns_of(i):
            if moved[s.row, s.col] != 0:
                return f"move {i}: spawn at ({s.row}, {s.col}) lands on a tile"
            moved[s.row, s.col] = s.value
        if not np.array_equal(moved, rec.board_after(i)):
            return f"move {i}: the logged board after it differs from the rules' result"
        if reward != int(rec.rewards[i]):
            return f"move {i}: logged reward {int(rec.rewards[i])}, the rules give {reward}"
        score += reward
        if score != int(rec.scores[i]):
            return f"move {i}: logged score {int(rec.scores[i])}, the moves add up to {score}"
    return None


def frame(rec: GameRecord, i: int) -> str:
    """The text shown after move ``i`` (``i = -1``: the starting position)."""
    if i < 0:
        board = rec.layouts[0] if rec.n_moves else rec.final_board
        head = f"game {rec.id} · start"
        marks: set[tuple[int, int]] = set()
    else:
        board = rec.board_after(i)
        spawns = rec.spawns_of(i)
        marks = {(s.row, s.col) for s in spawns}
        spawn_text = ", ".join(f"{s.value} at ({s.row}, {s.col})" for s in spawns) or "none"
        head = (
            f"game {rec.id} · move {i + 1}/{rec.n_moves} by {rec.player_of(i).label}: {ARROWS[int(rec.moves[i])]} · "
            f"reward {int(rec.rewards[i])} · score {int(rec.scores[i])} · spawn {spawn_text}"
        )
    return "\n".join([head, *board_lines(board, marks), ""])


def run(args: argparse.Namespace, out: TextIO | None = None, keys: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    keys = keys if keys is not None else sys.stdin
    if args.speed and args.speed < MIN_SPEED:
        raise CliError(f"--speed must be 0 (no pause) or from {MIN_SPEED:g} moves per second")
    with GameStore.open(args.data_dir) as store:
        rec = store.load_game(args.id)
    if args.verify:
        problem = verify(rec)
        if problem:
            print(f"game {rec.id}: INVALID: {problem}", file=out)
            return 1
        print(f"game {rec.id}: all {rec.n_moves} moves follow the rules", file=out)
        return 0
    last = rec.n_moves - 1 if args.stop is None else min(args.stop, rec.n_moves - 1)
    if not 0 <= args.start <= max(last, 0):
        raise CliError(f"--from must be between 0 and {max(last, 0)} for game {rec.id} ({rec.n_moves} moves)")
    delay = 0.0 if args.step or not args.speed else 1.0 / args.speed
    print(frame(rec, args.start - 1), file=out)
    for i in range(args.start, last + 1):
        if args.step:
            answer = keys.readline()
            if answer == "" or answer.strip().lower() == "q":
                break
        elif delay:
            time.sleep(delay)
        print(frame(rec, i), file=out)
        out.flush()
    return 0
