"""Every control of the window used the way a person uses it, on a fresh profile, each with an effect.

Every visible, enabled button of every tab is clicked with the mouse, every menu item is chosen by
keyboard (Alt+letter, then the item's letter), every shortcut is pressed on the widget that has the
focus. After each, something a person can see must have changed: a widget's text, state or rows, the
status bar, the tab in front, the board, or a dialog that opened (closed again with Esc, as a person who
changed their mind does). Uncaught exceptions in slots and Qt warnings fail the test.
"""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QWidget,
)

from studio.commands.bench_person import Person, click_point, stuck_problems
from studio.widgets.board import ARROW_KEYS

pytest_plugins = ("tests.studio.gui_fixtures",)

#: Seconds a control may take to show its effect (a hint thinks, a run starts in a child process).
EFFECT_S = 8.0


def fingerprint(window: Any) -> tuple[Any, ...]:
    """What a person sees of the window, as data: every visible widget's text, state, rows and value."""
    app = QApplication.instance()
    seen: list[Any] = [window.tabs.currentIndex(), window.statusBar().currentMessage()]
    board = getattr(window.play, "board", None)
    if board is not None:
        seen.append(board.board.tobytes())
        seen.append(str(board.hint))
    # A menu an earlier test left for deletion can still be listed with a stale wrapper (shiboken
    # hands back the old Python object for a reused address): skip what is no longer valid.
    roots = [w for w in app.topLevelWidgets() if shiboken6.isValid(w) and w.isVisible()]
    seen.append(tuple(sorted(type(w).__name__ + w.objectName() for w in roots)))
    for root in roots:
        for w in root.findChildren(QWidget):
            if not w.isVisible():
                continue
            state: tuple[Any, ...] = (w.objectName(), w.isEnabled())
            if isinstance(w, QAbstractButton):
                state += (w.text(), w.isChecked())
            elif isinstance(w, (QLabel, QLineEdit, QAbstractSpinBox)):
                state += (w.text(),)
            elif isinstance(w, QComboBox):
                state += (w.currentText(), w.count())
            elif isinstance(w, QAbstractItemView) and w.model() is not None:
                model = w.model()
                state += (model.rowCount(), tuple(i.row() for i in w.selectionModel().selectedRows()))
            seen.append(state)
    return tuple(seen)


class Crawler:
    def __init__(self, window: Any, qtbot: Any) -> None:
        self.window = window
        self.qtbot = qtbot
        self.person = Person(window, random.Random(0))
        self.no_effect: list[str] = []
        self.done: list[str] = []

    def effect_of(self, what: str, act: Any) -> None:
        before = fingerprint(self.window)
        dialogs, urls = self.person.dialogs_closed, len(self.person.opened_urls)
        act()
        deadline = time.monotonic() + EFFECT_S
        while time.monotonic() < deadline:
            QTest.qWait(50)
            if (
                fingerprint(self.window) != before
                or self.person.dialogs_closed > dialogs
                or len(self.person.opened_urls) > urls
            ):
                self.done.append(what)
                self.settle()
                return
        self.no_effect.append(what)

    def settle(self) -> None:
        """Wait for a dialog or menu the control opened to be closed and the window active again, as a
        person waits before the next key."""
        app = QApplication.instance()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if (
                QApplication.activeModalWidget() is None
                and QApplication.activePopupWidget() is None
                and QApplication.activeWindow() is self.window
            ):
                return
            other = QApplication.activeWindow()
            if other is not None and other is not self.window and other.isVisible():
                QTest.keyClick(other, Qt.Key.Key_Escape)  # a window of its own (the log): closed again
            elif other is None or not other.isVisible():
                self.window.activateWindow()  # what a window manager does when a dialog closes
            QTest.qWait(30)
        assert app is not None

    def focus_target(self) -> QWidget:
        return QApplication.focusWidget() or self.window


@pytest.fixture
def crawler(window: Any, qtbot: Any) -> Any:
    window.activateWindow()
    qtbot.waitActive(window)
    c = Crawler(window, qtbot)
    yield c
    c.person.stop()
    train = window.tab("Train")
    if train.is_training:
        train.stop_all()
        train.wait_finished(60)


def _play_a_few_moves(window: Any) -> None:
    """A person's first minute: a few moves by arrow keys, so that the store holds a game."""
    from engine.core import legal_moves

    for _ in range(8):
        legal = legal_moves(window.play.board.board)
        if not legal:
            break
        QTest.keyClick(QApplication.focusWidget() or window, ARROW_KEYS[legal[0]])
        QTest.qWait(150)


