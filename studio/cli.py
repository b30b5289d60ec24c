"""``python main.py [command] ...``: the GUI by default, headless sub-commands otherwise.

Each sub-command lives in ``studio/commands/<name>.py`` and exposes ``register(subparsers)``, which
adds its parser and sets ``func`` to a ``run(args) -> int``. Adding a command is one module and one
entry in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS: tuple[str, ...] = (
    "bench",
    "games",
    "play",
    "runs",
    "train",
    "eval",
    "replay",
)


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


#: The largest id SQLite can hold (a larger number on the command line is refused at the door).
MAX_ID = 2**63 - 1


def record_id(text: str) -> int:
    """argparse type of a game or run id: a whole number from 1 to 2**63 - 1, else a one-line error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an id (a whole number from 1)") from None
    if not 1 <= value <= MAX_ID:
        raise argparse.ArgumentTypeError(f"{text} is not an id (ids run from 1 to {MAX_ID})")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py",
        description="2048 Studio: train, watch, play and compare 2048 agents. With no command, opens the GUI.",
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        help="where games, runs and checkpoints live (default: $STUDIO2048_DATA_DIR or the user data dir)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"studio.commands.{name}").register(sub)
    return parser


def open_gui(data_dir: str | None) -> int:
    try:
        from studio.app import run_app
    except ImportError as e:  # the GUI issue has not landed, or PySide6 is missing
        if "studio.app" not in str(e) and "PySide6" not in str(e):
            raise
        print("The GUI is not available here (" + str(e) + ").", file=sys.stderr)
        print("Headless commands: " + ", ".join(COMMANDS) + " (python main.py COMMAND --help)")
        return 1
    return run_app(data_dir)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return open_gui(args.data_dir)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except (CliError, ValueError, FileNotFoundError) as e:
        # Bad input: one clear line, never a traceback.
        print(f"{parser.prog} {args.command}: error: {e}", file=sys.stderr)
        return 2
