"""Add checkpoint… in the Arena: the file dialog opens in the data folder's checkpoints, the file
picked is listed (ticked, named by its agent and file), the status bar says so, and the list is kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QFileDialog

from engine.store import GameStore
from studio.tabs.arena import ArenaTab

CLICK = Qt.MouseButton.LeftButton

pytest_plugins = ("tests.studio.gui_fixtures",)


def test_a_checkpoint_picked_in_the_dialog_is_listed_and_kept(
    qtbot: Any, store: GameStore, qsettings: QSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    picked = tmp_path / "run-7.npz"
    picked.write_bytes(b"a checkpoint")  # only its path matters until a run
    asked: list[str] = []

    def choose(parent: Any, caption: str, start: str, filters: str) -> tuple[str, str]:
        asked.append(start)
        return str(picked), filters

    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(choose))
    tab = ArenaTab(store, qsettings)
    qtbot.addWidget(tab)
    tab.show()
    with qtbot.waitSignal(tab.status) as said:
        qtbot.mouseClick(tab.addCheckpointButton, CLICK)
    assert asked == [str(store.path.parent / "checkpoints")]
    assert said.args == ["run-7.npz added to the arena"]
    assert [tab.entryList.item(i).text() for i in range(tab.entryList.count())] == ["checkpoint (run-7.npz)"]
    assert [s.checkpoint for s in tab.contestants()] == [str(picked)]
    assert tab.runButton.isEnabled()
    tab.shutdown()
    tab.deleteLater()

    again = ArenaTab(store, QSettings(qsettings.fileName(), QSettings.Format.IniFormat))
    qtbot.addWidget(again)
    assert [s.checkpoint for s in again.contestants()] == [str(picked)]


def test_a_dialog_closed_without_a_file_adds_nothing(
    qtbot: Any, store: GameStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a: ("", "")))
    tab = ArenaTab(store, None)
    qtbot.addWidget(tab)
    tab.show()
    qtbot.mouseClick(tab.addCheckpointButton, CLICK)
    assert tab.entryList.count() == 0 and not tab.runButton.isEnabled()
