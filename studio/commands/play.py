"""``python main.py play [--text | --pygame] [--rows R --cols C --p4 P --seed S]``: play 2048 yourself.

``--text`` (the default) is seed 000's terminal game. Keys:

* on a terminal: arrow keys or W/A/S/D (D = right), one key press per move, no Enter; q or Esc quits.
  The terminal is put in cbreak mode and always restored, Ctrl-C included.
* otherwise (stdin piped or redirected, or no termios on this platform), one line at a time:
  ``u``/``d``/``l``/``r`` (seed 000), ``w``/``a``/``s``, or the words ``up`` ... ``right``; several per
  line are fine (``llur``). On a line ``d`` means **down** as in seed 000 and everywhere else text
  names a direction in the studio (``engine.Direction.parse``); ``r`` is right. ``q`` quits.

Every move is logged to the store the moment it is made (source ``human``) through
:class:`engine.store.GameRecorder`, the recorder of the window and the pygame player too; a game left
before game over is saved as ``abandoned``. Without ``--seed`` the recorder draws one and records it,
so every game can be replayed exactly.
``--pygame`` opens ``studio.pygame_player.run_pygame`` instead (imported only then).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from engine import Direction, Game, Rules, StepResult
from engine.core import MAX_SIDE
from engine.store import GameRecorder, GameStore
from studio.cli import MAX_SEED, CliError, number, whole
from studio.text import board_lines, game_status

QUIT = "quit"
CLEAR = "\x1b[H\x1b[2J"

#: Single key presses in terminal mode (WASD as in games: D is right here).
KEYS: dict[str, Direction | str] = {
    "w": Direction.UP,
    "a": Direction.LEFT,
    "s": Direction.DOWN,
    "d": Direction.RIGHT,
    "\x1b[A": Direction.UP,
    "\x1b[B": Direction.DOWN,
    "\x1b[C": Direction.RIGHT,
    "\x1b[D": Direction.LEFT,
    "\x1bOA": Direction.UP,
    "\x1bOB": Direction.DOWN,
    "\x1bOC": Direction.RIGHT,
    "\x1bOD": Direction.LEFT,
    "q": QUIT,
    "\x1b": QUIT,
    "\x04": QUIT,
    "": QUIT,  # q, Esc, Ctrl-D, end of input
}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "play",
        help="play 2048 yourself in the terminal (--text) or a pygame window (--pygame); every move is saved",
        description="Play 2048. Every move is saved to the game store as you make it (source human).",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--text",
        action="store_true",
        help="the terminal game (default): arrows/WASD on a terminal, u/d/l/r + Enter when piped",
    )
    mode.add_argument("--pygame", action="store_true", help="a pygame window")
    p.add_argument("--rows", type=whole(1, MAX_SIDE), default=4, help="board rows (default 4)")
    p.add_argument("--cols", type=whole(1, MAX_SIDE), default=4, help="board columns (default 4)")
    p.add_argument(
        "--p4", type=number(0, 1), default=0.1, help="probability that a new tile is a 4 (default 0.1)"
    )
    p.add_argument(
        "--seed",
        type=whole(0, MAX_SEED),
        default=None,
        help="spawn seed (default: a random one, shown at the end)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rules = Rules(rows=args.rows, cols=args.cols, p4=args.p4)  # a ValueError here is a one-line CLI error
    with GameStore.open(args.data_dir) as store:
        if args.pygame:
            return play_pygame(store, rules, args.seed)
        return play_text(store, rules, args.seed)


def play_pygame(store: GameStore, rules: Rules, seed: int | None) -> int:
    """The pygame player (another module), imported only when asked for."""
    try:
        from studio.pygame_player import run_pygame
    except ImportError as e:
        raise CliError(
            f"the pygame player is not available here ({e}); try: python main.py play --text"
        ) from None
    return int(run_pygame(store, rules, seed) or 0)


# ------------------------------------------------------------------------------------------- text


def parse_line(line: str) -> list[Direction] | str:
    """A typed line -> moves, or ``QUIT``. ``"l"`` / ``"left"`` / ``"l r u"`` / ``"llur"``; ValueError if unknown."""
    text = line.strip().lower()
    if text in ("q", "quit", "exit"):
        return QUIT
    if not text:
        return []
    try:
        return [Direction.parse(text)]
    except ValueError:
        pass
    tokens = text.replace(",", " ").split()
    parts = tokens if len(tokens) > 1 else list(text)
    try:
        return [Direction.parse(t) for t in parts]
    except ValueError:
        raise ValueError(
            f"{line.strip()!r} is not a move: type u, d, l, r (or w, a, s; up, down, ...), q quits"
        ) from None


def render(game: Game, last: StepResult | None = None) -> str:
    """Score line, the board with the newest tile(s) marked ``*``, and the legal moves."""
    head = f"score {game.score}   moves {game.moves}   max tile {game.max_tile}"
    if last is not None:
        head += f"   last: {last.direction.label} +{last.reward}"
    marks = {(s.row, s.col) for s in game.last_spawns}
    legal = ", ".join(d.label for d in game.legal_moves()) or "none"
    return "\n".join([head, *board_lines(game.board, marks), f"legal: {legal}   (* = new tile)"])


def play_text(
    store: GameStore,
    rules: Rules,
    seed: int | None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Play one game in the terminal, logging every move; returns the exit status (130 after Ctrl-C)."""
    inp = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stdout
    recorder = GameRecorder(store, rules=rules, seed=seed)  # draws the seed when none is given
    status = 0
    try:
        fd = _terminal_fd(inp)
        if fd is not None:
            _key_loop(recorder, fd, out)
        else:
            _line_loop(recorder, inp, out)
    except KeyboardInterrupt:
        status = 130
    finally:
        recorder.close()  # abandoned unless the game is over; the moves are already saved
    assert recorder.game_id is not None  # not lazy: the record exists from the start
    summary = store.get_game(recorder.game_id)
    game = recorder.game
    if game.game_over:
        out.write(f"Game over! Final score {game.score}, max tile {game.max_tile}, {game.moves} moves.\n")
    else:
        out.write(f"Left after {game.moves} moves: score {game.score}, max tile {game.max_tile}.\n")
    out.write(
        f"Saved as game {summary.id} ({game_status(summary.status)}, seed {recorder.seed}): python main.py games show {summary.id}\n"
    )
    out.flush()
    return status


