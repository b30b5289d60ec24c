"""The tabs' shared pieces (studio.tabs.common) and the Thinker's failure path, on their own."""

from __future__ import annotations

import logging

import pytest
from PySide6.QtWidgets import QAbstractItemView, QLabel, QWidget

from agents.spec import AgentSpec
from engine import Direction, Game, Rules
from studio.tabs.common import StoreTab, error_label, label, table, titled_row
from studio.thinking import GradeResult, Thinker, ThinkResult


class CountingTab(StoreTab):
    def __init__(self, store, parent=None):
        super().__init__("countingTab", store, parent)
        self.refreshes = 0

    def refresh(self) -> None:
        self._dirty = False
        self.refreshes += 1


def test_a_store_tab_rereads_only_when_shown_after_a_change(qtbot):
    tab = CountingTab(store=None)
    qtbot.addWidget(tab)
    assert tab.objectName() == "countingTab" and tab.refreshes == 0  # nothing read before it is shown
    tab.show()
    assert tab.refreshes == 1
    tab.mark_dirty()
    tab.mark_dirty()
    assert tab.refreshes == 1  # marked, not re-read while it stays shown
    tab.hide()
    tab.show()
    assert tab.refreshes == 2
    tab.hide()
    tab.show()
    assert tab.refreshes == 2  # no change since: nothing to re-read


def test_titled_row_puts_the_title_the_picker_a_stretch_then_the_actions():
    picker, a, b = QWidget(), QWidget(), QWidget()
    head = titled_row("Runs", a, b, beside=[picker])
    items = [head.itemAt(i) for i in range(head.count())]
    assert isinstance(items[0].widget(), QLabel) and items[0].widget().text() == "<b>Runs</b>"
    assert items[1].widget() is picker
    assert items[2].widget() is None and items[2].spacerItem() is not None  # the stretch
    assert [i.widget() for i in items[3:]] == [a, b]


@pytest.mark.parametrize(
    ("multi", "mode"),
    [
        (False, QAbstractItemView.SelectionMode.SingleSelection),
        (True, QAbstractItemView.SelectionMode.ExtendedSelection),
    ],
)
def test_table_is_read_only_whole_rows(qtbot, multi, mode):
    t = table("someTable", ["A", "B", "C"], multi=multi)
    qtbot.addWidget(t)
    assert t.objectName() == "someTable" and t.columnCount() == 3 and t.rowCount() == 0
    assert [t.horizontalHeaderItem(i).text() for i in range(3)] == ["A", "B", "C"]
    assert t.editTriggers() == QAbstractItemView.EditTrigger.NoEditTriggers
    assert t.selectionBehavior() == QAbstractItemView.SelectionBehavior.SelectRows
    assert t.selectionMode() == mode
    assert t.horizontalHeader().stretchLastSection() and t.verticalHeader().isHidden()


def test_labels(qtbot):
    parent = QWidget()
    qtbot.addWidget(parent)
    plain = label("plain", "text")
    note = label("note", wrap=True, style="color: #6b625a;")
    err = error_label("err")
    for w in (plain, note, err):
        w.setParent(parent)
    assert (plain.objectName(), plain.text(), plain.wordWrap(), plain.styleSheet()) == (
        "plain",
        "text",
        False,
        "",
    )
    assert note.wordWrap() and note.styleSheet() == "color: #6b625a;" and note.isVisibleTo(parent)
    assert err.wordWrap() and "#c62828" in err.styleSheet() and not err.isVisibleTo(parent)


class _Broken:
    name = "broken"

    def move_values(self, game):
        raise RuntimeError("bad weights")


def test_an_agent_that_raises_gives_a_result_with_its_error_and_a_log_line(qtbot, caplog):
    thinker = Thinker()
    thinker.agent_for = lambda spec, rules: _Broken()  # type: ignore[method-assign]
    game = Game(rules=Rules(), seed=3)
    with caplog.at_level(logging.ERROR, "studio.thinking"), qtbot.waitSignal(thinker.resultReady) as got:
        ticket = thinker.request(AgentSpec("greedy"), game, want_values=True)
    thinker.shutdown()
    r = got.args[0]
    assert isinstance(r, ThinkResult)
    assert (r.ticket, r.agent_name, r.moves_at_request) == (ticket, "broken", game.moves)
    assert (r.values, r.choice, r.error, r.value_kind) == (None, None, "bad weights", "rank")
    assert "agent broken failed to think about move 0" in caplog.text


def test_a_reviewer_that_cannot_be_built_gives_a_grade_with_its_error(qtbot, caplog):
    class Reviewer:
        spec, depth, label, fallback = AgentSpec("expectimax"), 2, "expectimax d2", "no network yet"

        def build(self, rules):
            raise ValueError("no such network")

    thinker = Thinker()
    game = Game(rules=Rules(), seed=4)
    with caplog.at_level(logging.ERROR, "studio.thinking"), qtbot.waitSignal(thinker.gradeReady) as got:
        ticket = thinker.request_grade(Reviewer(), game, Direction.LEFT)
    thinker.shutdown()
    g = got.args[0]
    assert isinstance(g, GradeResult)
    assert (g.ticket, g.agent_name, g.index, g.grade, g.error) == (
        ticket,
        "expectimax d2",
        0,
        None,
        "no such network",
    )
    assert (g.spec, g.value_kind, g.fallback) == (AgentSpec("expectimax"), "points", "no network yet")
    assert "reviewer expectimax d2 failed to grade move 0" in caplog.text
