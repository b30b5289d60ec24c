"""The Train tab's runs table, its buttons and the curves are views of one runs model (issue 46,
item 1): what a person does in one view is in the model, and the others show it."""

from __future__ import annotations

from PySide6.QtCore import Qt

from studio.services.runs_model import Column
from tests.studio.tab_fixtures import fake_run

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")
CLICK = Qt.MouseButton.LeftButton


def _row_of(table, run_id: int) -> int:
    return next(
        r
        for r in range(table.rowCount())
        if int(table.item(r, Column.RUN).data(Qt.ItemDataRole.UserRole)) == run_id
    )


def test_ticks_selection_rows_and_curves_are_one_model(qtbot, tab, store):
    for _ in range(2):
        fake_run(tab, episodes=3)
        with qtbot.waitSignal(tab.trainingFinished, timeout=60_000):
            qtbot.mouseClick(tab.startButton, CLICK)
    first, second = sorted(r.id for r in store.list_runs())
    table = tab.runsTable
    # The run that just ended is selected: the model says so, and its buttons follow.
    assert tab.model.selected == (second,)
    assert tab.useInPlayButton.isEnabled() and not tab.runsPanel.runPauseButton.isEnabled()
    assert table.item(_row_of(table, second), Column.STATUS).text() == "finished"
    assert table.item(_row_of(table, second), Column.EPISODES).text() == "3"

    # A tick in the first run's box: in the model, and both runs drawn, keyed by run id.
    table.item(_row_of(table, first), Column.RUN).setCheckState(Qt.CheckState.Checked)
    assert tab.model.checked == {first}
    # (the run that ended here is still drawn under its live key, the ticked one under its id)
    assert sorted(r.run_id for _k, r in tab.model.shown) == [first, second]
    assert first in [k for k, _r in tab.model.shown]
    assert [k for k, _r in tab.curves.runs] == [k for k, _r in tab.model.shown]

    # Clearing the curves panel (its own control) clears the model's shown runs too.
    tab.curves.clear()
    assert tab.model.shown == [] and tab.curves.runs == []

    # The model's tick shows in the table's box, as a person sees it.
    tab.runsPanel.set_checked([second])
    assert table.item(_row_of(table, second), Column.RUN).checkState() == Qt.CheckState.Checked
    assert table.item(_row_of(table, first), Column.RUN).checkState() == Qt.CheckState.Unchecked
