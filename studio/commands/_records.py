"""What the commands over the store's records share (games, runs, sweeps; review and progress).

``games``, ``runs`` and ``sweeps`` are each a command with actions (``list``, ``show ID``, ...):
:func:`action_group` makes the command and its ``ACTION`` sub-parsers, :func:`add_id_action` an action
on one record, :func:`add_limit_flag` a listing's row limit. ``review`` and ``progress`` name a
reviewer with :func:`add_reviewer_flags` and take at most :data:`MAX_GAMES` games.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from studio.cli import record_id, whole

#: The most games one ``review`` or ``progress`` may take on.
MAX_GAMES = 100_000
#: Rows a listing prints unless ``--limit`` says otherwise.
LIST_LIMIT = 50

Action = Callable[[argparse.Namespace], int]


def action_group(subparsers: Any, name: str, help: str, description: str) -> Any:
    """Command ``name`` with required actions; returns the sub-parsers to add the actions to."""
    parser = subparsers.add_parser(name, help=help, description=description)
    return parser.add_subparsers(dest=f"{name}_command", metavar="ACTION", required=True)


def add_id_action(
    actions: Any, name: str, help: str, id_help: str, func: Action, description: str | None = None
) -> argparse.ArgumentParser:
    """Action ``name`` on the one record whose id it takes (``show ID``, ``delete ID``)."""
    p: argparse.ArgumentParser = actions.add_parser(name, help=help, description=description)
    p.add_argument("id", type=record_id, help=id_help)
    p.set_defaults(func=func)
    return p


def add_limit_flag(parser: argparse.ArgumentParser, default: int = LIST_LIMIT) -> None:
    parser.add_argument(
        "--limit", type=whole(1), default=default, help=f"at most this many rows (default {default})"
    )


def add_reviewer_flags(parser: argparse.ArgumentParser, reviewer_help: str, depth_help: str) -> None:
    """``--reviewer NAME|CHECKPOINT`` and its ``--depth``."""
    parser.add_argument("--reviewer", metavar="NAME|CHECKPOINT", help=reviewer_help)
    parser.add_argument("--depth", type=whole(1, 5), help=depth_help)
