"""``python main.py new-agent NAME DIR``: a working minimal plug-in agent package, ready to install.

DIR gets ``pyproject.toml`` (with the ``studio2048.agents`` entry point), the agent's module, a test
that runs the contract's checks, and a README; ``pip install -e DIR`` makes the agent appear in every
front end (docs/agents.md). The files come from ``resources/agent_template/*.tmpl``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from string import Template
from typing import Any

from studio.cli import CliError

TEMPLATE_DIR = Path(__file__).resolve().parent.parent.parent / "resources" / "agent_template"

#: template file -> where it goes in DIR (``$module``: the package's import name)
FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "__init__.py.tmpl": "$module/__init__.py",
    "agent.py.tmpl": "$module/agent.py",
    "test_agent.py.tmpl": "tests/test_$module.py",
}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "new-agent",
        help="write a working minimal plug-in agent package (pyproject, agent, test) into DIR",
        description="Writes a plug-in agent package into DIR (which must be new or empty): install it with "
        "pip install -e DIR, then python main.py check-agent NAME. See docs/agents.md.",
    )
    p.add_argument("name", help="the agent's name: lower-case letters, digits, - and _ (e.g. my-agent)")
    p.add_argument("dir", help="the folder to write (created; refused when it holds anything)")
    p.set_defaults(func=run)


def names_for(name: str) -> dict[str, str]:
    """The names a package for agent ``name`` uses (CliError, one line, for a name that cannot be one)."""
    from agents.registry import BUILTIN_AGENTS, NAME_PATTERN, agent_names

    if not NAME_PATTERN.fullmatch(name):
        raise CliError(
            f"{name!r} is not an agent name: start with a lower-case letter, then lower-case letters, "
            "digits, - or _ (at most 40)"
        )
    if name in BUILTIN_AGENTS or name in agent_names():
        raise CliError(f"an agent named {name!r} exists already: choose another name")
    words = name.replace("-", "_").split("_")
    return {
        "name": name,
        "module": "_".join(w for w in words if w) + "_agent",
        "cls": "".join(w.capitalize() for w in words) + "Agent",
        "package": f"studio2048-{name.replace('_', '-')}",
    }


def run(args: argparse.Namespace) -> int:
    names = names_for(args.name)
    out = Path(args.dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CliError(f"{out} exists and is not an empty folder: choose a new one")
    files = {
        Template(dest).substitute(names): Template((TEMPLATE_DIR / src).read_text()).substitute(names)
        for src, dest in FILES.items()
    }
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"wrote agent {args.name!r} ({names['module']}.agent:{names['cls']}) to {out}:")
    for rel in files:
        print(f"  {rel}")
    print(f"next: pip install -e {out} && python main.py check-agent {args.name}")
    return 0