def test_every_button_of_every_tab_does_something(crawler: Crawler) -> None:
    window = crawler.window
    _play_a_few_moves(window)
    for index in range(window.tabs.count()):
        title = window.tabs.tabText(index)
        QTest.keyClick(
            crawler.focus_target(), Qt.Key(Qt.Key.Key_1 + index), Qt.KeyboardModifier.ControlModifier
        )
        assert window.tabs.currentIndex() == index, (
            f"Ctrl+{index + 1} on {crawler.focus_target()} did not show {title} "
            f"(modal {QApplication.activeModalWidget()}, popup {QApplication.activePopupWidget()}, "
            f"done: {crawler.done})"
        )
        page = window.tabs.widget(index)
        names = []
        for b in page.findChildren(QAbstractButton):
            if b.objectName() and not b.objectName().startswith("qt_") and b.objectName() not in names:
                names.append(b.objectName())
        for name in names:
            button = page.findChild(QAbstractButton, name)
            if button is None or not button.isVisible() or not button.isEnabled():
                continue
            crawler.effect_of(
                f"{title}: {name} ({button.text()!r})",
                lambda b=button: QTest.mouseClick(b, Qt.MouseButton.LeftButton, pos=click_point(b)),
            )
    assert crawler.done, "no control was used"
    assert not crawler.no_effect, "clicked with no visible effect: " + "; ".join(crawler.no_effect)


def _menu_items(window: Any) -> list[tuple[Any, QAction]]:
    out = []
    for top in window.menuBar().actions():
        menu = top.menu()
        if menu is None:
            continue
        for action in menu.actions():
            if action.isSeparator() or action.menu() is not None:
                continue
            out.append((menu, action))
    return out


def show_tab_first(crawler: Crawler, action: QAction) -> None:
    """The tab a person is on before choosing ``action``: the Play tab, which the Game menu's Play
    actions are for, except before View > Play (Ctrl+1), which from the Play tab would rightly change
    nothing: from the Train tab it shows Play."""
    key = Qt.Key.Key_2 if action.shortcut().toString() == "Ctrl+1" else Qt.Key.Key_1
    QTest.keyClick(crawler.focus_target(), key, Qt.KeyboardModifier.ControlModifier)
    assert crawler.window.tabs.currentIndex() == (1 if key == Qt.Key.Key_2 else 0)


def _letter(text: str) -> str:
    i = text.find("&")
    assert 0 <= i < len(text) - 1, f"menu text {text!r} has no mnemonic: a keyboard user cannot reach it"
    return text[i + 1].upper()


def test_menu_mnemonics_are_unique_and_every_item_is_reached_by_keyboard(crawler: Crawler) -> None:
    window = crawler.window
    tops = [a.text() for a in window.menuBar().actions()]
    letters = [_letter(t) for t in tops]
    assert len(set(letters)) == len(letters), f"menu bar mnemonics clash: {tops}"
    for top in window.menuBar().actions():
        items = [a.text() for a in top.menu().actions() if not a.isSeparator()]
        item_letters = [_letter(t) for t in items]
        assert len(set(item_letters)) == len(item_letters), f"{top.text()} mnemonics clash: {items}"
    for menu, action in _menu_items(window):
        if action is window.quit_action:
            continue  # closing is the close-and-reopen test's subject
        show_tab_first(crawler, action)
        if not action.isEnabled():
            continue

        def choose(menu: Any = menu, action: QAction = action) -> None:
            QTest.keyClick(window, Qt.Key(ord(_letter(menu.title()))), Qt.KeyboardModifier.AltModifier)
            popup = QApplication.activePopupWidget()
            assert popup is not None, f"Alt+{_letter(menu.title())} did not open {menu.title()}"
            QTest.keyClick(popup, Qt.Key(ord(_letter(action.text()))))

        crawler.effect_of(f"{menu.title()} > {action.text()}", choose)
        if action is window.watch_action and window.play.autoplayButton.isChecked():
            QTest.keyClick(crawler.focus_target(), Qt.Key.Key_Space)  # pause Watch again
        if window.isFullScreen():
            QTest.keyClick(crawler.focus_target(), Qt.Key.Key_F11)
    assert not crawler.no_effect, "chosen with no visible effect: " + "; ".join(crawler.no_effect)


def test_every_shortcut_works_from_the_focused_widget(crawler: Crawler) -> None:
    window = crawler.window
    for _menu, action in _menu_items(window):
        if action.shortcut().isEmpty() or action is window.quit_action:
            continue
        show_tab_first(crawler, action)
        if not action.isEnabled():
            continue
        combo = action.shortcut()[0]
        crawler.effect_of(
            f"shortcut {action.shortcut().toString()} ({action.text()})",
            lambda c=combo: QTest.keyClick(crawler.focus_target(), Qt.Key(c.key()), c.keyboardModifiers()),
        )
        if action is window.watch_action and window.play.autoplayButton.isChecked():
            QTest.keyClick(crawler.focus_target(), Qt.Key.Key_Space)
        if window.isFullScreen():
            QTest.keyClick(crawler.focus_target(), Qt.Key.Key_F11)
    assert not crawler.no_effect, "pressed with no visible effect: " + "; ".join(crawler.no_effect)
    assert not stuck_problems(window, crawler.person)


