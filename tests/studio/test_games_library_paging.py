"""Issue 47: the Games tab shows a big library's first rows without reading all of it. It reads a page,
more as the table scrolls, sorts through the store, and sums up the whole filter in its summary."""

from __future__ import annotations

import json
from collections import Counter

from PySide6.QtCore import Qt

from studio.commands.bench_store import synthetic_games
from studio.tabs.games import PAGE

pytest_plugins = ("tests.studio.gui_fixtures",)

N_GAMES = 1_300


def _library(window) -> list:
    """The window's store filled with ``N_GAMES`` synthetic games (all of them listed), the Games tab
    shown and refreshed."""
    window.store.insert_games(synthetic_games(N_GAMES, 10, seed=7))
    window.show_tab("Games")
    window.games.refresh()
    return window.store.list_games()


def test_the_tab_reads_a_page_and_more_as_the_table_scrolls(qtbot, window):
    games = _library(window)
    tab = window.games
    model = tab.model
    assert PAGE < N_GAMES and model.rowCount() == PAGE  # not every game read at once
    assert [model.game(r).id for r in range(3)] == sorted((g.id for g in games), reverse=True)[:3]
    # The summary is the whole library's, not the page's.
    text = tab.summaryLabel.text()
    assert f"{N_GAMES:,} listed" in text and f"best score <b>{max(g.score for g in games):,}</b>" in text
    assert f"{sum(g.n_moves for g in games):,} moves" in text
    assert tab.histogram.counts == dict(sorted(Counter(g.max_tile for g in games).items()))

    tab.table.setFocus()
    qtbot.keyClick(tab.table, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)  # to the last row
    qtbot.waitUntil(lambda: model.rowCount() > PAGE, timeout=3000)
    for _ in range(5):
        qtbot.keyClick(tab.table, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: model.rowCount() == N_GAMES, timeout=5000)
    assert len({model.game(r).id for r in range(model.rowCount())}) == N_GAMES  # each game once


def test_a_header_click_sorts_the_whole_library(qtbot, window):
    games = _library(window)
    tab = window.games
    model = tab.model
    col = [k for k, _ in model.COLUMNS].index("score")
    header = tab.table.horizontalHeader()
    x = header.sectionViewportPosition(col) + header.sectionSize(col) // 2
    from PySide6.QtCore import QPoint

    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))
    first = [model.game(r).score for r in range(model.rowCount())]
    order = header.sortIndicatorOrder()
    want = sorted((g.score for g in games), reverse=order == Qt.SortOrder.DescendingOrder)
    assert model.rowCount() == PAGE and first == want[:PAGE]  # the library's top scores, not the page's
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))
    again = [model.game(r).score for r in range(model.rowCount())]
    assert again == sorted((g.score for g in games), reverse=order != Qt.SortOrder.DescendingOrder)[:PAGE]


def test_bench_store_reports_every_filter(qtbot, tmp_path, capsys):
    from studio.cli import main

    argv = ["bench", "store", "--json", "--rounds", "1", "-o", "games=300", "-o", "moves=8"]
    assert main([*argv, "-o", f"data_dir={tmp_path / 'lib'}"]) == 0
    report = json.loads(capsys.readouterr().out)
    results = report["results"]
    for key in (
        "list_all",
        "list_source_mine",
        "list_source_evaluation",
        "list_source_imported",
        "list_agent_ntuple",
        "list_json",
        "games_tab_first_rows",
        "progress_tab_refresh",
    ):
        assert 0 < results[key]["seconds"] < 60, key
    assert any(k.startswith("list_min_score") for k in results) and any(
        k.startswith("list_since") for k in results
    )
    assert report["info"]["games"] == 300 and report["info"]["schema"] == 6
    # "your games": those the person played alone or shared with an agent
    mine = sum(any(p.is_human for p in g.players) for g in synthetic_games(300, 8, seed=0))
    assert report["info"]["progress_games"] == mine > 0
