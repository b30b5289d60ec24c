"""Issue: an export from the Games tab imported backwards (the table lists newest first, and the file
kept that order, so the library's first game came back with the highest id). The file keeps the
library's order, and an import keeps the file's."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QFileDialog

from engine.store import exchange
from tests.studio.test_games_tab import _store_game

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton


def test_three_games_export_and_import_in_their_order(qtbot, window, tmp_path, monkeypatch):
    old = [_store_game(window.store, seed) for seed in (1, 2, 3)]
    scores = {g.id: g.score for g in window.store.list_games()}
    assert len(set(scores.values())) == 3  # each game told apart by its score below
    window.show_tab("Games")
    tab = window.games
    tab.table.setFocus()
    qtbot.keyClick(tab.table, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)  # select all
    assert sorted(tab.selected_ids()) == old
    out = tmp_path / "three.npz"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), "NumPy archive (*.npz)"))
    qtbot.mouseClick(tab.exportButton, CLICK)
    assert [g.meta["id"] for g in exchange.read_games(out)] == old  # the library's order, oldest first

    # Into another library: the new ids follow the file's order
    from studio.app import create_window

    other_settings = QSettings(str(tmp_path / "other.ini"), QSettings.Format.IniFormat)
    other = create_window(tmp_path / "other", settings=other_settings)
    qtbot.addWidget(other)
    other.show()
    other.show_tab("Games")
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(out)], ""))
    qtbot.mouseClick(other.games.importButton, CLICK)
    assert other.games.wait_import()  # the import runs in the background
    imported = sorted(other.store.list_games(), key=lambda g: g.id)
    assert [g.origin["id"] for g in imported] == old
    assert [g.score for g in imported] == [scores[i] for i in old]
    assert other.games.last_message == "3 imported, 0 already in the library"
    other.close()


def test_import_keeps_the_order_of_a_file_written_newest_first(store, tmp_path: Path):
    """A file may list its games in any order (an older export, another tool): the ids follow it."""
    old = [_store_game(store, seed) for seed in (1, 2, 3)]
    path = tmp_path / "backwards.jsonl"
    store.export_jsonl(old[::-1], path)
    from engine.store import GameStore

    with GameStore(tmp_path / "fresh.db") as fresh:
        ids = fresh.import_games(path).ids
        assert ids == sorted(ids)
        assert [fresh.get_game(i).origin["id"] for i in ids] == old[::-1]
