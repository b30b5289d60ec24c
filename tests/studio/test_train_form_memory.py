"""Close and reopen: the Train tab's budget, agent, its settings and the selected run come back (issue 44)."""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt

from agents.base import MetricEvent
from engine import Rules
from tests.studio.gui_helpers import open_window, type_over
from tests.studio.train_fakes import register_fakes

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton
_type_into = type_over  # the name test_train_form_cpu_budget imports it by


def _open(qtbot, data_dir, settings):
    win = open_window(qtbot, data_dir, settings)
    train = win.tab("Train")

    def on_train() -> bool:
        # Ctrl+2 (View > Train); a window just shown takes a moment before its shortcuts answer
        qtbot.keyClick(win, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
        return train.isVisible()

    qtbot.waitUntil(on_train, timeout=5000)
    return win, train


def test_budget_agent_settings_and_selected_run_come_back(qtbot, data_dir, qsettings, monkeypatch) -> None:
    register_fakes(monkeypatch)
    from engine.store import GameStore

    with GameStore.open(data_dir) as store:
        run_id = store.create_run("fake_learner", {}, Rules(), {"episodes": 4}, status="finished")
        store.log_metrics(
            run_id,
            [
                MetricEvent("episode", i, 10 * i, 0.1 * i, {"score": 50.0 * i, "max_tile": 32.0})
                for i in range(1, 5)
            ],
        )
        store.create_run("fake_learner", {}, Rules(), {"episodes": 4}, status="finished")

    win, train = _open(qtbot, data_dir, qsettings)
    form = train.launch
    combo = form.agentCombo
    combo.setFocus()
    for _ in range(combo.count()):
        if combo.currentData() == "fake_learner":
            break
        qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert form.agent_name == "fake_learner"
    type_over(qtbot, form.form.field_widget("batch").lineEdit(), "64")
    qtbot.mouseClick(form.minutesCheck, CLICK)
    type_over(qtbot, form.minutesSpin.lineEdit(), "2")
    qtbot.mouseClick(form.episodesCheck, CLICK)
    table = train.runsTable
    row = next(r for r in range(table.rowCount()) if table.item(r, 0).text() == str(run_id))
    qtbot.mouseClick(table.viewport(), CLICK, pos=table.visualItemRect(table.item(row, 1)).center())
    assert train.selected_run_ids() == [run_id]
    before = (form.budget(), form.form.values()["batch"])
    win.close()
    qsettings.sync()

    again = QSettings(qsettings.fileName(), QSettings.Format.IniFormat)
    win2, train2 = _open(qtbot, data_dir, again)
    form2 = train2.launch
    assert form2.agent_name == "fake_learner"
    assert form2.form.values()["batch"] == 64
    assert not form2.episodesCheck.isChecked() and form2.minutesCheck.isChecked()
    assert form2.minutesSpin.value() == 2.0
    budget = form2.budget()
    assert (budget.episodes, budget.seconds, budget.steps) == (None, 120.0, None)
    assert (budget, 64) == before
    assert train2.selected_run_ids() == [run_id]
    train2.curves.redraw()
    assert [k for k, _r in train2.curves.runs] == [run_id]
    assert train2.curves.data_length("scorePlot") == 4
    win2.grab().save("/tmp/shots/train_reopened.png")
    win2.close()
