"""``python main.py bench gui``: how long the GUI thread stalls while an agent trains at full speed.

The real main window is built offscreen (on a temporary data dir), the Train tab starts the agent
(``-o agent=NAME``, default dqn) with its default settings, and a 5 ms QTimer heartbeat on the GUI
thread records when it actually fires. The gaps between beats are the main thread's stalls: event
handling, plot redraws, the live board, the runs list, and waiting for the GIL that the training
thread holds. Reported: p50 / p99 / max gap in ms (goal: p99 <= 50 ms), plus the event rate and
the plot update rate, in two scenarios (after a baseline with nothing training):

* ``fresh``: a new run, its curves growing from nothing;
* ``1M points``: the same, with a million earlier points already in the live run's curves (what a
  long run looks like), to show that redraws cost the same however much history there is.

Each scenario measures for ``--seconds`` x ``--rounds`` seconds (at least 5), after the agent's
first events (its start-up, e.g. importing torch, is not what is measured).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from studio.commands.bench import BenchOptions, BenchReport, Measurement
from studio.progress import ProgressLine

HEARTBEAT_MS = 5
PRELOADED_POINTS = 1_000_000
#: Preferred agents, fastest-emitting learners first after the DQN the issue names.
AGENT_PREFERENCE = ("dqn", "policy", "ntuple", "td-afterstate")


class GuiBenchReport(BenchReport):
    """Milliseconds need decimals: the shared text layout prints whole numbers."""

    def render_text(self) -> str:
        width = max(len(m.label) for m in self.measurements)
        lines = [f"bench {self.benchmark} ({self.unit})"]
        for m in self.measurements:
            lines.append(f"  {m.label:<{width}}  {m.value:10.1f}")
        for k, v in self.info.items():
            lines.append(f"  {k}: {v}")
        return "\n".join(lines)


def _pick_agent(wanted: str | None) -> str:
    from agents.registry import agent_names, get_agent_class

    names = agent_names()
    if wanted:
        if wanted not in names:
            raise ValueError(f"unknown agent {wanted!r}: choose one of {', '.join(names)}")
        if not get_agent_class(wanted).trainable:
            raise ValueError(f"agent {wanted!r} does not learn: choose a trainable agent")
        return wanted
    for name in (*AGENT_PREFERENCE, *names):
        if name in names:
            try:
                if get_agent_class(name).trainable:
                    return name
            except Exception:  # an agent that cannot be imported here is skipped
                continue
    raise ValueError("no trainable agent is registered")


def _wait(app: Any, cond: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if cond():
            return True
        time.sleep(0.01)
    return bool(cond())


def _measure(app: Any, seconds: float) -> np.ndarray:
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


def _preload(train: Any, n: int) -> None:
    """Put ``n`` earlier points (negative counters, so x stays increasing) in the live run's curves."""
    rng = np.random.default_rng(0)
    idx = np.arange(-n, 0, dtype=np.float64)
    cols = {
        "episode": idx,
        "step": idx * 100.0,
        "elapsed": idx * 0.01,
        "score": rng.gamma(4.0, 300.0, n),
        "max_tile": 2.0 ** rng.integers(6, 11, n),
        "steps_per_s": rng.normal(2000.0, 200.0, n),
    }
    for m in (*train.curves.loss_metrics, *train.curves.schedule_metrics):
        cols[m] = np.abs(rng.normal(1.0, 0.3, n))
    live = train.curves.live
    live.add_columns(cols)
    train.curves.mark_dirty()
    train.curves.redraw()  # the one-off cost of folding a million points, before the clock starts


def gui_benchmark(options: BenchOptions, progress: ProgressLine) -> GuiBenchReport:
    """Main-thread stalls while an agent trains in the Train tab; see the module docstring."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    unknown = set(options.extra) - {"agent"}
    if unknown:
        raise ValueError(f"bench gui has no option {sorted(unknown)[0]!r} (known: agent)")
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from studio.app import create_window

    app = QApplication.instance() or QApplication(sys.argv[:1])
    agent = _pick_agent(options.extra.get("agent"))
    seconds = max(5.0, options.seconds * options.rounds)
    measurements: list[Measurement] = []
    info: dict[str, Any] = {"agent": agent, "seconds_per_scenario": seconds, "heartbeat_ms": HEARTBEAT_MS}
    with tempfile.TemporaryDirectory(prefix="bench-gui-") as tmp:
        settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
        win = create_window(tmp, settings=settings)
        try:
            win.resize(1400, 900)
            win.show()
            win.show_tab("Train")
            train = win.tab("Train")
            train.select_agent(agent)
            train.set_budget(minutes=(seconds + 600.0) / 60.0)
            # Baseline: the same window with nothing training (on a busy machine, not all of a stall
            # is the studio's).
            progress.update(0, "idle window: measuring", force=True)
            idle = _measure(app, min(seconds, 5.0))
            for stat, value in zip(("p50", "p99", "max"), np.percentile(idle, [50, 99, 100])):
                measurements.append(
                    Measurement(f"idle_{stat}", f"idle window: stall {stat} (ms)", float(value))
                )
            for key, title, preload in (("fresh", "fresh run", 0), ("1m", "1M points", PRELOADED_POINTS)):
                progress.update(0, f"{title}: starting {agent}", force=True)
                if not train.start():
                    raise RuntimeError(f"the Train tab would not start {agent}: {train.etaLabel.text()}")
                if not _wait(
                    app, lambda: train.curves.live is not None and train.curves.live.events > 0, 600
                ):
                    raise RuntimeError(f"{agent} sent no event in 10 minutes")
                if preload:
                    _preload(train, preload)
                live = train.curves.live
                ev0, fr0 = live.events, train.curves.redraws
                progress.update(0, f"{title}: measuring {seconds:.0f} s", force=True)
                gaps = _measure(app, seconds)
                events, frames = live.events - ev0, train.curves.redraws - fr0
                train.stop_training()
                train.wait_finished(300)
                if train.worker is not None and train.worker.error_message:
                    raise RuntimeError(f"training failed: {train.worker.error_message}")
                p50, p99, worst = (float(v) for v in np.percentile(gaps, [50, 99, 100]))
                for stat, value in (("p50", p50), ("p99", p99), ("max", worst)):
                    measurements.append(Measurement(f"{key}_{stat}", f"{title}: stall {stat} (ms)", value))
                measurements.append(
                    Measurement(f"{key}_events_per_s", f"{title}: events/s", events / seconds)
                )
                measurements.append(
                    Measurement(f"{key}_frames_per_s", f"{title}: plot updates/s (5 plots)", frames / seconds)
                )
                info[f"{key}_beats"] = len(gaps)
                info[f"{key}_points_on_plots"] = int(
                    live.count("score") + live.count(train.curves.loss_metrics[0])
                )
        finally:
            if win.tab("Train").is_training:
                win.tab("Train").stop_training()
                win.tab("Train").wait_finished(300)
            win.close()
    info["goal"] = "p99 <= 50 ms"
    info["load_average"] = (
        ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    )
    info["cpus"] = os.cpu_count()
    info["platform"] = os.environ.get("QT_QPA_PLATFORM", "native")
    return GuiBenchReport("gui", "ms", measurements, info=info)
