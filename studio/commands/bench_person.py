"""``python main.py bench person``: a person's random hour with the window, many times over.

The real main window is built on a fresh profile (a temporary data dir and settings file) and driven
the way a person drives it: key presses on whatever has the focus (arrows, WASD, H, Space, Ctrl+Z,
Tab, Esc, Enter), mouse clicks on the visible, enabled buttons of the tab in front, tabs switched by
Ctrl+digit and by clicking the tab bar, menus opened by Alt+letter and an item chosen by its letter
or the menu closed with Esc, text typed into fields (good numbers, ``1e3``, letters, a huge number),
a combo box's next entry, a row of a table clicked or double-clicked, and pauses that let runs,
arenas and reviews move on. A dialog that opens is closed by Esc, as a person who changed their mind
does (a file dialog included); a link to the data folder is recorded, not opened.

Each session (``-o sessions=20``, seeds ``--seed`` on) makes ``-o actions=300`` actions, then checks
that nothing is stuck (no dialog left open, the Play board still moves on an arrow key, the window
closes and every training child ends) and that the store is consistent (SQLite's integrity check, and
every stored game's moves lead from each stored board to the next one). Uncaught exceptions in the
window's slots and Qt warnings are failures. The report counts actions and failures; each failure
names its session's seed and the last actions before it, so ``-o sessions=1 --seed N`` replays it.

The test suite runs a short version of the same sessions (``tests/studio/test_person_sessions.py``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, parse_options
from studio.progress import ProgressLine

log = logging.getLogger(__name__)

OPTIONS = {
    "sessions": Option("int", 20, 1, 10_000),
    "actions": Option("int", 300, 1, 1_000_000),
}

#: What a person types into a field: good values, science notation, letters, a number past 2^63.
TYPED = ("3", "2", "1e3", "0.5", "abc", "-1", "99999999999999999999", "")
#: How long a person pauses (ms): most actions follow quickly, some wait for a run or a review.
PAUSES = (20, 50, 100, 300, 800)
#: The trail kept for a failure's report.
TRAIL = 25
#: Seconds the window may take to close with every run stopped.
CLOSE_S = 60.0
#: Seconds a dialog or menu may take to close after the closer's Esc before it counts as stuck.
STUCK_S = 10.0


@dataclass
class Outcome:
    """One session: its seed, the actions made, and what went wrong (empty when nothing did)."""

    seed: int
    actions: int = 0
    failures: list[str] = field(default_factory=list)
    trail: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures


class _Collector:
    """Uncaught exceptions (sys.excepthook: PySide6 hands a slot's exception there) and Qt warnings."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        from PySide6.QtCore import QtMsgType, qInstallMessageHandler

        def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
            log.error("uncaught in the window", exc_info=(kind, value, tb))
            self.problems.append(f"uncaught {kind.__name__}: {value}")

        def on_message(mode: QtMsgType, _context: Any, message: str) -> None:
            if mode in (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg):
                # The offscreen platform's own notices are about the platform, not the studio.
                if "propagateSizeHints" in message or "This plugin does not support" in message:
                    return
                self.problems.append(f"Qt warning: {message}")

        old_hook = sys.excepthook
        sys.excepthook = hook
        old_handler = qInstallMessageHandler(on_message)
        try:
            yield
        finally:
            sys.excepthook = old_hook
            qInstallMessageHandler(old_handler)


class Person:
    """Drives one window with a seeded random sequence of person-like actions."""

    def __init__(self, window: Any, rng: random.Random) -> None:
        from PySide6.QtCore import QObject, QTimer, Slot
        from PySide6.QtGui import QDesktopServices
        from PySide6.QtWidgets import QApplication

        self.window = window
        self.rng = rng
        self.app: Any = QApplication.instance()
        self.trail: deque[str] = deque(maxlen=TRAIL)
        self.opened_urls: list[str] = []
        self.dialogs_closed = 0
        person = self

        class _UrlSink(QObject):
            @Slot("QUrl")
            def open(self, url: Any) -> None:  # the data folder is recorded, never opened here
                person.opened_urls.append(url.toString())

        self._sink = _UrlSink()
        QDesktopServices.setUrlHandler("file", self._sink, "open")  # type: ignore[arg-type]  # the stubs say bytes; PySide6 takes only str
        # A person closes whatever dialog or menu pops up (once it has been seen).
        self._closer = QTimer()
        self._closer.setInterval(60)
        self._closer.timeout.connect(self._close_popups)
        self._closer.start()
        self.actions: list[tuple[int, Callable[[], str]]] = [
            (30, self.press_key),
            (25, self.click_button),
            (8, self.switch_tab),
            (6, self.use_menu),
            (8, self.type_text),
            (6, self.pick_combo),
            (6, self.click_table),
            (10, self.pause),
        ]

    def stop(self) -> None:
        from PySide6.QtGui import QDesktopServices

        self._closer.stop()
        QDesktopServices.unsetUrlHandler("file")

    # ------------------------------------------------------------------ helpers
    def _close_popups(self) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest

        for widget in (self.app.activePopupWidget(), self.app.activeModalWidget()):
            if widget is not None and widget.isVisible():
                self.dialogs_closed += 1
                QTest.keyClick(widget, Qt.Key.Key_Escape)
                return
        active = self.app.activeWindow()
        if (active is None or not active.isVisible()) and self.window.isVisible():
            # What a window manager does when a dialog closes: the window under it is active again
            # (the offscreen platform has none, and without one no window would have the focus).
            self.window.activateWindow()

    def _page(self) -> Any:
        return self.window.tabs.currentWidget()

    def _visible(self, cls: type, root: Any = None) -> list[Any]:
        root = root if root is not None else self._page()
        return [
            w
            for w in root.findChildren(cls)
            if w.isVisible() and w.isEnabled() and not w.objectName().startswith("qt_")
        ]

    def _target(self) -> Any:
        return self.app.focusWidget() or self.window

    def step(self) -> str:
        weights = [w for w, _ in self.actions]
        action = self.rng.choices([a for _, a in self.actions], weights)[0]
        what = action()
        self.trail.append(what)
        return what

    # ------------------------------------------------------------------ actions
    def press_key(self) -> str:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest

        keys = [
            (Qt.Key.Key_Left, "Left"),
            (Qt.Key.Key_Right, "Right"),
            (Qt.Key.Key_Up, "Up"),
            (Qt.Key.Key_Down, "Down"),
            (Qt.Key.Key_W, "W"),
            (Qt.Key.Key_A, "A"),
            (Qt.Key.Key_S, "S"),
            (Qt.Key.Key_D, "D"),
            (Qt.Key.Key_H, "H"),
            (Qt.Key.Key_Space, "Space"),
            (Qt.Key.Key_Period, "."),
            (Qt.Key.Key_Tab, "Tab"),
            (Qt.Key.Key_Escape, "Esc"),
            (Qt.Key.Key_Return, "Enter"),
        ]
        mods = Qt.KeyboardModifier.NoModifier
        if self.rng.random() < 0.08:
            key, name = Qt.Key.Key_Z, "Ctrl+Z"
            mods = Qt.KeyboardModifier.ControlModifier
        else:
            key, name = self.rng.choice(keys)
        target = self._target()
        QTest.keyClick(target, key, mods)
        return f"key {name} on {_name(target)}"

    def click_button(self) -> str:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest
        from PySide6.QtWidgets import QAbstractButton

        buttons = self._visible(QAbstractButton)
        if not buttons:
            return "no button to click"
        button = self.rng.choice(buttons)
        name = _name(button)
        QTest.mouseClick(button, Qt.MouseButton.LeftButton, pos=click_point(button))
        return f"click {name}"

    def switch_tab(self) -> str:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest

        index = self.rng.randrange(self.window.tabs.count())
        if self.rng.random() < 0.5:
            QTest.keyClick(self._target(), Qt.Key(Qt.Key.Key_1 + index), Qt.KeyboardModifier.ControlModifier)
            how = f"Ctrl+{index + 1}"
        else:
            bar = self.window.tabs.tabBar()
            QTest.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())
            how = "click"
        return f"tab {self.window.tabs.tabText(index)} by {how}"

    def use_menu(self) -> str:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest

        menus = [a.menu() for a in self.window.menuBar().actions() if a.menu() is not None]
        menu = self.rng.choice(menus)
        letter = _mnemonic(menu.title())
        QTest.keyClick(self.window, Qt.Key(ord(letter.upper())), Qt.KeyboardModifier.AltModifier)
        self.app.processEvents()
        popup = self.app.activePopupWidget()
        title = menu.title().replace("&", "")
        if popup is None:
            return f"menu {title}: did not open"
        items = [
            a
            for a in menu.actions()
            if a.isEnabled() and not a.isSeparator() and "&Quit" not in a.text() and "&" in a.text()
        ]
        if not items or self.rng.random() < 0.3:
            QTest.keyClick(popup, Qt.Key.Key_Escape)
            return f"menu {title} opened and closed"
        item = self.rng.choice(items)
        QTest.keyClick(popup, Qt.Key(ord(_mnemonic(item.text()).upper())))
        return f"menu {title} > {item.text().replace('&', '')}"

    def type_text(self) -> str:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest
        from PySide6.QtWidgets import QAbstractSpinBox, QLineEdit

        fields = [w for w in self._visible(QLineEdit) + self._visible(QAbstractSpinBox) if not w.isReadOnly()]
        if not fields:
            return "no field to type in"
        field_ = self.rng.choice(fields)
        text = self.rng.choice(TYPED)
        QTest.mouseClick(field_, Qt.MouseButton.LeftButton, pos=field_.rect().center())
        QTest.keyClick(field_, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        if text:
            QTest.keyClicks(field_, text)
        else:
            QTest.keyClick(field_, Qt.Key.Key_Backspace)
        if self.rng.random() < 0.5:
            QTest.keyClick(field_, Qt.Key.Key_Tab)  # leaves the field: its value is taken
        return f"type {text!r} into {_name(field_)}"

    def pick_combo(self) -> str:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest
        from PySide6.QtWidgets import QComboBox

        combos = [c for c in self._visible(QComboBox) if c.count() > 0]
        if not combos:
            return "no combo box"
        combo = self.rng.choice(combos)
        combo.setFocus(Qt.FocusReason.MouseFocusReason)
        key = Qt.Key.Key_Down if self.rng.random() < 0.7 else Qt.Key.Key_Up
        QTest.keyClick(combo, key)
        return f"combo {_name(combo)} -> {combo.currentText()!r}"

    def click_table(self) -> str:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest
        from PySide6.QtWidgets import QAbstractItemView

        views = [
            v for v in self._visible(QAbstractItemView) if v.model() is not None and v.model().rowCount()
        ]
        if not views:
            return "no table with rows"
        view = self.rng.choice(views)
        row = self.rng.randrange(view.model().rowCount())
        index = view.model().index(row, 0)
        view.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)
        rect = view.visualRect(index)
        if rect.isEmpty():
            return f"row {row} of {_name(view)} not on screen"
        where = rect.center()
        if self.rng.random() < 0.25:
            QTest.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=where)
            return f"double-click row {row} of {_name(view)}"
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=where)
        return f"click row {row} of {_name(view)}"

    def pause(self) -> str:
        from PySide6.QtTest import QTest

        ms = self.rng.choice(PAUSES)
        QTest.qWait(ms)
        return f"pause {ms} ms"


