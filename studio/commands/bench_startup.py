"""``python main.py bench startup``: how long the studio takes to start (issue 46), in seconds.

Each figure is a fresh interpreter (a subprocess, as a person's shell starts one), best of
``--rounds``, after one untimed start that compiles the byte code and creates the store:

* ``python main.py eval --help`` and ``python main.py runs list`` (on an empty store in a temporary
  data dir, or ``-o data_dir=PATH``): goal <= 1.5 s each, with the ``[sb3]`` extra installed;
* the window (``-o gui=1``, the default): ``create_window`` until it is built, not shown (offscreen).

Beside each figure, whether that start imported torch or a plug-in's module (from one more start
under ``python -X importtime``, or the window's own ``sys.modules``): listing agents or opening the
window imports neither; a command that trains or evaluates does, when its agent needs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, parse_options, with_load
from studio.progress import ProgressLine

OPTIONS = {"data_dir": Option("text"), "gui": Option("bool", True)}
#: The goal of each command's start (issue 46); the window has none (it was 3 s with the sb3 extra).
GOAL_S = 1.5
#: Modules whose import at start-up is the slowness this benchmark watches for.
HEAVY = ("torch", "sb3_contrib", "stable_baselines3")
#: Longest one start may take before the benchmark gives up on it.
TIMEOUT_S = 300
REPO = Path(__file__).resolve().parents[2]

#: The window's start, in a child: built on a temporary store and settings, not shown; prints JSON.
WINDOW_CODE = textwrap.dedent(
    """
    import json, sys, time
    t0 = time.perf_counter()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    app = QApplication(sys.argv[:1])
    from studio.app import create_window
    data = sys.argv[1]
    window = create_window(data, settings=QSettings(data + "/settings.ini", QSettings.Format.IniFormat))
    seconds = time.perf_counter() - t0
    heavy = [m for m in sys.argv[2].split(",") if m in sys.modules]
    plugins = sorted(m for m in sys.modules if m.startswith("agents.sb3"))
    print(json.dumps({"seconds": seconds, "imported": heavy + plugins}))
    """
)


class StartupReport(BenchReport):
    """Seconds with decimals, the goal and the heavy imports beside each (``detail["note"]``)."""

    value_format = "{:7.3f}"
    info_keys = None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    # the tree this module is in first, as `python main.py` run from it sees it
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _timed(argv: list[str]) -> float:
    """Wall seconds of one start of ``argv`` (its output discarded); CalledProcessError when it fails."""
    t0 = time.perf_counter()
    subprocess.run(
        argv,
        cwd=REPO,
        env=_env(),
        check=True,
        timeout=TIMEOUT_S,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return time.perf_counter() - t0


def _heavy_imports(argv: list[str]) -> list[str]:
    """The heavy modules and plug-in modules one start of ``argv`` imports (from ``-X importtime``)."""
    out = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        cwd=REPO,
        env=_env(),
        timeout=TIMEOUT_S,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    names = {
        line.rpartition("|")[2].strip() for line in out.stderr.splitlines() if line.startswith("import time:")
    }
    return [m for m in HEAVY if m in names] + sorted(m for m in names if m.startswith("agents.sb3"))


def _window(data_dir: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", WINDOW_CODE, data_dir, ",".join(HEAVY)],
        cwd=REPO,
        env=_env(),
        check=True,
        timeout=TIMEOUT_S,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def startup_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    """Seconds from a fresh interpreter to ``eval --help``'s text, ``runs list``'s table, and the window."""
    opts = parse_options("startup", options.extra, OPTIONS)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        data_dir = opts["data_dir"] or tmp
        main = [sys.executable, str(REPO / "main.py")]
        commands: list[tuple[str, str, list[str]]] = [
            ("eval_help", "python main.py eval --help", [*main, "eval", "--help"]),
            ("runs_list", "python main.py runs list", [*main, "--data-dir", data_dir, "runs", "list"]),
        ]
        progress.total = (options.rounds + 1) * (len(commands) + int(opts["gui"]))
        done = 0
        best: dict[str, float] = {}
        imported: dict[str, list[str]] = {}
        for key, label, argv in commands:
            progress.update(done, f"{label}: warming up", force=True)
            imported[key] = _heavy_imports(argv)  # also the untimed first start (byte code, the store)
            done += 1
        if opts["gui"]:
            progress.update(done, "window: warming up", force=True)
            imported["window"] = _window(tmp)["imported"]
            done += 1
        for _ in range(options.rounds):  # interleaved: a busy moment of the machine hits every figure
            for key, label, argv in commands:
                best[key] = min(best.get(key, float("inf")), _timed(argv))
                done += 1
                progress.update(done, f"{label}: {best[key]:.2f} s")
            if opts["gui"]:
                best["window"] = min(best.get("window", float("inf")), _window(tmp)["seconds"])
                done += 1
                progress.update(done, f"window: {best['window']:.2f} s")
    rows: list[tuple[str, str, float | None]] = [(key, label, GOAL_S) for key, label, _ in commands]
    if opts["gui"]:
        rows.append(("window", "the window built (not shown)", None))
    measurements = [
        Measurement(
            key,
            label,
            round(best[key], 3),
            detail={
                **({"goal_s": goal} if goal else {}),
                "imported": imported[key],
                "note": "imports " + (", ".join(imported[key]) or "nothing heavy"),
            },
        )
        for key, label, goal in rows
    ]
    info = with_load({"rounds": options.rounds, "python": sys.executable})
    return StartupReport("startup", "seconds", measurements, info=info)
