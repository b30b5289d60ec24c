"""The Train tab's sweeps with real clicks and keys: the Sweep dialog builds the request the CLI would,
a tiny sweep runs from it and is ranked, Apply best fills the form, the scatter and the runs table
show the trials, and a stopped sweep resumes to the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt

from agents.base import Budget
from studio.services.sweep import KnobRange, rank_sweep
from studio.tabs.train import TrainTab
from studio.tabs.train.sweep import LIST, RANGE, SweepDialog
from tests.studio.gui_helpers import open_sweep_dialog, type_over

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton
SWEEP_TIMEOUT_MS = 180_000


@pytest.fixture
def tab(qtbot, store, monkeypatch) -> Iterator[TrainTab]:
    t = TrainTab(store, None)
    qtbot.addWidget(t)
    t.resize(1280, 800)
    t.show()
    monkeypatch.setattr(t, "ask_close", lambda: "stop")
    monkeypatch.setattr(t, "ask_close_sweep", lambda: "stop")
    t.launch.select_agent("ntuple")
    t.launch.set_budget(episodes=10)
    yield t
    t.shutdown()


def _tiny_lr_grid(qtbot, dialog: SweepDialog, values: str = "0.1,0.01") -> None:
    row = dialog.rows["lr"]
    row.set_mode(LIST)
    type_over(qtbot, row.listEdit, values)
    dialog.evalGamesSpin.setValue(2)
    dialog.workersSpin.setValue(2)


def test_the_dialog_builds_the_request_from_lists_ranges_and_seeds(qtbot, tab):
    dialog = open_sweep_dialog(qtbot, tab)
    # Nothing varies yet: no plan, and the service's reason in red.
    assert not dialog.startButton.isEnabled()
    assert "knobs to vary" in dialog.errorLabel.text()
    assert "10 episodes" in dialog.budgetLabel.text()
    row = dialog.rows["lr"]
    assert row.listEdit.text() == "1.0"  # prefilled with the form's value
    row.set_mode(LIST)
    type_over(qtbot, row.listEdit, "0.1,0.01,0.001")
    assert dialog.trialsLabel.text().startswith("3 trials planned")
    assert dialog.startButton.isEnabled() and not dialog.errorLabel.isVisible()
    # A bad value: the service's message, Start disabled.
    type_over(qtbot, row.listEdit, "0.1,abc")
    assert not dialog.startButton.isEnabled()
    assert dialog.errorLabel.isVisible() and "cannot read 'abc'" in dialog.errorLabel.text()
    type_over(qtbot, row.listEdit, "0.1,5")
    assert not dialog.startButton.isEnabled() and "lr" in dialog.errorLabel.text()
    type_over(qtbot, row.listEdit, "0.1,0.01")
    # A choice knob: ticks of its values; a bool: true / false.
    tc = dialog.rows["tc"]
    tc.set_mode(LIST)
    qtbot.mouseClick(tc.checks[1], CLICK)  # tick false beside the form's true
    assert dialog.trialsLabel.text().startswith("4 trials planned")
    # A range makes it a random search of `samples` points (the grid knobs drawn from their lists).
    lam = dialog.rows["lam"]
    lam.set_mode(RANGE)
    assert (lam.lowEdit.text(), lam.highEdit.text(), lam.logCheck.isChecked()) == ("0", "1", False)
    type_over(qtbot, lam.highEdit, "0.9")
    assert dialog.samplesSpin.isEnabled()
    dialog.samplesSpin.setValue(5)
    type_over(qtbot, dialog.seedsSpin.lineEdit(), "3")
    assert dialog.trialsLabel.text().startswith("15 trials planned")
    # A low above the high: refused by the service's parse_range.
    type_over(qtbot, lam.lowEdit, "0.95")
    assert not dialog.startButton.isEnabled() and "low < high" in dialog.errorLabel.text()
    type_over(qtbot, lam.lowEdit, "0.1")
    req = dialog.sweep_request()
    assert req.agent == "ntuple" and req.budget == Budget(episodes=10)
    assert dict(req.grid) == {"lr": (0.1, 0.01), "tc": (True, False)}
    assert tuple(req.ranges) == (KnobRange("lam", 0.1, 0.9, False),)
    assert (req.samples, req.seeds, req.seed, req.metric, req.backend) == (5, 3, 1, "auto", "local")
    assert req.config["lr"] == 1.0  # the form's settings are the base
    dialog.reject()
    assert tab.sweep is None


def test_a_tiny_sweep_runs_ranks_applies_the_best_and_shows_its_trials(qtbot, tab, store):
    dialog = open_sweep_dialog(qtbot, tab)
    _tiny_lr_grid(qtbot, dialog)
    assert dialog.trialsLabel.text().startswith("2 trials planned")
    with qtbot.waitSignal(tab.sweepFinished, timeout=SWEEP_TIMEOUT_MS) as sig:
        qtbot.mouseClick(dialog.startButton, CLICK)
        assert tab.sweep is not None and not tab.sweepButton.isEnabled()
    assert sig.args[0] == "finished"
    panel = tab.sweepPanel
    assert panel.wait_ranked()
    qtbot.waitUntil(lambda: panel.rankTable.rowCount() == 2 and panel.best() is not None, timeout=10_000)
    sweep_id = store.list_sweeps()[0].id
    assert panel.sweep_id == sweep_id and panel.sweepCombo.currentData() == sweep_id
    metric, points = rank_sweep(store, sweep_id)
    assert metric == "eval_score"
    t = panel.rankTable
    headers = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    assert headers[:2] == ["Rank", "lr"]
    for row, p in enumerate(points):
        assert t.item(row, 0).text() == str(p.rank)
        assert t.item(row, 1).text() == f"{p.params['lr']:g}"
        assert t.item(row, headers.index("Runs")).text() == str(p.run_ids[0])
    # The scatter: one dot per trial, one mean per point.
    assert len(panel.scatter.points()) == 2
    assert len(panel.means.getData()[0]) == 2
    # Apply best: the best lr into the form.
    tab.launch.form.set_values({"lr": 0.5})
    assert panel.applyBestButton.isEnabled()
    qtbot.mouseClick(panel.applyBestButton, CLICK)
    assert tab.launch.form.values()["lr"] == pytest.approx(points[0].params["lr"])
    # The runs table: both trials with their sweep, ticked to compare.
    tab.bottomTabs.setCurrentWidget(tab.runsPanel)
    rt = tab.runsTable
    col = [rt.horizontalHeaderItem(c).text() for c in range(rt.columnCount())].index("Sweep")
    sweep_cells = {rt.item(r, 0).text(): rt.item(r, col).text() for r in range(rt.rowCount())}
    runs = {p.run_ids[0]: p.trials[0] for p in points}
    assert sweep_cells == {str(r): f"{sweep_id} #{trial}" for r, trial in runs.items()}
    assert tab.runsPanel.checked == set(runs)


def test_a_stopped_sweep_resumes_to_the_end(qtbot, tab, store):
    tab.launch.set_budget(episodes=400)
    dialog = open_sweep_dialog(qtbot, tab)
    _tiny_lr_grid(qtbot, dialog, "0.1,0.05,0.01")
    dialog.workersSpin.setValue(1)
    qtbot.mouseClick(dialog.startButton, CLICK)
    panel = tab.sweepPanel
    # Stop once the first trial trains: it saves a checkpoint; the others never start.
    qtbot.waitUntil(lambda: tab.sweep is not None and bool(tab.sweep.progress.running), timeout=60_000)
    assert panel.stopSweepButton.isEnabled() and not panel.resumeSweepButton.isEnabled()
    with qtbot.waitSignal(tab.sweepFinished, timeout=SWEEP_TIMEOUT_MS) as sig:
        qtbot.mouseClick(panel.stopSweepButton, CLICK)
    assert sig.args[0] == "stopped"
    sweep_id = store.list_sweeps()[0].id
    assert store.get_sweep(sweep_id).status == "stopped"
    panel.wait_ranked()
    qtbot.waitUntil(lambda: panel.resumeSweepButton.isEnabled(), timeout=10_000)
    with qtbot.waitSignal(tab.sweepFinished, timeout=SWEEP_TIMEOUT_MS) as sig:
        qtbot.mouseClick(panel.resumeSweepButton, CLICK)
    assert sig.args[0] == "finished"
    info = store.get_sweep(sweep_id)
    assert info.status == "finished" and info.n_finished == 3
    panel.wait_ranked()
    qtbot.waitUntil(lambda: panel.rankTable.rowCount() == 3 and panel.best() is not None, timeout=10_000)


def test_closing_the_window_with_a_sweep_asks_and_cancel_keeps_it(qtbot, tab, monkeypatch):
    dialog = open_sweep_dialog(qtbot, tab)
    _tiny_lr_grid(qtbot, dialog)
    qtbot.mouseClick(dialog.startButton, CLICK)
    assert tab.sweep is not None
    asked: list[str] = []
    monkeypatch.setattr(tab, "ask_close_sweep", lambda: asked.append("sweep") or "cancel")
    assert tab.confirm_close() is False and asked == ["sweep"] and tab.sweep is not None
    monkeypatch.setattr(tab, "ask_close_sweep", lambda: "stop")
    assert tab.confirm_close() is True
    assert tab.sweep is None
