"""The Train tab says each state right (issue #33): the runs table's Pause / Resume, the time left of a
run, a run training elsewhere updating live, and "Being played now" only while a game is played."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt

from agents.base import Budget, MetricEvent
from studio.tabs.train import SWEEP_CAPTION, TrainTab, eta_text
from studio.tabs.train.live import LiveRun, eta_seconds
from studio.widgets.curves import RunSeries
from tests.studio.tab_fixtures import lr_sweep_dialog

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")

CLICK = Qt.MouseButton.LeftButton


def _event(elapsed: float, progress: float, episode: int = 1, step: int = 10) -> MetricEvent:
    return MetricEvent("episode", episode, step, elapsed, {"score": 100.0}, progress=progress)


# ------------------------------------------------------------------------------ the time left
def test_eta_follows_a_minutes_budget_to_the_second() -> None:
    """The issue's case: a 2-minute budget, 19 s trained -> 101 s left (it read 2:23 after 0:19, the
    window's clock counting the child's seconds of start-up as training)."""
    budget = Budget(seconds=120.0)
    p = budget.progress(episodes=40, steps=3000, seconds=19.0)
    assert p == pytest.approx(19 / 120)
    assert eta_seconds(p, 19.0) == pytest.approx(101.0)
    run = LiveRun(SimpleNamespace(run_id=1), RunSeries("run 1 dqn"))  # type: ignore[arg-type]
    run.add([_event(5.0, budget.progress(10, 800, 5.0)), _event(19.0, p)])
    assert run.trained_s == 19.0
    assert eta_text(run) == "0:19 trained · 1:41 left"


def test_eta_follows_the_limit_that_ends_the_run_first() -> None:
    """1,000 episodes or 2 minutes: 500 episodes in 19 s end the run in 19 s more (the minutes would
    last 101 s); 100 episodes in 19 s leave the minutes to end it: 101 s."""
    budget = Budget(episodes=1000, seconds=120.0)
    assert eta_seconds(budget.progress(500, 0, 19.0), 19.0) == pytest.approx(19.0)
    assert eta_seconds(budget.progress(100, 0, 19.0), 19.0) == pytest.approx(101.0)
    # moves: 250k of 1M in 10 s -> 30 s left
    assert eta_seconds(Budget(steps=1_000_000).progress(0, 250_000, 10.0), 10.0) == pytest.approx(30.0)
    assert eta_seconds(0.0, 3.0) is None  # nothing done yet: unknown, not "0:00"


def test_eta_of_a_resumed_run_counts_from_its_first_event() -> None:
    """A resumed run's counters go on from its checkpoint (300 s trained before): its first event is
    where this call's budget began. 0.1 -> 0.2 of the budget in 12 s: 0.8 left takes 96 s."""
    run = LiveRun(SimpleNamespace(run_id=4), RunSeries("run 4 dqn"), anchor=None)  # type: ignore[arg-type]
    run.add([_event(300.0, 0.1)])
    assert run.eta_s() is None and run.trained_s == 0.0
    run.add([_event(312.0, 0.2)])
    assert run.eta_s() == pytest.approx(96.0)
    assert eta_text(run) == "0:12 trained · 1:36 left"


# ------------------------------------------------------------------------------ the runs table's Pause
def test_the_runs_table_pause_button_says_what_it_will_do(qtbot, tab, store):
    """Pause in the runs table reads "Resume" while the run is paused and "Pause" while it trains, at
    once after each click (it was one state behind), and the Status column says the same."""
    tab.launch.select_agent("fake_learner")
    tab.launch.form.set_values({"delay_ms": 2.0})
    tab.launch.set_budget(episodes=10**6)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    run_id = started.args[0]
    qtbot.waitUntil(lambda: tab.runsPanel.selected_run_ids() == [run_id], timeout=5000)
    button = tab.runsPanel.runPauseButton
    assert button.text() == "Pause" and button.isEnabled()

    def status_cell() -> str:
        return next(
            tab.runsTable.item(r, 2).text()
            for r in range(tab.runsTable.rowCount())
            if tab.runsTable.item(r, 0).text() == str(run_id)
        )

    qtbot.mouseClick(button, CLICK)
    assert button.text() == "Resume" and status_cell() == "paused"
    assert tab.pauseButton.text() == "Resume"
    qtbot.waitUntil(lambda: store.get_run(run_id).status == "paused", timeout=5000)
    qtbot.wait(400)  # the live refresh runs meanwhile: it must not turn it back
    assert button.text() == "Resume" and status_cell() == "paused"

    qtbot.mouseClick(button, CLICK)
    assert button.text() == "Pause" and status_cell() == "running"
    assert tab.pauseButton.text() == "Pause"
    qtbot.wait(400)
    assert button.text() == "Pause"

    # The tab's own Pause (under the form) and the table's agree too.
    qtbot.mouseClick(tab.pauseButton, CLICK)
    assert button.text() == "Resume" and status_cell() == "paused"
    qtbot.mouseClick(tab.pauseButton, CLICK)
    assert button.text() == "Pause" and status_cell() == "running"

    with qtbot.waitSignal(tab.trainingFinished, timeout=30_000):
        qtbot.mouseClick(tab.stopButton, CLICK)


# ------------------------------------------------------------------------------ a run trained elsewhere
def _row(tab: TrainTab, run_id: int) -> list[str]:
    t = tab.runsTable
    for r in range(t.rowCount()):
        if t.item(r, 0).text() == str(run_id):
            return [t.item(r, c).text() for c in range(t.columnCount())]
    raise AssertionError(f"no row for run {run_id}")


