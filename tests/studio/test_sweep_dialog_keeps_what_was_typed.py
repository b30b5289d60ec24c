"""The Sweep dialog is modal, so it says truthfully how to change the form's settings (close it), and
what a person set in it is kept: cancelled by Esc or by Cancel and opened again, and in the next
window (the settings file). A knob left as it opened follows the form."""

from __future__ import annotations

from PySide6.QtCore import Qt

from studio.app import create_window
from studio.tabs.train.sweep import FIXED, LIST
from tests.studio.gui_helpers import open_sweep_dialog, retype

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton


def _train_tab(window):
    window.show_tab("Train")
    train = window.tab("Train")
    train.launch.select_agent("ntuple")
    return train


def test_a_cancelled_sweep_dialog_keeps_its_knobs_and_says_how_to_change_the_form(
    qtbot, window, data_dir, qsettings
):
    train = _train_tab(window)
    dialog = open_sweep_dialog(qtbot, train)
    words = dialog.budgetLabel.text()
    assert "close this dialog (what you set here is kept for the next time) and edit the form" in words
    assert "(change them in the form)" not in words
    lr = dialog.rows["lr"]
    lr.modeCombo.setFocus()
    qtbot.keyClick(lr.modeCombo, Qt.Key.Key_Down)  # fixed -> list
    assert lr.mode == LIST
    retype(qtbot, lr.listEdit, "0.05,0.2")
    retype(qtbot, dialog.seedsSpin.lineEdit(), "3")
    assert dialog.trialsLabel.text() == "6 trials planned: a grid of 2 points, 3 seeds each"
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not dialog.isVisible())

    dialog = open_sweep_dialog(qtbot, train)  # opened again: all of it is still there
    assert dialog.rows["lr"].mode == LIST
    assert dialog.rows["lr"].listEdit.text() == "0.05,0.2"
    assert dialog.seedsSpin.value() == 3
    assert dialog.trialsLabel.text() == "6 trials planned: a grid of 2 points, 3 seeds each"
    dialog.grab().save("/tmp/shots/sweep_dialog_reopened.png")
    qtbot.mouseClick(dialog.cancelButton, CLICK)
    qtbot.waitUntil(lambda: not dialog.isVisible())

    # Closed to change the form: a knob the dialog left alone follows it.
    train.launch.form.set_values({"lam": 0.25})
    dialog = open_sweep_dialog(qtbot, train)
    assert dialog.rows["lam"].mode == FIXED
    assert dialog.rows["lam"].modeCombo.itemText(0) == "fixed (0.25)"
    assert dialog.rows["lr"].listEdit.text() == "0.05,0.2"
    qtbot.mouseClick(dialog.cancelButton, CLICK)

    # ... and the next window, on the same settings file, opens the dialog as it was left.
    window.close()
    qsettings.sync()
    again = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(again)
    again.show()
    qtbot.waitExposed(again)
    try:
        dialog = open_sweep_dialog(qtbot, _train_tab(again))
        assert dialog.rows["lr"].mode == LIST
        assert dialog.rows["lr"].listEdit.text() == "0.05,0.2"
        assert dialog.seedsSpin.value() == 3
        assert dialog.trialsLabel.text() == "6 trials planned: a grid of 2 points, 3 seeds each"
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    finally:
        again.close()
