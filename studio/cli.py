"""``python main.py [command] ...``: the GUI by default, headless sub-commands otherwise.

Each sub-command lives in ``studio/commands/<name>.py`` and exposes ``register(subparsers)``, which
adds its parser and sets ``func`` to a ``run(args) -> int``. Adding a command is one module and one
entry in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

COMMANDS: tuple[str, ...] = (
    "bench",
    "games",
    "play",
    "runs",
    "train",
    "eval",
    "replay",
    "review",
    "sweep",
    "progress",
    "check_agent",  # check-agent, agents
    "new_agent",
    "import_model",  # import-model
)


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


#: The largest id SQLite can hold (a larger number on the command line is refused at the door).
MAX_ID = 2**63 - 1
#: The largest seed: game i of a series uses seed + i, which must still fit in SQLite's integers.
MAX_SEED = 2**62
#: Processes one command may start (each holds an agent: hundreds of MB for the larger ones).
MAX_WORKERS = 256
#: The longest training budget in minutes (ten years; "--minutes nan" or "inf" is refused, not "forever").
MAX_MINUTES = 60 * 24 * 366 * 10


@contextlib.contextmanager
def ctrl_c_stops(stop: Callable[[], None], stopped: Callable[[], bool], message: str) -> Iterator[None]:
    """Inside: the first Ctrl-C calls ``stop()`` and prints ``message`` (the work ends cleanly and keeps
    what it did); the next, once ``stopped()``, aborts with KeyboardInterrupt. The handler before is put
    back on the way out. Off the main thread (signals cannot be set there) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if stopped():
            raise KeyboardInterrupt
        stop()
        print(f"\n{message} (Ctrl-C again to abort)", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def record_id(text: str) -> int:
    """argparse type of a game or run id: a whole number from 1 to 2**63 - 1, else a one-line error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an id (a whole number from 1)") from None
    if not 1 <= value <= MAX_ID:
        raise argparse.ArgumentTypeError(f"{text} is not an id (ids run from 1 to {MAX_ID})")
    return value


def whole(low: int, high: int = MAX_ID) -> Callable[[str], int]:
    """argparse type of a whole number in ``[low, high]`` (a larger or smaller one is a one-line error).

    Every count, seed and size on the command line has a bound, checked before any work starts: an
    unbounded one is a way to ask for terabytes with a few keystrokes.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            top = "2^63 - 1" if high == MAX_ID else f"{high:,}"
            raise argparse.ArgumentTypeError(f"{text} is out of range (from {low:,} to {top})")
        return value

    parse.__name__ = "whole number"  # what argparse names in "invalid whole number value"
    return parse


def number(low: float, high: float, *, above: bool = False) -> Callable[[str], float]:
    """argparse type of a finite number in ``[low, high]`` (``(low, high]`` when ``above``); nan and inf
    are refused, so "--minutes nan" can never mean "forever"."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        inside = (value > low if above else value >= low) and value <= high
        if not math.isfinite(value) or not inside:
            opening = "(" if above else "["
            raise argparse.ArgumentTypeError(f"{text} is out of range: {opening}{low:g}, {high:g}]")
        return value

    parse.__name__ = "number"
    return parse


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
    from studio.qt_platform import platform_problem

    problem = platform_problem()
    if problem:  # Qt's own report of this is a paragraph and an abort
        print(f"2048 Studio cannot open its window: {problem}", file=sys.stderr)
        return 2
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
    from studio.logs import setup_cli_logging

    setup_cli_logging(args.data_dir, args.command)  # DATA/logs/studio.log; warnings also on stderr
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is met by the handler below
        return code
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``games list | head``): stop quietly, as a Unix tool does. Python would
        # print another BrokenPipeError when it flushes stdout at exit, so stdout goes to /dev/null.
        _silence_stdout()
        return 141  # 128 + SIGPIPE, what a shell reports for a tool ended by a closed pipe
    except (CliError, ValueError, OSError, RecursionError) as e:
        # Bad input (a value, a file, a path): one clear line, never a traceback.
        print(f"{parser.prog} {args.command}: error: {_one_line(e)}", file=sys.stderr)
        return 2


def _one_line(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "input nested too deeply"
    if isinstance(error, OSError) and error.strerror and error.filename is not None:
        name = str(error.filename)
        if len(name) > 120:  # a name too long for the file system is too long for the terminal too
            name = f"{name[:60]}…{name[-40:]}"
        return f"{name}: {error.strerror}"
    text = str(error) or type(error).__name__
    return " ".join(text.split())


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test's StringIO): nothing will flush it
        pass
