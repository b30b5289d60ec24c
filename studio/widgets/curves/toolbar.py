"""The row over the curves: smoothing slider, x axis menu, Log x / Log y, Fit; and the scrolling grid
the panels sit in. Widgets only: :class:`~studio.widgets.curves.panel.CurvesPanel` connects them."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QSettings, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSlider,
    QWidget,
)

from studio.settings import get_bool, get_int
from studio.widgets.curves.xaxis import X_AXES

#: The least height a row of plots gets before the panels scroll (two runs of different agents
#: compared make four rows, which do not fit above the runs table of a 1280x800 window).
MIN_ROW_PX = 135
#: ... and a last panel alone in its row (the whole width; the Speed panel of an odd count): half a
#: row's height, as it is twice as wide. At 150 + 150 + 150 px the n-tuple's five panels (Speed the
#: fifth) did not fit the window's default size (a 373-pixel view), and Speed was cut off.
LONE_ROW_PX = 80


def saved_choices(settings: QSettings | None) -> tuple[float, str, bool, bool]:
    """The toolbar's choices as last saved (smoothing 0..0.99, x axis, log x, log y); the defaults
    without settings."""
    if settings is None:
        return 0.0, "step", False, False
    smoothing = min(0.99, max(0.0, get_int(settings, "curves/smoothing", 0) / 100))
    x_axis = str(settings.value("curves/xAxis", "step"))
    return (
        smoothing,
        x_axis if x_axis in X_AXES else "step",
        get_bool(settings, "curves/logX", False),
        get_bool(settings, "curves/logY", False),
    )


def set_quietly(widget: Any, setter: str, value: Any) -> None:
    """``widget.<setter>(value)`` without its signals (a state shown, not a user's choice)."""
    widget.blockSignals(True)
    getattr(widget, setter)(value)
    widget.blockSignals(False)


class CurvesToolbar(QHBoxLayout):
    """The controls over the panels, showing the choices given (the panel saves and applies them)."""

    def __init__(self, smoothing: float, x_axis: str, log_x: bool, log_y: bool) -> None:
        super().__init__()
        self.setContentsMargins(2, 0, 2, 0)
        self.addWidget(QLabel("Smoothing"))
        self.smoothingValue = QLabel(f"{smoothing:.2f}")
        self.smoothingValue.setObjectName("smoothingValue")
        self.smoothingValue.setFixedWidth(30)
        self.smoothingSlider = QSlider(Qt.Orientation.Horizontal)
        self.smoothingSlider.setObjectName("smoothingSlider")
        self.smoothingSlider.setRange(0, 99)
        self.smoothingSlider.setValue(round(smoothing * 100))
        self.smoothingSlider.setFixedWidth(120)
        self.smoothingSlider.setTracking(False)  # smooth again when the handle is let go
        self.smoothingSlider.setToolTip("Exponential moving average, as TensorBoard's (0: raw values)")
        self.smoothingSlider.sliderMoved.connect(lambda v: self.smoothingValue.setText(f"{v / 100:.2f}"))
        self.addWidget(self.smoothingSlider)
        self.addWidget(self.smoothingValue)
        self.addSpacing(10)
        self.addWidget(QLabel("x axis"))
        self.xAxisCombo = QComboBox()
        self.xAxisCombo.setObjectName("xAxisCombo")
        for key, text in X_AXES.items():
            self.xAxisCombo.addItem(text, key)
        self.xAxisCombo.setCurrentIndex(list(X_AXES).index(x_axis))
        self.addWidget(self.xAxisCombo)
        self.logXCheck = self._check(
            "Log x", "logXCheck", "A log x axis: a run of 100 games reads beside one of 40,000", log_x
        )
        self.logYCheck = self._check(
            "Log y",
            "logYCheck",
            "Log y on every panel whose values are positive (losses are log anyway)",
            log_y,
        )
        self.fitButton = QPushButton("Fit")
        self.fitButton.setObjectName("fitButton")
        self.fitButton.setToolTip("Fit every panel to its data (after a zoom or a pan)")
        self.addWidget(self.fitButton)
        self.addStretch(1)

    def _check(self, text: str, name: str, tip: str, on: bool) -> QCheckBox:
        box = QCheckBox(text)
        box.setObjectName(name)
        box.setToolTip(tip)
        box.setChecked(on)
        self.addWidget(box)
        return box

    def show_smoothing(self, weight: float) -> None:
        """The slider and its number at ``weight`` (0..0.99), without asking for it again."""
        self.smoothingValue.setText(f"{weight:.2f}")
        if round(weight * 100) != self.smoothingSlider.value():
            set_quietly(self.smoothingSlider, "setValue", round(weight * 100))


class PanelGrid(QScrollArea):
    """The panels, two a row, in a view that scrolls when there are many.

    Many panels (two runs of different agents compared) scroll instead of pushing the window past the
    screen: on a 1280x800 screen four rows of plots do not fit above the runs table. The grid is sized
    by hand (:meth:`fit`): the scroll area's own resizing asks the word-wrapped legends for their
    height at the preferred size of every plot, which made each row as tall as the whole view. Rows
    share the view when each gets MIN_ROW_PX; below that they scroll.
    """

    def __init__(self) -> None:
        super().__init__()
        self.host = QWidget()
        self.rows = 0  # rows of panels in the grid
        self.lone = 0  # of which a last panel alone (the whole width, half the height)
        self._lone_box: QWidget | None = None
        self.host.setObjectName("curvesGrid")
        self.grid = QGridLayout(self.host)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(4)
        self.setObjectName("curvesScroll")
        self.setWidgetResizable(False)
        self.viewport().installEventFilter(self)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidget(self.host)

    def eventFilter(self, watched: Any, event: Any) -> bool:
        if watched is self.viewport() and event.type() == QEvent.Type.Resize:
            self.fit()
        return super().eventFilter(watched, event)

    def fit(self) -> None:
        """The grid as wide as the view, and as tall as the view or MIN_ROW_PX a row, whichever is more."""
        view = self.viewport().size()
        need = (self.rows - self.lone) * MIN_ROW_PX + self.lone * LONE_ROW_PX
        need += max(0, self.rows - 1) * self.grid.spacing()
        height = max(view.height(), need)
        self.host.resize(view.width(), height)
        if self._lone_box is not None:
            # The layout's stretch alone left every row the same height: the plots' size hints win.
            share = (height - max(0, self.rows - 1) * self.grid.spacing()) // (2 * self.rows - 1)
            self._lone_box.setMaximumHeight(max(LONE_ROW_PX, share))

    def place(self, boxes: list[tuple[QWidget, bool]]) -> None:
        """Lay the panels' boxes that are shown (box, shown), two a row, a last odd one the whole width."""
        shown = [box for box, on in boxes if on]
        placed = [
            item.widget() for i in range(self.grid.count()) if (item := self.grid.itemAt(i)) is not None
        ]
        if placed == shown:
            return
        while self.grid.count():
            self.grid.takeAt(0)
        for box, on in boxes:
            box.setVisible(on)
        for k, box in enumerate(shown):
            last_alone = k == len(shown) - 1 and len(shown) % 2 == 1
            self.grid.addWidget(box, k // 2, k % 2, 1, 2 if last_alone else 1)
        rows = (len(shown) + 1) // 2
        # A lone last panel beside paired ones: half the height of a paired row (twice the width).
        lone = rows > 1 and len(shown) % 2 == 1
        for r in range(self.grid.rowCount()):
            self.grid.setRowStretch(r, 0 if r >= rows else 1 if lone and r == rows - 1 else 2)
        for box, _on in boxes:
            box.setMinimumHeight(0)
            box.setMaximumHeight(16777215)  # QWIDGETSIZE_MAX: no cap but the lone panel's (fit)
        self._lone_box = shown[-1] if lone else None
        if self._lone_box is not None:
            self._lone_box.setMinimumHeight(LONE_ROW_PX)
        self.rows, self.lone = rows, int(lone)
        self.fit()
