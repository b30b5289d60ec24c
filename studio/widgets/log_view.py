"""Help > Show log: the tail of ``DATA/logs/studio.log`` (:mod:`studio.logs`), newest at the bottom.

Read when opened and on Refresh, never watched: a log is read when something went wrong, and a file
watcher on a file that several processes append to would redraw for nothing most of the time.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QFontDatabase, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from studio.logs import log_path, logs_dir, read_tail

#: Bytes of the log's end shown (a few thousand lines; the whole file is up to 1 MB and five copies).
SHOWN_BYTES = 200_000


class LogDialog(QDialog):
    """The log's tail in a read-only monospace view, with Refresh and Open logs folder."""

    def __init__(self, data_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("logDialog")
        self.setWindowTitle("Studio log")
        self.data_dir = data_dir
        self.resize(900, 520)
        layout = QVBoxLayout(self)
        self.pathLabel = QLabel()
        self.pathLabel.setObjectName("logPath")
        self.pathLabel.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.pathLabel)
        self.text = QPlainTextEdit()
        self.text.setObjectName("logText")
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        layout.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.refreshButton = QPushButton("&Refresh")
        self.refreshButton.setObjectName("logRefresh")
        self.folderButton = QPushButton("Open logs &folder")
        self.folderButton.setObjectName("logFolder")
        self.folderButton.setToolTip(str(logs_dir(data_dir)))
        buttons.addButton(self.refreshButton, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.folderButton, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.refreshButton.clicked.connect(self.refresh)
        self.folderButton.clicked.connect(self.open_folder)
        layout.addWidget(buttons)
        self.refresh()

    def refresh(self) -> None:
        """Read the log's tail again and scroll to its end (the newest record)."""
        text = read_tail(self.data_dir, SHOWN_BYTES)
        path = log_path(self.data_dir)
        # The time read says a Refresh happened even when nothing new was logged.
        now = time.time()  # to the millisecond: two reads within a second still read differently
        read = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
        if text:
            self.pathLabel.setText(f"The end of {path} (newest last), read at {read}")
        else:
            self.pathLabel.setText(f"Nothing logged yet ({path}), read at {read}")
        self.text.setPlainText(text)
        self.text.moveCursor(QTextCursor.MoveOperation.End)
        self.text.ensureCursorVisible()

    def open_folder(self) -> bool:
        """Open ``DATA/logs`` in the file manager (it also holds runs' tracebacks and sweeps' logs)."""
        folder = logs_dir(self.data_dir)
        folder.mkdir(parents=True, exist_ok=True)
        return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))))
