"""The main window: tabs Play, Train, Replay, Arena, Games, Progress; menus, status bar, shortcuts, saved state.

``create_window(data_dir)`` builds it without an event loop (tests, scripts, screenshots);
``run_app(data_dir)`` is what ``python main.py`` runs. Each tab is its own module under
``studio/tabs``, built as ``cls(store, settings, parent)``, and meets :class:`studio.tabs.common.Tab`:
a ``status(str)`` signal, ``mark_dirty()`` (games changed elsewhere) and ``shutdown()`` (the window is
closing). The signals a tab may also declare (:data:`studio.tabs.common.ROUTED`: ``gamesChanged``,
``openInReplay``, ``useInPlay``, ``useInArena``) are routed here. A tab that fails to build shows its
error in its place, and the rest of the studio opens.
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer, QUrl
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QTabWidget,
    QTextEdit,
    QWidget,
)

from studio.settings import get_int
from studio.tabs.common import ROUTED, Tab
from studio.text import plural
from studio.widgets.board import KEY_DIRECTIONS

if TYPE_CHECKING:
    from engine.store import GameStore
    from studio.widgets.log_view import LogDialog

log = logging.getLogger(__name__)

ORGANIZATION = "2048 Studio"
APPLICATION = "2048 Studio"

#: (tab title, module, class)
TABS: tuple[tuple[str, str, str], ...] = (
    ("Play", "studio.tabs.play", "PlayTab"),
    ("Train", "studio.tabs.train", "TrainTab"),
    ("Replay", "studio.tabs.replay", "ReplayTab"),
    ("Arena", "studio.tabs.arena", "ArenaTab"),
    ("Games", "studio.tabs.games", "GamesTab"),
    ("Progress", "studio.tabs.progress", "ProgressTab"),
)

#: The View menu's items: each with a letter of its own (Play and Progress both begin with P, so
#: Alt+V, P reached only Play).
VIEW_LABELS = {
    "Play": "&Play",
    "Train": "&Train",
    "Replay": "&Replay",
    "Arena": "&Arena",
    "Games": "&Games",
    "Progress": "Pr&ogress",
}

SHORTCUTS_HELP = """
<table cellspacing=6>
<tr><td colspan=2><b>Play</b></td></tr>
<tr><td>Arrows, W A S D</td><td>move (takes over from a watched agent)</td></tr>
<tr><td>H</td><td>hint from the chosen agent</td></tr>
<tr><td>Space</td><td>watch the agent / pause</td></tr>
<tr><td>.</td><td>the agent makes one move</td></tr>
<tr><td>Ctrl+N</td><td>new game (board size, spawn rules)</td></tr>
<tr><td>Ctrl+Z</td><td>take back the last move (the same tile comes again for the same move)</td></tr>
<tr><td colspan=2><b>Train</b></td></tr>
<tr><td>Ctrl+Return</td><td>start a run with the form's settings</td></tr>
<tr><td>Ctrl+P</td><td>pause / resume the selected run</td></tr>
<tr><td>Ctrl+.</td><td>stop the selected run (it saves a checkpoint)</td></tr>
<tr><td>Tab / Shift+Tab</td><td>next / previous field (the form stays where it is)</td></tr>
<tr><td colspan=2><b>Replay</b></td></tr>
<tr><td>Left / Right, comma / period</td><td>step back / forward</td></tr>
<tr><td>Home / End</td><td>first / last position</td></tr>
<tr><td>Space</td><td>play / pause</td></tr>
<tr><td>R / Esc</td><td>review the game move by move / cancel the review (its finished part is kept)</td></tr>
<tr><td>N or ], P or [</td><td>next / previous mistake of the review</td></tr>
<tr><td colspan=2><b>Games</b></td></tr>
<tr><td>Enter, double-click</td><td>open in Replay</td></tr>
<tr><td>Delete</td><td>delete the selected games</td></tr>
<tr><td>Ctrl+E / Ctrl+I</td><td>export the selection / import files</td></tr>
<tr><td colspan=2><b>Progress</b></td></tr>
<tr><td>click a point</td><td>open that game in Replay</td></tr>
<tr><td colspan=2><b>Window</b></td></tr>
<tr><td>Ctrl+1 … Ctrl+6</td><td>switch tabs</td></tr>
<tr><td>F11</td><td>full screen</td></tr>
</table>
"""


#: The window's size on a fresh profile (no saved geometry): it fits a 1280x800 screen with its
#: frame, and every tab's main controls show at it (tests/studio/test_default_size.py).
DEFAULT_SIZE = (1194, 720)


def make_settings() -> QSettings:
    """The app's persistent settings (window geometry, last rules, agent, speeds)."""
    return QSettings(ORGANIZATION, APPLICATION)


class MainWindow(QMainWindow):
    """The studio window. ``tab(name)`` returns a tab's widget; the store is closed with the window."""

    def __init__(self, store: GameStore, data_dir: Path, settings: QSettings) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowTitle("2048 Studio")
        self.store = store
        self.data_dir = data_dir
        self.settings = settings
        self._closed = False
        self._log_dialog: LogDialog | None = None
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("tabs")
        self.tabs.setDocumentMode(True)
        self._tabs: dict[str, QWidget] = {}
        for title, module, cls_name in TABS:
            widget = self._build_tab(title, module, cls_name)
            self._tabs[title] = widget
            self.tabs.addTab(widget, title)
        self.setCentralWidget(self.tabs)
        self._wire_tabs()
        self._build_menus()
        self._build_status_bar()
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self._restore_state()
        self._on_tab_changed(self.tabs.currentIndex())
        # Arrows / WASD belong to the game while Play is shown, wherever the focus was left (see
        # eventFilter): removed again in shutdown, so a closed window keeps no hold on the app.
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)

    # ------------------------------------------------------------------ keys
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Send arrow / WASD presses to the Play board whichever widget of this window has the focus.

        A menu closed with Esc leaves the focus on the menu bar, a dialog can hand it back to nobody,
        a click leaves it on the tab bar or the agent box: each swallowed the moves until the board was
        clicked. Routing at the application level covers every such path at once; a text field keeps its
        keys, and so do dialogs and open menus (they are other windows, or popups).
        """
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            target = self._move_key_target(watched, event)
            if target is not None:
                target.setFocus(Qt.FocusReason.OtherFocusReason)  # leave the menu bar's keyboard mode
                copy = QKeyEvent(
                    event.type(),
                    event.key(),
                    event.modifiers(),
                    event.text(),
                    event.isAutoRepeat(),
                    event.count(),
                )
                QApplication.sendEvent(target, copy)
                return True
        return super().eventFilter(watched, event)

    def _move_key_target(self, watched: QObject, event: QKeyEvent) -> QWidget | None:
        """The Play board when ``event`` (sent to ``watched``) is a move the board should get, else None."""
        if self._closed or event.key() not in KEY_DIRECTIONS:
            return None
        if event.modifiers() & (
            Qt.KeyboardModifier.ControlModifier
            | Qt.KeyboardModifier.AltModifier
            | Qt.KeyboardModifier.MetaModifier
        ):
            return None
        board = getattr(self.play, "board", None)
        if not isinstance(watched, QWidget) or board is None or watched is board:
            return None  # the board has it already (or is no board: the tab failed to open)
        if watched.window() is not self or self.tabs.currentWidget() is not self.play:
            return None  # a dialog, a menu, or another tab
        if QApplication.activePopupWidget() is not None or QApplication.activeModalWidget() is not None:
            return None
        focus = QApplication.focusWidget()
        if focus is not None and _takes_text(focus):
            return None
        return board if board.isVisible() and board.isEnabled() else None

    # ------------------------------------------------------------------ tabs
    def _build_tab(self, title: str, module: str, cls_name: str) -> QWidget:
        try:
            cls = getattr(importlib.import_module(module), cls_name)
            widget: QWidget = cls(self.store, self.settings, self)
        except Exception as e:  # a broken tab must not keep the rest of the studio from opening
            log.exception("the %s tab failed to open", title)
            page = QLabel(f"The {title} tab failed to open:\n{type(e).__name__}: {e}")
            page.setObjectName(f"{title.lower()}Error")
            page.setAlignment(Qt.AlignmentFlag.AlignCenter)
            return page
        if not isinstance(widget, Tab):
            raise TypeError(f"{cls_name} does not meet studio.tabs.common.Tab (status, mark_dirty, shutdown)")
        return widget

    def tab(self, title: str) -> Any:
        """The widget of tab ``title`` ("Play", "Train", "Replay", "Arena", "Games")."""
        return self._tabs[title]

    @property
    def play(self) -> Any:
        return self._tabs["Play"]

    @property
    def replay(self) -> Any:
        return self._tabs["Replay"]

    @property
    def games(self) -> Any:
        return self._tabs["Games"]

    def _wire_tabs(self) -> None:
        routes = {
            "gamesChanged": lambda w: lambda: self._games_changed(w),
            "openInReplay": lambda w: self.open_in_replay,
            "useInPlay": lambda w: self.use_in_play,
            "useInArena": lambda w: self._tabs["Arena"].use_agent,  # type: ignore[attr-defined]
        }
        assert set(routes) == set(ROUTED)
        for widget in self._tabs.values():
            if not isinstance(widget, Tab):
                continue  # a tab that failed to open
            widget.status.connect(self.show_message)
            for name, target in routes.items():
                signal = getattr(type(widget), name, None)
                if signal is not None:
                    getattr(widget, name).connect(target(widget))

    def _games_changed(self, origin: QWidget) -> None:
        # Other tabs re-read the store lazily, when they are next shown; the count in the status bar
        # is refreshed at most a few times a second (a watched agent moves up to 60 times a second).
        for widget in self._tabs.values():
            if widget is not origin and isinstance(widget, Tab):
                widget.mark_dirty()
        if not self._db_timer.isActive():
            self._db_timer.start()

    def use_in_play(self, agent: str, checkpoint: str = "") -> None:
        """Hint / watch with ``agent`` (from ``checkpoint`` when given), e.g. a run's from the Train tab."""
        from agents.spec import AgentSpec

        self.show_tab("Play")
        if checkpoint:
            self.play.use_checkpoint(Path(checkpoint), agent or None)
        else:
            self.play.set_agent(AgentSpec(agent))

    def open_in_replay(self, game_id: int) -> None:
        self.tabs.setCurrentWidget(self.replay)
        self.replay.open_game(game_id)

    def show_tab(self, title: str) -> None:
        self.tabs.setCurrentWidget(self._tabs[title])

    def _on_tab_changed(self, index: int) -> None:
        self.statusBar().clearMessage()  # a message belongs to the tab that showed it
        on_play = self.tabs.widget(index) is self._tabs["Play"]
        for action in self._play_actions:
            action.setEnabled(on_play)
        on_games = self.tabs.widget(index) is self._tabs["Games"]
        self.export_action.setEnabled(on_games)
        if on_play and hasattr(self.play, "board"):
            self.play.board.setFocus()
        self.settings.setValue("window/tab", index)

    # ------------------------------------------------------------------ menus
    def _action(
        self, text: str, slot: Any, shortcut: str | QKeySequence.StandardKey | None = None, tip: str = ""
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        # triggered(bool) never reaches the slot (as tabs.common.button: a slot with an optional first
        # parameter would read Qt's False as its value)
        action.triggered.connect(lambda _checked=False: slot())
        self.addAction(action)  # shortcuts work with the menu bar hidden (full screen) too
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self.new_game_action = self._action(
            "&New game…", self._new_game, "Ctrl+N", "Start a new game: board size, spawns"
        )
        self.import_action = self._action(
            "&Import games…", self._import, "Ctrl+I", "Import games from .npz / .jsonl"
        )
        self.export_action = self._action(
            "&Export selected games…", self._export, "Ctrl+E", "Export the selected games"
        )
        self.data_action = self._action("Open &data folder", self._open_data_dir, None, str(self.data_dir))
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit)
        for a in (self.new_game_action, self.import_action, self.export_action):
            file_menu.addAction(a)
        file_menu.addSeparator()
        file_menu.addAction(self.data_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)

        game_menu = bar.addMenu("&Game")
        play = self.play
        has_play = hasattr(play, "request_hint")
        self.hint_action = self._action(
            "&Hint", play.request_hint if has_play else _noop, "H", "Ask the agent for a hint"
        )
        self.watch_action = self._action(
            "&Watch agent / pause", lambda: play.autoplayButton.toggle() if has_play else None, "Space"
        )
        self.step_action = self._action("Agent &step", play.step_agent if has_play else _noop, ".")
        self.take_back_action = self._action(
            "&Take back",
            play.take_back if has_play else _noop,
            QKeySequence.StandardKey.Undo,
            "Take back the last move: board, score and next tile as before it",
        )
        self._play_actions = [self.hint_action, self.watch_action, self.step_action, self.take_back_action]
        game_menu.addAction(self.new_game_action)
        game_menu.addAction(self.take_back_action)
        game_menu.addSeparator()
        for a in self._play_actions[:3]:
            game_menu.addAction(a)

        view_menu = bar.addMenu("&View")
        for i, (title, *_rest) in enumerate(TABS):
            view_menu.addAction(
                self._action(VIEW_LABELS[title], lambda t=title: self.show_tab(t), f"Ctrl+{i + 1}")
            )
        view_menu.addSeparator()
        view_menu.addAction(self._action("&Full screen", self._toggle_full_screen, "F11"))

        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self._action("&Keyboard shortcuts", self._show_shortcuts, "F1"))
        self.log_action = self._action(
            "Show &log", self.show_log, None, "What the studio logged: warnings, errors, their tracebacks"
        )
        help_menu.addAction(self.log_action)
        help_menu.addAction(self._action("&About 2048 Studio", self._about))

    def _new_game(self) -> None:
        self.show_tab("Play")
        if hasattr(self.play, "show_new_game_dialog"):
            self.play.show_new_game_dialog()

    def _import(self) -> None:
        self.show_tab("Games")
        if hasattr(self.games, "import_dialog"):
            self.games.import_dialog()

    def _export(self) -> None:
        if hasattr(self.games, "export_dialog"):
            self.games.export_dialog()

    def _open_data_dir(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.data_dir)))

    def _toggle_full_screen(self) -> None:
        self.setWindowState(self.windowState() ^ Qt.WindowState.WindowFullScreen)

    def _show_shortcuts(self) -> None:
        box = QMessageBox(
            QMessageBox.Icon.NoIcon, "Keyboard shortcuts", SHORTCUTS_HELP, QMessageBox.StandardButton.Ok, self
        )
        box.setObjectName("shortcutsBox")
        box.open()

    def show_log(self) -> LogDialog:
        """Help > Show log: the end of DATA/logs/studio.log (one dialog, brought back to the front)."""
        from studio.widgets.log_view import LogDialog

        if self._log_dialog is None:
            self._log_dialog = LogDialog(self.data_dir, self)
        else:
            self._log_dialog.refresh()
        self._log_dialog.show()
        self._log_dialog.raise_()
        self._log_dialog.activateWindow()
        return self._log_dialog

    def _about(self) -> None:
        QMessageBox.about(
            self,
            "About 2048 Studio",
            f"<b>2048 Studio</b><br>Train, watch, play and compare 2048 agents.<br><br>Data: {self.data_dir}",
        )

    # ------------------------------------------------------------------ status bar
    def _build_status_bar(self) -> None:
        self._db_timer = QTimer(self)
        self._db_timer.setSingleShot(True)
        self._db_timer.setInterval(300)
        self._db_timer.timeout.connect(self._update_db_label)
        self.db_label = QLabel()
        self.db_label.setObjectName("dbLabel")
        self.db_label.setStyleSheet("color: #8a8178; padding-right: 6px;")
        self.statusBar().addPermanentWidget(self.db_label)
        self._update_db_label()
        self.statusBar().showMessage("Arrows or WASD to play · F1 for shortcuts", 8000)

    def _update_db_label(self) -> None:
        try:
            n = int(self.store.count_games())
        except Exception:  # the label is informative only: the window goes on, the log says why
            log.warning("cannot count the games of %s", self.data_dir, exc_info=True)
            n = 0
        self.db_label.setText(f"{plural(n, 'game')} · {self.data_dir}")

    def show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 6000)

    # ------------------------------------------------------------------ state
    def _restore_state(self) -> None:
        geometry = self.settings.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(*DEFAULT_SIZE)
        state = self.settings.value("window/state")
        if state is not None:
            self.restoreState(state)
        index = get_int(self.settings, "window/tab", 0)
        if 0 <= index < self.tabs.count():
            self.tabs.setCurrentIndex(index)

    def save_state(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.setValue("window/tab", self.tabs.currentIndex())
        self.settings.sync()

    def shutdown(self) -> None:
        """Stop agents and timers, end the current game's record, close the store. Idempotent."""
        if self._closed:
            return
        self._closed = True
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        self._db_timer.stop()
        self.save_state()
        for widget in self._tabs.values():
            if isinstance(widget, Tab):
                widget.shutdown()
        self.store.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)


