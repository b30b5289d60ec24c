"""Plug-in agents: packages that add agents through the ``studio2048.agents`` entry points.

A plug-in here is a real distribution as importlib.metadata finds one: a folder on ``sys.path`` with the
agent's module and a ``*.dist-info`` (METADATA + entry_points.txt), what ``pip install`` leaves.
"""

from __future__ import annotations

import os
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


def install(root: Path, package: str, entries: dict[str, str]) -> None:
    """What ``pip install`` leaves for importlib.metadata: a ``*.dist-info`` with the entry points, in
    ``root`` (which holds the modules) on ``sys.path``."""
    info = root / f"{package.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{lines}")
    sys.path.insert(0, str(root))
    registry.reload_plugins()


@pytest.fixture
def make_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakePlugin]:
    """``make_plugin(package, {entry name: "module:Class"}, {module: source}, root=None)`` installs a
    distribution on ``sys.path`` for this test and lets the registry look again; ``PYTHONPATH`` too, for
    the window's training child (a plain subprocess, which sees a pip-installed plug-in the same way).
    ``root``: a folder that holds the modules already (a new-agent package). The registry sees only
    the packages made here: the studio's own entry points (its optional sb3-* agents, usable or
    listed as unavailable) are not this test's."""
    added: list[str] = []
    made: set[str] = set()
    every_entry_point = registry.entry_points
    monkeypatch.setattr(
        registry,
        "entry_points",
        lambda **kw: [ep for ep in every_entry_point(**kw) if ep.dist is not None and ep.dist.name in made],
    )

    def make(
        package: str, entries: dict[str, str], modules: dict[str, str], root: Path | None = None
    ) -> Path:
        if root is None:
            root = tmp_path / f"site-{package}"
            root.mkdir()
        for module, source in modules.items():
            (root / f"{module}.py").write_text(textwrap.dedent(source))
        made.add(package)
        install(root, package, entries)
        added.append(str(root))
        monkeypatch.setenv(
            "PYTHONPATH", os.pathsep.join([*added, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        )
        return root

    yield make
    for root in added:
        while root in sys.path:
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
    assert "emptiest_mod" not in sys.modules  # listed from the package's metadata, imported when used
    assert registry.agent_names()[: len(registry.BUILTIN_AGENTS)] == list(registry.BUILTIN_AGENTS)
    assert registry.check_plugins() == []
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


def test_a_plugin_rating_moves_in_points_is_offered_as_reviewer(make_plugin: MakePlugin) -> None:
    from studio.services.review import resolve_reviewer, reviewer_choices

    points = GOOD.format(name="pointy").replace(
        'description = "', 'value_kind = "points"\n    description = "'
    )
    make_plugin("pointy-pkg", {"pointy": "pointy_mod:EmptiestAgent"}, {"pointy_mod": points})
    make_plugin(
        "emptiest-pkg",
        {"emptiest": "emptiest_mod:EmptiestAgent"},
        {"emptiest_mod": GOOD.format(name="emptiest")},
    )
    # the reviewer box offers the plug-ins imported so far (the window imports them after it shows)
    assert "pointy (plug-in)" not in dict(reviewer_choices(None))
    registry.check_plugins()
    choices = dict(reviewer_choices(None))
    assert choices["pointy (plug-in)"] == ("pointy", None)
    assert "emptiest (plug-in)" not in choices  # its values are a rank: no points to grade with
    reviewer = resolve_reviewer(None, *choices["pointy (plug-in)"])
    assert reviewer.spec.name == "pointy" and reviewer.depth is None


def test_a_plugin_that_lists_agents_while_imported_sees_the_others(make_plugin: MakePlugin) -> None:
    curious = (
        GOOD.format(name="curious") + "\nfrom agents.registry import agent_names\nSEEN = agent_names()\n"
    )
    make_plugin("curious-pkg", {"curious": "curious_mod:EmptiestAgent"}, {"curious_mod": curious})
    assert "curious" in registry.agent_names()
    assert registry.get_agent_class("curious").name == "curious"
    seen = sys.modules["curious_mod"].SEEN  # what it saw while the registry was importing it
    assert "curious" in seen and set(registry.BUILTIN_AGENTS) <= set(seen)


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
    "reviews in points without review values": (
        {"critic": "critic_mod:CriticAgent"},
        {
            "critic_mod": "from agents.base import Agent\nclass CriticAgent(Agent):\n    name = 'critic'\n"
            "    reviews_in_points = True\n    def move_values(self, game):\n        return {}\n"
        },
        "CriticAgent says it reviews in points but does not override review_values",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_CASES))
def test_a_broken_plugin_is_left_out_with_one_line(make_plugin: MakePlugin, case: str) -> None:
    entries, modules, reason = BROKEN_CASES[case]
    make_plugin("broken-pkg", entries, modules)
    (name,) = entries
    broken = registry.check_plugins()
    assert [n for n, _ in broken] == [name]
    assert broken[0][1].startswith(reason), broken[0][1]
    assert "\n" not in broken[0][1]
    assert name not in registry.agent_names() or name == "dqn"
    message = registry.unknown_agent_message(name)
    if name != "dqn":
        assert message.startswith(f"plug-in agent {name!r} (broken-pkg) cannot be used: {reason}")
        with pytest.raises(ValueError, match="cannot be used"):
            registry.create_agent(name)
    # the built-in agents are all still there (a clash never replaces one), and no plug-in came in
    names = registry.agent_names()
    assert names[: len(registry.BUILTIN_AGENTS)] == list(registry.BUILTIN_AGENTS)
    assert registry.plugin_of(name) is None or name not in names[len(registry.BUILTIN_AGENTS) :]
    assert registry.get_agent_class("dqn").__name__ == "DQNAgent"


def test_a_broken_plugin_is_listed_until_used_then_refused_with_its_reason(make_plugin: MakePlugin) -> None:
    make_plugin(
        "broken-pkg", {"boom": "boom_mod:BoomAgent"}, {"boom_mod": "import no_such_module_anywhere\n"}
    )
    # listing reads the metadata only: nothing imported, nothing known broken yet
    assert "boom" in registry.agent_names() and registry.broken_plugins() == []
    reason = (
        "cannot import boom_mod:BoomAgent: ModuleNotFoundError: No module named 'no_such_module_anywhere'"
    )
    with pytest.raises(ValueError) as refused:
        registry.create_agent("boom")
    assert str(refused.value) == f"plug-in agent 'boom' (broken-pkg) cannot be used: {reason}"
    with pytest.raises(KeyError) as missing:
        registry.get_agent_class("boom")
    assert str(missing.value) == str(refused.value)
    assert "boom" not in registry.agent_names()
    assert registry.broken_plugins() == [("boom", reason)]


def test_a_fresh_registry_is_independent_of_the_default(make_plugin: MakePlugin) -> None:
    make_plugin(
        "emptiest-pkg",
        {"emptiest": "emptiest_mod:EmptiestAgent"},
        {"emptiest_mod": GOOD.format(name="emptiest")},
    )
    alone = registry.Registry({"greedy": "agents.baselines:GreedyAgent"}, plugins=False)
    assert alone.agent_names() == ["greedy"]
    with registry.registered({"rater": "tests.studio.gui_helpers:RaterAgent"}) as inside:
        assert registry.default_registry() is inside
        assert registry.agent_names()[-2:] == ["emptiest", "rater"]
        with registry.using(alone):
            assert registry.agent_names() == ["greedy"]
            assert registry.get_agent_class("greedy").__name__ == "GreedyAgent"
        assert "rater" in registry.agent_names()
    assert "rater" not in registry.agent_names() and "emptiest" in registry.agent_names()


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
    assert registry.check_plugins() == [
        ("boom", "cannot import boom_mod:BoomAgent: SystemExit: plug-in exits")
    ]


# ------------------------------------------------------------------ the template, the CLI, check-agent

#: Plays "up" whenever up is legal... and also when it is not: the illegal move check-agent must catch.
ILLEGAL = """
from agents.baselines import GreedyAgent
from engine import DIRECTIONS


class StubbornAgent(GreedyAgent):
    name = "stubborn"

    def move_values(self, game):
        return {**super().move_values(game), DIRECTIONS[0]: 1e9}
"""

#: Trains, and reports a NaN loss at its second game (a diverged learner).
NAN = """
import math
from agents.baselines import GreedyAgent
from agents.metrics import LOSS
from agents.training import TrainTracker
from engine import Game


class DivergingAgent(GreedyAgent):
    name = "diverging"
    trainable = True
    metrics = (LOSS,)

    def train(self, budget, control=None, context=None):
        tracker = TrainTracker(self.counters, budget, control)
        while tracker.proceed():
            game = Game(seed=self.counters.episodes, rules=self.rules)
            while not game.game_over:
                game.step(self.act(game))
                self.counters.steps += 1
            self.counters.episodes += 1
            loss = math.nan if self.counters.episodes >= 2 else 1.0
            yield tracker.event("episode", {"score": game.score, "loss": loss})
"""


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from studio.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def myagent(make_plugin: MakePlugin, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """``new-agent myagent DIR``'s package, installed."""
    folder = tmp_path / "myagent-pkg"
    code, out, err = run_cli(["new-agent", "myagent", str(folder)], capsys)
    assert code == 0, err
    assert "myagent_agent.agent:MyagentAgent" in out
    assert {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} == {
        "pyproject.toml",
        "README.md",
        "myagent_agent/__init__.py",
        "myagent_agent/agent.py",
        "tests/test_myagent_agent.py",
    }
    pyproject = (folder / "pyproject.toml").read_text()
    assert (
        '[project.entry-points."studio2048.agents"]\nmyagent = "myagent_agent.agent:MyagentAgent"'
        in pyproject
    )
    make_plugin("studio2048-myagent", {"myagent": "myagent_agent.agent:MyagentAgent"}, {}, root=folder)
    return folder


def test_new_agent_package_passes_check_agent_and_trains_from_the_cli(
    myagent: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.checkpoint import load_checkpoint
    from engine.store import GameStore

    code, out, _ = run_cli(["check-agent", "myagent"], capsys)
    lines = out.splitlines()
    assert code == 0, out
    assert [line.split()[0] for line in lines[:-1]] == ["pass"] * 6
    assert lines[-1] == "myagent: every check passed"

    code, out, err = run_cli(
        [
            "--data-dir",
            str(data_dir),
            "train",
            "--agent",
            "myagent",
            "--episodes",
            "3",
            "--step-size",
            "0.25",
        ],
        capsys,
    )
    assert code == 0, err
    with GameStore.open(data_dir) as store:
        (run,) = store.list_runs()
        assert run.agent == "myagent" and run.status == "finished"
        assert run.config["step_size"] == 0.25
        last = store.last_checkpoint(run.id)
    assert last is not None
    agent = load_checkpoint(last)
    assert agent.name == "myagent" and agent.counters.episodes == 3

    code, out, err = run_cli(
        ["--data-dir", str(data_dir), "eval", "--agent", "myagent", "--games", "2"], capsys
    )
    assert code == 0, err

    # the generated package's own test runs the same checks
    namespace: dict[str, object] = {}
    exec((myagent / "tests" / "test_myagent_agent.py").read_text(), namespace)
    test = namespace["test_myagent_agent_meets_the_contract"]
    assert callable(test)
    test("config")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["new-agent", "Bad Name"], "'Bad Name' is not an agent name"),
        (["new-agent", "dqn"], "an agent named 'dqn' exists already"),
        (["new-agent", "fine", "FULL"], "exists and is not an empty folder"),
    ],
)
def test_new_agent_refuses_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    where = str(full) if "FULL" in argv else str(tmp_path / "new")
    code, out, err = run_cli([a for a in argv if a != "FULL"] + [where], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err
    assert (full / "keep.txt").read_text() == "mine" and not (tmp_path / "new").exists()


def test_broken_plugins_are_refused_and_the_rest_works(
    make_plugin: MakePlugin, myagent: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_plugin(
        "broken-pkg",
        {
            "boom": "boom_mod:BoomAgent",
            "stubborn": "stubborn_mod:StubbornAgent",
            "diverging": "diverging_mod:DivergingAgent",
        },
        {"boom_mod": "import no_such_module_anywhere\n", "stubborn_mod": ILLEGAL, "diverging_mod": NAN},
    )
    # import error: listed with its reason, refused by every command with one line
    assert registry.check_plugins() == [
        (
            "boom",
            "cannot import boom_mod:BoomAgent: ModuleNotFoundError: No module named 'no_such_module_anywhere'",
        )
    ]
    code, out, err = run_cli(["agents"], capsys)
    assert code == 0
    assert any(line.split()[:2] == ["myagent", "plug-in"] for line in out.splitlines())
    assert any(
        line.startswith("boom ") and "refused" in line and "no_such_module_anywhere" in line
        for line in out.splitlines()
    )
    code, out, err = run_cli(["check-agent", "boom"], capsys)
    assert code == 1
    assert out.splitlines()[0].split()[:2] == ["FAIL", "contract"] and "no_such_module_anywhere" in out
    code, out, err = run_cli(
        ["--data-dir", str(data_dir), "train", "--agent", "boom", "--episodes", "1"], capsys
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "plug-in agent 'boom' (broken-pkg) cannot be used: cannot import" in err

    # an illegal move: the legality check fails, naming the move
    code, out, _ = run_cli(["check-agent", "stubborn", "--only", "legal moves"], capsys)
    assert code == 1
    (line, verdict) = out.splitlines()
    assert (
        line.split()[:3] == ["FAIL", "legal", "moves"]
        and "stubborn.move_values rated up" in line
        and "legal:" in line
    )
    assert verdict == "stubborn: 1 check FAILED"

    # a NaN metric: the training check refuses it; a run of it fails as diverged, one line
    code, out, _ = run_cli(["check-agent", "diverging", "--only", "training"], capsys)
    assert code == 1
    assert "metric 'loss' is nan at step" in out.splitlines()[0]
    code, out, err = run_cli(
        ["--data-dir", str(data_dir), "train", "--agent", "diverging", "--episodes", "5"], capsys
    )
    assert code == 1 and "diverged: loss is nan" in err

    # the good plug-in and the built-in agents still work beside them
    code, out, err = run_cli(
        ["--data-dir", str(data_dir), "train", "--agent", "myagent", "--episodes", "2"], capsys
    )
    assert code == 0, err
    assert "myagent" in registry.agent_names() and "dqn" in registry.agent_names()
    code, out, err = run_cli(
        ["--data-dir", str(data_dir), "eval", "--agent", "greedy", "--games", "1"], capsys
    )
    assert code == 0, err
