"""Runs in child processes: a killed child fails its run and the app lives on (and the CLI resumes it), two
runs at once, stop during a checkpoint write, a window that dies, a run left to finish headless."""

from __future__ import annotations

import os
import signal
import time

import pytest
from PySide6.QtCore import Qt

from agents.base import Budget
from agents.checkpoint import load_checkpoint
from agents.registry import target_of
from engine.store import GameStore
from studio.cli import main as cli_main
from studio.services.messages import CheckpointSaved, Done, Events, Failed, Started
from studio.services.runs import RunRequest
from studio.services.training_process import TrainingProcess, exit_reason
from studio.tabs.train import TrainTab
from tests.studio.train_fakes import register_fakes

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")
CLICK = Qt.MouseButton.LeftButton


@pytest.fixture
def store(store: GameStore, monkeypatch) -> GameStore:
    """The shared store, with the fake agents registered (these tests use them with and without the tab)."""
    register_fakes(monkeypatch)
    return store


def _start(qtbot, tab: TrainTab, episodes: int, delay_ms: float = 1.0) -> int:
    tab.launch.select_agent("fake_learner")
    tab.launch.form.set_values({"delay_ms": delay_ms})
    tab.launch.set_budget(episodes=episodes)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    return int(started.args[0])


def _fake_request(**kw) -> RunRequest:
    return RunRequest(agent="fake_learner", target=target_of("fake_learner"), **kw)


def test_a_killed_child_fails_its_run_the_app_lives_and_the_cli_resumes_it(qtbot, tab, store, data_dir):
    run_id = _start(qtbot, tab, episodes=10**6)
    live = tab.focus
    assert live is not None and live.worker.process.pid != os.getpid()
    qtbot.waitUntil(lambda: live.episodes >= 3, timeout=20_000)
    # A checkpoint to resume from, then SIGKILL: no goodbye from the child at all.
    with qtbot.waitSignal(live.worker.checkpointSaved, timeout=20_000):
        qtbot.mouseClick(tab.runsPanel.checkpointButton, CLICK)
    saved = load_checkpoint(store.last_checkpoint(run_id)).counters.episodes
    with qtbot.waitSignal(tab.trainingFinished, timeout=20_000) as fin:
        os.kill(live.worker.process.pid, signal.SIGKILL)
    assert fin.args == ["failed"]
    assert tab.error_box is not None and "killed by SIGKILL" in tab.error_box.text()
    run = store.get_run(run_id)
    assert run.status == "failed" and "killed by SIGKILL" in (run.error or "")
    assert not tab.is_training and tab.startButton.isEnabled()
    tab.error_box.close()
    # The app lives on: another run trains to its end.
    other = _start(qtbot, tab, episodes=2, delay_ms=0.0)
    qtbot.waitUntil(lambda: not tab.is_training, timeout=30_000)
    assert store.get_run(other).status == "finished"
    # The command line continues the killed run from its last checkpoint.
    assert cli_main(["--data-dir", str(data_dir), "train", "--resume", str(run_id), "--episodes", "2"]) == 0
    after = store.get_run(run_id)
    assert after.status == "finished" and after.episodes == saved + 2


def test_two_runs_at_once_each_with_its_own_stop_both_land_in_the_store(qtbot, tab, store):
    first = _start(qtbot, tab, episodes=10**6)
    second = _start(qtbot, tab, episodes=6, delay_ms=0.5)
    assert len(tab.live) == 2 and tab.is_training
    with qtbot.waitSignal(tab.trainingFinished, timeout=60_000) as fin:
        pass  # the short run ends by itself; the long one trains on
    assert fin.args == ["finished"] and len(tab.live) == 1 and tab.live[0].run_id == first
    # Stop the long one from the runs table.
    tab.select_runs([first])
    assert tab.runsPanel.runStopButton.isEnabled()
    with qtbot.waitSignal(tab.trainingFinished, timeout=30_000) as fin:
        qtbot.mouseClick(tab.runsPanel.runStopButton, CLICK)
    assert fin.args == ["stopped"]
    for rid, status in ((first, "stopped"), (second, "finished")):
        run = store.get_run(rid)
        assert run.status == status
        episodes = store.run_metrics(rid)["episode"]
        assert len(episodes) > 0 and int(episodes.max()) == run.episodes
    assert store.get_run(second).episodes == 6
    # Both are drawn: each live series got its own events.
    assert sorted(r.count("score") for _, r in tab.curves.runs) == sorted([store.get_run(first).episodes, 6])


