"""The main window: lazy import, tabs and placeholders, shortcuts, saved state, and the kill test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt

from engine import Game, Rules

REPO = Path(__file__).resolve().parents[2]

# The window / settings / test-agent fixtures (not a conftest: several people add tests here).
pytest_plugins = ("tests.studio.gui_fixtures",)


def test_import_studio_does_not_import_qt():
    code = (
        "import sys, studio; assert 'PySide6' not in sys.modules, 'Qt imported'; "
        "f = studio.create_window; assert 'PySide6' in sys.modules; print(f.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "create_window"


def test_the_agents_are_imported_in_the_background_so_the_first_train_tab_opens_at_once():
    # A fresh interpreter: torch is not loaded until preload_agents() runs off the GUI thread, and
    # then every registered agent's class is there without another import.
    code = textwrap.dedent(
        """
        import sys, threading
        from studio.app import preload_agents
        from agents import registry
        assert "torch" not in sys.modules
        import gc
        passes = []  # the collector's passes while the agents import: none (each held the GUI thread)
        gc.callbacks.append(lambda phase, info: passes.append(info["generation"]) if phase == "start" else None)
        thread = preload_agents()
        assert thread.daemon and thread is not threading.main_thread()
        thread.join(120)
        assert "torch" in sys.modules
        assert passes == [], passes
        # what the imports left is frozen (full passes no longer walk it), and collection is back on
        assert gc.get_freeze_count() > 100000 and gc.isenabled(), gc.get_freeze_count()
        names = registry.agent_names()  # each agent's module is imported (a broken plug-in left the list)
        print(all(registry.target_of(n).partition(":")[0] in sys.modules for n in names), len(names))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    ok, count = out.stdout.split()
    assert ok == "True" and int(count) >= 9


def test_every_tab_meets_the_tab_protocol_and_its_routed_signals_are_wired(qtbot, window, monkeypatch):
    from PySide6.QtCore import Signal

    from studio.tabs.common import ROUTED, Tab

    for title in ("Play", "Train", "Replay", "Arena", "Games", "Progress"):
        tab = window.tab(title)
        assert isinstance(tab, Tab), title
        for name in ROUTED:
            declared = getattr(type(tab), name, None)
            assert declared is None or isinstance(declared, Signal), (title, name)
    # A routed signal reaches its target: the Games tab's openInReplay opens the Replay tab.
    opened: list[int] = []
    monkeypatch.setattr(window.replay, "open_game", opened.append)
    window.games.openInReplay.emit(7)
    assert opened == [7] and window.tabs.currentWidget() is window.replay


def test_a_tab_that_fails_to_build_shows_its_error_and_the_rest_opens(
    qtbot, data_dir, qsettings, monkeypatch
):
    from studio import app as app_module

    monkeypatch.setattr(app_module, "TABS", (*app_module.TABS[:4], ("Games", "studio.tabs.nope", "Nope")))
    win = app_module.create_window(data_dir, settings=qsettings)
    qtbot.addWidget(win)
    page = win.tab("Games")
    assert page.objectName() == "gamesError" and "ModuleNotFoundError" in page.text()
    assert win.tab("Play").objectName() == "playTab"
    win.close()


def test_view_shortcuts_switch_tabs_and_focus_the_board(qtbot, window):
    qtbot.keyClick(window, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.games
    qtbot.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.replay
    assert not window.hint_action.isEnabled()  # Play-only shortcuts are off elsewhere
    qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.play
    assert window.hint_action.isEnabled()
    qtbot.waitUntil(lambda: window.play.board.hasFocus(), timeout=2000)


def test_window_state_is_remembered(qtbot, data_dir, qsettings: QSettings):
    from studio.app import create_window

    first = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(first)
    first.show()
    first.resize(first.minimumSizeHint().width(), 520)  # the offscreen screen is only 800x600
    first.show_tab("Games")
    size = (first.width(), first.height())
    assert size != (1060, 720)  # not the default size
    first.play.speedSlider.setValue(17)
    qtbot.wait(50)
    first.close()

    second = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(second)
    second.show()
    assert (second.width(), second.height()) == size
    assert second.tabs.currentWidget() is second.games
    assert second.play.speedSlider.value() == 17
    second.close()


def test_new_game_rules_are_remembered(qtbot, data_dir, qsettings: QSettings):
    from studio.app import create_window

    first = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(first)
    first.play.new_game(Rules(rows=3, cols=6, p4=0.2))
    first.close()
    second = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(second)
    assert second.play.rules == Rules(rows=3, cols=6, p4=0.2)
    assert second.play.board.board.shape == (3, 6)
    second.close()


CHILD = textwrap.dedent(
    """
    import sys
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication
    from engine import Rules
    from studio import create_window

    win = create_window(sys.argv[1], settings=QSettings(sys.argv[2], QSettings.Format.IniFormat))
    win.show()
    play = win.play
    play.new_game(Rules(rows=6, cols=6), seed=77)
    keys = [Qt.Key.Key_Left, Qt.Key.Key_Down, Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_W, Qt.Key.Key_A]
    i = 0
    while not play.recorder.closed:
        before = play.recorder.moves
        QTest.keyClick(play.board, keys[i % len(keys)])  # a real key event, through the widget
        i += 1
        QApplication.processEvents()
        if play.recorder.moves != before:
            print(play.recorder.game_id, play.recorder.moves, flush=True)
    """
)


def test_sigkill_mid_game_loses_no_move(tmp_path: Path, data_dir: Path):
    from engine.store import GameStore

    env = dict(os.environ, PYTHONPATH=str(REPO), QT_QPA_PLATFORM="offscreen")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data_dir), str(tmp_path / "settings.ini")],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + 120
    try:
        assert proc.stdout is not None
        while len(seen) < 25 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            game_id, moves = map(int, line.split())
            seen.append((game_id, moves))
        proc.send_signal(signal.SIGKILL)  # mid-game: the child is still pressing keys
        rest = proc.stdout.read()
    finally:
        proc.kill()
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    for line in rest.splitlines():
        if line.strip():
            seen.append(tuple(map(int, line.split())))  # type: ignore[arg-type]
    assert len(seen) >= 25, "the child did not get going"
    game_id, printed = seen[-1]
    assert {g for g, _ in seen} == {game_id}

    with GameStore.open(data_dir) as store:
        summary = store.get_game(game_id)
        # Every move the child reported is stored; at most one more (logged, killed before printing).
        assert printed <= summary.n_moves <= printed + 1
        assert summary.status == "abandoned"  # its process is gone: shown as unfinished
        record = store.load_game(game_id)
    game = Game(rules=Rules(rows=6, cols=6), seed=77)
    for i, move in enumerate(record.moves):
        assert np.array_equal(game.board, record.layouts[i])
        game.step(int(move))
    assert np.array_equal(game.board, record.final_board)


def test_use_in_play_routes_an_agent_or_checkpoint_to_the_play_tab(window, tmp_path: Path):
    from agents.registry import create_agent

    window.show_tab("Games")
    window.use_in_play("greedy", "")
    assert window.tabs.currentWidget() is window.play and window.play.agent_spec.name == "greedy"
    path = create_agent("greedy", rules=Rules()).save(tmp_path / "run-3.npz")
    window.use_in_play("greedy", str(path))
    assert window.play.agent_spec.checkpoint == str(path) and window.play.agent_spec.name == "greedy"
