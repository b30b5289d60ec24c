"""``python main.py bench memory``: what an n-tuple network costs in memory once loaded to play.

Each figure comes from a fresh child process (``python -m studio.commands.bench_memory``), so nothing
loaded before (or freed to the allocator but kept) is counted:

* ``play``: the process imports the agents (numba, the kernels), notes its resident memory (VmRSS),
  builds the checkpoint's agent the way every player does (``AgentSpec.build``: Play, hints, review,
  ``eval``) and rates a few moves; reported: the resident memory it added (loaded) and its peak on
  the way (VmHWM, the same as ``resource.getrusage`` ``ru_maxrss``, over the same baseline). Goal
  (issue 47): loaded <= 300 MB, peak <= 1.2x that.
* ``window``: the main window, offscreen on a scratch data dir, idle; then the Play tab's Thinker
  plays the network (Watch) and hints with it, and the coach's Thinker grades a move and hints by
  the same file as reviewer at 2-ply: the window's resident memory with the three roles. Goal: <= 1 GB.

Options (``-o KEY=VALUE``): ``checkpoint`` (an ntuple checkpoint; default: a 4x6 network the size of
a one-minute run's, ``density`` of its weights and temporal-coherence sums set to seeded noise, saved
to a scratch file first), ``density`` (default 0.1). Linux only (``/proc``); elsewhere the figures
are NaN.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, parse_options
from studio.progress import ProgressLine

OPTIONS = {"checkpoint": Option("text"), "density": Option("float", 0.1, 0.0, 1.0)}
#: Goals of issue 47 (MB).
PLAY_GOAL_MB = 300.0
PEAK_FACTOR = 1.2
WINDOW_GOAL_MB = 1024.0


class MemoryBenchReport(BenchReport):
    """Every info line shown: which checkpoint, and whether the goals are met."""

    value_format = "{:8.0f}"
    info_keys = None
    best_of_rounds = False


def _status_mb(field: str) -> float:
    """A ``/proc/self/status`` memory field (VmRSS, VmHWM) in MB; NaN off Linux."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return float("nan")
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _peak_mb() -> float:
    """This process's peak resident memory: ``ru_maxrss`` (kB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ------------------------------------------------------------------------------------------ children


def _child_play(path: str) -> dict[str, float]:
    import agents.ntuple.kernels  # noqa: F401  (numba and the kernels: the baseline, not the network)
    from agents.spec import AgentSpec
    from engine import Game

    base = _status_mb("VmRSS")
    base_peak = _peak_mb()
    t0 = time.perf_counter()
    agent = AgentSpec.from_checkpoint(path, "ntuple").build()
    seconds = time.perf_counter() - t0
    loaded = _status_mb("VmRSS")
    peak = _peak_mb()
    game = Game(seed=0)
    for _ in range(20):  # a few moves: the search table comes in use too
        if game.game_over:
            break
        game.step(agent.act(game))
    return {
        "baseline_mb": base,
        "loaded_mb": loaded - base,
        "peak_mb": max(peak, base_peak) - base,
        "playing_mb": _status_mb("VmRSS") - base,
        "load_seconds": seconds,
    }


def _child_window(path: str) -> dict[str, float]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from agents.spec import AgentSpec
    from studio.app import create_window
    from studio.services.review import Reviewer
    from studio.thinking import GradeResult, ThinkResult

    app = QApplication.instance() or QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
        win = create_window(Path(tmp) / "data", settings=settings)
        win.show()
        _spin(app, 1.0)
        idle = _status_mb("VmRSS")
        play: Any = win.tab("Play")
        results: list[Any] = []
        play.thinker.resultReady.connect(results.append)
        play.coach.gradeReady.connect(results.append)
        spec = AgentSpec.from_checkpoint(path, "ntuple")
        reviewer = Reviewer(AgentSpec.from_checkpoint(path, "ntuple"), 2)
        game = play.recorder.game
        move = game.legal_moves()[0]
        asks = (
            lambda: play.thinker.request(spec, game, want_values=False),  # Watch: the agent plays
            lambda: play.thinker.request(spec, game, want_values=True),  # Hint
            lambda: play.coach.request_grade(reviewer, game, move),  # the coach's reviewer grades
            lambda: play.thinker.request_review_hint(reviewer, game),  # and hints, with the coach on
        )
        t0 = time.perf_counter()
        for ask in asks:
            n = len(results)
            ask()
            if not _spin(app, 120.0, lambda n=n: len(results) > n):
                raise RuntimeError("bench memory: the window's agent gave no answer in 120 s")
            last = results[-1]
            problem = last.error if isinstance(last, GradeResult) else last.problem
            if problem or not isinstance(last, (ThinkResult, GradeResult)):
                raise RuntimeError(f"bench memory: the window's agent failed: {problem}")
        seconds = time.perf_counter() - t0
        roles = _status_mb("VmRSS")
        win.close()
        _spin(app, 0.2)
    return {"idle_mb": idle, "roles_mb": roles, "peak_mb": _peak_mb(), "roles_seconds": seconds}


def _spin(app: Any, seconds: float, until: Any = None) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        if until is not None and until():
            return True
        time.sleep(0.01)
    return until is None or bool(until())


def _run_child(mode: str, path: Path) -> dict[str, float]:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    out = subprocess.run(
        [sys.executable, "-m", "studio.commands.bench_memory", mode, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"bench memory: the {mode} child failed: {tail[0]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# ------------------------------------------------------------------------------------------ the bench


def _synthetic_checkpoint(folder: Path, density: float, seed: int) -> Path:
    """A 4x6 network with ``density`` of its weights and TC sums set (seeded noise), saved with TC."""
    import numpy as np

    from agents.ntuple import NTupleAgent, NTupleConfig

    agent = NTupleAgent(NTupleConfig(), seed=seed)
    rng = np.random.default_rng(seed)
    n = agent.weights.size
    idx = np.unique(rng.integers(0, n, size=int(n * density)))
    agent.weights[idx] = rng.normal(0, 50, idx.size).astype(np.float32)
    agent._training_arrays()
    assert agent._tc is not None
    agent._tc[idx, 0] = rng.normal(0, 100, idx.size).astype(np.float32)
    agent._tc[idx, 1] = np.abs(agent._tc[idx, 0]) * 2
    return agent.save(folder / "synthetic-4x6.npz")


def memory_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    opts = parse_options("memory", options.extra, OPTIONS)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        if opts["checkpoint"]:
            path = Path(opts["checkpoint"]).expanduser()
            if not path.is_file():
                raise ValueError(f"bench memory: no checkpoint at {path}")
            made = "given"
        else:
            progress.update(0, "saving a synthetic 4x6 network", force=True)
            path = _synthetic_checkpoint(Path(tmp), opts["density"], options.seed)
            made = f"synthetic 4x6, density {opts['density']}"
        progress.update(0, "loading it to play in a fresh process", force=True)
        play = _run_child("play", path)
        progress.update(0, "the window with the network in three roles", force=True)
        window = _run_child("window", path)
        size_mb = path.stat().st_size / 1e6
    loaded, peak = play["loaded_mb"], play["peak_mb"]
    measurements = [
        Measurement("play_loaded", "network loaded to play (RSS added)", loaded, detail=play),
        Measurement("play_peak", "  its peak while loading", peak, ratio=peak / loaded if loaded else None),
        Measurement("window_idle", "window, idle", window["idle_mb"]),
        Measurement("window_roles", "window: Play, hint and reviewer", window["roles_mb"], detail=window),
    ]
    ok = loaded <= PLAY_GOAL_MB and peak <= PEAK_FACTOR * loaded and window["roles_mb"] <= WINDOW_GOAL_MB
    return MemoryBenchReport(
        "memory",
        "MB",
        measurements,
        info={
            "checkpoint": f"{path} ({made}, {size_mb:.1f} MB on disk)",
            "load_seconds": round(play["load_seconds"], 2),
            "goals": f"loaded <= {PLAY_GOAL_MB:.0f}, peak <= {PEAK_FACTOR}x loaded, window <= "
            f"{WINDOW_GOAL_MB:.0f}: {'met' if ok else 'NOT met'}",
        },
    )


def _main(argv: list[str]) -> int:
    """The child: ``MODE PATH``; prints one JSON line of figures."""
    mode, path = argv
    result = _child_play(path) if mode == "play" else _child_window(path)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
