"""Hostile input at the command line's doors (#17): each case is one line on stderr, exit 2, and
nothing written. Every test here failed on the code before it (a traceback, a hang, or a run made
before the refusal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from agents.base import Budget
from engine.store import GameStore
from studio.cli import main
from studio.qt_platform import XCB_LIBRARIES, debian_package, platform_problem

ROOT = Path(__file__).resolve().parents[2]


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the CLI; it must refuse with exit 2 and one line (argparse's usage lines may come before
    it). Returns that line."""
    try:
        code = main(argv)
    except SystemExit as e:  # argparse refuses while parsing
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def store_counts(data_dir: Path) -> tuple[int, int]:
    with GameStore.open(data_dir) as store:
        return store.count_games(), len(store.list_runs())


# ------------------------------------------------------------------------------------- data dir


def test_a_data_dir_that_is_a_file_is_refused(tmp_path, capsys):
    file = tmp_path / "afile"
    file.write_text("x")
    line = refusal(["--data-dir", str(file), "games", "list"], capsys)
    assert line == f"python main.py games: error: data dir {file} is a file, not a directory"
    line = refusal(["--data-dir", str(file / "below"), "runs", "list"], capsys)
    assert line == f"python main.py runs: error: data dir {file / 'below'} lies under a file, not a directory"
    assert file.read_text() == "x"


def test_a_data_dir_that_cannot_be_written_is_refused(tmp_path, capsys, monkeypatch):
    # As root every directory is writable, so the permission is what the check asks the OS for.
    monkeypatch.setattr("engine.paths.os.access", lambda path, mode: False)
    line = refusal(["--data-dir", str(tmp_path), "games", "list"], capsys)
    assert line == f"python main.py games: error: data dir {tmp_path} is not writable"
    assert list(tmp_path.iterdir()) == []


def test_an_empty_data_dir_is_refused_not_taken_as_here(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = refusal(["--data-dir", "", "games", "list"], capsys)
    assert (
        line
        == "python main.py games: error: the data dir is empty: give a directory (or leave --data-dir out)"
    )
    assert list(tmp_path.iterdir()) == []  # nothing was written into the current directory


# ---------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--agent", "ntuple", "--minutes", "nan"], "argument --minutes: nan is out of range"),
        (["train", "--agent", "ntuple", "--minutes", "inf"], "argument --minutes: inf is out of range"),
        (
            ["train", "--agent", "dqn", "--episodes", "1", "--lr", "nan"],
            "lr: must be a finite number, got nan",
        ),
        (
            ["train", "--agent", "dqn", "--episodes", "1", "--batch-size", str(2**70)],
            "batch_size: must be in [1, 8192]",
        ),
        (
            ["train", "--agent", "random", "--workers", "0"],
            "argument --workers: 0 is out of range (from 1 to 256)",
        ),
        (
            ["eval", "--agent", "random", "--rows", "99999999"],
            "argument --rows: 99999999 is out of range (from 1 to 16)",
        ),
        (
            ["eval", "--agent", "random", "--seed", str(2**64)],
            "argument --seed: 18446744073709551616 is out of range",
        ),
        (["bench", "engine", "--seconds", "1e300"], "argument --seconds: 1e300 is out of range: (0, 3600]"),
        (["games", "delete", "1-900000,1000002-1900000"], "at most 1,000,000 game ids at once"),
    ],
)
def test_numbers_out_of_range_are_refused_before_any_work(argv, message, data_dir, capsys):
    line = refusal(["--data-dir", str(data_dir), *argv], capsys)
    assert message in line
    assert store_counts(data_dir) == (0, 0)


def test_a_budget_is_finite():
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="budget seconds must be a finite number of seconds"):
            Budget(seconds=bad)
    with pytest.raises(ValueError, match="budget episodes must be a whole number"):
        Budget(episodes=2**63)
    with pytest.raises(ValueError, match="budget steps must be a whole number"):
        Budget(steps="10")  # type: ignore[arg-type]