# ---------------------------------------------------------------------- dialogs
#: Dialog buttons the crawler leaves to their own tests, with why.
LEFT_TO_OWN_TESTS = {
    # starts a sweep: real training children for every trial (test_sweep_tab starts small ones)
    ("sweepDialog", "Start"),
}


def _dialog_buttons(dialog: QWidget) -> list[str]:
    return [
        b.text() for b in dialog.findChildren(QAbstractButton) if b.isVisible() and b.isEnabled() and b.text()
    ]


def _with_dialog(qtbot: Any, open_it: Any, act: Any) -> None:
    """Open a dialog through ``open_it`` (which may block in the dialog's own loop, as exec() does) and
    call ``act(dialog)`` once it shows."""
    from PySide6.QtCore import QTimer

    before = {id(w) for w in QApplication.topLevelWidgets() if w.isVisible()}
    done: list[bool] = []

    def poll() -> None:
        fresh = [
            w
            for w in QApplication.topLevelWidgets()
            if w.isVisible()
            and id(w) not in before
            and w.isWindow()
            and w.windowType() != Qt.WindowType.Popup
        ]
        if fresh:
            timer.stop()
            done.append(True)
            act(fresh[0])

    timer = QTimer()
    timer.setInterval(30)
    timer.timeout.connect(poll)
    timer.start()
    open_it()
    deadline = time.monotonic() + 10
    while not done and time.monotonic() < deadline:
        QTest.qWait(30)
    timer.stop()
    assert done, f"no dialog opened by {open_it}"


def test_every_button_of_every_dialog_does_something(crawler: Crawler, qtbot: Any) -> None:
    window = crawler.window
    crawler.person._closer.stop()  # the dialogs stay open for their buttons; this test closes them
    train = window.tab("Train")
    openers = {
        "new game (Ctrl+N)": lambda: QTest.keyClick(
            crawler.focus_target(), Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier
        ),
        "keyboard shortcuts (F1)": lambda: QTest.keyClick(crawler.focus_target(), Qt.Key.Key_F1),
        "sweep (Sweep…)": lambda: QTest.mouseClick(train.sweepButton, Qt.MouseButton.LeftButton),
        "log (Help > Show log)": lambda: window.log_action.trigger(),
    }
    seen: list[str] = []
    for what, open_it in openers.items():
        if "Sweep" in what:
            QTest.keyClick(crawler.focus_target(), Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
        names: list[str] = []
        _with_dialog(
            qtbot,
            open_it,
            lambda d, names=names: (
                names.extend(_dialog_buttons(d)),
                d.reject() if hasattr(d, "reject") else d.close(),
            ),
        )
        crawler.settle()
        assert names, f"{what}: a dialog with no button"
        for text in names:
            state: dict[str, Any] = {}

            def press(dialog: QWidget, text: str = text, state: dict[str, Any] = state) -> None:
                state["name"] = dialog.objectName()
                if (dialog.objectName(), text) in LEFT_TO_OWN_TESTS:
                    state["skipped"] = True
                    dialog.close()
                    return
                button = next(
                    b for b in dialog.findChildren(QAbstractButton) if b.text() == text and b.isVisible()
                )
                before = fingerprint(window), _dialog_state(dialog), len(crawler.person.opened_urls)
                QTest.mouseClick(button, Qt.MouseButton.LeftButton, pos=click_point(button))
                deadline = time.monotonic() + 1.5  # a time shown to the second may take that long
                while True:
                    QTest.qWait(50)
                    state["effect"] = (
                        not dialog.isVisible()
                        or (fingerprint(window), _dialog_state(dialog), len(crawler.person.opened_urls))
                        != before
                    )
                    if state["effect"] or time.monotonic() > deadline:
                        break
                if dialog.isVisible():
                    dialog.close()

            _with_dialog(qtbot, open_it, press)
            crawler.settle()
            if state.get("skipped"):
                continue
            seen.append(f"{what}: {text}")
            if not state.get("effect"):
                crawler.no_effect.append(f"{what}: {text}")
        if "Sweep" in what:
            QTest.keyClick(crawler.focus_target(), Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert len(seen) >= 4
    assert not crawler.no_effect, "dialog buttons with no visible effect: " + "; ".join(crawler.no_effect)


def _dialog_state(dialog: QWidget) -> tuple[Any, ...]:
    out: list[Any] = []
    for w in dialog.findChildren(QWidget):
        if not w.isVisible():
            continue
        if isinstance(w, QAbstractButton):
            out.append((w.objectName(), w.text(), w.isChecked(), w.isEnabled()))
        elif isinstance(w, (QLabel, QLineEdit, QAbstractSpinBox)):
            out.append((w.objectName(), w.text()))
        elif isinstance(w, QComboBox):
            out.append((w.objectName(), w.currentText()))
    return tuple(out)
