"""The Train and Arena tabs shown for a test, loaded with ``pytest_plugins = (..., "tests.studio.tab_fixtures")``.

One set-up for every file that drives these tabs (a plugin module, like ``gui_fixtures``, rather than a
conftest: several people add tests under ``tests/studio`` at once). A file that needs another size or more
set-up writes its own ``tab`` / ``arena`` fixture with :func:`shown_train_tab` / :func:`shown_arena`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from tests.studio.train_fakes import register_fakes

if TYPE_CHECKING:
    from engine.store import GameStore
    from studio.tabs.arena import ArenaTab
    from studio.tabs.train import TrainTab
    from studio.tabs.train.sweep import SweepDialog

W = TypeVar("W")


def shown(qtbot: Any, widget: W, size: tuple[int, int]) -> W:
    """``widget`` resized to ``size``, shown and exposed, closed by qtbot after the test."""
    qtbot.addWidget(widget)
    widget.resize(*size)  # type: ignore[attr-defined]
    widget.show()  # type: ignore[attr-defined]
    qtbot.waitExposed(widget)
    return widget


def shown_train_tab(
    qtbot: Any, store: GameStore, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int] = (1200, 800)
) -> Iterator[TrainTab]:
    """A shown Train tab of ``size`` whose close question answers "stop"; shut down after the test."""
    from studio.tabs.train import TrainTab

    t = TrainTab(store, None)
    qtbot.addWidget(t)
    t.resize(*size)
    t.show()
    qtbot.waitExposed(t)
    # A test that fails mid-run must not leave a modal question open at teardown.
    monkeypatch.setattr(t, "ask_close", lambda: "stop")
    yield t
    t.shutdown()


@pytest.fixture
def tab(qtbot: Any, store: GameStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[TrainTab]:
    """The Train tab, 1200x800, with the fake agents of ``train_fakes`` registered."""
    register_fakes(monkeypatch)
    yield from shown_train_tab(qtbot, store, monkeypatch)


def fake_run(tab: TrainTab, episodes: int = 3, **config: Any) -> None:
    """Fill the form for a run of the fake learner: no delay per move (unless ``config`` says), ``episodes``."""
    tab.launch.select_agent("fake_learner")
    tab.launch.form.set_values({"delay_ms": 0.0, **config})
    tab.launch.set_budget(episodes=episodes)


def shown_arena(qtbot: Any, store: GameStore, size: tuple[int, int]) -> Iterator[ArenaTab]:
    """A shown Arena tab of ``size`` without settings; shut down after the test."""
    from studio.tabs.arena import ArenaTab

    arena = ArenaTab(store, None)
    qtbot.addWidget(arena)
    arena.resize(*size)
    arena.show()
    yield arena
    arena.shutdown()


def lr_sweep_dialog(qtbot: Any, tab: TrainTab) -> SweepDialog:
    """The Sweep dialog opened with a click, its lr row listing 0.1 and 0.01, one worker (not started)."""
    from PySide6.QtCore import Qt

    from studio.tabs.train.sweep import LIST

    qtbot.mouseClick(tab.sweepButton, Qt.MouseButton.LeftButton)
    dialog = tab.sweepDialog
    assert dialog is not None
    row = dialog.rows["lr"]
    row.set_mode(LIST)
    row.listEdit.selectAll()
    qtbot.keyClicks(row.listEdit, "0.1,0.01")
    dialog.workersSpin.setValue(1)
    return dialog
