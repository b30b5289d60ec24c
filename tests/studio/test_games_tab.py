"""The Games tab: table model, filters, summary, delete, export / import (and bad imports)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt

from engine import Game, Rules
from engine.records import GameTrace, play_recorded
from studio.tabs.games import GamesTableModel

# The window / settings / test-agent fixtures (not a conftest: several people add tests here).
pytest_plugins = ("tests.studio.gui_fixtures",)


def _store_game(
    store, seed: int, source: str = "agent", agent: str | None = "corner", rules: Rules | None = None
) -> int:
    game = Game(rules=rules or Rules(), seed=seed)
    trace = GameTrace.start(game)
    policy = (2, 1, 3, 0) if seed % 2 else (1, 2, 0, 3)
    while not game.game_over:
        mask = game.legal_mask()
        play_recorded(game, next(d for d in policy if mask[d]), trace)
    return store.record_trace(trace, source=source, agent=agent)


def _fill(store) -> list[int]:
    ids = [_store_game(store, s) for s in range(4)]
    ids.append(_store_game(store, 10, source="human", agent=None))
    ids.append(_store_game(store, 11, source="evaluation", agent="random", rules=Rules(rows=3, cols=3)))
    return ids


def _open_games(window):
    window.show_tab("Games")
    tab = window.games
    tab.refresh()
    return tab


def test_table_lists_sorts_and_filters(qtbot, window):
    ids = _fill(window.store)
    tab = _open_games(window)
    model = tab.model
    assert isinstance(model, GamesTableModel) and model.rowCount() == len(ids)
    score_col = [k for k, _ in model.COLUMNS].index("score")
    tab.table.sortByColumn(score_col, Qt.SortOrder.DescendingOrder)
    scores = [model.game(r).score for r in range(model.rowCount())]
    assert scores == sorted(scores, reverse=True)
    assert model.data(model.index(0, score_col)) == f"{scores[0]:,}"
    assert model.data(model.index(0, score_col), Qt.ItemDataRole.UserRole) == scores[0]

    tab.filterBar.source.setCurrentIndex(tab.filterBar.source.findData("human"))
    assert [model.game(r).source for r in range(model.rowCount())] == ["human"]
    tab.filterBar.source.setCurrentIndex(0)
    tab.filterBar.agent.setText("random")
    tab.refresh()
    assert [model.game(r).agent for r in range(model.rowCount())] == ["random"]
    assert model.data(model.index(0, [k for k, _ in model.COLUMNS].index("board"))) == "3x3"
    tab.filterBar.agent.clear()
    best = max(g.score for g in window.store.list_games())
    tab.filterBar.minScore.setValue(best)
    tab.refresh()
    assert model.rowCount() == 1 and model.game(0).score == best


def test_summary_of_the_selection(qtbot, window):
    _fill(window.store)
    tab = _open_games(window)
    games = window.store.list_games()
    assert f"{len(games)} listed" in tab.summaryLabel.text()
    pick = [g.id for g in games[:3]]
    tab.select_ids(pick)
    chosen = [g for g in games if g.id in pick]
    text = tab.summaryLabel.text()
    assert "3 selected" in text and f"{max(g.score for g in chosen):,}" in text
    counts: dict[int, int] = {}
    for g in chosen:
        counts[g.max_tile] = counts.get(g.max_tile, 0) + 1
    assert tab.histogram.counts == dict(sorted(counts.items()))


def test_open_in_replay(qtbot, window):
    ids = _fill(window.store)
    tab = _open_games(window)
    tab.select_ids([ids[2]])
    qtbot.mouseClick(tab.openButton, Qt.MouseButton.LeftButton)
    assert window.tabs.currentWidget() is window.replay
    assert window.replay.record.id == ids[2]


def test_delete_selected(qtbot, window):
    ids = _fill(window.store)
    tab = _open_games(window)
    tab.select_ids(ids[:2])
    assert tab.delete_selected(confirm=False) == 2
    left = {g.id for g in window.store.list_games()}
    assert left == set(ids[2:]) and tab.model.rowCount() == len(ids) - 2


def test_export_then_import_round_trip(qtbot, window, tmp_path: Path):
    ids = _fill(window.store)
    tab = _open_games(window)
    tab.select_ids(ids[:3])
    for suffix in (".npz", ".jsonl"):
        path = tmp_path / f"games{suffix}"
        assert tab.export_selected(path) and path.exists()
    original = window.store.load_game(ids[0])
    window.store.delete_games(ids[:3])  # else every game of the files is in the library already
    before = window.store.count_games()
    # The .jsonl holds the same three games as the .npz: they are added once.
    new = tab.import_files([tmp_path / "games.npz", tmp_path / "games.jsonl"])
    assert len(new) == 3 and window.store.count_games() == before + 3
    assert tab.last_message == "3 imported, 3 already in the library"
    assert set(tab.selected_ids()) == set(new)  # the imported games are shown selected
    copies = [window.store.load_game(i) for i in new]
    twin = next(c for c in copies if c.summary.origin and c.summary.origin.get("id") == ids[0])
    assert twin.summary.source == "agent" and twin.summary.imported  # keeps its source, knows it was imported
    assert np.array_equal(twin.layouts, original.layouts) and np.array_equal(twin.moves, original.moves)
    # "imported" still filters: the three copies, their source shown with the mark
    tab.filterBar.source.setCurrentIndex(tab.filterBar.source.findData("imported"))
    tab.refresh()
    model = tab.model
    assert sorted(model.game(r).id for r in range(model.rowCount())) == sorted(new)
    assert {model.data(model.index(r, 1)) for r in range(model.rowCount())} == {"agent (imported)"}


def test_bad_import_shows_an_error_and_changes_nothing(qtbot, window, tmp_path: Path):
    ids = _fill(window.store)
    tab = _open_games(window)
    tab.select_ids(ids[:2])
    good = tmp_path / "good.jsonl"
    tab.export_selected(good)
    # A file whose second game has a corrupted layout: the whole file must be refused.
    lines = good.read_text().splitlines()
    game = json.loads(lines[1])
    game["layouts"][3][0][0] = 3  # not a tile value
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n" + json.dumps(game) + "\n")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"this is not a zip archive")

    before = [(g.id, g.n_moves) for g in window.store.list_games()]
    for path in (bad, junk):
        new = tab.import_files([path])
        assert new == []
        assert path.name in tab.last_error and "Nothing was imported" in tab.last_error
        box = tab.error_box
        assert box is not None and box.isVisible() and path.name in box.text()
        box.close()
        assert [(g.id, g.n_moves) for g in window.store.list_games()] == before
    assert tab.model.rowCount() == len(before)


def test_importing_an_export_twice_adds_its_games_once(qtbot, window, tmp_path: Path, monkeypatch):
    """Issue #33: the same export imported twice made duplicates without a word."""
    from PySide6.QtWidgets import QFileDialog

    ids = _fill(window.store)
    tab = _open_games(window)
    tab.select_ids(ids[:2])
    path = tmp_path / "two.npz"
    assert tab.export_selected(path)
    window.store.delete_games(ids[:1])  # one of the two is new to the library, the other is in it
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(path)], ""))
    before = window.store.count_games()
    qtbot.mouseClick(tab.importButton, Qt.MouseButton.LeftButton)
    assert tab.wait_import()  # the import runs in the background
    assert window.store.count_games() == before + 1
    assert window.statusBar().currentMessage() == "1 imported, 1 already in the library"
    (new,) = [g.id for g in window.store.list_games() if g.imported]
    assert sorted(tab.selected_ids()) == sorted([ids[1], new])  # the file's games, shown selected
    qtbot.mouseClick(tab.importButton, Qt.MouseButton.LeftButton)  # again: nothing new
    assert tab.wait_import()
    assert window.store.count_games() == before + 1
    assert window.statusBar().currentMessage() == "0 imported, 2 already in the library"
    qtbot.waitUntil(lambda: window.db_label.text().startswith(f"{before + 1} games · "), timeout=3000)


def test_status_words_source_column_and_one_game(qtbot, window):
    """One vocabulary with the command line; the Source column is not cut; "1 game", not "1 games"."""
    from engine.store import GameRecorder
    from studio.text import game_status

    rec = GameRecorder(window.store, rules=Rules(), seed=3)
    rec.play(rec.game.legal_moves()[0])
    rec.close()  # unfinished
    summary = window.store.get_game(rec.game_id)
    tab = _open_games(window)
    model = tab.model
    col = {k: i for i, (k, _) in enumerate(model.COLUMNS)}
    assert model.data(model.index(0, col["status"])) == "unfinished" == game_status(summary.status)
    statuses = [tab.filterBar.status.itemText(i) for i in range(tab.filterBar.status.count())]
    assert statuses == ["any status", "playing", "finished", "unfinished"]
    assert tab.summaryLabel.text().endswith("<br>1 move<br>1 unfinished")
    fm = tab.table.fontMetrics()
    for text in ("mixed (imported)", "evaluation (imported)", "unfinished"):
        key = "status" if text == "unfinished" else "source"
        assert fm.horizontalAdvance(text) + 12 <= tab.table.columnWidth(col[key]), text
    window._update_db_label()
    assert window.db_label.text().startswith("1 game · ")
