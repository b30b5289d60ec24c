"""Plug-in agents: packages that add agents through the ``studio2048.agents`` entry points.

A plug-in here is a real distribution as importlib.metadata finds one: a folder on ``sys.path`` with the
agent's module and a ``*.dist-info`` (METADATA + entry_points.txt), what ``pip install`` leaves.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents import registry
from engine import Game

#: A small working plug-in agent: prefers the move that leaves most empty cells.
GOOD = """
from dataclasses import dataclass

from agents.base import Agent
from agents.config import AgentConfig, knob
from engine import DIRECTIONS, slide


@dataclass
class EmptiestConfig(AgentConfig):
    gain_weight: float = knob(0.0, "Weight of the merge score against empty cells", low=0.0, high=10.0)


class EmptiestAgent(Agent):
    name = "{name}"
    config_cls = EmptiestConfig
    description = "Leaves the most empty cells."

    def move_values(self, game):
        board = game.board
        out = {{}}
        for d in DIRECTIONS:
            after, gain = slide(board, d)
            if (after != board).any():
                out[d] = float((after == 0).sum()) + self.config.gain_weight * gain
        return out
"""

MakePlugin = Callable[..., Path]


@pytest.fixture
def make_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakePlugin]:
    """``make_plugin(package, {entry name: "module:Class"}, {module: source})`` installs a distribution
    on ``sys.path`` for this test (and the processes it spawns) and lets the registry look again.
    The registry sees only the packages made here: the studio's own entry points (its optional sb3-*
    agents, usable or listed as unavailable) are not this test's."""
    added: list[str] = []
    made: set[str] = set()
    every_entry_point = registry.entry_points
    monkeypatch.setattr(
        registry,
        "entry_points",
        lambda **kw: [ep for ep in every_entry_point(**kw) if ep.dist is not None and ep.dist.name in made],
    )

    def make(package: str, entries: dict[str, str], modules: dict[str, str]) -> Path:
        root = tmp_path / f"site-{package}"
        root.mkdir()
        for module, source in modules.items():
            (root / f"{module}.py").write_text(textwrap.dedent(source))
        info = root / f"{package.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
        lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
        (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{lines}")
        sys.path.insert(0, str(root))
        added.append(str(root))
        made.add(package)
        registry.reload_plugins()
        return root

    yield make
    for root in added:
        sys.path.remove(root)
    for module in [
        m for m, mod in sys.modules.items() if str(getattr(mod, "__file__", "")).startswith(str(tmp_path))
    ]:
        del sys.modules[module]
    registry.reload_plugins()


def test_a_plugin_is_listed_and_plays(make_plugin: MakePlugin) -> None:
    make_plugin(
        "emptiest-pkg",
        {"emptiest": "emptiest_mod:EmptiestAgent"},
        {"emptiest_mod": GOOD.format(name="emptiest")},
    )
    assert "emptiest" in registry.agent_names()
    assert registry.agent_names()[: len(registry.BUILTIN_AGENTS)] == list(registry.BUILTIN_AGENTS)
    assert registry.broken_plugins() == []
    assert registry.target_of("emptiest") == "emptiest_mod:EmptiestAgent"
    plugin = registry.plugin_of("emptiest")
    assert plugin is not None and plugin.package == "emptiest-pkg"
    agent = registry.create_agent("emptiest", {"gain_weight": 0.5})
    # Left merges the two 2s (one more empty cell); up / down / right leave as many as now.
    game = Game(board=[[2, 2, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 4]], seed=0)
    assert agent.act(game).label == "left"
    assert (
        agent.move_values(game)[agent.act(game)] == 14 + 0.5 * 4
    )  # two tiles left on 16 cells, a merge of 4


def test_plugins_leave_after_reload(make_plugin: MakePlugin) -> None:
    root = make_plugin(
        "emptiest-pkg",
        {"emptiest": "emptiest_mod:EmptiestAgent"},
        {"emptiest_mod": GOOD.format(name="emptiest")},
    )
    assert "emptiest" in registry.agent_names()
    sys.path.remove(str(root))
    sys.path.append(str(root))  # the fixture removes it again
    (root / "emptiest_pkg-0.1.dist-info" / "entry_points.txt").write_text("")
    registry.reload_plugins()
    assert "emptiest" not in registry.agent_names()


BROKEN_CASES = {
    "import error": (
        {"boom": "boom_mod:BoomAgent"},
        {"boom_mod": "import no_such_module_anywhere\n"},
        "cannot import boom_mod:BoomAgent: ModuleNotFoundError: No module named 'no_such_module_anywhere'",
    ),
    "missing class": (
        {"ghost": "emptiest_mod:GhostAgent"},
        {"emptiest_mod": GOOD.format(name="ghost")},
        "cannot import emptiest_mod:GhostAgent: AttributeError",
    ),
    "not an agent": (
        {"plain": "plain_mod:Plain"},
        {"plain_mod": "class Plain:\n    name = 'plain'\n"},
        "Plain is not a subclass of agents.base.Agent",
    ),
    "a function": (
        {"func": "plain_mod:make"},
        {"plain_mod": "def make():\n    return None\n"},
        "it is a function, not a class",
    ),
    "other name": (
        {"alias": "emptiest_mod:EmptiestAgent"},
        {"emptiest_mod": GOOD.format(name="emptiest")},
        "EmptiestAgent declares name 'emptiest', registered as 'alias'",
    ),
    "built-in name": (
        {"dqn": "emptiest_mod:EmptiestAgent"},
        {"emptiest_mod": GOOD.format(name="dqn")},
        "'dqn' is a built-in agent's name",
    ),
    "bad name": (
        {"Bad Name": "emptiest_mod:EmptiestAgent"},
        {"emptiest_mod": GOOD.format(name="Bad Name")},
        "'Bad Name' is not an agent name",
    ),
    "bad config default": (
        {"badcfg": "emptiest_mod:EmptiestAgent"},
        {"emptiest_mod": GOOD.format(name="badcfg").replace("knob(0.0,", "knob(-1.0,")},
        "its config EmptiestConfig is refused: gain_weight: must be in [0, 10]",
    ),
    "plays no move": (
        {"idle": "idle_mod:IdleAgent"},
        {"idle_mod": "from agents.base import Agent\nclass IdleAgent(Agent):\n    name = 'idle'\n"},
        "IdleAgent plays no move: it overrides neither act nor move_values",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_CASES))
def test_a_broken_plugin_is_left_out_with_one_line(make_plugin: MakePlugin, case: str) -> None:
    entries, modules, reason = BROKEN_CASES[case]
    make_plugin("broken-pkg", entries, modules)
    (name,) = entries
    broken = registry.broken_plugins()
    assert [n for n, _ in broken] == [name]
    assert broken[0][1].startswith(reason), broken[0][1]
    assert "\n" not in broken[0][1]
    assert name not in registry.agent_names() or name == "dqn"
    message = registry.unknown_agent_message(name)
    if name != "dqn":
        assert message.startswith(f"plug-in agent {name!r} (broken-pkg) cannot be used: {reason}")
        with pytest.raises(ValueError, match="cannot be used"):
            registry.create_agent(name)
    # the built-in agents are all still there (a clash never replaces one)
    assert registry.agent_names() == list(registry.BUILTIN_AGENTS)
    assert registry.get_agent_class("dqn").__name__ == "DQNAgent"


def test_two_packages_with_one_name_are_both_refused(make_plugin: MakePlugin) -> None:
    source = GOOD.format(name="twin")
    make_plugin("first-pkg", {"twin": "twin_a:EmptiestAgent"}, {"twin_a": source})
    make_plugin("second-pkg", {"twin": "twin_b:EmptiestAgent"}, {"twin_b": source})
    assert "twin" not in registry.agent_names()
    (broken,) = registry.broken_plugins()
    assert broken[0] == "twin"
    assert "declared by two packages" in broken[1] and "first-pkg" in broken[1] and "second-pkg" in broken[1]


def test_a_broken_plugin_leaves_the_good_ones(make_plugin: MakePlugin) -> None:
    make_plugin(
        "mixed-pkg",
        {"emptiest": "emptiest_mod:EmptiestAgent", "boom": "boom_mod:BoomAgent"},
        {"emptiest_mod": GOOD.format(name="emptiest"), "boom_mod": "raise SystemExit('plug-in exits')\n"},
    )
    assert "emptiest" in registry.agent_names()
    assert registry.broken_plugins() == [
        ("boom", "cannot import boom_mod:BoomAgent: SystemExit: plug-in exits")
    ]
