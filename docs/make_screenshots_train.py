"""Regenerate docs/screenshot-{train,arena}.png: ``python docs/make_screenshots_train.py``.

Builds the real main window on a throw-away data dir (offscreen, no display needed), trains an
n-tuple network from the Train tab for about a minute and grabs the tab mid-run, then sends the
run's checkpoint to the Arena with "Use in Arena" and evaluates it against the baselines there.
Timings depend on the machine, so the pictures differ from run to run in their details.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

SIZE = (1280, 800)
LEARNER = "ntuple"  # learns fast enough for a minute to show a rising curve
WARMUP_LEARNER = "td-afterstate"  # a short earlier run, so the runs list has history
TRAIN_SECONDS = 75.0
ARENA_AGENTS = ("random", "greedy")
ARENA_GAMES = 40


def settle(app: QApplication, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def main(out_dir: Path = ROOT / "docs") -> None:
    from agents.registry import agent_names
    from studio.app import create_window

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tmp = Path(tempfile.mkdtemp(prefix="studio-shots-train-"))
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    window = create_window(tmp / "data", settings=settings)
    window.resize(*SIZE)
    window.show()
    window.show_tab("Train")
    train = window.tab("Train")
    settle(app, 0.5)

    if WARMUP_LEARNER in agent_names():
        train.launch.select_agent(WARMUP_LEARNER)
        train.launch.set_budget(minutes=0.25)
        train.start()
        while train.is_training:
            settle(app, 0.2)

    train.launch.select_agent(LEARNER)
    train.launch.set_budget(minutes=4)
    train.launch.seedSpin.setValue(2048)
    train.start()
    settle(app, TRAIN_SECONDS)
    run_id = train.focus.run_id if train.focus is not None else None
    if run_id is not None:
        train.select_runs([run_id])
    train.curves.redraw()
    settle(app, 0.5)
    window.grab().save(str(out_dir / "screenshot-train.png"))
    train.stop_training()
    train.wait_finished(120)

    # Arena: the run's checkpoint against the baselines, through "Use in Arena".
    arena = window.tab("Arena")
    for name in ARENA_AGENTS:
        arena.add_agent(name)
    if run_id is not None:
        train.select_runs([run_id])
        train.runsPanel.use_selected_in_arena()
    arena.gamesSpin.setValue(ARENA_GAMES)
    arena.seedSpin.setValue(7)
    arena.workersSpin.setValue(min(2, arena.workersSpin.maximum()))
    window.show_tab("Arena")
    arena.run()
    while arena.is_running:
        settle(app, 0.2)
    if arena.results:
        arena.resultsTable.selectRow(len(arena.results) - 1)
    settle(app, 0.5)
    window.grab().save(str(out_dir / "screenshot-arena.png"))
    window.close()
    print(f"wrote screenshot-train.png, screenshot-arena.png to {out_dir}")


if __name__ == "__main__":
    main()
