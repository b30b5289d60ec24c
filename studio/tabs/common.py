"""What every tab shares: small widget makers, the non-blocking error box, and what a tab offers the window.

:class:`Tab` is the protocol the main window relies on instead of probing tabs with ``hasattr``:
every tab has a ``status`` signal and ``mark_dirty`` / ``shutdown``; the optional signals
(``gamesChanged``, ``openInReplay``, ``useInPlay``, ``useInArena``) are listed in :data:`ROUTED`
and wired by name when a tab declares them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QSplitter,
    QWidget,
)

if TYPE_CHECKING:
    from engine.store import GameStore

log = logging.getLogger(__name__)

#: Signals a tab may declare, which the main window routes (signal name -> what it means).
ROUTED = {
    "gamesChanged": "records were written: other tabs re-read the store when next shown",
    "openInReplay": "open game id in the Replay tab",
    "useInPlay": "hint / watch with (agent, checkpoint) in the Play tab",
    "useInArena": "add (agent, checkpoint) to the Arena",
}


@runtime_checkable
class Tab(Protocol):
    """What the main window needs from a tab (besides being a QWidget)."""

    status: Any  # Signal(str): a message for the status bar

    def mark_dirty(self) -> None:
        """The store changed elsewhere: re-read it when next shown."""

    def shutdown(self) -> None:
        """The window is closing: stop timers and background work (idempotent)."""


def button(
    text: str, name: str, slot: Callable[..., Any], tip: str = "", *, takes_focus: bool = True
) -> QPushButton:
    """A push button with an object name (tests find it) and a tooltip, clicked -> ``slot``.

    ``takes_focus=False`` for buttons beside keyboard-driven views (Replay): Space and the arrows stay
    with the view's shortcuts after a click."""
    b = QPushButton(text)
    b.setObjectName(name)
    if not takes_focus:
        b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    if tip:
        b.setToolTip(tip)
    b.clicked.connect(slot)
    return b


def spin(name: str, low: int, high: int, value: int, tip: str = "") -> QSpinBox:
    """An integer spin box with its range, value and tooltip."""
    s = QSpinBox()
    s.setObjectName(name)
    s.setRange(low, high)
    s.setValue(value)
    if tip:
        s.setToolTip(tip)
    return s


def panes(owner: QWidget, left: QWidget, right: QWidget, left_width: int = 320) -> QSplitter:
    """The tabs' shape: ``left`` (inputs) beside ``right`` (what they show), which takes the extra
    width; in a splitter the user can drag, filling ``owner``."""
    outer = QHBoxLayout(owner)
    outer.setContentsMargins(6, 6, 6, 6)
    splitter = QSplitter(Qt.Orientation.Horizontal)
    outer.addWidget(splitter)
    splitter.addWidget(left)
    splitter.addWidget(right)
    splitter.setStretchFactor(0, 0)
    splitter.setStretchFactor(1, 1)
    splitter.setSizes([left_width, 900])
    return splitter


def error_box(
    parent: QWidget, title: str, text: str, detail: str = "", name: str = "errorBox"
) -> QMessageBox:
    """A non-blocking error box (the event loop goes on); ``detail``: e.g. a traceback, folded."""
    box = QMessageBox(QMessageBox.Icon.Critical, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setObjectName(name)
    if detail:
        box.setDetailedText(detail)
    box.open()
    return box


def ask_close_with_runs(parent: QWidget, n_runs: int) -> str:
    """Ask what to do with ``n_runs`` training runs as the window closes: "stop", "detach" or "cancel"."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Training in progress")
    box.setText(f"{n_runs} run{'s are' if n_runs > 1 else ' is'} training.")
    box.setInformativeText(
        "Stop them now (each keeps its last checkpoint and can be resumed), or let them train on "
        "without the window (reopen the studio to see them)?"
    )
    stop = box.addButton("Stop and close", QMessageBox.ButtonRole.AcceptRole)
    detach = box.addButton("Keep training", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    clicked = box.clickedButton()
    return "stop" if clicked is stop else "detach" if clicked is detach else "cancel"


def fill_reviewer_combo(combo: QComboBox, store: GameStore) -> None:
    """Fill ``combo`` with the reviewers a window offers
    (:func:`studio.services.review.reviewer_choices`: the default, the store's n-tuple networks,
    expectimax d1-d3), keeping the selection; unchanged lists are left alone (no signal)."""
    from studio.services.review import reviewer_choices

    current = combo.currentData() if combo.count() else None
    try:
        entries: list[tuple[str, Any]] = list(reviewer_choices(store))
    except Exception:  # a store being migrated or damaged: the default alone, and the log says why
        log.warning("cannot list the reviewers of the store", exc_info=True)
        entries = [("default", None)]
    if [combo.itemText(i) for i in range(combo.count())] == [label for label, _ in entries]:
        return
    combo.blockSignals(True)
    combo.clear()
    for label, data in entries:
        combo.addItem(label, data)
    combo.setCurrentIndex(next((i for i, (_, data) in enumerate(entries) if data == current), 0))
    combo.blockSignals(False)
