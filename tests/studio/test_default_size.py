"""Every tab's main controls are on screen at the window's default size (1194x720) and at 1280x800.

A fresh profile opens the window at 1194x720; at that size and at 1280x800 each tab shows what its
main task needs without scrolling or resizing: Train (agent, preset, budget, Start), Play (board, New
game, Hint), Replay (board, slider), Games (table, a filter), Arena (contestants, Run), Progress (its
charts). "Shown" means visible, of a usable size, wholly inside the window and inside every widget
it sits in (a widget cut by a narrower parent, or below a scroll area's viewport, is not shown).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QWidget

pytest_plugins = ("tests.studio.gui_fixtures",)

SIZES = ((1194, 720), (1280, 800))


def clipped_by(widget: QWidget, window: QWidget) -> str | None:
    """Why ``widget`` is not wholly on screen in ``window``, or None when it is.

    Its rectangle, mapped into each ancestor up to the window, must lie inside that ancestor's rect
    (a scroll area's contents inside its viewport: the part below the fold is not shown).
    """
    if not widget.isVisible():
        return "hidden"
    if widget.width() < 16 or widget.height() < 10:
        return f"too small ({widget.width()}x{widget.height()})"
    rect = QRect(QPoint(0, 0), widget.size())
    child: QWidget = widget
    parent = widget.parentWidget()
    while parent is not None:
        rect = QRect(child.mapTo(parent, rect.topLeft()), rect.size())
        area = parent.rect()
        if (
            isinstance(parent.parentWidget(), QAbstractScrollArea)
            and parent is parent.parentWidget().viewport()
        ):
            area = parent.rect()  # the viewport: what the scroll area shows of its contents
        if not area.contains(rect):
            return (
                f"outside {parent.objectName() or type(parent).__name__} "
                f"({rect.x()},{rect.y()} {rect.width()}x{rect.height()} not in "
                f"{area.width()}x{area.height()})"
            )
        if parent is window:
            return None
        child, parent = parent, parent.parentWidget()
    return "not in the window"


def _train(win) -> dict[str, QWidget]:
    t = win.tab("Train")
    t.launch.ensure_loaded()
    return {
        "agent": t.launch.agentCombo,
        "preset": t.launch.form.presetCombo,
        "preset Load": t.launch.form.presetButton,
        "episodes": t.launch.episodesSpin,
        "minutes": t.launch.minutesSpin,
        "moves": t.launch.stepsSpin,
        "Start": t.startButton,
    }


def _play(win) -> dict[str, QWidget]:
    t = win.tab("Play")
    return {"board": t.board, "New game": t.newGameButton, "Hint": t.hintButton}


def _replay(win) -> dict[str, QWidget]:
    t = win.tab("Replay")
    return {"board": t.findChild(QWidget, "replayBoard"), "slider": t.findChild(QWidget, "replaySlider")}


def _games(win) -> dict[str, QWidget]:
    t = win.tab("Games")
    return {"table": t.findChild(QWidget, "gamesTable"), "filter": t.findChild(QWidget, "gamesSourceFilter")}


def _arena(win) -> dict[str, QWidget]:
    t = win.tab("Arena")
    return {
        "contestants": t.findChild(QWidget, "entryList"),
        "agent picker": t.findChild(QWidget, "agentPicker"),
        "Run": t.findChild(QWidget, "runButton"),
    }


def _progress(win) -> dict[str, QWidget]:
    t = win.tab("Progress")
    return {"score chart": t.scorePlot, "tile chart": t.tilePlot}


TABS: dict[str, Callable[..., dict[str, QWidget]]] = {
    "Train": _train,
    "Play": _play,
    "Replay": _replay,
    "Games": _games,
    "Arena": _arena,
    "Progress": _progress,
}


def test_a_fresh_profile_opens_at_the_checked_size(window) -> None:
    """No saved geometry: the window opens at 1194x720, the first of the sizes checked below."""
    assert (window.width(), window.height()) == SIZES[0]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_tab_shows_its_main_controls(qtbot, window, size: tuple[int, int]) -> None:
    window.resize(*size)
    problems: list[str] = []
    for title, wanted in TABS.items():
        window.show_tab(title)
        for _ in range(5):  # lay out, then let deferred layouts (splitters, folds) settle
            QApplication.processEvents()
        qtbot.wait(50)
        assert (window.width(), window.height()) == size, f"{title} forces the window to {window.size()}"
        for what, widget in wanted(window).items():
            assert widget is not None, f"{title}: no {what} widget"
            why = clipped_by(widget, window)
            if why is not None:
                problems.append(f"{title}: {what} {why}")
    assert not problems, "\n".join(problems)


def test_train_form_is_not_cut_on_the_right(qtbot, window) -> None:
    """Every row of the launch form's top part is as wide as the panel allows, not cut at its edge:
    the knob fields of the scrolled part too (their right edge inside the scroll's viewport)."""
    window.resize(*SIZES[0])
    window.show_tab("Train")
    t = window.tab("Train")
    t.launch.ensure_loaded()
    for _ in range(5):
        QApplication.processEvents()
    scroll = t.launch.findChild(QAbstractScrollArea, "launchScroll")
    assert scroll is not None
    viewport = scroll.viewport()
    inner = scroll.widget()  # type: ignore[attr-defined]
    assert inner.width() <= viewport.width(), "the scrolled settings are wider than their viewport"