def test_replay_at_an_absurdly_slow_speed_is_refused(data_dir, capsys):
    assert (
        main(["--data-dir", str(data_dir), "eval", "--agent", "random", "--games", "1", "--rows", "2"]) == 0
    )
    capsys.readouterr()
    line = refusal(["--data-dir", str(data_dir), "replay", "1", "--speed", "1e-300"], capsys)
    assert line == "python main.py replay: error: --speed must be 0 (no pause) or from 0.01 moves per second"


# ------------------------------------------------------------------------------ runs refused


def test_ray_backend_without_ray_is_one_line_and_makes_no_run(data_dir, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the optional extra were not installed
    line = refusal(
        ["--data-dir", str(data_dir), "train", "--agent", "mcts", "--episodes", "1", "--backend", "ray"],
        capsys,
    )
    assert "the Ray backend needs Ray, an optional extra: pip install -e '.[ray]'" in line
    assert store_counts(data_dir) == (0, 0)


@pytest.mark.parametrize("agent", ["dqn", "td-afterstate"])
def test_training_on_a_board_full_at_the_start_is_refused(agent, data_dir, capsys):
    """2 start tiles on a 2x1 board may leave no legal move: dqn then played move -1 and
    td-afterstate an illegal move, each ending in a traceback."""
    line = refusal(
        [
            "--data-dir",
            str(data_dir),
            "train",
            "--agent",
            agent,
            "--episodes",
            "1",
            "--rows",
            "2",
            "--cols",
            "1",
        ],
        capsys,
    )
    assert line.endswith("training needs games that can start: from 1 to 1 start tiles on a 2x1 board, not 2")
    assert store_counts(data_dir) == (0, 0)


def test_imitation_on_an_empty_store_is_refused_before_a_run_is_made(data_dir, capsys):
    line = refusal(["--data-dir", str(data_dir), "train", "--agent", "imitation", "--episodes", "1"], capsys)
    assert line.startswith(
        "python main.py train: error: source: no logged 4x4 games with moves match the filters"
    )
    assert store_counts(data_dir) == (0, 0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('["dqn"]', "must be an object with 'agent' (text) and 'config'"),
        ('{"agent": 3, "config": {}}', "must be an object with 'agent' (text) and 'config'"),
        ('{"agent": "dqn", "config": []}', "config must be an object"),
        ('{"agent": "dqn", "config": {}, "rules": {"rows": "four"}}', "its rules make no game"),
        ('{"agent": "dqn", "config": {}, "rules": {"rows": 100000}}', "its rules make no game"),
        (
            '{"agent": "dqn", "config": {}, "budget": {"episodes": -3}}',
            "budget episodes must be a whole number > 0",
        ),
        (
            '{"agent": "dqn", "config": {}, "budget": {"minutes": "ten"}}',
            "budget minutes must be a finite number",
        ),
        ('{"agent": "dqn", "config": {}, "budget": {"hours": 1}}', "budget has no 'hours'"),
        ('{"agent": "dqn", "config": {}, "description": 7}', "description must be text"),
        ("[" * 100_000, "is not valid JSON: nested too deeply"),
        ("\udcff", "is not valid JSON"),
    ],
)
def test_preset_files_of_the_wrong_shape_are_one_line_errors(content, message, data_dir, tmp_path, capsys):
    preset = tmp_path / "bad.json"
    preset.write_bytes(content.encode("utf-8", "surrogateescape"))
    line = refusal(["--data-dir", str(data_dir), "train", "--preset", str(preset)], capsys)
    assert "preset bad.json" in line and message in line
    assert store_counts(data_dir) == (0, 0)


def test_a_preset_knob_past_any_float_is_one_line(data_dir, tmp_path, capsys):
    """float(10**400) raised OverflowError from the knob check: a traceback."""
    preset = tmp_path / "huge.json"
    preset.write_text('{"agent": "dqn", "config": {"lr": 1' + "0" * 400 + '}, "budget": {"episodes": 1}}')
    line = refusal(["--data-dir", str(data_dir), "train", "--preset", str(preset)], capsys)
    assert line == "python main.py train: error: lr: must be a finite number, got a number too large"
    assert store_counts(data_dir) == (0, 0)


def test_a_preset_that_is_a_directory_is_refused(data_dir, tmp_path, capsys):
    (tmp_path / "dir.json").mkdir()
    line = refusal(["--data-dir", str(data_dir), "train", "--preset", str(tmp_path / "dir.json")], capsys)
    assert line == "python main.py train: error: preset dir.json is not a file"


