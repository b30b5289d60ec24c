"""Commands whose flags depend on the agent (train, eval): parsed in two stages.

Stage 1 reads ``--agent`` / ``--preset`` (and ``--checkpoint``); stage 2 builds the full parser with
those agents' config flags (:func:`agents.config.add_config_arguments`) and parses everything, so
``train --agent dqn --help`` lists dqn's settings. The top-level parser only hands the command's
words through: its sub-parser uses ``+`` as prefix character, so ``--lr`` and ``--help`` arrive as
plain words in one ``REMAINDER`` list instead of being refused or answered by the wrong parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any

from agents.config import AgentConfig, add_config_arguments, config_overrides, load_preset
from agents.registry import agent_names, get_agent_class, unknown_agent_message
from engine import Rules
from engine.core import MAX_SIDE
from studio.cli import CliError, whole


def register_two_stage(
    subparsers: Any,
    name: str,
    *,
    help: str,
    build: Callable[[argparse.Namespace], argparse.ArgumentParser],
    run: Callable[[argparse.Namespace], int],
) -> None:
    """Add command ``name``: ``build(first_stage_args)`` makes its full parser, ``run(args)`` runs it."""
    sub = subparsers.add_parser(name, help=help, add_help=False, prefix_chars="+")
    sub.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def func(outer: argparse.Namespace) -> int:
        first = first_stage(outer.argv)
        args = build(first).parse_args(outer.argv)
        args.data_dir = outer.data_dir
        return run(args)

    sub.set_defaults(func=func)


def first_stage(argv: list[str]) -> argparse.Namespace:
    """The agents, presets and checkpoints named on the command line (anything else is left for stage 2)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--agent", action="append", default=[])
    p.add_argument("--preset", action="append", default=[])
    p.add_argument("--checkpoint", action="append", default=[])
    p.add_argument("--resume", default=None)
    known, _ = p.parse_known_args(argv)
    return known


def new_parser(command: str, description: str, epilog: str | None = None) -> argparse.ArgumentParser:
    # "resolve": several agents may share a knob name (eval); the flag then sets it for each of them.
    return argparse.ArgumentParser(
        prog=f"python main.py {command}",
        description=description,
        epilog=epilog,
        conflict_handler="resolve",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def config_class(name: str) -> type[AgentConfig]:
    try:
        return get_agent_class(name).config_cls
    except KeyError:
        raise CliError(unknown_agent_message(name)) from None


def preset_agents(presets: Iterable[str]) -> list[str]:
    """The agent each preset is for (ValueError, a one-line CLI error, for an unknown preset)."""
    return [str(load_preset(p)["agent"]) for p in presets]


def add_agent_flags(parser: argparse.ArgumentParser, names: Iterable[str]) -> None:
    """Config flags of every named agent (once per config class)."""
    seen: set[type[AgentConfig]] = set()
    for name in names:
        cls = config_class(name)
        if cls not in seen:
            seen.add(cls)
            add_config_arguments(parser, cls)


def add_budget_flags(parser: argparse.ArgumentParser, whose: str = "") -> None:
    """``--episodes`` / ``--minutes`` / ``--steps`` (any of them; the first reached ends the training).
    ``whose``: what they budget, in the help ("each trial")."""
    from studio.cli import MAX_MINUTES
    from studio.cli import number as number_type

    what = f"train {whose} " if whose else "train "
    b = parser.add_argument_group(f"budget{' of ' + whose if whose else ''}")
    b.add_argument("--episodes", type=whole(1), help=f"{what}this many episodes (games)")
    b.add_argument("--minutes", type=number_type(0, MAX_MINUTES, above=True), help=f"{what}this many minutes")
    b.add_argument("--steps", type=whole(1), help=f"{what}this many steps (moves)")


def add_rules_flags(parser: argparse.ArgumentParser) -> None:
    side = whole(1, MAX_SIDE)
    parser.add_argument("--rows", type=side, default=None, help="board rows (default 4, or the preset's)")
    parser.add_argument("--cols", type=side, default=None, help="board columns (default 4, or the preset's)")


def rules_from(args: argparse.Namespace, preset: dict[str, Any] | None = None) -> Rules | None:
    """Rules from --rows/--cols over the preset's rules; None when neither says anything."""
    base = dict((preset or {}).get("rules") or {})
    if args.rows is not None:
        base["rows"] = args.rows
    if args.cols is not None:
        base["cols"] = args.cols
    return Rules.from_dict(base) if base else None


def overrides_for(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """The config flags given on the command line that agent ``name`` has (ConfigError on bad text)."""
    return config_overrides(args, config_class(name))


def agent_list_text() -> str:
    return ", ".join(agent_names())