def _line_loop(recorder: GameRecorder, inp: TextIO, out: TextIO) -> None:
    out.write(render(recorder.game) + "\n")
    prompt = "move? u/d/l/r or w/a/s + Enter (d = down, r = right), q quits\n"
    out.write(prompt)
    out.flush()
    for line in inp:
        try:
            moves = parse_line(line)
        except ValueError as e:
            out.write(f"{e}\n")
            out.flush()
            continue
        if isinstance(moves, str):  # QUIT
            return
        last = None
        for d in moves:
            result = recorder.play(d)
            if result is None:
                legal = ", ".join(m.label for m in recorder.game.legal_moves())
                out.write(f"{d.label} changes nothing; legal: {legal}\n")
                break
            last = result
            if recorder.game_over:
                break
        out.write(render(recorder.game, last) + "\n")
        if recorder.game_over:
            out.flush()
            return
        out.write(prompt)
        out.flush()


def _terminal_fd(inp: TextIO) -> int | None:
    """stdin's file descriptor when it is a terminal we can put in cbreak mode, else None."""
    try:
        import termios  # noqa: F401  (POSIX only)
        import tty  # noqa: F401
    except ImportError:
        return None
    try:
        return inp.fileno() if inp.isatty() else None
    except (AttributeError, OSError, ValueError):
        return None


@contextlib.contextmanager
def _cbreak(fd: int) -> Iterator[None]:
    """Key presses without Enter or echo; the old terminal settings come back however we leave."""
    import termios
    import tty

    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)  # ISIG stays on, so Ctrl-C still raises KeyboardInterrupt
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


def _read_key(fd: int) -> str:
    """One key press: a character, or an escape sequence such as ``"\\x1b[A"`` (up arrow)."""
    import select

    ch = os.read(fd, 1)
    if ch != b"\x1b":
        return ch.decode(errors="replace").lower()
    seq = ch
    # An arrow arrives as ESC [ A within microseconds; a lone Esc has nothing after it.
    while len(seq) < 3 and select.select([fd], [], [], 0.03)[0]:
        seq += os.read(fd, 1)
    return seq.decode(errors="replace")


def _key_loop(recorder: GameRecorder, fd: int, out: TextIO) -> None:
    last: StepResult | None = None
    note = ""
    with _cbreak(fd):
        while True:
            out.write(
                CLEAR
                + render(recorder.game, last)
                + "\n"
                + (note + "\n" if note else "")
                + "arrows or W/A/S/D move, q quits\n"
            )
            out.flush()
            if recorder.game_over:
                return
            action = KEYS.get(_read_key(fd))
            note = ""
            if action == QUIT:
                return
            if not isinstance(action, Direction):
                note = "use the arrow keys or W/A/S/D (q quits)"
                continue
            result = recorder.play(action)
            if result is None:
                note = f"{action.label} changes nothing"
            else:
                last = result
