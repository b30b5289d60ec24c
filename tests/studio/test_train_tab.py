"""The Train tab with real clicks: start / pause / resume / stop, errors, runs (re-open, compare, resume,
export, hand to Play / Arena), every registered agent's form and a tiny run of every trainable one."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMainWindow

import agents.config
from agents import registry
from agents.checkpoint import load_checkpoint
from engine import Game, Rules
from engine.records import GameTrace, play_recorded
from engine.store import GameStore
from studio.tabs.train import TrainTab, write_metrics_csv
from tests.studio.gui_helpers import load_preset_with_keys
from tests.studio.tab_fixtures import fake_run
from tests.studio.train_fakes import register_fakes

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")

CLICK = Qt.MouseButton.LeftButton


def _make_tab(qtbot, store, parent=None) -> TrainTab:
    tab = TrainTab(store, None, parent)
    if parent is None:
        qtbot.addWidget(tab)
        tab.resize(1200, 800)
        tab.show()
    return tab


def _train(qtbot, tab: TrainTab, timeout: int = 60_000) -> str:
    with qtbot.waitSignal(tab.trainingFinished, timeout=timeout) as sig:
        qtbot.mouseClick(tab.startButton, CLICK)
    return sig.args[0]


def test_a_tiny_run_draws_curves_and_lands_in_the_store(qtbot, tab, store):
    tab.launch.select_agent("fake_learner")
    assert tab.launch.agentCombo.currentText() == "fake_learner"
    # change a field with real key presses
    spin = tab.launch.form.field_widget("batch")
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "64")
    tab.launch.form.set_values({"delay_ms": 0.0})
    tab.launch.set_budget(episodes=3)
    # Read the buttons the moment the run starts: a 3-episode run may be over before waitSignal returns.
    buttons_at_start: list[tuple[bool, bool]] = []
    tab.runStarted.connect(
        lambda *_: buttons_at_start.append((tab.startButton.isEnabled(), tab.stopButton.isEnabled()))
    )
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    assert buttons_at_start == [(True, True)]  # another run may start beside this one
    qtbot.waitUntil(lambda: not tab.is_training, timeout=30_000)
    run_id = started.args[0]

    # curves: every episode is on the score plot, the loss plot has the update events
    tab.curves.redraw()
    assert tab.curves.data_length("scorePlot") == 3
    assert tab.curves.data_length("maxTilePlot") == 3
    assert tab.curves.data_length("lossPlot") > 0
    assert tab.curves.data_length("explorationPlot") > 0
    assert tab.curves.data_length("speedPlot") == 3
    assert tab.progressBar.value() == 1000
    assert "Finished" in tab.etaLabel.text()

    run = store.get_run(run_id)
    assert run.agent == "fake_learner" and run.status == "finished"
    assert run.config["batch"] == 64 and run.episodes == 3
    cols = store.run_metrics(run_id)
    scores = cols["score"][~np.isnan(cols["score"])]
    live = tab.curves.live
    assert live is not None
    np.testing.assert_array_equal(scores, live.metrics["score"].y.view)
    # the runs list shows it, and its final checkpoint loads into the same agent
    assert tab.runsTable.rowCount() == 1 and tab.runsTable.item(0, 0).text() == str(run_id)
    agent = load_checkpoint(store.last_checkpoint(run_id))
    assert agent.name == "fake_learner" and agent.counters.episodes == 3
    assert agent.config.batch == 64


def test_pause_stops_the_event_flow_resume_continues_stop_keeps_a_checkpoint(qtbot, tab, store):
    fake_run(tab, episodes=10**6, delay_ms=1.0)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    run_id = started.args[0]
    live = tab.curves.live
    qtbot.waitUntil(lambda: live.events >= 5, timeout=10_000)
    n0 = tab.curves.data_length("lossPlot")
    qtbot.waitUntil(lambda: (tab.curves.redraw(), tab.curves.data_length("lossPlot"))[1] > n0, timeout=10_000)

    qtbot.mouseClick(tab.pauseButton, CLICK)
    assert tab.pauseButton.text() == "Resume"
    qtbot.wait(300)  # what was in flight arrives
    n_paused = live.events
    qtbot.wait(500)
    assert live.events == n_paused
    qtbot.waitUntil(lambda: store.get_run(run_id).status == "paused", timeout=5000)

    qtbot.mouseClick(tab.pauseButton, CLICK)
    assert tab.pauseButton.text() == "Pause"
    qtbot.waitUntil(lambda: live.events > n_paused + 3, timeout=10_000)

    with qtbot.waitSignal(tab.trainingFinished, timeout=30_000) as fin:
        qtbot.mouseClick(tab.stopButton, CLICK)
    assert fin.args == ["stopped"]
    run = store.get_run(run_id)
    assert run.status == "stopped"
    path = store.last_checkpoint(run_id)
    assert path is not None and path.exists()
    agent = load_checkpoint(path)
    assert agent.counters.episodes == run.episodes or agent.counters.episodes >= 0
    assert agent.counters.steps > 0
    assert "checkpoint" in tab.etaLabel.text()
    assert tab.startButton.isEnabled()


def test_a_failing_agent_shows_the_error_marks_the_run_failed_and_the_app_lives(qtbot, tab, store):
    tab.launch.select_agent("failing_learner")
    tab.launch.set_budget(episodes=100)
    assert _train(qtbot, tab) == "failed"
    box = tab.error_box
    assert box is not None and box.isVisible()
    assert "RuntimeError: boom: the fake learner exploded" in box.text()
    assert "Traceback" in box.detailedText()
    run = store.list_runs()[0]
    assert run.agent == "failing_learner" and run.status == "failed"
    assert "boom" in (run.error or "")
    box.close()
    # the tab still trains
    fake_run(tab, episodes=2)
    assert _train(qtbot, tab) == "finished"


def test_out_of_range_value_is_marked_and_blocks_start(qtbot, tab):
    tab.launch.select_agent("fake_learner")
    tab.launch.form.set_values({"batch": 5000})
    label = tab.launch.form.error_label("batch")
    assert label.isVisible() and label.text() == "must be in [1, 1024]; got 5000"
    assert not tab.startButton.isEnabled()
    tab.launch.form.set_values({"batch": 16})
    assert tab.startButton.isEnabled()


def test_rules_that_make_no_game_are_explained(qtbot, tab):
    tab.launch.select_agent("fake_learner")
    tab.launch.rowsSpin.setValue(1)
    tab.launch.colsSpin.setValue(2)
    tab.launch.startTilesSpin.setValue(3)
    assert tab.launch.rulesError.isVisible() and "start_tiles" in tab.launch.rulesError.text()
    assert not tab.startButton.isEnabled()
    tab.launch.startTilesSpin.setValue(1)
    assert not tab.launch.rulesError.isVisible() and tab.startButton.isEnabled()
    assert tab.launch.rules() == Rules(rows=1, cols=2, start_tiles=1)


def test_budget_in_minutes(qtbot, tab):
    tab.launch.set_budget(minutes=0.5)
    assert tab.launch.minutesCheck.isChecked() and tab.launch.budget().seconds == 30.0
    tab.launch.set_budget(episodes=7)
    assert tab.launch.budget().episodes == 7 and tab.launch.budget().seconds is None


def test_runs_reopen_after_a_restart_and_overlay_to_compare(qtbot, tab, store, monkeypatch):
    fake_run(tab, episodes=3)
    assert _train(qtbot, tab) == "finished"
    fake_run(tab, episodes=5)
    assert _train(qtbot, tab) == "finished"
    tab.shutdown()

    # a "restart": a new tab on the same data
    again = _make_tab(qtbot, store)
    again.refresh_runs()
    assert again.runsTable.rowCount() == 2
    ids = [r.id for r in store.list_runs()]
    again.select_runs([ids[1]])
    qtbot.mouseClick(again.showRunsButton, CLICK)
    assert [k for k, _ in again.curves.runs] == [ids[1]]
    again.curves.redraw()
    assert again.curves.data_length("scorePlot") == 3

    again.select_runs(ids)
    assert again.selected_run_ids() == ids
    qtbot.mouseClick(again.showRunsButton, CLICK)
    assert sorted(k for k, _ in again.curves.runs) == sorted(ids)
    counts = sorted(r.count("score") for _, r in again.curves.runs)
    assert counts == [3, 5]
    assert len(again.curves.legend_names("Score")) == 2  # one moving-average line per run when comparing
    again.shutdown()


def test_resume_a_stopped_run_from_its_last_checkpoint(qtbot, tab, store):
    fake_run(tab, episodes=10**6, delay_ms=0.5)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    run_id = started.args[0]
    qtbot.waitUntil(lambda: tab.focus is not None and tab.focus.episodes >= 2, timeout=20_000)
    with qtbot.waitSignal(tab.trainingFinished, timeout=30_000):
        qtbot.mouseClick(tab.stopButton, CLICK)
    before = store.get_run(run_id)
    saved = load_checkpoint(store.last_checkpoint(run_id)).counters.episodes

    tab.select_runs([run_id])
    assert tab.resumeButton.isEnabled()
    qtbot.mouseClick(tab.resumeButton, CLICK)
    assert tab.is_training
    qtbot.waitUntil(lambda: tab.focus is not None and tab.focus.episodes >= saved + 2, timeout=20_000)
    with qtbot.waitSignal(tab.trainingFinished, timeout=30_000) as fin:
        qtbot.mouseClick(tab.stopButton, CLICK)
    assert fin.args == ["stopped"]
    after = store.get_run(run_id)
    assert len(store.list_runs()) == 1  # the same run went on
    assert after.episodes > before.episodes - 1 and after.episodes >= saved + 2
    assert load_checkpoint(store.last_checkpoint(run_id)).counters.episodes >= saved + 2
    # the live curve went on from the stored history
    assert tab.curves.live.count("score") >= before.episodes


def test_use_in_play_and_arena_and_export_csv(qtbot, tab, store, tmp_path):
    fake_run(tab, episodes=3)
    assert _train(qtbot, tab) == "finished"
    run_id = store.list_runs()[0].id
    tab.select_runs([run_id])
    with qtbot.waitSignal(tab.useInPlay, timeout=2000) as sig:
        qtbot.mouseClick(tab.useInPlayButton, CLICK)
    agent, path = sig.args
    assert agent == "fake_learner" and Path(path) == store.last_checkpoint(run_id)
    with qtbot.waitSignal(tab.useInArena, timeout=2000) as sig2:
        qtbot.mouseClick(tab.useInArenaButton, CLICK)
    assert sig2.args == [agent, path]

    out = tab.export_csv(run_id, tmp_path / "m.csv")
    with open(out) as fh:
        rows = list(csv.reader(fh))
    cols = store.run_metrics(run_id)
    assert rows[0][:3] == ["episode", "step", "elapsed"] and "score" in rows[0]
    assert len(rows) - 1 == len(cols["episode"])
    k = rows[0].index("score")
    got = [float(r[k]) for r in rows[1:] if r[k] != ""]
    np.testing.assert_allclose(got, cols["score"][~np.isnan(cols["score"])])


def test_the_export_menu_writes_tensorboard_event_files(qtbot, tab, store, tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    fake_run(tab, episodes=3)
    assert _train(qtbot, tab) == "finished"
    run_id = store.list_runs()[0].id
    tab.select_runs([run_id])
    monkeypatch.setattr(
        "studio.tabs.train.runs.QFileDialog.getExistingDirectory", lambda *a, **k: str(tmp_path / "logs")
    )
    assert tab.runsPanel.exportButton.isEnabled()
    assert [a.text() for a in tab.runsPanel.exportButton.menu().actions()] == [
        "Metrics as CSV…",
        "TensorBoard event files…",
    ]
    tab.runsPanel.exportTensorboardAction.trigger()
    (run_dir,) = (tmp_path / "logs").iterdir()
    assert run_dir.name == f"run-{run_id}-fake_learner"
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    scores = [e.value for e in acc.Scalars("score")]
    want = store.run_metrics(run_id)["score"]
    np.testing.assert_allclose(scores, want[~np.isnan(want)], rtol=1e-6)


def test_closing_the_window_while_training_asks_then_stops_with_a_checkpoint(qtbot, store, monkeypatch):
    register_fakes(monkeypatch)
    win = QMainWindow()
    qtbot.addWidget(win)
    tab = _make_tab(qtbot, store, parent=win)
    win.setCentralWidget(tab)
    win.show()
    fake_run(tab, episodes=10**6, delay_ms=1.0)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(tab.startButton, CLICK)
    run_id = started.args[0]
    questions: list[str] = []
    monkeypatch.setattr(tab, "ask_close", lambda: (questions.append("asked"), "cancel")[1])
    assert not win.close()  # "cancel": the window stays, training goes on
    assert win.isVisible() and tab.is_training and questions == ["asked"]
    monkeypatch.setattr(tab, "ask_close", lambda: "stop")
    assert win.close()
    assert not tab.is_training
    run = store.get_run(run_id)
    assert run.status == "stopped"
    assert store.last_checkpoint(run_id).exists()


def _human_game(store: GameStore, seed: int) -> int:
    game = Game(seed=seed)
    trace = GameTrace.start(game)
    for _ in range(8):
        moves = game.legal_moves()
        if not moves:
            break
        play_recorded(game, moves[0], trace)
    return store.record_trace(trace, "human")


def test_train_from_my_games_prefills_imitation(qtbot, tab, store):
    if "imitation" not in registry.agent_names():
        pytest.skip("no imitation agent in this build")
    _human_game(store, 1)
    _human_game(store, 2)
    qtbot.mouseClick(tab.launch.fromGamesButton, CLICK)
    assert tab.launch.agentCombo.currentText() == "imitation"
    assert tab.launch.form.values()["source"] == "human"
    assert "2 games" in tab.etaLabel.text()


def test_a_preset_sets_rules_and_budget_too(qtbot, tab, tmp_path, monkeypatch):
    (tmp_path / "fake-preset.json").write_text(
        json.dumps(
            {
                "agent": "fake_learner",
                "description": "test preset",
                "config": {"batch": 8},
                "rules": {"rows": 3, "cols": 5, "p4": 0.25},
                "budget": {"episodes": 42},
            }
        )
    )
    monkeypatch.setattr(agents.config, "presets_dir", lambda: tmp_path)
    tab.launch.select_agent("fake_learner")
    load_preset_with_keys(qtbot, tab.launch.form, "fake-preset")
    assert tab.launch.form.values()["batch"] == 8
    assert tab.launch.rules() == Rules(rows=3, cols=5, p4=0.25)
    assert tab.launch.budget().episodes == 42
    assert tab.launch.presetNote.isVisible() and "fake-preset" in tab.launch.presetNote.text()
    assert tab.launch.request().preset == "fake-preset"


@pytest.mark.parametrize("name", registry.agent_names())
def test_every_registered_agent_form_builds_and_trainable_ones_start(qtbot, tab, store, name):
    tab.launch.select_agent(name)
    cls = registry.get_agent_class(name)
    assert tab.launch.agent_cls is cls
    assert set(tab.launch.form.values()) == {s.name for s in cls.config_cls.specs()}
    assert tab.launch.form.is_valid(), tab.launch.form.errors()
    if not cls.trainable:
        assert not tab.startButton.isEnabled()
        return
    if name == "imitation":
        for seed in range(3):
            _human_game(store, seed)
    tab.launch.set_budget(minutes=0.05)  # 3 s at most
    finished: list[str] = []
    tab.trainingFinished.connect(finished.append)
    qtbot.mouseClick(tab.startButton, CLICK)
    # the run exists as soon as the agent is built (some agents compile kernels before their first event)
    qtbot.waitUntil(
        lambda: (tab.focus is not None and tab.focus.run_id is not None) or bool(finished), timeout=120_000
    )
    tab.stop_training()
    qtbot.waitUntil(lambda: bool(finished), timeout=120_000)
    assert finished[0] in ("stopped", "finished"), tab.error_box and tab.error_box.text()
    run = store.list_runs()[0]
    assert run.agent == name and run.status in ("stopped", "finished")
    assert load_checkpoint(store.last_checkpoint(run.id)).name == name


def test_helpers():
    from studio.text import duration

    assert duration(75) == "1:15" and duration(3725) == "1:02:05"
    assert duration(float("nan")) == "-" and duration(-1) == "-" and duration(None) == "-"


def test_write_metrics_csv_blank_for_missing(tmp_path):
    cols = {
        "episode": np.array([1, 2]),
        "step": np.array([10, 20]),
        "elapsed": np.array([0.5, 1.0]),
        "loss": np.array([np.nan, 0.25]),
    }
    path = write_metrics_csv(cols, tmp_path / "x.csv")
    assert path.read_text().splitlines() == ["episode,step,elapsed,loss", "1,10,0.5,", "2,20,1,0.25"]


# ------------------------------------------------------------------------------ in the main window


@pytest.fixture
def studio_window(qtbot, data_dir, qsettings, monkeypatch):
    register_fakes(monkeypatch)  # before the window: the agent pickers list them
    from studio.app import create_window

    win = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    yield win
    train = win.tab("Train")
    if train.is_training:
        train.stop_all()
        train.wait_finished(60)
    win.close()


def test_the_window_has_the_train_and_arena_tabs(studio_window):
    from studio.tabs.arena import ArenaTab

    assert isinstance(studio_window.tab("Train"), TrainTab)
    assert isinstance(studio_window.tab("Arena"), ArenaTab)
    names = [studio_window.tabs.tabText(i) for i in range(studio_window.tabs.count())]
    assert names == ["Play", "Train", "Replay", "Arena", "Games", "Progress"]


def test_use_in_play_and_in_arena_through_the_window(qtbot, studio_window):
    win = studio_window
    win.show_tab("Train")
    train = win.tab("Train")
    fake_run(train, episodes=2)
    assert _train(qtbot, train) == "finished"
    run_id = win.store.list_runs()[0].id
    path = win.store.last_checkpoint(run_id)
    train.select_runs([run_id])
    qtbot.mouseClick(train.useInPlayButton, CLICK)
    assert win.tabs.currentWidget() is win.play
    assert win.play.agent_spec is not None and Path(win.play.agent_spec.checkpoint) == path
    win.show_tab("Train")
    qtbot.mouseClick(train.useInArenaButton, CLICK)
    arena = win.tab("Arena")
    assert win.tabs.currentWidget() is arena
    assert [s.checkpoint for s in arena.contestants()] == [str(path)]


def test_closing_the_main_window_during_training_asks_and_keeps_the_checkpoint(
    qtbot, studio_window, monkeypatch
):
    win = studio_window
    win.show_tab("Train")
    train = win.tab("Train")
    fake_run(train, episodes=10**6, delay_ms=1.0)
    with qtbot.waitSignal(train.runStarted, timeout=30_000) as started:
        qtbot.mouseClick(train.startButton, CLICK)
    monkeypatch.setattr(train, "ask_close", lambda: "cancel")
    assert not win.close()
    assert win.isVisible() and train.is_training
    monkeypatch.setattr(train, "ask_close", lambda: "stop")
    store_path = win.store.path
    assert win.close()
    assert not train.is_training
    with GameStore(store_path) as store:
        run = store.get_run(started.args[0])
        assert run.status == "stopped"
        assert store.last_checkpoint(run.id).exists()


def test_parallel_play_is_offered_to_agents_that_play_in_parallel(qtbot, tab):
    """MCTS self-play in several processes or on Ray: the window sets what `train --workers` does."""
    tab.launch.select_agent("fake_learner")
    assert not tab.launch.workersSpin.isEnabled() and "one process" in tab.launch.parallelNote.text()
    tab.launch.select_agent("mcts")
    assert tab.launch.workersSpin.isEnabled() and not tab.launch.rayAddressEdit.isEnabled()
    tab.launch.workersSpin.setValue(2)
    tab.launch.backendCombo.setCurrentIndex(tab.launch.backendCombo.findData("ray"))
    assert tab.launch.rayAddressEdit.isEnabled()
    tab.launch.rayAddressEdit.setText("10.1.2.3:6379")
    request = tab.launch.request()
    assert (request.workers, request.backend, request.ray_address) == (2, "ray", "10.1.2.3:6379")
    context = request.context(None)
    assert (context.workers, context.backend, context.ray_address) == (2, "ray", "10.1.2.3:6379")
