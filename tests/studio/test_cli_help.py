"""``python main.py COMMAND [ACTION] --help`` answers for every command and action (exit 0, a usage line)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from studio.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _command_paths() -> list[list[str]]:
    """Every command and sub-action the parser knows: ``[["bench", "engine"], ["games", "list"], ...]``."""

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> list[list[str]]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [prefix]
        out = [prefix] if prefix else []
        for name, child in subs[0].choices.items():
            out += walk(child, [*prefix, name])
        return out

    return walk(build_parser(), [])


PATHS = _command_paths()


def test_the_walk_finds_every_command() -> None:
    tops = {p[0] for p in PATHS}
    assert {"train", "eval", "sweep", "sweeps", "bench", "games", "runs", "play", "replay", "review"} <= tops
    assert ["bench", "eval"] in PATHS and ["sweeps", "show"] in PATHS


@pytest.mark.parametrize("words", PATHS, ids=" ".join)
def test_help_answers(words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert out.startswith(f"usage: python main.py {' '.join(words)}"), out[:200]


@pytest.mark.parametrize("command", ["train", "eval", "sweep"])
def test_help_with_an_agent_lists_its_settings(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--agent", "ntuple", "--help"])
    assert done.value.code == 0 and "--lr" in capsys.readouterr().out


def test_main_py_help_runs_as_a_program() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0 and "train" in done.stdout and "eval" in done.stdout, done.stderr


@pytest.mark.parametrize("command", ["train", "eval", "sweep"])
def test_no_agent_setting_shadows_a_flag_of_the_command(command: str) -> None:
    # The agents' setting flags are added with conflict_handler="resolve": one named like a flag of the
    # command itself would silently take its place (eval's --fast-threads is not --threads for this).
    import importlib

    from agents.registry import agent_names
    from studio.commands import _agent_flags as flags

    module = importlib.import_module(f"studio.commands.{command}")

    def dests(argv: list[str]) -> set[str]:
        parser = module.build_parser(flags.first_stage(argv))
        return {a.dest for a in parser._actions}

    own = dests([])
    for name in agent_names():
        assert own <= dests(["--agent", name]), name
