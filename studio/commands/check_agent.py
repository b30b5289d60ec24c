"""``python main.py check-agent NAME`` and ``python main.py agents``.

``check-agent`` runs the agent contract (:mod:`agents.conformance`: the checks every built-in agent
passes) on a registered agent, a plug-in's included, and prints one pass / FAIL / skip line per check;
exit status 1 when a check fails. ``agents`` lists every agent: built-in, plug-in (with its package)
and plug-ins that cannot be used, each with its one-line reason.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from studio.cli import CliError

log = logging.getLogger(__name__)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is out of range: more than 0 seconds")
    return value


def register(subparsers: Any) -> None:
    from agents.conformance import CHECK_LIMIT_S, CHECKS

    p = subparsers.add_parser(
        "check-agent",
        help="run the agent contract's checks on an agent (a plug-in's too): one line per check",
        description="Checks an agent against the contract every built-in agent passes (docs/agents.md): "
        + ", ".join(CHECKS)
        + ". Exit status 1 when a check fails.",
    )
    p.add_argument("name", help="a registered agent's name (python main.py agents lists them)")
    p.add_argument(
        "--only",
        action="append",
        choices=list(CHECKS),
        metavar="CHECK",
        help=f"run only this check (repeatable): {', '.join(CHECKS)}",
    )
    p.add_argument(
        "--limit",
        type=_seconds,
        default=CHECK_LIMIT_S,
        metavar="SECONDS",
        help=f"seconds each check may take before it fails, naming the method it was in (default {CHECK_LIMIT_S:g})",
    )
    p.add_argument("--verbose", action="store_true", help="print the traceback of each check that fails")
    p.set_defaults(func=run_check)

    p = subparsers.add_parser(
        "agents",
        help="list the agents: built-in, plug-ins, and plug-ins that cannot be used (with why)",
        description="Every agent the studio offers, and the plug-ins it leaves out with their reason.",
    )
    p.set_defaults(func=run_list)


def run_check(args: argparse.Namespace) -> int:
    from agents.conformance import CHECKS, CheckResult
    from agents.conformance import run_check as check
    from agents.registry import agent_names, plugin_of, unknown_agent_message

    plugin = plugin_of(args.name)
    if plugin is not None and plugin.reason is not None:
        # a plug-in that does not even load fails the contract (exit 1), it is no typing error (exit 2)
        results = [CheckResult("contract", False, plugin.reason)]
    elif args.name not in agent_names():
        raise CliError(unknown_agent_message(args.name))
    else:
        results = []

    def progress(line: str) -> None:
        # stderr: the one line per check on stdout stays what scripts read
        print(f"  ... {line}", file=sys.stderr, flush=True)

    for name in [] if results else [c for c in CHECKS if not args.only or c in args.only]:
        results.append(check(args.name, name, limit_s=args.limit, progress=progress))
        print(results[-1].line(), flush=True)
        if args.verbose and results[-1].trace:
            print(results[-1].trace.rstrip(), flush=True)
    if plugin is not None and plugin.reason is not None:
        print(results[0].line())
    failed = sum(r.passed is False for r in results)
    verdict = f"{failed} check{'s' * (failed != 1)} FAILED" if failed else "every check passed"
    print(f"{args.name}: {verdict}")
    return 1 if failed else 0


def run_list(args: argparse.Namespace) -> int:
    from agents.registry import BUILTIN_AGENTS, agent_names, get_agent_class, plugins

    by_name = {p.name: p for p in plugins()}
    for name in agent_names():
        plugin = by_name.get(name)
        where = (
            "built-in"
            if name in BUILTIN_AGENTS
            else f"plug-in ({plugin.package})"
            if plugin
            else "registered"
        )
        try:
            cls = get_agent_class(name)
            kind = "learner" if cls.trainable else "player"
            text = cls.description
        except Exception as e:  # a module that no longer imports: say so, list the rest
            log.warning("agent %s could not be loaded", name, exc_info=True)
            kind, text = "broken", f"{type(e).__name__}: {e}"
        print(f"{name:14} {where:30} {kind:8} {' '.join(text.split())}")
    for p in by_name.values():
        if p.reason is not None:
            print(f"{p.name:14} {'plug-in (' + p.package + ')':30} {'refused':8} {p.reason}")
    return 0
