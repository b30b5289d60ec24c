"""The Train form's CPU-minutes limit (issue 49): ticked with the mouse and typed, it is the run's
budget in CPU-seconds, worded as such, and it comes back after the window is closed and reopened."""

from __future__ import annotations

from PySide6.QtCore import Qt

from agents.base import Budget
from studio.tabs.train.launch import budget_words
from tests.studio.test_train_form_memory import CLICK, _open, _type_into

pytest_plugins = ("tests.studio.gui_fixtures",)


def test_cpu_minutes_are_the_runs_budget_and_come_back(qtbot, data_dir, qsettings) -> None:
    win, train = _open(qtbot, data_dir, qsettings)
    form = train.launch
    box = form.budgetBox
    assert not box.cpuCheck.isChecked() and not box.cpuSpin.isEnabled()
    qtbot.mouseClick(box.cpuCheck, CLICK)
    assert box.cpuSpin.isEnabled()
    _type_into(qtbot, box.cpuSpin.lineEdit(), "3")
    qtbot.keyClick(box.cpuSpin.lineEdit(), Qt.Key.Key_Tab)
    if form.episodesCheck.isChecked():
        qtbot.mouseClick(form.episodesCheck, CLICK)
    assert form.budget() == Budget(cpu_seconds=180.0)
    assert form.request().budget == Budget(cpu_seconds=180.0)
    assert budget_words(form.budget()) == "3 CPU-min"
    win.grab().save("/tmp/shots/train_cpu_budget.png")
    win.close()
    qsettings.sync()

    win2, train2 = _open(qtbot, data_dir, qsettings)
    box2 = train2.launch.budgetBox
    assert box2.cpuCheck.isChecked() and box2.cpuSpin.value() == 3.0
    assert train2.launch.budget() == Budget(cpu_seconds=180.0)
    win2.close()


def test_no_limit_ticked_names_cpu_minutes_among_the_choices(qtbot, data_dir, qsettings) -> None:
    win, train = _open(qtbot, data_dir, qsettings)
    form = train.launch
    for _name, check, _editor in form.budgetBox.rows():
        if check.isChecked():
            qtbot.mouseClick(check, CLICK)
    qtbot.mouseClick(train.startButton, CLICK)
    assert "CPU minutes" in form.budgetBox.budgetError.text()
    win.close()