def _noop() -> None:
    pass


def _takes_text(widget: QWidget) -> bool:
    """True for a widget that reads arrows and letters as text editing (they are not moves there)."""
    if isinstance(widget, (QLineEdit, QTextEdit, QPlainTextEdit, QAbstractSpinBox)):
        return True
    return isinstance(widget, QComboBox) and widget.isEditable()


def create_window(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    settings: QSettings | None = None,
    store: GameStore | None = None,
) -> MainWindow:
    """Build the main window on the store in ``data_dir`` (default: the user data dir), not shown.

    A QApplication must exist (one is created if not). ``settings`` defaults to the app's QSettings;
    tests pass one in a temporary location. The process's log goes to ``DATA/logs/studio.log`` from
    here on (:mod:`studio.logs`).
    """
    from engine.paths import data_dir as resolve_data_dir
    from engine.store import GameStore
    from studio.logs import setup_logging

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    path = resolve_data_dir(data_dir)
    setup_logging(path, "gui")
    if store is None:
        store = GameStore.open(path)
    return MainWindow(store, path, settings if settings is not None else make_settings())


#: Milliseconds after the window shows before the agents' modules are imported in the background.
PRELOAD_AFTER_MS = 300


def preload_agents() -> threading.Thread:
    """Import every registered agent's module in a background thread (started, returned).

    The first look at a torch agent (the Train tab's form for DQN, an Arena pick) imported torch on
    the GUI thread: 2.5 s of frozen window. Imported here while the user looks at the board, it is
    ready when asked for; a tab that asks sooner waits only for the rest of that import.
    """
    from agents.registry import agent_names, get_agent_class

    def work() -> None:
        # Imports make objects that live for the whole session, and the collector's full passes over
        # them held every thread, the GUI thread too: three passes of 0.3-0.5 s while torch loaded
        # (measured on this 2-core machine). None runs during the imports; after them, what is alive
        # (about 300k objects: torch, numba, pyqtgraph, the window) is frozen, so a later full pass
        # walks only what came since. Garbage alive at this moment stays: a one-off few kB.
        enabled = gc.isenabled()
        gc.disable()
        try:
            for name in agent_names():
                try:
                    get_agent_class(name)
                except Exception:  # the tab that needs it says why it cannot load; the log keeps the why
                    log.warning("agent %s did not load", name, exc_info=True)
        finally:
            gc.freeze()
            if enabled:
                gc.enable()

    thread = threading.Thread(target=work, name="preload-agents", daemon=True)
    thread.start()
    return thread


def run_app(data_dir: str | os.PathLike[str] | None = None) -> int:
    """Open the studio window and run the event loop; the exit status."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    try:
        window = create_window(data_dir)
    except ValueError as e:  # StoreError: a foreign or newer database file, an unusable data dir
        print(f"2048 Studio cannot start: {e}", file=sys.stderr)
        QMessageBox.critical(None, "2048 Studio cannot start", str(e))
        return 2
    window.show()
    QTimer.singleShot(PRELOAD_AFTER_MS, preload_agents)
    # numba's kernels too, compiled ahead in a child process (the Train tab says so in the status bar)
    QTimer.singleShot(PRELOAD_AFTER_MS, getattr(window.tab("Train"), "prepare_fast_engine", _noop))
    return int(app.exec())