def test_pause_and_stop_during_a_checkpoint_write(qtbot, tab, store):
    run_id = _start(qtbot, tab, episodes=10**6)
    live = tab.focus
    qtbot.waitUntil(lambda: live.episodes >= 2, timeout=20_000)
    qtbot.mouseClick(tab.pauseButton, CLICK)
    qtbot.waitUntil(lambda: store.get_run(run_id).status == "paused", timeout=10_000)
    qtbot.mouseClick(tab.pauseButton, CLICK)
    qtbot.waitUntil(lambda: store.get_run(run_id).status == "running", timeout=10_000)
    # "checkpoint now" and "stop" back to back: the stop lands while the checkpoint is written.
    tab.select_runs([run_id])
    with qtbot.waitSignal(tab.trainingFinished, timeout=30_000) as fin:
        qtbot.mouseClick(tab.runsPanel.checkpointButton, CLICK)
        qtbot.mouseClick(tab.stopButton, CLICK)
    assert fin.args == ["stopped"]
    run = store.get_run(run_id)
    checkpoints = store.run_checkpoints(run_id)
    assert run.status == "stopped" and checkpoints[-1].final
    assert load_checkpoint(checkpoints[-1].path).counters.episodes == run.episodes


def test_a_window_that_dies_stops_its_run_cleanly(store):
    proc = TrainingProcess(_fake_request(budget=Budget(episodes=10**6), config={"delay_ms": 1.0}), store.path)
    messages = proc.messages()
    assert isinstance(next(messages), Started)
    proc._in.close()  # what the child sees when the window's process is gone
    rest = list(messages)
    assert proc.wait(30) == 0, exit_reason(proc.returncode)
    assert isinstance(rest[-1], Done) and rest[-1].status == "stopped"
    run = store.list_runs()[0]
    assert run.status == "stopped" and store.run_checkpoints(run.id)[-1].final


def test_a_detached_run_finishes_headless(store):
    proc = TrainingProcess(_fake_request(budget=Budget(episodes=5), config={"delay_ms": 20.0}), store.path)
    messages = proc.messages()
    assert isinstance(next(messages), Started)
    proc.detach()
    proc._out.close()  # the window is gone: nobody reads any more
    assert proc.wait(60) == 0
    run = store.list_runs()[0]
    assert run.status == "finished" and run.episodes == 5


def test_a_learner_silent_too_long_is_ended_and_its_run_fails_with_the_reason(store):
    """A learner stuck inside one call (here: a second a move, so a game takes minutes) is ended by
    the child's watchdog; nothing else could stop it."""
    request = _fake_request(budget=Budget(episodes=10), config={"delay_ms": 1000.0})
    proc = TrainingProcess(request, store.path, no_progress_s=1.0)
    started = time.monotonic()
    kinds = [type(m) for m in proc.messages()]
    assert proc.wait(30) == 3 and time.monotonic() - started < 30, kinds
    assert kinds[0] is Started and kinds[-1] is Failed
    run = store.list_runs()[0]
    assert run.status == "failed" and run.error is not None
    assert run.error.startswith("no progress: the learner reported nothing for 0:0")


def test_a_paused_learner_is_not_taken_for_a_stuck_one(store):
    proc = TrainingProcess(
        _fake_request(budget=Budget(episodes=10**6), config={"delay_ms": 2.0}), store.path, no_progress_s=1.0
    )
    messages = proc.messages()
    assert isinstance(next(messages), Started)
    proc.send("pause")
    time.sleep(3.0)  # three times the limit, silent while paused
    assert proc.returncode is None
    proc.send("resume")
    proc.send("stop")
    last = next(m for m in messages if isinstance(m, Done | Failed))
    assert isinstance(last, Done) and last.status == "stopped"
    assert proc.wait(30) == 0


def test_a_request_the_child_refuses_comes_back_as_one_line_with_its_field(store):
    proc = TrainingProcess(RunRequest(agent="dqn", budget=None), store.path)
    assert list(proc.messages()) == [
        Failed("give a budget: episodes, minutes, steps or CPU-seconds", "budget", "")
    ]
    assert proc.wait(30) == 2


