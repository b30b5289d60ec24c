"""``python main.py bench gui``: does the window stay responsive while agents train? Measured, per agent.

The real main window is built (offscreen unless a display is set) on a temporary data dir and, for
each trainable agent (``-o agent=NAME``, default: every trainable agent), the Train tab starts it
with its default settings; ``-o runs=2`` starts two runs of it side by side. Unless ``-o load=0``, the
benchmark itself runs a competing CPU-bound process for the whole measurement (users' machines are
busy too). ``-o log_every=N`` stores one training game in N instead of the form's default. Two
scenarios per agent, ``--seconds`` each (at least 2):

* ``train tab``: the Train tab in front, curves drawing. A 5 ms QTimer heartbeat on the GUI thread
  records when it actually fires; the gaps between beats are the GUI thread's stalls (p50 / p99 /
  max, in ms);
* ``play``: the Play tab in front while the runs train. Arrow keys are posted to the board every
  100 ms and the time from posting a key to the board's next paint is measured (p50 / p99 / max).

Also reported: events per second reaching the window, the window process's resident memory and each
training child's (``VmRSS``), the machine's load. Goals (issue 16): stall p99 <= 50 ms and max <=
150 ms; key to paint p99 <= 50 ms; the window's RSS <= 1 GB while an n-tuple network trains.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, parse_options
from studio.progress import ProgressLine

log = logging.getLogger(__name__)

HEARTBEAT_MS = 5
KEY_EVERY_MS = 100
OPTIONS = {
    "agent": Option("text"),  # default: every trainable agent
    "runs": Option("int", 1, 1, 4),
    "load": Option("bool", True),
    "log_every": Option("int", None, 0, 2**31),
}
SPEED_OPTIONS = {"agent": Option("text", "ntuple")}


class GuiBenchReport(BenchReport):
    """Milliseconds need decimals; every info line is printed."""

    value_format = "{:10.1f}"
    info_keys = None
    best_of_rounds = False


def trainable_agents(wanted: str | None) -> list[str]:
    """The agents to measure: ``wanted`` (checked), else every trainable registered agent."""
    from agents.registry import agent_names, get_agent_class

    names = agent_names()
    if wanted and wanted != "all":
        if wanted not in names:
            raise ValueError(f"unknown agent {wanted!r}: choose one of {', '.join(names)}")
        if not get_agent_class(wanted).trainable:
            raise ValueError(f"agent {wanted!r} does not learn: choose a trainable agent")
        return [wanted]
    out = []
    for name in names:
        try:
            if get_agent_class(name).trainable:
                out.append(name)
        except ImportError:  # an agent whose libraries are missing here is skipped
            log.warning("bench gui: agent %s cannot be imported here, skipped", name, exc_info=True)
            continue
    return out


def rss_mb(pid: int | None = None) -> float:
    """Resident memory of a process in MB (Linux ``/proc``; NaN elsewhere)."""
    try:
        text = Path(f"/proc/{pid or 'self'}/status").read_text()
    except OSError:
        return float("nan")
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _wait(app: Any, cond: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if cond():
            return True
        time.sleep(0.01)
    return bool(cond())


def _heartbeat(seconds: float) -> np.ndarray:
    """Run the event loop for ``seconds`` with a heartbeat; the gaps between beats (ms)."""
    from PySide6.QtCore import QEventLoop, Qt, QTimer

    beats: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(HEARTBEAT_MS)
    timer.timeout.connect(lambda: beats.append(time.perf_counter()))
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    timer.start()
    loop.exec()
    timer.stop()
    return np.diff(np.array(beats)) * 1000.0


def _key_to_paint(board: Any, seconds: float, new_game: Callable[[], object] | None = None) -> np.ndarray:
    """Post arrow keys to ``board`` every KEY_EVERY_MS; ms from each post to the board's next paint.

    Only legal moves are pressed: a key that moves nothing paints nothing, and waiting for that
    paint ended the measurement with no sample at all (a fresh board with both tiles on the left
    edge and Left pressed first). A finished game is replaced through ``new_game``.
    """
    from PySide6.QtCore import QEvent, QEventLoop, QObject, Qt, QTimer
    from PySide6.QtGui import QKeyEvent
    from PySide6.QtWidgets import QApplication

    from engine.core import Direction, legal_mask

    latencies: list[float] = []
    pending: list[float] = []
    sent = 0  # directions tried so far: the next key starts after the last one pressed
    keys = {
        Direction.LEFT: Qt.Key.Key_Left,
        Direction.UP: Qt.Key.Key_Up,
        Direction.RIGHT: Qt.Key.Key_Right,
        Direction.DOWN: Qt.Key.Key_Down,
    }
    order = list(keys)

    class PaintWatch(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint and pending:
                t = time.perf_counter()
                latencies.extend((t - t0) * 1000.0 for t0 in pending)
                pending.clear()
            return False

    def press() -> None:
        nonlocal sent
        if pending:  # the last key has not been painted yet: do not pile up
            return
        legal = legal_mask(board.board)
        if not legal.any():
            if new_game is not None and not board.is_animating:
                new_game()
            return
        # the next legal direction in turn (left, up, right, down), so games go on for a while
        for k in range(len(order)):
            direction = order[(sent + k) % len(order)]
            if legal[int(direction)]:
                break
        sent += k + 1
        key = keys[direction]
        pending.append(time.perf_counter())
        QApplication.postEvent(board, QKeyEvent(QEvent.Type.KeyPress, key, Qt.KeyboardModifier.NoModifier))
        QApplication.postEvent(board, QKeyEvent(QEvent.Type.KeyRelease, key, Qt.KeyboardModifier.NoModifier))

    watch = PaintWatch()
    board.installEventFilter(watch)
    timer = QTimer()
    timer.setInterval(KEY_EVERY_MS)
    timer.timeout.connect(press)
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    timer.start()
    loop.exec()
    timer.stop()
    board.removeEventFilter(watch)
    return np.array(latencies)


def _competitor() -> subprocess.Popen[bytes]:
    """A CPU-bound process for the other core (users' machines are busy too)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _stats(values: np.ndarray) -> tuple[float, float, float]:
    if values.size == 0:
        return (float("nan"),) * 3
    p50, p99, worst = np.percentile(values, [50, 99, 100])
    return float(p50), float(p99), float(worst)


def _measure_agent(
    app: Any, win: Any, agent: str, runs: int, seconds: float, progress: ProgressLine, log_every: int | None
) -> dict[str, Any]:
    """Start ``runs`` runs of ``agent`` from the Train tab, then measure both scenarios; stop them."""
    train = win.tab("Train")
    win.show_tab("Train")
    train.launch.select_agent(agent)
    if log_every is not None:
        train.launch.logEverySpin.setValue(log_every)
    train.launch.set_budget(minutes=(2 * seconds + 600.0) / 60.0)
    progress.update(0, f"{agent}: starting {runs} run(s)", force=True)
    for _ in range(runs):
        if not train.start():
            raise RuntimeError(f"the Train tab would not start {agent}: {train.etaLabel.text()}")
    live = list(train.live)
    if not _wait(app, lambda: all(lr.series.events > 0 for lr in live) or not train.live, 600):
        raise RuntimeError(f"{agent} sent no event in 10 minutes")
    if not train.live:
        raise RuntimeError(f"{agent} stopped before the measurement: {train.etaLabel.text()}")
    out: dict[str, Any] = {}
    events0 = sum(lr.series.events for lr in live)
    progress.update(0, f"{agent}: Train tab, {seconds:.0f} s", force=True)
    out["stall"] = _stats(_heartbeat(seconds))
    win.show_tab("Play")
    win.play.board.setFocus()
    progress.update(0, f"{agent}: Play tab, keys, {seconds:.0f} s", force=True)
    out["key"] = _stats(_key_to_paint(win.play.board, seconds, lambda: win.play.new_game(win.play.rules)))
    out["events_per_s"] = (sum(lr.series.events for lr in live) - events0) / (2 * seconds)
    out["window_rss_mb"] = rss_mb()
    out["child_rss_mb"] = [rss_mb(lr.worker.process.pid) for lr in live]
    train.stop_all()
    train.wait_finished(300)
    failed = [lr.worker.error_message for lr in live if lr.worker.error_message]
    if failed:
        raise RuntimeError(f"training {agent} failed: {failed[0]}")
    if win.play.recorder is not None:
        win.play.new_game(win.play.rules)  # the keys played a game: start the next agent on a fresh one
    return out


def gui_benchmark(options: BenchOptions, progress: ProgressLine) -> GuiBenchReport:
    """Stalls and key latency of the window while agents train; see the module docstring."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    opts = parse_options("gui", options.extra, OPTIONS)
    runs, log_every, load = opts["runs"], opts["log_every"], opts["load"]
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from studio.app import create_window, preload_agents

    app = QApplication.instance() or QApplication(sys.argv[:1])
    agents = trainable_agents(opts["agent"])
    seconds = max(2.0, options.seconds * options.rounds)
    measurements: list[Measurement] = []
    info: dict[str, Any] = {
        "agents": ", ".join(agents),
        "runs_at_once": runs,
        "seconds_per_scenario": seconds,
    }
    competitor = _competitor() if load else None
    try:
        with tempfile.TemporaryDirectory(prefix="bench-gui-") as tmp:
            settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
            win = create_window(tmp, settings=settings)
            try:
                win.resize(1400, 900)
                win.show()
                # as run_app does: the agents imported in the background, then what is alive frozen
                preload_agents().join()
                progress.update(0, "idle window: measuring", force=True)
                idle = _stats(_heartbeat(min(seconds, 3.0)))
                measurements.append(Measurement("idle_p99", "idle window: stall p99 (ms)", idle[1]))
                for agent in agents:
                    got = _measure_agent(app, win, agent, runs, seconds, progress, log_every)
                    for what, label in (("stall", "stall"), ("key", "key to paint")):
                        for stat, value in zip(("p50", "p99", "max"), got[what]):
                            measurements.append(
                                Measurement(f"{agent}_{what}_{stat}", f"{agent}: {label} {stat} (ms)", value)
                            )
                    info[f"{agent}_events_per_s"] = round(got["events_per_s"], 1)
                    info[f"{agent}_window_rss_mb"] = round(got["window_rss_mb"])
                    info[f"{agent}_child_rss_mb"] = ", ".join(f"{v:.0f}" for v in got["child_rss_mb"])
            finally:
                train = win.tab("Train")
                if train.is_training:
                    train.stop_all()
                    train.wait_finished(300)
                win.close()
    finally:
        if competitor is not None:
            competitor.kill()
            competitor.wait()
    info["competing_process"] = "yes (one busy core)" if load else "no"
    info["goal"] = "stall p99 <= 50, max <= 150; key to paint p99 <= 50; window RSS <= 1024 MB"
    info["load_average"] = (
        ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    )
    info["cpus"] = os.cpu_count()
    info["platform"] = os.environ.get("QT_QPA_PLATFORM", "native")
    return GuiBenchReport("gui", "ms", measurements, info=info)


def _cli_run(data_dir: str, agent: str, seconds: float) -> int:
    """``python main.py train`` in its own process, as a user types it; the run id."""
    cmd = [sys.executable, "main.py", "--data-dir", data_dir, "train", "--agent", agent, "--seed", "1"]
    cmd += ["--minutes", str(seconds / 60.0)]
    root = Path(__file__).resolve().parents[2]
    subprocess.run(cmd, cwd=root, check=True, capture_output=True, timeout=seconds + 600)
    from engine.paths import database_path
    from engine.store import GameStore

    with GameStore(database_path(data_dir)) as store:
        return store.list_runs()[0].id


def _window_run(app: Any, win: Any, agent: str, seconds: float) -> int:
    train = win.tab("Train")
    win.show_tab("Train")
    train.launch.select_agent(agent)
    train.launch.seedSpin.setValue(1)
    train.launch.set_budget(minutes=seconds / 60.0)
    if not train.start():
        raise RuntimeError(f"the Train tab would not start {agent}: {train.etaLabel.text()}")
    live = train.live[-1]
    if not _wait(app, lambda: not train.live, seconds + 600):
        raise RuntimeError(f"{agent} did not finish")
    if live.worker.status != "finished":
        raise RuntimeError(f"{agent} ended {live.worker.status}: {live.worker.error_message}")
    assert live.run_id is not None
    return live.run_id


def speed_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    """Training speed of the same run started from the window and from ``train``, interleaved.

    ``-o agent=NAME`` (default ntuple); each run trains ``--seconds`` (at least 5), ``--rounds`` times
    each way, alternating. Reported: moves per second of training (the run's own counters), and the
    window's over the CLI's (goal: within 10 %).
    """
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    opts = parse_options("gui-speed", options.extra, SPEED_OPTIONS)
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from engine.paths import database_path
    from engine.store import GameStore
    from studio.app import create_window

    app = QApplication.instance() or QApplication(sys.argv[:1])
    agent = trainable_agents(opts["agent"])[0]
    seconds = max(5.0, options.seconds)
    speeds: dict[str, list[float]] = {"window": [], "cli": []}
    with tempfile.TemporaryDirectory(prefix="bench-gui-speed-") as tmp:
        settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
        win = create_window(tmp, settings=settings)
        win.resize(1400, 900)
        win.show()
        try:
            for r in range(options.rounds):
                for how in ("window", "cli") if r % 2 == 0 else ("cli", "window"):
                    progress.update(0, f"round {r + 1}: {agent} from the {how}", force=True)
                    run_id = (
                        _window_run(app, win, agent, seconds)
                        if how == "window"
                        else _cli_run(tmp, agent, seconds)
                    )
                    with GameStore(database_path(tmp)) as store:
                        run = store.get_run(run_id)
                    speeds[how].append(run.steps / max(run.elapsed, 1e-9))
        finally:
            win.close()
    window, cli = float(np.mean(speeds["window"])), float(np.mean(speeds["cli"]))
    measurements = [
        Measurement("cli", f"{agent} from `train` (moves/s)", cli),
        Measurement("window", f"{agent} from the Train tab (moves/s)", window, ratio=window / cli),
    ]
    info = {
        "agent": agent,
        "seconds_per_run": seconds,
        "rounds": options.rounds,
        "each_run_moves_per_s": {k: [round(v) for v in vs] for k, vs in speeds.items()},
        "goal": "window / cli within 10 %",
    }
    return BenchReport("gui-speed", "moves/s", measurements, baseline="cli", info=info)
