"""The filter bar of the Games and Replay tabs: what the person sets is the GameFilter it emits."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.store import GameFilter
from engine.store.filters import FILTER_SOURCES
from studio.widgets.filter_bar import FIELDS, FilterBar

NOW = 1_700_000_000.0


@pytest.fixture
def bar(qtbot):
    widget = FilterBar("test", clock=lambda: NOW)
    qtbot.addWidget(widget)
    widget.show()
    return widget


def test_nothing_set_is_every_game(bar):
    assert bar.fields == FIELDS
    assert bar.game_filter() == GameFilter() and bar.game_filter().is_empty()
    assert [bar.source.itemData(i) for i in range(bar.source.count())] == [None, *FILTER_SOURCES]
    assert bar.source.objectName() == "testSourceFilter" and bar.minTile.objectName() == "testMinTile"


def test_keys_and_typing_make_the_filter(qtbot, bar):
    with qtbot.waitSignal(bar.changed) as sig:
        qtbot.keyClick(bar.source, Qt.Key.Key_Down)  # "all sources" -> the first source
    assert sig.args == [GameFilter(source=FILTER_SOURCES[0])]

    bar.agent.setFocus()
    qtbot.keyClicks(bar.agent, "  greedy ")
    with qtbot.waitSignal(bar.changed) as sig:
        qtbot.keyClick(bar.agent, Qt.Key.Key_Return)
    assert sig.args == [GameFilter(source=FILTER_SOURCES[0], agent="greedy")]

    bar.minScore.setFocus()
    bar.minScore.selectAll()
    qtbot.keyClicks(bar.minScore, "5000")
    with qtbot.waitSignal(bar.changed) as sig:
        qtbot.keyClick(bar.minScore, Qt.Key.Key_Return)
    assert sig.args[0].min_score == 5000

    with qtbot.waitSignal(bar.changed) as sig:
        bar.minTile.setCurrentIndex(bar.minTile.findData(2048))
    assert sig.args[0].min_max_tile == 2048
    with qtbot.waitSignal(bar.changed) as sig:
        bar.status.setCurrentIndex(bar.status.findText("unfinished"))
    assert sig.args[0].status == "abandoned"  # the store's word for a game left before the end
    with qtbot.waitSignal(bar.changed) as sig:
        bar.period.setCurrentIndex(bar.period.findText("last 7 days"))
    assert sig.args[0] == GameFilter(
        source=FILTER_SOURCES[0],
        agent="greedy",
        min_score=5000,
        min_max_tile=2048,
        status="abandoned",
        since=NOW - 7 * 86_400.0,
    )


def test_reset_is_silent_and_clears_everything(qtbot, bar):
    bar.source.setCurrentIndex(2)
    bar.agent.setText("dqn")
    bar.minScore.setValue(100)
    bar.period.setCurrentIndex(1)
    assert not bar.game_filter().is_empty()
    with qtbot.assertNotEmitted(bar.changed):
        bar.reset()
    assert bar.game_filter() == GameFilter()


def test_a_bar_with_the_source_only(qtbot):
    bar = FilterBar("replay", ("source",))
    qtbot.addWidget(bar)
    assert bar.fields == ("source",) and bar.agent is None and bar.period is None
    bar.source.setCurrentIndex(bar.source.findData("imported"))
    assert bar.game_filter() == GameFilter(source="imported")
    with pytest.raises(ValueError, match="no filter colour"):
        FilterBar("x", ("source", "colour"))
