"""A page for a tab whose module has not landed yet (Train and Arena come with issue 9)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget


class PlaceholderTab(QWidget):
    """A centred note saying what will be here and what to use meanwhile."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"{title.lower()}Placeholder")
        heading = QLabel(title)
        heading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        heading.setStyleSheet("font-size: 22px; font-weight: bold; color: #776e65;")
        body = QLabel(text)
        body.setObjectName("placeholderText")
        body.setAlignment(Qt.AlignmentFlag.AlignCenter)
        body.setWordWrap(True)
        body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        body.setStyleSheet("font-size: 14px; color: #8a8178;")
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(heading)
        layout.addWidget(body)
        layout.addStretch(2)
