"""The Train tab's form as a person uses it (issue #18): the preset box and its applied / modified
marker, Tab and Shift-Tab that leave the view where it is, the count of imitation's games with a
warning when Start trains on too few moves, the tab's keyboard shortcuts and the Help that lists them,
and human labels on every agent's form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox, QScrollArea, QWidget

import agents.config
from agents import registry
from agents.config import LABEL_WORDS, list_presets
from engine import Game, Rules
from engine.records import GameTrace, play_recorded
from engine.store import HUMAN, GameRecorder, GameStore, Player
from studio.tabs.train import SHORTCUTS
from studio.tabs.train import launch as launch_module
from studio.widgets.config_form import PRESET_PLACEHOLDER, ConfigForm
from tests.studio.gui_helpers import load_preset_with_keys, type_over
from tests.studio.train_fakes import FakeConfig, register_fakes

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")

CLICK = Qt.MouseButton.LeftButton
CTRL = Qt.KeyboardModifier.ControlModifier


def _fake_preset(tmp_path: Path, monkeypatch, name: str = "fake-preset", **extra) -> None:
    preset = {"agent": "fake_learner", "description": "a test preset", "config": {"batch": 8, "lr": 0.01}}
    (tmp_path / f"{name}.json").write_text(json.dumps({**preset, **extra}))
    monkeypatch.setattr(agents.config, "presets_dir", lambda: tmp_path)


# ------------------------------------------------------------------------------ the preset box


def test_every_preset_name_is_whole_in_the_box_at_the_panels_narrowest(qtbot, tab):
    form = tab.launch.form
    left = tab.findChild(QScrollArea, "launchScroll").parentWidget()
    assert left.width() <= 420  # the panel as it opens, or its minimum
    checked = 0
    for agent in registry.agent_names():
        if not list_presets(agent):
            continue
        tab.launch.select_agent(agent)
        QApplication.processEvents()
        combo = form.presetCombo
        for i in range(combo.count()):
            combo.setCurrentIndex(i)
            assert not combo.is_elided(), (agent, combo.currentText(), combo.width())
            assert combo.currentText() in combo.toolTip()
            checked += 1
        # the whole form fits the panel: nothing is cut off at its right edge
        assert form.defaultsButton.mapTo(left, form.defaultsButton.rect().topRight()).x() < left.width()
    assert checked >= 5


def test_a_name_too_long_for_the_box_is_cut_in_the_middle_and_whole_in_the_tooltip(
    qtbot, tmp_path, monkeypatch
):
    register_fakes(monkeypatch)
    name = "fake-a-preset-with-a-name-far-too-long-for-any-panel-v2"
    _fake_preset(tmp_path, monkeypatch, name)
    form = ConfigForm(FakeConfig, agent="fake_learner")
    qtbot.addWidget(form)
    form.resize(260, 600)
    form.show()
    qtbot.waitExposed(form)
    combo = form.presetCombo
    qtbot.keyClick(combo, Qt.Key.Key_Down)  # chosen, not loaded
    assert combo.currentText() == name and combo.is_elided()
    shown = combo.shown_text()
    assert "…" in shown and shown.startswith("fake-") and shown.endswith("-v2")  # cut in the middle
    assert name in combo.toolTip()
    form.resize(900, 600)
    QApplication.processEvents()
    assert not combo.is_elided() and combo.shown_text() == name  # room enough: whole again


def test_the_box_says_choose_a_preset_until_one_is_loaded(qtbot, tab, tmp_path, monkeypatch):
    # it used to show the first preset's name over a form holding the defaults
    _fake_preset(tmp_path, monkeypatch)
    launch = tab.launch
    launch.select_agent("fake_learner")
    form = launch.form
    combo = form.presetCombo
    assert combo.currentIndex() == -1 and combo.shown_text() == PRESET_PLACEHOLDER
    assert combo.isEnabled() and not form.presetButton.isEnabled()  # Load has nothing to load
    assert "choose one, then Load" in combo.toolTip()
    qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert combo.shown_text() == "fake-preset" and form.presetButton.isEnabled()
    assert form.applied_preset is None  # chosen is not loaded
    qtbot.mouseClick(form.presetButton, CLICK)
    assert form.applied_preset == "fake-preset" and combo.currentData() == "fake-preset"
    qtbot.mouseClick(form.defaultsButton, CLICK)  # the defaults again: no preset is shown either
    assert combo.currentIndex() == -1 and not form.presetButton.isEnabled()
    form.load_preset("fake-preset")  # a preset loaded by a call, not the button, is shown too
    assert combo.currentData() == "fake-preset"
    launch.select_agent("random")
    launch.select_agent("fake_learner")
    assert combo.currentIndex() == -1


def test_the_marker_says_applied_then_modified_and_defaults_clear_it(qtbot, tab, tmp_path, monkeypatch):
    _fake_preset(tmp_path, monkeypatch, budget={"episodes": 42}, rules={"rows": 3, "cols": 4})
    launch = tab.launch
    launch.select_agent("fake_learner")
    form = launch.form
    marker = form.presetMarker
    assert not marker.isVisible()
    load_preset_with_keys(qtbot, form, "fake-preset")
    assert marker.isVisible() and marker.text() == "applied: fake-preset"
    assert "a test preset" in marker.toolTip()
    assert launch.presetNote.isVisible() and "3×4" in launch.presetNote.text()
    assert "42 episodes" in launch.presetNote.text()

    type_over(
        qtbot, form.field_widget("batch").lineEdit(), "9"
    )  # a field differs from the preset: modified at once
    assert marker.text() == "modified from fake-preset"
    assert "Batch" in marker.toolTip()
    type_over(qtbot, form.field_widget("batch").lineEdit(), "8")  # back to the preset's value
    assert marker.text() == "applied: fake-preset"

    launch.rowsSpin.setValue(4)  # the preset's rules changed
    assert marker.text() == "modified from fake-preset" and "rules" in marker.toolTip()
    launch.rowsSpin.setValue(3)
    assert marker.text() == "applied: fake-preset"
    type_over(qtbot, launch.episodesSpin.lineEdit(), "43")  # and its budget
    assert marker.text() == "modified from fake-preset" and "budget" in marker.toolTip()
    assert launch.request().preset == "fake-preset"

    qtbot.mouseClick(form.defaultsButton, CLICK)
    assert not marker.isVisible() and not launch.presetNote.isVisible()
    assert form.applied_preset is None and launch.request().preset is None
    assert form.values()["batch"] == FakeConfig().batch

    load_preset_with_keys(qtbot, form, "fake-preset")  # loaded again, then another agent: cleared too
    assert marker.text() == "applied: fake-preset"
    launch.select_agent("random")
    assert not marker.isVisible() and launch.preset_name is None


# ------------------------------------------------------------------------------ Tab and Shift-Tab


def _press(qtbot, key: Qt.Key) -> QWidget:
    qtbot.keyClick(QApplication.focusWidget(), key)
    return QApplication.focusWidget()


def test_tab_and_shift_tab_go_field_to_field_and_keep_the_view(qtbot, tab):
    tab.activateWindow()
    launch = tab.launch
    launch.select_agent("dqn")  # the longest form: it scrolls
    form = launch.form
    bar = tab.findChild(QScrollArea, "launchScroll").verticalScrollBar()
    QApplication.processEvents()
    assert bar.maximum() > 300
    specs = [s.name for s in form.config_cls.specs() if not s.advanced]
    editors = [form.field_widget(n) for n in specs]

    # The focus chain, in the order shown: Defaults, the budget (its enabled boxes), the shown fields
    # in order, the fold, the rules.
    form.defaultsButton.setFocus()
    budget = [launch.episodesCheck, launch.episodesSpin, launch.minutesCheck, launch.stepsCheck]
    budget.append(launch.budgetBox.cpuCheck)  # the CPU minutes tick (its box is greyed until ticked)
    for expected in [*budget, *editors, form.advancedToggle, launch.rowsSpin]:
        assert _press(qtbot, Qt.Key.Key_Tab) is expected
    for expected in [form.advancedToggle, editors[-1], editors[-2]]:
        assert _press(qtbot, Qt.Key.Key_Backtab) is expected
    editors[0].setFocus()
    assert (
        _press(qtbot, Qt.Key.Key_Backtab) is launch.budgetBox.cpuCheck
    )  # the budget above, not the runs table

    # In the middle of the form: moving between fields in view never scrolls.
    bar.setValue(bar.maximum() // 2)
    QApplication.processEvents()
    view = tab.findChild(QScrollArea, "launchScroll").viewport()
    shown = [e for e in editors if view.rect().contains(QRect(e.mapTo(view, QPoint(0, 0)), e.size()))]
    assert len(shown) >= 4
    qtbot.mouseClick(shown[0].lineEdit() if hasattr(shown[0], "lineEdit") else shown[0], CLICK)
    assert QApplication.focusWidget() is shown[0]
    where = bar.value()
    for e in shown[1:]:
        assert _press(qtbot, Qt.Key.Key_Tab) is e
        assert bar.value() == where
    for e in reversed(shown[:-1]):
        assert _press(qtbot, Qt.Key.Key_Backtab) is e
        assert bar.value() == where

    # Out of the last field: on to the fold, a few pixels down at most; never back to the top.
    editors[-1].setFocus()
    tab.findChild(QScrollArea, "launchScroll").ensureWidgetVisible(editors[-1])
    before = bar.value()
    assert _press(qtbot, Qt.Key.Key_Tab) is form.advancedToggle
    assert bar.value() >= before > 0


# ------------------------------------------------------------------------------ imitation's data


def _human_game(store: GameStore, seed: int, moves: int, rules: Rules | None = None) -> int:
    game = Game(rules=rules or Rules(), seed=seed)
    trace = GameTrace.start(game)
    for _ in range(moves):
        legal = game.legal_moves()
        if not legal:
            break
        play_recorded(game, legal[0], trace)
    return store.record_trace(trace, "human")


def test_count_examples_counts_what_imitation_would_learn_from(store, data_dir):
    from agents.imitation import ImitationConfig, count_examples, load_dataset

    _human_game(store, 1, 10)
    _human_game(store, 2, 12)
    _human_game(store, 3, 7, Rules(rows=3, cols=3))
    greedy = Player("agent", "greedy")
    rec = GameRecorder(store, rules=Rules(), seed=3, lazy=True)
    for who in (HUMAN,) * 5 + (greedy,) * 6 + (HUMAN,) * 4:
        assert rec.play(rec.game.legal_moves()[-1], who) is not None
    rec.close()
    human = ImitationConfig(source="human")
    assert count_examples(human, Rules(), data_dir) == (3, 10 + 12 + 9)  # a shared game: the person's moves
    assert count_examples(ImitationConfig(), Rules(), data_dir) == (3, 10 + 12 + 15)
    assert count_examples(ImitationConfig(teacher="greedy"), Rules(), data_dir) == (1, 6)
    assert count_examples(human, Rules(rows=3, cols=3), data_dir) == (1, 7)
    assert count_examples(ImitationConfig(source="human", max_games=2), Rules(), data_dir)[0] == 2
    assert count_examples(ImitationConfig(min_score=10**8), Rules(), data_dir) == (0, 0)
    data = load_dataset(human, Rules(), data_dir)
    assert (len(data.game_ids), len(data) + data.skipped) == count_examples(human, Rules(), data_dir)


def test_imitation_says_how_much_data_and_start_warns_on_too_few_moves(qtbot, tab, store, monkeypatch):
    if "imitation" not in registry.agent_names():
        pytest.skip("no imitation agent in this build")
    launched: list = []
    monkeypatch.setattr(tab, "_launch", lambda request, series: launched.append(request))
    said: list[str] = []
    tab.status.connect(said.append)
    _human_game(store, 1, 150)
    _human_game(store, 2, 130)
    n_moves = sum(s.n_moves for s in store.list_games())
    qtbot.mouseClick(tab.launch.fromGamesButton, CLICK)
    note = tab.launch.dataNote
    warning = f"{n_moves} moves (in 2 games): too few to learn from; validation accuracy will be near chance."
    assert note.isVisible() and note.text().startswith(warning)
    assert "#c62828" in note.styleSheet()  # red
    tab.launch.set_budget(episodes=2)

    # Start with the settings scrolled down: the run starts, and the warning is said again; the note
    # sits under the agent, above the scrolled settings, so it stays in view.
    bar = tab.findChild(QScrollArea, "launchScroll").verticalScrollBar()
    bar.setValue(bar.maximum())
    qtbot.mouseClick(tab.startButton, CLICK)
    assert len(launched) == 1 and launched[0].agent == "imitation"
    assert said[-1] == f"training on {warning}"
    assert note.isVisible() and not tab.findChild(QScrollArea, "launchScroll").isAncestorOf(note)
    assert tab.rect().contains(QRect(note.mapTo(tab, QPoint(0, 0)), note.size()))

    # Filters that select nothing: said at once (after the pause for typing), and the run refuses itself.
    type_over(qtbot, tab.launch.form.field_widget("min_score").lineEdit(), "99999999")
    qtbot.waitUntil(lambda: "No 4×4 games match these filters" in note.text(), timeout=3000)
    assert tab.launch.warn_if_little_data() is None

    # Enough moves: a plain count, and Start says nothing more.
    monkeypatch.setattr(launch_module, "MIN_IMITATION_MOVES", 100)
    type_over(qtbot, tab.launch.form.field_widget("min_score").lineEdit(), "0")
    qtbot.waitUntil(lambda: note.text() == f"These filters select 2 games, {n_moves} moves.", timeout=3000)
    said.clear()
    qtbot.mouseClick(tab.startButton, CLICK)
    assert len(launched) == 2 and not any("too few" in m for m in said)


def test_other_agents_show_no_data_count(qtbot, tab):
    tab.launch.select_agent("fake_learner")
    assert not tab.launch.dataNote.isVisible() and tab.launch.count_data() is None
    assert tab.launch.warn_if_little_data() is None


# ------------------------------------------------------------------------------ keyboard shortcuts


def test_ctrl_return_starts_ctrl_p_pauses_and_resumes_ctrl_period_stops(qtbot, tab, store):
    tab.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is tab)
    tab.launch.select_agent("fake_learner")
    tab.launch.form.set_values({"delay_ms": 5.0})
    tab.launch.set_budget(episodes=10_000)
    field = tab.launch.form.field_widget("batch")
    field.setFocus()  # typing in a field: the keys still work (none of them types a character)
    with qtbot.waitSignal(tab.runStarted, timeout=30_000):
        qtbot.keyClick(field, Qt.Key.Key_Return, CTRL)
    assert len(tab.live) == 1 and field.value() == 32
    qtbot.waitUntil(lambda: tab.pauseButton.isEnabled(), timeout=10_000)
    # The window stays active while the curves rebuild for the new run (their plot boxes once flashed
    # as windows of their own, which took the focus and the shortcuts with them).
    assert QApplication.activeWindow() is tab
    qtbot.keyClick(field, Qt.Key.Key_P, CTRL)
    qtbot.waitUntil(lambda: tab.is_paused and tab.pauseButton.text() == "Resume", timeout=10_000)
    qtbot.keyClick(tab.runsTable, Qt.Key.Key_P, CTRL)
    qtbot.waitUntil(lambda: not tab.is_paused, timeout=10_000)
    with qtbot.waitSignal(tab.trainingFinished, timeout=60_000) as sig:
        qtbot.keyClick(tab.launch.agentCombo, Qt.Key.Key_Period, CTRL)
    assert sig.args[0] == "stopped"
    run = store.list_runs()[0]
    assert run.status == "stopped" and store.run_checkpoints(run.id)


def test_shortcuts_do_nothing_while_their_button_is_disabled(qtbot, tab):
    tab.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is tab)
    tab.launch.select_agent("fake_learner")
    type_over(
        qtbot, tab.launch.form.field_widget("batch").lineEdit(), "5000"
    )  # out of range: Start is disabled
    assert not tab.startButton.isEnabled()
    qtbot.keyClick(tab.launch.form.field_widget("batch"), Qt.Key.Key_Return, CTRL)
    qtbot.keyClick(tab.launch.form.field_widget("batch"), Qt.Key.Key_P, CTRL)
    qtbot.keyClick(tab.launch.form.field_widget("batch"), Qt.Key.Key_Period, CTRL)
    assert not tab.live
    assert "Ctrl+Return" in tab.startButton.toolTip() and "Ctrl+P" in tab.pauseButton.toolTip()


def test_the_help_lists_every_tabs_shortcuts_and_train_keys_work_only_on_train(qtbot, window):
    from studio.app import SHORTCUTS_HELP

    for keys, _button in SHORTCUTS:
        if keys != "Ctrl+Enter":
            assert f"<td>{keys}</td>" in SHORTCUTS_HELP
    for section in ("Play", "Train", "Replay", "Games", "Window"):
        assert f"<b>{section}</b>" in SHORTCUTS_HELP
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window, Qt.Key.Key_F1)
    box = window.findChild(QMessageBox, "shortcutsBox")
    qtbot.waitUntil(lambda: box is not None and box.isVisible())
    assert "Ctrl+Return" in box.text() and "Ctrl+P" in box.text() and "Ctrl+." in box.text()
    box.close()

    train = window.tab("Train")
    started: list[bool] = []
    train.startButton.clicked.connect(lambda: started.append(True))
    window.show_tab("Play")
    qtbot.keyClick(window, Qt.Key.Key_Return, CTRL)  # the Train tab's key is not the Play tab's
    assert started == []
    window.show_tab("Train")
    train.launch.select_agent("random")  # does not learn: Start is disabled, the click does nothing
    qtbot.keyClick(train.launch.agentCombo, Qt.Key.Key_Return, CTRL)
    assert started == [] and not train.live


# ------------------------------------------------------------------------------ labels


#: Abbreviations of knob names that a label must spell out ("Lr", "Lam", "Tc", "N step", "Eps rate").
ABBREVIATIONS = {w for w, text in LABEL_WORDS.items() if w.lower() != text.strip("-").lower()}


@pytest.mark.parametrize("name", registry.agent_names())
def test_every_agents_form_has_human_labels(qtbot, tab, name):
    tab.launch.select_agent(name)
    form = tab.launch.form
    if form.config_cls is None:
        pytest.skip(f"{name} did not load")
    for spec in form.config_cls.specs():
        label = form.field_widget(spec.name).parentWidget().parentWidget().findChildren(QLabel)
        texts = [lab.text() for lab in label if lab.buddy() is form.field_widget(spec.name)]
        assert len(texts) == 1, spec.name
        text = texts[0]
        words = {w.lower() for w in text.replace("-", " ").replace("_", " ").split()}
        assert not words & ABBREVIATIONS, (name, spec.name, text)
        assert "_" not in text, (name, spec.name, text)
        assert text not in ("Lr", "Lam", "Tc", "N step", "Eps rate"), (name, spec.name)


# ------------------------------------------------------------------------------ evaluation and disk


def test_the_run_box_asks_for_periodic_evaluation_and_checkpoint_retention(qtbot, tab, store):
    launch = tab.launch
    launch.select_agent("fake_learner")
    launch.set_budget(episodes=3)
    request = launch.request()  # the defaults: the runner's
    assert (request.eval_games, request.eval_every_s, request.keep_checkpoints) == (20, 600.0, 3)
    launch.evalGamesSpin.setValue(0)
    assert launch.evalGamesSpin.text() == "off" and not launch.evalEverySpin.isEnabled()
    launch.evalGamesSpin.setValue(5)
    launch.evalEverySpin.setValue(0.5)
    launch.keepSpin.setValue(0)
    assert launch.keepSpin.text() == "all"
    request = launch.request()
    assert (request.eval_games, request.eval_every_s, request.keep_checkpoints) == (5, 30.0, 0)


def test_the_runs_table_shows_the_latest_evaluation_and_the_disk_use(qtbot, tab, store, tmp_path):
    from engine import Rules

    rid = store.create_run("dqn", {}, Rules(), {"episodes": 1})
    ckpt = tmp_path / "run.npz"
    ckpt.write_bytes(b"x" * 3_000_000)
    store.add_checkpoint(rid, ckpt, 1, 10)
    from agents.base import MetricEvent

    store.log_metrics(
        rid, [MetricEvent("evaluation", 1, 10, 1.0, {"eval_score": 1234.4, "eval_games": 20.0})]
    )
    tab.runsPanel.refresh()
    table = tab.runsPanel.runsTable
    headers = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert headers[7:9] == ["Eval", "Disk"]
    assert table.item(0, 7).text() == "1,234" and table.item(0, 8).text() == "3.0 MB"
    assert "greedy evaluation" in table.item(0, 7).toolTip()


def test_a_live_runs_figures_and_curves_take_its_greedy_evaluations(qtbot):
    from types import SimpleNamespace

    from agents.base import MetricEvent
    from studio.tabs.train.live import LiveRun
    from studio.widgets.curves import CurvesPanel, RunSeries

    series = RunSeries("run 3")
    run = LiveRun(worker=SimpleNamespace(run_id=3, stopping=False, paused=False), series=series)  # type: ignore[arg-type]
    run.add([MetricEvent("episode", 10, 500, 2.0, {"score": 900.0})])
    assert run.last_eval is None and not any("evaluation" in f for f in run.figures())
    first = MetricEvent("evaluation", 8, 400, 1.5, {"eval_score": 1234.4, "eval_games": 20.0})
    run.add([first])
    assert run.last_eval == 1234.4 and "Greedy evaluation 1,234" in run.figures()
    assert run.episodes == 8  # the evaluated checkpoint's counters come with the event

    panel = CurvesPanel()
    qtbot.addWidget(panel)
    panel.set_agent("dqn")
    panel.add_events([MetricEvent("episode", 10, 500, 2.0, {"score": 900.0}), first])
    panel.redraw()
    # one evaluation is not a trend: a line of text that says so, not "(constant)"
    assert any(c.endswith("(the first value)") and "Greedy evaluation" in c for c in panel.constants)
    panel.add_events([MetricEvent("evaluation", 20, 900, 3.0, {"eval_score": 2000.0})])
    panel.redraw()
    assert not any("Greedy evaluation" in c for c in panel.constants)
    assert panel.data_length("greedyEvaluationPlot") == 2


def test_use_in_play_hands_over_the_runs_best_checkpoint_and_the_eval_cell_names_it(
    qtbot, tab, store, tmp_path
):
    from agents.base import MetricEvent
    from engine import Rules

    rid = store.create_run("dqn", {}, Rules(), {"episodes": 1})
    paths = []
    for episode in (10, 20, 30):
        p = tmp_path / f"ep{episode}.npz"
        p.write_bytes(b"x" * 1000)
        paths.append(p)
        cid = store.add_checkpoint(rid, p, episode, episode * 100)
        store.set_checkpoint_eval(cid, {10: 500.0, 20: 900.0, 30: 700.0}[episode])
    store.log_metrics(rid, [MetricEvent("evaluation", 30, 3000, 9.0, {"eval_score": 700.0})])
    tab.runsPanel.refresh()
    tab.select_runs([rid])
    with qtbot.waitSignal(tab.useInPlay, timeout=2000) as sig:
        qtbot.mouseClick(tab.useInPlayButton, Qt.MouseButton.LeftButton)
    assert sig.args == ["dqn", str(paths[1])]  # episode 20 evaluated best, not the last one
    cell = tab.runsPanel.runsTable.item(0, 7)
    assert cell.text() == "700" and "Best: 900 at episode 20 (ep20.npz)" in cell.toolTip()