def test_a_run_training_elsewhere_updates_its_row_live(qtbot, tab, store, data_dir):
    """A run trained by another process (``python main.py train``) shows its moves and time growing in
    the runs table without a click (they stood still until the run was double-clicked)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "main.py",
            "--data-dir",
            str(data_dir),
            "train",
            "--agent",
            "ntuple",
            "--minutes",
            "5",
            "--eval-games",
            "0",
        ],
        cwd=str(Path(__file__).resolve().parents[2]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        qtbot.waitUntil(
            lambda: any(r.status == "running" and r.steps > 0 for r in store.list_runs()), timeout=60_000
        )
        tab.refresh_runs()
        run_id = next(r.id for r in store.list_runs() if r.status == "running")
        assert run_id in tab.runsPanel.elsewhere
        first = _row(tab, run_id)
        assert "elsewhere" in first[2]
        moves0 = int(first[4].replace(",", ""))
        qtbot.waitUntil(lambda: int(_row(tab, run_id)[4].replace(",", "")) > moves0, timeout=15_000)
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: the run stops after its step, with a checkpoint
        proc.wait(60)
    # It ended: the row says so by itself too.
    qtbot.waitUntil(lambda: "elsewhere" not in _row(tab, run_id)[2], timeout=15_000)


# ------------------------------------------------------------------------------ "Being played now"
def test_being_played_now_only_while_a_run_of_the_window_plays(qtbot, tab, store):
    """The board's caption says "Being played now" only while a run of this window trains; once the
    run ended it names the run and says it ended, and a sweep (whose trials play in other processes)
    does not show an ended run's board as its own."""
    live_panel = tab.livePanel
    assert live_panel.boardCaption.text() != "Being played now"  # nothing trains yet
    board_y = live_panel.liveBoard.y()  # the board stays put whatever its caption says
    tab.launch.select_agent("fake_learner")
    tab.launch.form.set_values({"delay_ms": 0.0})
    tab.launch.set_budget(episodes=3)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    run_id = started.args[0]
    qtbot.waitUntil(lambda: not tab.is_training, timeout=30_000)
    caption = live_panel.boardCaption.text()
    assert caption == f"Last board of run {run_id} (finished)"
    assert live_panel.liveBoard.board.any()  # its last board stays, named as such
    # Read whole: the caption wraps onto a second line, and the layout gives it the room (its top
    # line was cut off above the board).
    label = live_panel.boardCaption
    assert label.heightForWidth(label.width()) >= 2 * label.fontMetrics().lineSpacing()
    assert label.height() >= label.heightForWidth(label.width())
    assert live_panel.liveBoard.y() == board_y

    # A sweep begins (its trials train in their own processes): the ended run's board goes.
    tab.launch.select_agent("ntuple")
    tab.launch.set_budget(episodes=400)
    dialog = lr_sweep_dialog(qtbot, tab)
    qtbot.mouseClick(dialog.startButton, CLICK)
    assert tab.sweep is not None
    assert live_panel.boardCaption.text() == SWEEP_CAPTION
    assert not live_panel.liveBoard.board.any()
    with qtbot.waitSignal(tab.sweepFinished, timeout=120_000):
        tab.stop_sweep()


# ------------------------------------------------------------------------------ closing during a sweep
def test_closing_during_a_sweep_can_keep_it_training_without_the_window(qtbot, tab, store, monkeypatch):
    """ "Keep training" as for a run: the window's sweep driver stops (each trial saves a checkpoint)
    and ``sweep --resume`` goes on in a process of its own, which finishes the sweep after the
    window is gone."""
    tab.launch.select_agent("ntuple")
    tab.launch.set_budget(episodes=3000)
    dialog = lr_sweep_dialog(qtbot, tab)
    dialog.evalGamesSpin.setValue(0)
    qtbot.mouseClick(dialog.startButton, CLICK)
    qtbot.waitUntil(lambda: tab.sweep is not None and bool(tab.sweep.progress.running), timeout=60_000)
    sweep_id = tab.sweep.progress.sweep_id
    asked: list[str] = []
    monkeypatch.setattr(tab, "ask_close_sweep", lambda: asked.append("sweep") or "detach")
    assert tab.confirm_close() is True and asked == ["sweep"]
    assert tab.sweep is None
    proc = tab.headless
    assert proc is not None
    try:
        # The headless process owns the sweep now: it runs, then finishes every trial.
        qtbot.waitUntil(lambda: store.get_sweep(sweep_id).status == "running", timeout=60_000)
        assert proc.poll() is None
        assert proc.wait(240) == 0
        info = store.get_sweep(sweep_id)
        assert info.status == "finished" and info.n_finished == 2
        log = store.path.parent / "logs" / f"sweep-{sweep_id}.log"
        assert log.exists()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)


def test_the_close_question_offers_keep_training_for_a_sweep(qtbot, tab):
    """The question itself: Stop and close, Keep training, Cancel; each click says which."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    from studio.tabs.train.sweep import ask_close_with_sweep

    def click(text: str) -> None:
        box = next(
            w for w in QApplication.topLevelWidgets() if w.objectName() == "closeSweepBox" and w.isVisible()
        )
        assert isinstance(box, QMessageBox)
        labels = [b.text() for b in box.buttons()]
        assert {"Stop and close", "Keep training"} <= set(labels)
        qtbot.mouseClick(next(b for b in box.buttons() if b.text() == text), CLICK)

    for text, answer in (("Keep training", "detach"), ("Stop and close", "stop")):
        QTimer.singleShot(300, lambda text=text: click(text))
        assert ask_close_with_sweep(tab, 7, 3) == answer
