"""Issue 44: Import… froze the window for seconds after a file was picked (every game checked and
compared with the library on the GUI thread). It runs in the background now: the window keeps
ticking, the table stays usable, the status bar follows it, and a second import waits its turn."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFileDialog

from engine import Game
from engine.records import GameTrace, play_recorded
from engine.store import GameStore

pytest_plugins = ("tests.studio.gui_fixtures",)

SLOW_S = 1.0  # how long each import takes here: long enough to see the window go on meanwhile


def _slow_imports(monkeypatch) -> list[str]:
    """Every import takes at least SLOW_S (where it runs is what is tested); the files it read."""
    original = GameStore.import_games
    seen: list[str] = []

    def slow(self, path, progress=None):
        seen.append(Path(path).name)
        time.sleep(SLOW_S)
        return original(self, path, progress)

    monkeypatch.setattr(GameStore, "import_games", slow)
    return seen


def _short_games(store: GameStore, n: int) -> None:
    """``n`` different 12-move games (seeds 0 .. n - 1)."""
    for seed in range(n):
        game = Game(seed=seed)
        trace = GameTrace.start(game)
        for _ in range(12):
            play_recorded(game, game.legal_moves()[0], trace)
        store.record_trace(trace, source="agent", agent="first")


def _export(window, tmp_path: Path) -> tuple[Path, list[int]]:
    """A file of 5 games that are not in the library (exported, then deleted) and 20 that stay."""
    _short_games(window.store, 25)
    ids = sorted(g.id for g in window.store.list_games())
    path = window.store.export_npz(ids[:5], tmp_path / "five.npz")
    window.store.delete_games(ids[:5])
    return path, ids[5:]


def test_import_runs_in_the_background_and_the_window_keeps_going(qtbot, window, tmp_path, monkeypatch):
    path, kept = _export(window, tmp_path)
    seen = _slow_imports(monkeypatch)
    dialogs: list[str] = []

    def pick(*args, **kwargs):
        dialogs.append("open")
        return [str(path)], ""

    monkeypatch.setattr(QFileDialog, "getOpenFileNames", pick)
    window.show_tab("Games")
    tab = window.games
    tab.refresh()
    assert tab.model.rowCount() == 20

    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(20)
    t0 = time.monotonic()
    qtbot.mouseClick(tab.importButton, Qt.MouseButton.LeftButton)
    assert time.monotonic() - t0 < SLOW_S  # the click came back before the import could end
    assert tab.importing and not tab.importButton.isEnabled()
    assert window.statusBar().currentMessage().startswith("Importing five.npz")
    assert window.store.count_games() == 20  # nothing yet

    # The table is usable meanwhile: a row clicked is selected and summed up.
    rect = tab.table.visualRect(tab.model.index(2, 0))
    qtbot.mouseClick(tab.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert tab.selected_ids() == [tab.model.game(2).id]
    assert "1 selected" in tab.summaryLabel.text()

    # A second import (File > Import games…, Ctrl+I) is refused with a word, no file dialog.
    qtbot.keyClick(window, Qt.Key.Key_I, Qt.KeyboardModifier.ControlModifier)
    assert dialogs == ["open"]
    assert (
        window.statusBar().currentMessage()
        == "An import is running: wait for it to end before importing more"
    )

    qtbot.waitUntil(lambda: not tab.importing, timeout=15_000)
    done = time.monotonic()
    timer.stop()
    during = [t for t in ticks if t < done]
    assert len(during) >= 10  # the event loop ran all along (a frozen window ticks never)
    assert max(b - a for a, b in zip([t0, *during], during)) < SLOW_S  # never stalled for the import

    assert seen == ["five.npz"]  # imported once
    assert window.store.count_games() == 25
    assert window.statusBar().currentMessage() == "5 imported, 0 already in the library"
    new = sorted(g.id for g in window.store.list_games() if g.imported)
    assert len(new) == 5 and sorted(tab.selected_ids()) == new  # the file's games, shown selected
    assert tab.importButton.isEnabled() and tab.model.rowCount() == 25

    # Once it has ended, another import may start: the same file adds nothing.
    qtbot.mouseClick(tab.importButton, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not tab.importing, timeout=15_000)
    assert dialogs == ["open", "open"] and window.store.count_games() == 25
    assert window.statusBar().currentMessage() == "0 imported, 5 already in the library"
    assert set(kept) <= {g.id for g in window.store.list_games()}


def test_a_bad_file_in_the_background_is_shown_and_changes_nothing(qtbot, window, tmp_path, monkeypatch):
    _short_games(window.store, 3)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip archive")
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(junk)], ""))
    window.show_tab("Games")
    tab = window.games
    qtbot.mouseClick(tab.importButton, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not tab.importing, timeout=15_000)
    assert "junk.npz" in tab.last_error and "Nothing was imported" in tab.last_error
    box = tab.error_box
    assert box is not None and box.isVisible() and "junk.npz" in box.text()
    box.close()
    assert window.statusBar().currentMessage().startswith("Import failed: Nothing was imported")
    assert window.store.count_games() == 3 and tab.importButton.isEnabled()


def test_closing_the_window_mid_import_keeps_the_import(
    qtbot, window, qsettings, data_dir, tmp_path, monkeypatch
):
    path, _kept = _export(window, tmp_path)
    _slow_imports(monkeypatch)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(path)], ""))
    window.show_tab("Games")
    qtbot.mouseClick(window.games.importButton, Qt.MouseButton.LeftButton)
    assert window.games.importing
    window.close()  # waits for the import (one transaction) and drops what it would have shown

    from studio.app import create_window

    again = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(again)
    again.show()
    again.show_tab("Games")
    assert again.store.count_games() == 25
    assert again.games.model.rowCount() == 25 and "25 listed" in again.games.summaryLabel.text()
    again.close()
