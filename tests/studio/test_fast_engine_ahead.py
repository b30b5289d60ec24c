"""The jitted kernels are compiled ahead, in a child process, when the window starts (issue 44), and the
status bar says so while it takes longer than a cache load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import studio.tabs.train as train_module
from studio.services import training_process

pytest_plugins = ("tests.studio.gui_fixtures",)

ROOT = Path(__file__).resolve().parents[2]


def test_the_status_bar_says_the_fast_engine_is_being_prepared(qtbot, window, monkeypatch) -> None:
    # A fake compile of 2 s stands for numba's ~30 s; the message comes once it outlasts a cache load.
    def slow_child() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2.0)"])

    monkeypatch.setattr(training_process, "start_prepare", slow_child)
    monkeypatch.setattr(train_module, "PREPARE_QUIET_S", 0.5)
    train = window.tab("Train")
    assert train.prepare_fast_engine()  # what run_app does at the window's start
    assert not train.prepare_fast_engine()  # once
    bar = window.statusBar()
    qtbot.waitUntil(lambda: bar.currentMessage() == train_module.PREPARING_TEXT, timeout=5000)
    window.grab().save("/tmp/shots/fast_engine_preparing.png")
    qtbot.waitUntil(lambda: bar.currentMessage() == train_module.PREPARED_TEXT, timeout=10_000)
    assert train.preparing is not None and train.preparing.returncode == 0


def test_a_quick_prepare_says_nothing(qtbot, window, monkeypatch) -> None:
    """Kernels already cached load in a moment: no message at each start."""
    said: list[str] = []
    monkeypatch.setattr(
        training_process, "start_prepare", lambda: subprocess.Popen([sys.executable, "-c", "pass"])
    )
    train = window.tab("Train")
    train.status.connect(said.append)
    train.prepare_fast_engine()
    qtbot.waitUntil(lambda: train.preparing.poll() is not None, timeout=10_000)
    qtbot.wait(1500)  # the poll sees the end
    assert not train._prepareTimer.isActive()
    assert train_module.PREPARING_TEXT not in said and train_module.PREPARED_TEXT not in said


def test_the_prepare_child_compiles_the_ntuple_kernels() -> None:
    """The real child: it builds the n-tuple network, warms its training and its moves, and exits 0."""
    done = subprocess.run(
        [sys.executable, "-m", "studio.services.training_process", training_process.PREPARE_ARG],
        cwd=ROOT,
        capture_output=True,
        timeout=580,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
