"""The agent contract, checked on every registered agent (a new agent is covered by registering it).

The checks themselves are :mod:`agents.conformance`'s, the same that ``python main.py check-agent NAME``
runs on a plug-in: one definition of "an agent that works" for the built-in agents and for plug-ins.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agents.conformance import CHECKS, CheckResult, run_check
from agents.registry import BUILTIN_AGENTS, agent_names, get_agent_class

AGENTS = list(BUILTIN_AGENTS)


pytest_plugins = ("tests.agents.torch_fixtures",)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("name", AGENTS)
def test_builtin_agent_meets_the_contract(name: str, check: str) -> None:
    result = run_check(name, check)
    assert isinstance(result, CheckResult) and result.check == check
    if result.passed is None:
        if check == "training" and not get_agent_class(name).trainable:
            pytest.skip(result.detail)
        raise AssertionError(f"{name}: {check} skipped: {result.detail}")
    assert result.passed, f"{name}: {check}: {result.detail}"
    assert "\n" not in result.detail


ABBREVIATIONS = {"lr", "lam", "tc", "eps", "nn", "s4", "tt", "puct", "val", "frac", "prob", "envs", "grad"}


@pytest.mark.parametrize("name", agent_names())
def test_every_knob_has_a_label_a_newcomer_reads(name: str) -> None:
    for spec in get_agent_class(name).config_cls.specs():
        words = set(spec.label.lower().replace(":", " ").split())
        assert spec.label and spec.label[0].isupper(), (name, spec.name, spec.label)
        assert not words & ABBREVIATIONS, (name, spec.name, spec.label)


def test_default_labels_spell_out_the_abbreviations() -> None:
    from agents.config import default_label

    assert default_label("lr") == "Learning rate"
    assert default_label("n_step") == "N-step"
    assert default_label("tc") == "Temporal coherence"
    assert default_label("eps_decay") == "Exploration decay"
    assert default_label("lam") == "Trace decay λ"
    assert default_label("c_puct") == "Exploration constant (PUCT)"


def _runtime_imports(path: Path) -> set[str]:
    """The ``agents.*`` modules a file imports when it runs (module level or in a function; not the
    ``if TYPE_CHECKING:`` blocks, which only type checkers read)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {m for m in out if m.startswith("agents.")}


def test_base_checkpoint_and_registry_import_each_other_in_one_direction_only() -> None:
    """base -> checkpoint -> registry, and nothing back (it was a circle: checkpoint imported base
    for its counters, registry needed base): no agents module imports another in a circle."""
    root = Path(__file__).resolve().parents[2]
    files = {
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (root / "agents").rglob("*.py")
    }
    graph = {
        name: {m for m in _runtime_imports(path) if m in files and m != name} for name, path in files.items()
    }
    assert "agents.checkpoint" in graph["agents.base"] and "agents.registry" in graph["agents.checkpoint"]
    assert not graph["agents.registry"] & {"agents.base", "agents.checkpoint"}
    assert "agents.base" not in graph["agents.checkpoint"]
    # no cycle anywhere in the package: a depth-first walk never meets a module still on its path
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for dep in sorted(graph[name]):
            assert state.get(dep) != 1, " -> ".join([*path, name, dep])
            if dep not in state:
                visit(dep, [*path, name])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
