"""The API reference for agent authors (scripts/build_api_docs.py, issue #47): it builds from the
docstrings, every link between its pages resolves (file and anchor), and each name of the agent
contract has a documented entry of its own."""

from __future__ import annotations

import importlib.util
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytest.importorskip("pdoc", reason="pdoc is in the dev extra: pip install -e .[dev]")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_api_docs  # noqa: E402

HAVE_SB3 = importlib.util.find_spec("stable_baselines3") is not None


class Page(HTMLParser):
    """A page's links (``href``) and anchors (``id`` / ``name``)."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value is None:
                continue
            if key == "href":
                self.hrefs.append(value)
            elif key in ("id", "name"):
                self.ids.add(value)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("api")
    missing = build_api_docs.build(out)
    assert missing == ([] if HAVE_SB3 else ["agents.sb3.agents"])
    return out


def test_every_internal_link_resolves(built: Path) -> None:
    pages = {p: parse(p) for p in built.rglob("*.html")}
    assert len(pages) >= 5
    broken = []
    checked = 0
    for path, page in pages.items():
        for href in page.hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc:  # pdoc's own site, Python's docs: not ours to check
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            checked += 1
            if not target.is_file():
                broken.append(f"{path.relative_to(built)}: {href} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(built)}: {href} (no anchor {parts.fragment!r})")
    assert checked > 50
    assert broken == []


@pytest.mark.parametrize(
    ("page", "anchors"),
    [
        ("engine/core.html", ["Direction", "Rules", "slide", "legal_moves", "to_exponents", "Rules.to_dict"]),
        ("engine/game.html", ["Game", "Game.step", "Game.legal_moves", "Game.max_tile"]),
        ("engine/env.html", ["Game2048Env", "Game2048Env.reset", "Game2048Env.step"]),
        (
            "agents/base.html",
            ["Agent", "Agent.move_values", "Agent.train", "MetricEvent", "Budget", "Budget.done"],
        ),
    ],
)
def test_the_contract_names_have_their_entries(built: Path, page: str, anchors: list[str]) -> None:
    ids = parse(built / page).ids
    assert [a for a in anchors if a not in ids] == []
    # only the contract: the module's other names are not on the page
    assert "DIRECTIONS" not in ids and "slide_unchecked" not in ids


def test_the_env_page_lists_its_info_keys(built: Path) -> None:
    text = (built / "engine/env.html").read_text(encoding="utf-8")
    for key in ("action_mask", "score", "max_tile", "moves", "illegal_action", "trace"):
        # a key named like a member is linked to it (``trace``: the attribute holding the same trace)
        assert re.search(rf"<li><code>(<a [^>]*>)?{key}(</a>)?</code>: ", text), key


@pytest.mark.skipif(not HAVE_SB3, reason="Stable-Baselines3 is not installed (pip install -e .[sb3])")
def test_the_sb3_page_documents_the_base_agent(built: Path) -> None:
    ids = parse(built / "agents/sb3/agents.html").ids
    assert {"SB3Agent", "SB3Agent.features_extractor", "SB3Agent.policy_kwargs"} <= ids
    assert "SB3PPOAgent" not in ids


def test_every_public_name_has_a_docstring(built: Path) -> None:
    """No entry of the reference is empty: pdoc marks a member without a docstring by leaving out
    its docstring block; each name of the contract and each of its public members has one."""
    import inspect

    empty = []
    for module_name, names in build_api_docs.API.items():
        if module_name == "agents.sb3.agents" and not HAVE_SB3:
            continue
        module = importlib.import_module(module_name)
        for name in names:
            obj = getattr(module, name)
            if not inspect.getdoc(obj):
                empty.append(f"{module_name}.{name}")
            if inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if member.startswith("_"):
                        continue
                    func = getattr(value, "fget", None) or getattr(value, "__func__", None) or value
                    if (
                        callable(func)
                        and not inspect.getdoc(getattr(obj, member))
                        and not inspect.getdoc(func)
                    ):
                        empty.append(f"{module_name}.{name}.{member}")
    assert empty == []
