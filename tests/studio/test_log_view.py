"""Help > Show log: what the window's code logged, shown from the menu, with its logs folder a click away;
and the broad excepts that used to swallow a failure now leave a record."""

from __future__ import annotations

import logging
import sqlite3

from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QApplication, QMenu

from engine import Rules
from engine.store import GameStore

pytest_plugins = ("tests.studio.gui_fixtures",)
CLICK = Qt.MouseButton.LeftButton


def _open_from_menu(qtbot, window, menu_title: str, item: str) -> None:
    """Click ``menu_title`` in the menu bar, then ``item`` in the menu that drops down."""
    bar = window.menuBar()
    entry = next(a for a in bar.actions() if a.text().replace("&", "") == menu_title)
    qtbot.mouseClick(bar, CLICK, pos=bar.actionGeometry(entry).center())
    menu: QMenu = entry.menu()
    qtbot.waitUntil(menu.isVisible, timeout=5000)
    action = next(a for a in menu.actions() if a.text().replace("&", "") == item)
    qtbot.mouseClick(menu, CLICK, pos=menu.actionGeometry(action).center())


def _dialog(window):
    return next(w for w in QApplication.topLevelWidgets() if w.objectName() == "logDialog" and w.isVisible())


def test_an_error_logged_by_the_window_shows_in_help_show_log(qtbot, window, monkeypatch, data_dir, tmp_path):
    def broken(*_a, **_k):
        raise sqlite3.DatabaseError("database disk image is malformed")

    # The status bar's game count fails: the window goes on (0 games) and the log says why.
    monkeypatch.setattr(window.store, "count_games", broken)
    window._games_changed(window.play)
    qtbot.waitUntil(lambda: (data_dir / "logs" / "studio.log").exists(), timeout=5000)
    _open_from_menu(qtbot, window, "Help", "Show log")
    qtbot.waitUntil(lambda: any(w.objectName() == "logDialog" for w in QApplication.topLevelWidgets()))
    dialog = _dialog(window)
    text = dialog.text.toPlainText()
    assert "WARNING [gui " in text and f"studio.app: cannot count the games of {data_dir}" in text
    assert "sqlite3.DatabaseError: database disk image is malformed" in text  # with its traceback
    assert dialog.pathLabel.text().startswith(
        f"The end of {data_dir / 'logs' / 'studio.log'} (newest last), read at "
    )
    # the newest record is in view: the view is scrolled to the end
    bar = dialog.text.verticalScrollBar()
    assert bar.value() == bar.maximum()
    dialog.grab().save(str(tmp_path / "show-log.png"))

    # A record logged while the dialog is open shows after Refresh; the menu brings back the same dialog.
    logging.getLogger("agents.dqn").error("the learner diverged at step 1,234")
    qtbot.mouseClick(dialog.refreshButton, CLICK)
    assert dialog.text.toPlainText().rstrip().endswith("agents.dqn: the learner diverged at step 1,234")
    dialog.close()
    _open_from_menu(qtbot, window, "Help", "Show log")
    qtbot.waitUntil(lambda: window._log_dialog.isVisible())
    assert _dialog(window) is dialog


def test_open_logs_folder_opens_data_logs(qtbot, window, monkeypatch, data_dir):
    opened: list[QUrl] = []
    monkeypatch.setattr(
        "studio.widgets.log_view.QDesktopServices.openUrl", lambda url: opened.append(url) or True
    )
    dialog = window.show_log()
    qtbot.mouseClick(dialog.folderButton, CLICK)
    assert [u.toLocalFile() for u in opened] == [str(data_dir / "logs")]
    assert (data_dir / "logs").is_dir()


def test_a_runs_table_that_cannot_read_its_store_leaves_records_in_the_log(qtbot, data_dir, caplog):
    """The runs table's extra columns used to fail without a word; listing runs said only a status line."""
    from studio.tabs.train.runs import RunsPanel

    store = GameStore.open(data_dir)
    try:
        run_id = store.create_run("random", {}, Rules(), {}, status="finished")
        panel = RunsPanel(store)
        qtbot.addWidget(panel)

        def broken(*_a, **_k):
            raise sqlite3.OperationalError("database is locked")

        store.runs_disk_use = broken  # type: ignore[method-assign]
        with caplog.at_level(logging.INFO):
            panel.refresh()
        assert panel.runsTable.rowCount() == 1 and panel.runsTable.item(0, 0).text() == str(run_id)
        (record,) = [r for r in caplog.records if r.name == "studio.tabs.train.runs"]
        assert record.levelno == logging.WARNING and "disk use" in record.getMessage()
        assert record.exc_info is not None and isinstance(record.exc_info[1], sqlite3.OperationalError)

        caplog.clear()
        store.list_runs = broken  # type: ignore[method-assign]
        with qtbot.waitSignal(panel.status) as said:
            panel.refresh()
        assert said.args == ["cannot list runs: database is locked"]
        (record,) = caplog.records
        assert record.levelno == logging.ERROR and record.getMessage() == "cannot list the runs of the store"
        assert isinstance(record.exc_info[1], sqlite3.OperationalError)
    finally:
        store.close()


def test_a_followed_run_that_disappears_is_let_go_with_a_record(qtbot, data_dir, caplog):
    from studio.tabs.train.follow import Follower
    from studio.widgets.curves import CurvesPanel

    store = GameStore.open(data_dir)
    try:
        run_id = store.create_run("random", {}, Rules(), {}, status="finished")
        curves = CurvesPanel()
        qtbot.addWidget(curves)
        follower = Follower(store, curves)
        follower.follow(run_id)
        store.delete_run(run_id)
        with qtbot.waitSignal(follower.ended) as ended:
            follower.poll()
        assert ended.args == [run_id, "stopped"] and follower.followed == {}
        (record,) = [r for r in caplog.records if r.name == "studio.tabs.train.follow"]
        assert record.getMessage() == f"stopped following run {run_id}: no run {run_id}"
    finally:
        store.close()
