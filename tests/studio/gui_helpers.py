"""Helpers for the main-window tests: test agents with known move values, seeds, expected boards.

The fixtures that use them are in ``gui_fixtures.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from agents.base import Agent, legal_values
from agents.config import AgentConfig
from engine import DIRECTIONS, Direction, Game, Rules
from studio.widgets.board import ARROW_KEYS as ARROW_KEYS  # the tests' name for them


def greedy_game(store, seed: int = 4, moves: int = 12) -> int:  # type: ignore[no-untyped-def]
    """A stored game of the greedy agent (``moves`` moves at most, from ``seed``): its id."""
    from agents.registry import create_agent
    from engine.records import GameTrace, play_recorded

    agent = create_agent("greedy", seed=seed)
    game = Game(seed=seed)
    trace = GameTrace.start(game)
    while not game.game_over and game.moves < moves:
        play_recorded(game, agent.act(game), trace)
    trace.final_board = game.board
    return int(store.record_trace(trace, source="agent", agent="greedy"))


class RaterAgent(Agent):
    """Rates legal moves with known values: up 1, left 2, down 3, right 4 (so its choice is predictable)."""

    name = "test_rater"
    config_cls = AgentConfig
    description = "test agent with fixed move values"

    def move_values(self, game: Game) -> dict[Direction, float]:
        return legal_values(game, np.array([1.0, 2.0, 3.0, 4.0]))


class SlowAgent(RaterAgent):
    """Like RaterAgent but thinks for 0.4 s (a stand-in for a deep expectimax)."""

    name = "test_slow"

    def move_values(self, game: Game) -> dict[Direction, float]:
        import time

        time.sleep(0.4)
        return super().move_values(game)


def seed_with(rules: Rules, want: Callable[[np.ndarray], bool]) -> int:
    """The first seed whose starting board satisfies ``want(legal_mask)``."""
    for seed in range(1000):
        if want(Game(rules=rules, seed=seed).legal_mask()):
            return seed
    raise AssertionError("no such seed below 1000")


def apply_logged(before: np.ndarray, direction: Direction, spawns: np.ndarray) -> np.ndarray:
    """``engine.slide`` of ``before`` plus the logged spawn rows (row, col, value)."""
    from engine import slide

    after, _ = slide(before, direction)
    for r, c, v in spawns:
        if v:
            assert after[r, c] == 0, "a spawn must land on an empty cell"
            after[r, c] = v
    return after


__all__ = ["DIRECTIONS", "RaterAgent", "SlowAgent", "apply_logged", "seed_with"]


def load_preset_with_keys(qtbot, form, name: str) -> None:  # type: ignore[no-untyped-def]
    """Pick preset ``name`` in ``form``'s box with the arrow keys, as a user does, then click Load."""
    from PySide6.QtCore import Qt

    combo = form.presetCombo
    assert combo.findData(name) >= 0, f"no preset {name!r} offered"
    for _ in range(combo.count() + 1):
        if combo.currentData() == name:
            break
        qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert combo.currentData() == name
    qtbot.mouseClick(form.presetButton, Qt.MouseButton.LeftButton)


def open_window(qtbot, data_dir, settings, *, active: bool = False):
    """A main window on ``data_dir`` and ``settings``, shown and exposed; with ``active``, also the
    active window (what a window manager makes a window it opens, which the offscreen platform is not).

    Tests that close a window and open it again build the second one with this, on the same data dir
    and the same QSettings file, as a person restarting the studio does."""
    from PySide6.QtWidgets import QApplication

    from studio.app import create_window

    win = create_window(data_dir, settings=settings)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    if active:
        win.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=3000)
    return win


def type_over(qtbot, edit, text: str) -> None:
    """Into line edit ``edit`` (a spin box's is its ``lineEdit()``): focus it, select what it holds
    and type ``text`` over it."""
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClicks(edit, text)


def retype(qtbot, widget, text: str) -> None:
    """Select what ``widget`` holds with Ctrl+A and type ``text`` over it, as a person does."""
    from PySide6.QtCore import Qt

    widget.setFocus()
    qtbot.keyClick(widget, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(widget, text)


def open_sweep_dialog(qtbot, train):
    """Click the Train tab's Sweep button: the dialog it opens, once shown."""
    from PySide6.QtCore import Qt

    qtbot.mouseClick(train.sweepButton, Qt.MouseButton.LeftButton)
    dialog = train.sweepDialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible)
    return dialog
