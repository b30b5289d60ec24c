"""``JumpSlider``: a QSlider whose track jumps where it is clicked.

A plain QSlider pages towards the click (one page step per click), so on a 57-move game whose page
step is two moves a click on the track moved two moves wherever it landed. Here a left click on the
track sets the value under the pointer at once (the style's ``SH_Slider_AbsoluteSetButtons`` hint,
which the platform styles leave to the middle button) and a drag goes on from there; the keys still
step and page as before.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QProxyStyle, QSlider, QStyle, QStyleOption, QWidget


class _JumpStyle(QProxyStyle):
    """The application's style, except that the left button sets a slider's value absolutely."""

    def styleHint(
        self,
        hint: QStyle.StyleHint,
        option: QStyleOption | None = None,
        widget: QWidget | None = None,
        returnData: Any = None,
    ) -> int:
        if hint == QStyle.StyleHint.SH_Slider_AbsoluteSetButtons:
            return int(Qt.MouseButton.LeftButton.value)
        return super().styleHint(hint, option, widget, returnData)


class JumpSlider(QSlider):
    """A QSlider whose track jumps to the clicked value (see the module docstring)."""

    def __init__(
        self, orientation: Qt.Orientation = Qt.Orientation.Horizontal, parent: QWidget | None = None
    ):
        super().__init__(orientation, parent)
        # A proxy of a fresh instance of the application's style: QProxyStyle would take ownership of
        # the application's own style object if given it. The slider keeps its proxy alive.
        style = self.style()
        self._jump_style = _JumpStyle(style.name())
        self._jump_style.setParent(self)
        self.setStyle(self._jump_style)
