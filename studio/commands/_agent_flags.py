"""Commands whose flags depend on the agent (train, sweep, eval): parsed in two stages, and the flag
groups they share (one function per concept: agent choice and settings, budget, board, seed,
checkpoints, evaluation games, workers and backend, resume, JSON).

Stage 1 reads ``--agent`` / ``--preset`` (and ``--checkpoint``); stage 2 builds the full parser with
those agents' config flags (:func:`agents.config.add_config_arguments`) and parses everything, so
``train --agent dqn --help`` lists dqn's settings. The top-level parser only hands the command's
words through: its sub-parser uses ``+`` as prefix character, so ``--lr`` and ``--help`` arrive as
plain words in one ``REMAINDER`` list instead of being refused or answered by the wrong parser.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Iterable
from typing import Any

from agents.base import Agent, Budget
from agents.config import AgentConfig, add_config_arguments, config_overrides, load_preset
from agents.registry import agent_names, get_agent_class, unknown_agent_message
from agents.run.options import OptionSpec, option_spec, option_specs
from engine import Rules
from engine.core import MAX_SIDE
from studio.cli import MAX_MINUTES, MAX_SEED, MAX_WORKERS, CliError, record_id, whole
from studio.cli import number as number_type

#: How a command that trains one agent says how to list its settings.
SETTINGS_EPILOG = "Give --agent NAME (with --help) to list that agent's settings."


def register_two_stage(
    subparsers: Any,
    name: str,
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


def agent_class(name: str) -> type[Agent]:
    """The class of agent ``name`` (every command's --agent comes here); a one-line CliError for an
    unknown name, with the closest names ("did you mean ntuple?") when the name looks like a typo."""
    try:
        return get_agent_class(name)
    except KeyError:
        hint = did_you_mean(name, agent_names())
        message = unknown_agent_message(name)
        if hint and message.startswith("unknown agent"):
            # said first: the list of every agent after it runs past a narrow terminal's line
            message = f"unknown agent {name!r}: did you mean {hint}? (agents: {agent_list_text()})"
        raise CliError(message) from None


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """ "ntuple" (or "dqn or td-afterstate") for a name close to some of ``names`` (a typo), else ""."""
    return " or ".join(difflib.get_close_matches(name, list(names), n=2, cutoff=0.6))


def config_class(name: str) -> type[AgentConfig]:
    return agent_class(name).config_cls


def preset_agents(presets: Iterable[str]) -> list[str]:
    """The agent each preset is for (ValueError, a one-line CLI error, for an unknown preset)."""
    return [str(load_preset(p)["agent"]) for p in presets]


def one_agent(first: argparse.Namespace) -> tuple[list[str], str | None]:
    """The agent a one-agent command (train, sweep) names, by --agent or by its --preset, for stage 2's
    settings flags; and the help's epilog when it names none."""
    names = list(first.agent[-1:]) or preset_agents(first.preset[-1:])
    return names, None if names else SETTINGS_EPILOG


def add_agent_choice(parser: argparse.ArgumentParser, what: str, *, many: bool = False) -> None:
    """``--agent NAME`` and ``--preset NAME``: the agent ``what`` ("to train") and its base settings;
    ``many``: each repeatable, every one a contestant (eval)."""
    if many:
        parser.add_argument(
            "--agent", action="append", default=[], help=f"an agent {what}: {agent_list_text()}"
        )
        parser.add_argument(
            "--preset", action="append", default=[], help=f"a preset {what}: its agent and settings"
        )
        return
    parser.add_argument("--agent", help=f"the agent {what}: {agent_list_text()} (learners only)")
    parser.add_argument("--preset", help="start from a preset's settings (resources/presets/<name>.json)")


def agent_and_preset(args: argparse.Namespace) -> tuple[str | None, dict[str, Any] | None]:
    """The agent a one-agent command runs (--agent, else its --preset's) and that preset, if any."""
    preset = load_preset(args.preset) if args.preset else None
    return args.agent or (preset or {}).get("agent"), preset


def add_agent_flags(parser: argparse.ArgumentParser, names: Iterable[str]) -> None:
    """Config flags of every named agent (once per config class)."""
    seen: set[type[AgentConfig]] = set()
    for name in names:
        cls = config_class(name)
        if cls not in seen:
            seen.add(cls)
            add_config_arguments(parser, cls)


def add_budget_flags(parser: argparse.ArgumentParser, whose: str = "") -> None:
    """``--episodes`` / ``--minutes`` / ``--steps`` / ``--cpu-seconds`` (any of them; the first reached ends
    the training).
    ``whose``: what they budget, in the help ("each trial")."""
    what = f"train {whose} " if whose else "train "
    b = parser.add_argument_group(f"budget{' of ' + whose if whose else ''}")
    b.add_argument("--episodes", type=whole(1), help=f"{what}this many episodes (games)")
    b.add_argument("--minutes", type=number_type(0, MAX_MINUTES, above=True), help=f"{what}this many minutes")
    b.add_argument("--steps", type=whole(1), help=f"{what}this many steps (moves)")
    b.add_argument(
        "--cpu-seconds",
        type=number_type(0, MAX_MINUTES * 60, above=True),
        metavar="N",
        help=f"{what}until the training process has used N CPU-seconds (all its threads count: "
        "2 threads spend them in half the wall time)",
    )


def budget_from(args: argparse.Namespace) -> Budget | None:
    """The budget the flags give (any of episodes, minutes, steps, CPU-seconds); None when none is given."""
    cpu = args.cpu_seconds
    if args.episodes is None and args.steps is None and args.minutes is None and cpu is None:
        return None
    seconds = None if args.minutes is None else args.minutes * 60.0
    return Budget(episodes=args.episodes, steps=args.steps, seconds=seconds, cpu_seconds=cpu)


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


def add_seed_flag(parser: argparse.ArgumentParser, default: int | None, help: str) -> None:
    parser.add_argument("--seed", type=whole(0, MAX_SEED), default=default, help=help)


def add_run_option_flags(
    parser: argparse.ArgumentParser,
    names: Iterable[str] | None = None,
    helps: dict[str, str] | None = None,
) -> None:
    """The flags of the run options ``names`` (default: every one with a flag), made from their
    declaration (:class:`agents.run.options.RunOptions`): flag, range, unit, default and help, or
    ``helps[name]`` instead (a sweep's words). Given as a whole list, each goes in its declared group."""
    specs = option_specs() if names is None else tuple(option_spec(n) for n in names)
    groups: dict[str, argparse._ArgumentGroup] = {}
    for spec in specs:
        if spec.flag is None:
            continue
        where: argparse.ArgumentParser | argparse._ArgumentGroup = parser
        if names is None and spec.group:
            if spec.group not in groups:
                groups[spec.group] = parser.add_argument_group(spec.group)
            where = groups[spec.group]
        where.add_argument(
            spec.flag,
            type=_option_type(spec),
            default=_in_flag_unit(spec, spec.default),
            metavar=spec.metavar,
            help=(helps or {}).get(spec.name, spec.help),
        )


def _option_type(spec: OptionSpec) -> Callable[[str], Any]:
    """The argparse type of an option's flag: its declared range, in the flag's unit."""
    low = spec.low or 0
    if spec.kind is int:
        return whole(int(low)) if spec.high is None else whole(int(low), int(spec.high))
    assert spec.high is not None, f"{spec.name}: a number flag needs a largest value"
    return number_type(low / spec.per, spec.high / spec.per, above=spec.above)


def _in_flag_unit(spec: OptionSpec, value: Any) -> Any:
    """``value`` (in the field's unit) as its flag counts it (seconds as minutes for ``per`` 60)."""
    return value if value is None or spec.per == 1 else value / spec.per


def run_options_from(args: argparse.Namespace, names: Iterable[str] | None = None) -> dict[str, Any]:
    """The run options the flags of :func:`add_run_option_flags` give, by field name, in the field's unit."""
    specs = option_specs() if names is None else tuple(option_spec(n) for n in names)
    out: dict[str, Any] = {}
    for spec in specs:
        if spec.flag is not None:
            value = getattr(args, spec.dest)
            out[spec.name] = value if value is None or spec.per == 1 else value * spec.per
    return out


def add_parallel_flags(
    parser: argparse.ArgumentParser,
    workers: tuple[int | None, str],
    backend: tuple[str | None, str],
    ray_help: str,
    backends: tuple[str, ...] = ("local", "ray"),
) -> None:
    """``--workers N``, ``--backend local|ray`` and ``--ray-address ADDR`` (which implies Ray): each
    a (default, help) pair; a None default means "not given" (a resumed sweep keeps its own)."""
    parser.add_argument("--workers", type=whole(1, MAX_WORKERS), default=workers[0], help=workers[1])
    parser.add_argument("--backend", choices=backends, default=backend[0], help=backend[1])
    parser.add_argument("--ray-address", default=None, metavar="ADDR", help=ray_help)


def add_resume_flag(parser: argparse.ArgumentParser, metavar: str, help: str) -> None:
    parser.add_argument("--resume", type=record_id, metavar=metavar, help=help)


def add_json_flag(
    parser: argparse.ArgumentParser, help: str = "print one JSON object instead of the table"
) -> None:
    parser.add_argument("--json", action="store_true", help=help)


def overrides_for(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """The config flags given on the command line that agent ``name`` has (ConfigError on bad text)."""
    return config_overrides(args, config_class(name))


def agent_list_text() -> str:
    return ", ".join(agent_names())