def click_point(button: Any) -> Any:
    """Where a person clicks a button: its middle, or a check box's box (a box with no text of its own,
    its label beside it in a form, takes clicks on the box only)."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QCheckBox, QRadioButton

    if isinstance(button, QCheckBox | QRadioButton) and not button.text():
        return QPoint(min(8, button.width() // 2), button.height() // 2)
    return button.rect().center()


def _name(widget: Any) -> str:
    text = ""
    with contextlib.suppress(AttributeError, RuntimeError):
        text = widget.text() if hasattr(widget, "text") and callable(widget.text) else ""
    name = widget.objectName() or type(widget).__name__
    return f"{name}({text[:20]!r})" if text else name


def _mnemonic(text: str) -> str:
    i = text.find("&")
    return text[i + 1] if 0 <= i < len(text) - 1 else text[0]


# ---------------------------------------------------------------------- checks
def stuck_problems(window: Any, person: Person) -> list[str]:
    """What is stuck after a session: a dialog left open, a Play board that no longer takes an arrow key."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from engine.core import legal_moves
    from studio.widgets.board import ARROW_KEYS

    problems: list[str] = []
    app: Any = QApplication.instance()
    QTest.qWait(300)  # the closer sees any dialog left
    # A deadline, not a count of waits: on a loaded machine the closer's timer and the dialog's
    # close both run late, and 2 s was once not enough for a dialog that did close.
    deadline = time.monotonic() + STUCK_S
    while app.activeModalWidget() is not None or app.activePopupWidget() is not None:
        if time.monotonic() > deadline:
            problems.append("a dialog or menu stays open after Esc")
            break
        QTest.qWait(100)
    QTest.keyClick(app.focusWidget() or window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    play = window.play
    if play.autoplayButton.isChecked():  # Watch on: a key press pauses it, as the guide says
        QTest.keyClick(app.focusWidget() or window, Qt.Key.Key_Space)
        QTest.qWait(200)
    board = play.board
    legal = legal_moves(board.board)
    if legal:
        before = board.board.copy()
        QTest.keyClick(app.focusWidget() or window, ARROW_KEYS[legal[0]])
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and (board.board == before).all():
            QTest.qWait(20)
        if (board.board == before).all():
            problems.append(f"the Play board ignores {legal[0].name.lower()} (a legal move) on the Play tab")
    return problems


def store_problems(data_dir: Path) -> list[str]:
    """SQLite's integrity check, and every game's moves leading from each stored board to the next."""
    import numpy as np

    from engine.core import slide
    from engine.store import GameStore

    problems: list[str] = []
    with GameStore.open(data_dir) as store:
        for summary in store.list_games():
            try:
                record = store.load_game(summary.id)
            except ValueError as e:
                problems.append(f"game {summary.id} does not load: {e}")
                continue
            boards = [*record.layouts, record.final_board]
            for i, move in enumerate(record.moves):
                after, reward = slide(boards[i], int(move))
                for r, c, v in record.spawns[i]:
                    if v:
                        after[r, c] = v
                if not np.array_equal(after, boards[i + 1]) or reward != record.rewards[i]:
                    problems.append(f"game {summary.id}: move {i} does not lead to the stored next board")
                    break
        with store._tx(write=False) as con:
            check = str(con.execute("PRAGMA integrity_check").fetchone()[0])
        if check != "ok":
            problems.append(f"SQLite integrity check: {check}")
    return problems


class PersonReport(BenchReport):
    """Every info line is printed: a failure's seed and trail are the report's point."""

    info_keys = None
    best_of_rounds = False


def run_session(seed: int, n_actions: int, *, on_action: Callable[[int], None] | None = None) -> Outcome:
    """One fresh-profile window driven for ``n_actions`` person-like actions; see the module docstring."""
    from PySide6.QtCore import QSettings
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from studio.app import create_window

    outcome = Outcome(seed)
    t0 = time.monotonic()
    QApplication.instance() or QApplication(sys.argv[:1])
    collector = _Collector()
    with tempfile.TemporaryDirectory(prefix="bench-person-") as tmp, collector.installed():
        data_dir = Path(tmp) / "data"
        settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
        window = create_window(data_dir, settings=settings)
        window.show()
        window.activateWindow()
        QTest.qWaitForWindowActive(window)  # keys go where a person's would: the focused widget
        person = Person(window, random.Random(seed))
        try:
            for i in range(n_actions):
                person.step()
                outcome.actions = i + 1
                if on_action is not None:
                    on_action(i + 1)
                if collector.problems:
                    break
            if not collector.problems:
                outcome.failures += stuck_problems(window, person)
        finally:
            person.stop()
            train = window.tab("Train")
            if getattr(train, "is_training", False):
                train.stop_all()
                if not train.wait_finished(CLOSE_S):
                    outcome.failures.append(f"training did not stop within {CLOSE_S:.0f} s")
            window.close()
            window.deleteLater()
        outcome.failures = collector.problems + outcome.failures
        outcome.failures += store_problems(data_dir)
        outcome.trail = list(person.trail)
    outcome.seconds = time.monotonic() - t0
    return outcome


def person_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    """Sessions of person-like actions on fresh profiles; failures with their seed and trail."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    opts = parse_options("person", options.extra, OPTIONS)
    sessions, per = opts["sessions"], opts["actions"]
    progress.total = sessions * per
    outcomes: list[Outcome] = []
    for k in range(sessions):
        seed = options.seed + k
        done = k * per

        def tick(i: int, done: int = done, seed: int = seed) -> None:
            progress.update(done + i, f"session seed {seed}: action {i}")

        outcomes.append(run_session(seed, per, on_action=tick))
    failed = [o for o in outcomes if not o.ok]
    measurements = [
        Measurement("sessions", "sessions", len(outcomes)),
        Measurement("actions", "actions made", sum(o.actions for o in outcomes)),
        Measurement("failed", "sessions with a failure", len(failed)),
        Measurement("seconds", "seconds in all", sum(o.seconds for o in outcomes)),
    ]
    info: dict[str, Any] = {"rounds": 1, "seeds": f"{options.seed}..{options.seed + sessions - 1}"}
    for o in failed:
        info[f"seed {o.seed}"] = "; ".join(o.failures[:3]) + " | last: " + " > ".join(o.trail[-8:])
    return PersonReport("person", "count", measurements, info=info)
