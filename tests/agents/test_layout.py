"""The shape of the agents package: no import cycles, layers point down, n-tuple without torch, engine owns slides."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_time_edges(package: str) -> dict[str, set[str]]:
    """Imports each module runs when it is imported (module level, outside ``if TYPE_CHECKING``)."""
    edges: dict[str, set[str]] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        mod = _module_name(path)
        tree = ast.parse(path.read_text())
        found: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            for sub in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
                if isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                    found.add(sub.module)
                    found.update(f"{sub.module}.{a.name}" for a in sub.names)
                elif isinstance(sub, ast.Import):
                    found.update(a.name for a in sub.names)
        edges[mod] = found
    known = set(edges)
    return {m: {t for t in ts if t in known and t != m} for m, ts in edges.items()}


def test_agents_modules_import_without_cycles() -> None:
    edges = _import_time_edges("agents")
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path[path.index(t) :], t]))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert "agents.checkpoint" in edges["agents.base"]  # base uses checkpoints; checkpoint needs no base


def test_lower_layers_never_import_upper_ones() -> None:
    for package, forbidden in (
        ("engine", ("agents", "studio", "torch", "PySide6")),
        ("agents", ("studio", "PySide6")),
    ):
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = (
                    [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in getattr(node, "names", [])]
                    if isinstance(node, ast.Import)
                    else []
                )
                for name in names:
                    assert name.split(".")[0] not in forbidden, f"{path.relative_to(REPO)} imports {name}"


def test_no_private_engine_routine_is_used_outside_the_engine() -> None:
    for package in ("agents", "studio"):
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
                    # engine._reference (the slow twin) is a module the benchmarks compare against
                    private = [
                        a.name for a in node.names if a.name.startswith("_") and a.name != "_reference"
                    ]
                    assert not private, f"{path.relative_to(REPO)} imports {private} from {node.module}"


def test_the_ntuple_agent_and_the_training_loop_helpers_need_no_torch() -> None:
    code = "import sys, agents.ntuple, agents.training, agents.runner; assert 'torch' not in sys.modules, 'torch'"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