# ---------------------------------------------------------------------------------- files out


def test_export_to_a_directory_or_a_name_too_long_is_one_line(data_dir, tmp_path, capsys):
    assert (
        main(["--data-dir", str(data_dir), "eval", "--agent", "random", "--games", "2", "--rows", "2"]) == 0
    )
    capsys.readouterr()
    target = tmp_path / "out.npz"
    target.mkdir()
    line = refusal(["--data-dir", str(data_dir), "games", "export", "1", "--out", str(target)], capsys)
    assert line.startswith("python main.py games: error:") and "out.npz" in line
    long_name = tmp_path / ("x" * 5000 + ".jsonl")
    line = refusal(["--data-dir", str(data_dir), "games", "export", "1", "--out", str(long_name)], capsys)
    assert "File name too long" in line and len(line) < 300
    line = refusal(
        ["--data-dir", str(data_dir), "runs", "export", "1", str(tmp_path / ("y" * 5000 + ".csv"))], capsys
    )
    assert line.startswith("python main.py runs: error:")


def test_a_listing_piped_into_head_ends_quietly(data_dir):
    """``games list --json | head -1`` once ended in a BrokenPipeError traceback."""
    cli = [sys.executable, str(ROOT / "main.py"), "--data-dir", str(data_dir)]
    subprocess.run(
        [*cli, "eval", "--agent", "random", "--games", "400", "--rows", "2"], check=True, capture_output=True
    )
    proc = subprocess.Popen(
        [*cli, "games", "list", "--json", "--limit", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    json.loads(proc.stdout.readline())  # one row, then the reader goes away (160 kB were to come)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == ""


# ----------------------------------------------------------------------------------- desktop


def test_missing_qt_libraries_are_named_with_the_packages_to_install():
    absent = {"libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"}

    def load(name: str) -> object:
        if name in absent:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        return object()

    problem = platform_problem({"DISPLAY": ":0"}, platform="linux", load=load)
    assert problem == (
        "Qt's X11 plugin needs libxcb-cursor.so.0, libxcb-icccm.so.4, libxcb-keysyms.so.1, not installed here: "
        "install the packages libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 with your package manager, "
        "e.g. as root on Debian/Ubuntu: apt-get install -y libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1"
    )
    # the command does not assume sudo: a container or a minimal system may not have it
    assert "sudo" not in problem


def test_a_library_the_list_does_not_name_is_read_off_the_plugin(tmp_path):
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")

    def load(name: str) -> object:
        if name == str(plugin):
            raise OSError("libxcb-xinput.so.0: cannot open shared object file: No such file or directory")
        return object()

    problem = platform_problem({"DISPLAY": ":0"}, platform="linux", load=load, plugin=plugin)
    assert problem is not None and problem.endswith(
        "as root on Debian/Ubuntu: apt-get install -y libxcb-xinput0"
    )


def test_no_display_and_other_platforms():
    assert "$DISPLAY is not set" in (platform_problem({}, platform="linux") or "")
    assert platform_problem({"QT_QPA_PLATFORM": "offscreen"}, platform="linux") is None
    assert platform_problem({"WAYLAND_DISPLAY": "wayland-0"}, platform="linux") is None
    assert platform_problem({}, platform="win32") is None


def test_debian_package_names():
    assert [debian_package(n) for n in XCB_LIBRARIES[:4]] == [
        "libxcb1",
        "libx11-6",
        "libx11-xcb1",
        "libxcb-cursor0",
    ]
    assert debian_package("libxkbcommon-x11.so.0") == "libxkbcommon-x11-0"
    assert debian_package("libGL.so.1") == "libgl1"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the X11 check is Linux's")
def test_the_window_on_a_display_that_cannot_be_used_is_one_line():
    """No X server on :93 here (or Qt's libraries missing, as on this project's machines): either way
    one line and exit 2, where Qt printed a paragraph and aborted the process."""
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = ":93"
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("2048 Studio cannot open its window: ")


def test_studio2048_is_the_console_entry_point():
    (script,) = entry_points(group="console_scripts", name="studio2048")
    assert script.load() is main
