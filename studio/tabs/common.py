"""What every tab shares: small widget makers, the non-blocking error box, and what a tab offers the window.

:class:`StoreTab` is the base of the tabs that show the store (Games, Replay, Progress): they re-read
it when shown after a change, not on every write.

:class:`Tab` is the protocol the main window relies on instead of probing tabs with ``hasattr``:
every tab has a ``status`` signal and ``mark_dirty`` / ``shutdown``; the optional signals
(``gamesChanged``, ``openInReplay``, ``useInPlay``, ``useInArena``) are listed in :data:`ROUTED`
and wired by name when a tab declares them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QWidget,
)

from studio.widgets.config_form import ERROR_STYLE

if TYPE_CHECKING:
    from engine.store import GameStore
    from studio.worker import CallWorker

log = logging.getLogger(__name__)

#: The colour of a note under a field or a panel (an error is in ERROR_STYLE's red).
NOTE_STYLE = "color: #6b625a;"

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


class StoreTab(QWidget):
    """A tab that shows what the store holds (Games, Replay, Progress). :meth:`mark_dirty` only marks
    it: the store is re-read (:meth:`refresh`) when the tab is next shown, not on every write (a
    watched agent writes a move 60 times a second)."""

    def __init__(self, name: str, store: GameStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.store = store
        self._dirty = True

    def mark_dirty(self) -> None:
        """Games changed elsewhere: re-read the store next time the tab is shown."""
        self._dirty = True

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        # Not while the window is closed: a page shown as the tabs are taken down would read a store
        # already closed (it stays dirty, read when the window shows again).
        if self._dirty and self.window().isVisible():
            self.refresh()

    def refresh(self) -> None:
        """Re-read the store (each tab its own way; it clears ``_dirty``)."""
        raise NotImplementedError


class SettingsTab(QWidget):
    """A tab that keeps what a person chose in the settings (Arena, Train): its object ``name``, the
    ``store`` it writes to and the ``settings`` (None in tests that keep nothing: then nothing is kept)."""

    def __init__(
        self, name: str, store: GameStore, settings: QSettings | None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.store = store
        self.settings = settings

    def keep(self, key: str, value: Any) -> None:
        """Write ``value`` under ``key`` in the settings, when there are settings."""
        if self.settings is not None:
            self.settings.setValue(key, value)


class ReviewingTab(StoreTab):
    """A :class:`StoreTab` that reviews games in a worker thread (Replay: the game shown; Progress:
    the person's unreviewed games). ``review_worker`` is the review running, or the last one; the
    subclass has the ``_on_review_progress``, ``_on_review_result`` and ``_on_review_error`` slots."""

    status: Any  # the tab's Signal(str)

    def __init__(self, name: str, store: GameStore, parent: QWidget | None = None) -> None:
        super().__init__(name, store, parent)
        self.review_worker: CallWorker | None = None
        self._review_stop: threading.Event | None = None

    @property
    def reviewing(self) -> bool:
        return self.review_worker is not None and not self.review_worker.done

    def cancel_review(self) -> None:
        """Stop the review after the move in hand; what was reviewed stays in the store."""
        if self.reviewing and self._review_stop is not None:
            self._review_stop.set()
            self.status.emit("Cancelling the review…")

    def _review_worker(self, job: Callable[[Callable[..., None]], Any], stop: threading.Event) -> CallWorker:
        """A worker for a new review ``job`` (which ends early once ``stop`` is set), wired to the
        review slots; the last review's worker is let go. The caller connects ``finished`` and starts it."""
        from studio.worker import CallWorker

        if self.review_worker is not None:
            self.review_worker.deleteLater()
        self._review_stop = stop
        worker = CallWorker(job, parent=self)
        worker.progress.connect(self._on_review_progress)
        worker.partial.connect(self._on_review_partial)
        worker.result.connect(self._on_review_result)
        worker.error.connect(self._on_review_error)
        self.review_worker = worker
        return worker

    def _on_review_progress(self, done: float, total: float, text: str) -> None:
        raise NotImplementedError

    def _on_review_partial(self, review: object) -> None:
        """The review so far, handed over by the worker while it runs (a tab may draw it)."""

    def _on_review_result(self, value: object) -> None:
        raise NotImplementedError

    def _on_review_error(self, message: str) -> None:
        raise NotImplementedError


def button(
    text: str, name: str, slot: Callable[..., Any], tip: str = "", *, takes_focus: bool = True
) -> QPushButton:
    """A push button with an object name (tests find it) and a tooltip, clicked -> ``slot()`` (no argument).

    ``takes_focus=False`` for buttons beside keyboard-driven views (Replay): Space and the arrows stay
    with the view's shortcuts after a click."""
    b = QPushButton(text)
    b.setObjectName(name)
    if not takes_focus:
        b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    if tip:
        b.setToolTip(tip)
    # clicked(bool) must never reach the slot: a slot with an optional first parameter read Qt's
    # False as its value ("Prepare a reviewer" got minutes=False and did nothing).
    b.clicked.connect(lambda _checked=False: slot())
    return b


def label(name: str, text: str = "", *, wrap: bool = False, style: str = "", hidden: bool = False) -> QLabel:
    """A label with an object name (tests find it); ``wrap`` wraps long text, ``hidden`` until shown."""
    lab = QLabel(text)
    lab.setObjectName(name)
    lab.setWordWrap(wrap)
    if style:
        lab.setStyleSheet(style)
    if hidden:
        lab.hide()
    return lab


def error_label(name: str) -> QLabel:
    """A red, wrapped label, hidden until there is an error to show."""
    return label(name, wrap=True, style=ERROR_STYLE, hidden=True)


def titled_row(title: str, *actions: QWidget, beside: Sequence[QWidget] = ()) -> QHBoxLayout:
    """A panel's head: its bold title, the widgets ``beside`` it (a picker), and the ``actions``
    (its buttons) at the right."""
    head = QHBoxLayout()
    head.addWidget(QLabel(f"<b>{title}</b>"))
    for w in beside:
        head.addWidget(w)
    head.addStretch(1)
    for w in actions:
        head.addWidget(w)
    return head


def table(name: str, headers: list[str], *, multi: bool = False) -> QTableWidget:
    """A read-only table of whole rows (``multi``: several at once), its columns as wide as their
    contents but the last, which takes what is left."""
    t = QTableWidget(0, len(headers))
    t.setObjectName(name)
    t.setHorizontalHeaderLabels(headers)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    mode = QAbstractItemView.SelectionMode
    t.setSelectionMode(mode.ExtendedSelection if multi else mode.SingleSelection)
    t.verticalHeader().hide()
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    t.horizontalHeader().setStretchLastSection(True)
    return t


def spin(name: str, low: int, high: int, value: int, tip: str = "") -> QSpinBox:
    """An integer spin box with its range, value and tooltip."""
    s = QSpinBox()
    s.setObjectName(name)
    s.setRange(low, high)
    s.setValue(value)
    if tip:
        s.setToolTip(tip)
    return s


def decimal_spin(
    name: str, low: float, high: float, value: float, tip: str = "", decimals: int = 2
) -> QDoubleSpinBox:
    """A decimal spin box with its range, ``decimals``, value and tooltip (the twin of :func:`spin`)."""
    s = QDoubleSpinBox()
    s.setObjectName(name)
    s.setRange(low, high)
    s.setDecimals(decimals)  # before the value, which it would round
    s.setValue(value)
    if tip:
        s.setToolTip(tip)
    return s


def wait_worker(worker: CallWorker | None, timeout_ms: int) -> bool:
    """Block until ``worker``'s thread has ended (True; also for no worker) or ``timeout_ms`` passed
    (False), then deliver its queued signals (tests, shutdown)."""
    if worker is None:
        return True
    ok = worker.wait(timeout_ms)
    QApplication.processEvents()
    return ok


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