def test_a_reopened_window_follows_a_headless_run_and_stops_it(qtbot, store, monkeypatch):
    # A run left to finish without the window (the user chose "Keep training" when closing it).
    proc = TrainingProcess(_fake_request(budget=Budget(episodes=10**6), config={"delay_ms": 2.0}), store.path)
    messages = proc.messages()
    run_id = next(messages).run_id
    proc.detach()
    # The studio opens again on the same data: the run is listed as training elsewhere.
    tab = TrainTab(store, None)
    qtbot.addWidget(tab)
    monkeypatch.setattr(tab, "ask_close", lambda: "stop")
    tab.show()
    qtbot.waitUntil(lambda: tab.runsTable.rowCount() == 1, timeout=5000)
    assert tab.runsTable.item(0, 2).text() == f"running elsewhere (pid {proc.pid})"
    assert not tab.is_training
    tab.select_runs([run_id])
    assert tab.runsPanel.runStopButton.isEnabled() and not tab.resumeButton.isEnabled()
    # Show follows it: the curves grow as its events reach the store.
    qtbot.mouseClick(tab.showRunsButton, CLICK)
    series = next(r for k, r in tab.curves.runs if k == ("follow", run_id))
    n0 = series.count("score")
    qtbot.waitUntil(lambda: series.count("score") > n0 + 3, timeout=20_000)
    # Stop asks its process to stop and save; the table shows the end.
    with qtbot.waitSignal(tab.follower.ended, timeout=30_000) as ended:
        qtbot.mouseClick(tab.runsPanel.runStopButton, CLICK)
    assert ended.args == [run_id, "stopped"]
    assert proc.wait(30) == 0
    run = store.get_run(run_id)
    assert run.status == "stopped" and store.run_checkpoints(run_id)[-1].final
    assert tab.runsTable.item(0, 2).text() == "stopped"
    assert series.count("score") == run.episodes  # every episode drawn once
    tab.shutdown()


def test_the_cli_exports_a_run_and_stops_one_training_elsewhere(store, data_dir, capsys):
    """What the window does to a run, the command line does too: export its metrics, stop it."""
    import csv

    proc = TrainingProcess(_fake_request(budget=Budget(episodes=10**6), config={"delay_ms": 2.0}), store.path)
    messages = proc.messages()
    run_id = next(messages).run_id
    for msg in messages:  # a finished game first, so that there is a history to export
        if isinstance(msg, Events) and any(e.kind == "episode" for e in msg.events):
            break
    proc.detach()
    assert cli_main(["--data-dir", str(data_dir), "runs", "stop", str(run_id)]) == 0
    assert f"asked process {proc.pid} to stop" in capsys.readouterr().out
    assert proc.wait(30) == 0
    run = store.get_run(run_id)
    assert run.status == "stopped" and store.run_checkpoints(run_id)[-1].final
    # Stopping it again is a one-line refusal.
    assert cli_main(["--data-dir", str(data_dir), "runs", "stop", str(run_id)]) == 2
    assert "is stopped, not training" in capsys.readouterr().err
    out = data_dir / "m.csv"
    assert cli_main(["--data-dir", str(data_dir), "runs", "export", str(run_id), str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert rows and len(rows) == len(store.run_metrics(run_id)["episode"])
    assert int(rows[-1]["episode"]) == run.episodes


def test_closing_the_window_with_keep_training_lets_the_run_finish_headless(qtbot, store, monkeypatch):
    from PySide6.QtWidgets import QMainWindow

    win = QMainWindow()
    qtbot.addWidget(win)
    tab = TrainTab(store, None, win)
    win.setCentralWidget(tab)
    win.show()
    run_id = _start(qtbot, tab, episodes=4, delay_ms=10.0)
    pid = tab.focus.worker.process.pid
    monkeypatch.setattr(tab, "ask_close", lambda: "detach")
    ended: list[str] = []
    tab.trainingFinished.connect(ended.append)
    t0 = time.monotonic()
    assert win.close()
    assert time.monotonic() - t0 < 5  # the window lets go at once...
    assert not tab.is_training and ended == ["detached"]
    assert store.get_run(run_id).status == "running"  # ...and the run trains on without it
    deadline = time.monotonic() + 60
    while store.get_run(run_id).status == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    run = store.get_run(run_id)
    assert run.status == "finished" and run.episodes == 4 and run.pid == pid


def test_a_run_has_one_owner_and_a_killed_owner_leaves_no_lock_behind(store, data_dir, capsys):
    from engine.store import StoreError

    proc = TrainingProcess(_fake_request(budget=Budget(episodes=10**6), config={"delay_ms": 2.0}), store.path)
    messages = proc.messages()
    run_id = next(messages).run_id
    for msg in messages:  # a checkpoint to resume from
        if isinstance(msg, Events):
            proc.send("checkpoint")
        if isinstance(msg, CheckpointSaved):
            break
    # A second owner is refused, whether it asks the store directly or through `train --resume`.
    with pytest.raises(StoreError, match=f"in process {proc.pid}"):
        store.claim_run(run_id)
    assert cli_main(["--data-dir", str(data_dir), "train", "--resume", str(run_id), "--episodes", "1"]) == 2
    assert "stop it there first" in capsys.readouterr().err
    # Killed, the owner leaves nothing behind: the next one takes the run over and trains it.
    proc.kill()
    proc.wait(10)
    store.claim_run(run_id)
    assert store.get_run(run_id).pid == os.getpid()
    store.set_run_status(run_id, "stopped")
    assert cli_main(["--data-dir", str(data_dir), "train", "--resume", str(run_id), "--episodes", "1"]) == 0
    assert store.get_run(run_id).status == "finished"
