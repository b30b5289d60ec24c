"""Starting the studio imports no plug-in and no torch: the window is built, the agents are listed and
`eval --help` / `runs list` answer before any agent's module is loaded (issue 46)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from studio.cli import main

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sb3_contrib", "stable_baselines3", "agents.sb3.agents", "agents.dqn", "agents.imitation")


def _run(code: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_the_window_is_built_without_importing_torch_or_a_plugin(tmp_path: Path) -> None:
    code = """
        import json, sys
        from PySide6.QtCore import QSettings
        from PySide6.QtWidgets import QApplication
        app = QApplication(sys.argv[:1])
        from studio.app import create_window
        from agents import registry
        data = sys.argv[1]
        window = create_window(data, settings=QSettings(data + "/s.ini", QSettings.Format.IniFormat))
        before = [m for m in sys.argv[2].split(",") if m in sys.modules]
        print(json.dumps({"before_show": before, "names": registry.agent_names()}))
    """
    result = json.loads(_run(code, str(tmp_path), ",".join(HEAVY)))
    assert result["before_show"] == []
    # the agents are all listed all the same: the plug-ins from their packages' metadata
    names = result["names"]
    assert names[:10] == [
        "random",
        "greedy",
        "expectimax",
        "ntuple",
        "td-afterstate",
        "dqn",
        "policy",
        "ppo",
        "imitation",
        "mcts",
    ]


def test_listing_the_agents_imports_no_agent_module() -> None:
    code = """
        import json, sys
        from agents import registry
        names = registry.agent_names()
        loaded = [m for m in sys.modules if m in sys.argv[1].split(",") or m.startswith("agents.sb3")]
        print(json.dumps({"names": names, "loaded": loaded, "target": registry.target_of("dqn")}))
    """
    result = json.loads(_run(code, ",".join(HEAVY)))
    assert result["loaded"] == [] and result["target"] == "agents.dqn:DQNAgent"
    assert "dqn" in result["names"] and "mcts" in result["names"]


def test_bench_startup_times_each_command_in_a_fresh_process(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "startup", "--json", "--rounds", "1", "-o", "gui=0"])
    out, err = capsys.readouterr()
    assert code == 0 and "bench startup" in err
    report = json.loads(out)
    assert report["benchmark"] == "startup" and report["unit"] == "seconds"
    results = report["results"]
    assert list(results) == ["eval_help", "runs_list"]
    for row in results.values():
        assert 0 < row["seconds"] < 60 and row["goal_s"] == 1.5
        assert row["imported"] == []  # neither command imports torch or a plug-in
