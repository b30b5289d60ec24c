"""Build the API reference for agent authors: HTML pages made by pdoc from the docstrings.

The reference covers what the agent contract needs, and only that (each module's other names are
the studio's own business): the engine's moves and rules, the game, the Gymnasium environment and
its info keys, the agent base class with its metric events and budget, and the SB3 base agent.

    python scripts/build_api_docs.py [OUT]     # default OUT: build/api (open OUT/index.html)

pdoc (the ``dev`` extra) documents a module's ``__all__`` when it has one: this script sets each
module's to the names below while it builds, and puts back what was there. The SB3 page needs the
``sb3`` extra; without it the reference is built without that page and says so. tests/
test_api_reference.py builds it and checks that every link between its pages resolves.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]

#: module -> the public names an agent author needs from it, in the order the page lists them
API: dict[str, tuple[str, ...]] = {
    "engine.core": ("Direction", "Rules", "slide", "legal_moves", "to_exponents"),
    "engine.game": ("Game",),
    "engine.env": ("Game2048Env",),
    "agents.base": ("Agent", "MetricEvent", "Budget"),
    "agents.sb3.agents": ("SB3Agent",),
}
#: modules whose import needs an optional extra: left out (with a line on stderr) when it is missing
OPTIONAL = {"agents.sb3.agents": "sb3"}
DEFAULT_OUT = ROOT / "build" / "api"
_ABSENT = object()


def _modules(api: dict[str, tuple[str, ...]]) -> tuple[dict[str, ModuleType], list[str]]:
    """The modules of ``api`` that import, and the optional ones that did not (by name)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    found: dict[str, ModuleType] = {}
    missing: list[str] = []
    for name in api:
        try:
            found[name] = importlib.import_module(name)
        except ImportError:
            if name not in OPTIONAL:
                raise
            missing.append(name)
    return found, missing


def build(out: Path, api: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Write the reference's HTML under ``out`` (index.html, one page a module, the search index);
    the names of the optional modules left out because their extra is not installed."""
    import pdoc
    import pdoc.render

    api = API if api is None else api
    modules, missing = _modules(api)
    saved = {name: mod.__dict__.get("__all__", _ABSENT) for name, mod in modules.items()}
    try:
        for name, mod in modules.items():
            setattr(mod, "__all__", list(api[name]))  # noqa: B010 (a module object, typed loosely)
        # The docstrings are written in reStructuredText (``code``, :class:`X`, field lists).
        pdoc.render.configure(docformat="restructuredtext", show_source=False, search=True)
        out.mkdir(parents=True, exist_ok=True)
        pdoc.pdoc(*modules.keys(), output_directory=out)
    finally:
        for name, mod in modules.items():
            if saved[name] is _ABSENT:
                delattr(mod, "__all__")
            else:
                setattr(mod, "__all__", saved[name])  # noqa: B010
    return missing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    args = parser.parse_args(argv)
    missing = build(args.out)
    for name in missing:
        print(f"left out {name}: pip install -e .[{OPTIONAL[name]}]", file=sys.stderr)
    print(args.out / "index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
