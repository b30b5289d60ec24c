"""The Replay tab's playback row: first / back / play / forward / last, the speed, a jump to a move
and the "show next move" switch.

The row only asks (``stepBy``, ``stepTo``, ``toEnd``, ``playToggled``) and shows what the tab tells it
(:meth:`PlaybackBar.show_state`); the speed and the switch are kept in the settings.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QSpinBox, QWidget

from studio.settings import get_bool, get_int
from studio.tabs.common import button

SPEEDS = (1, 2, 5, 10, 20, 50, 100, 500)  # steps per second


class PlaybackBar(QWidget):
    """The controls under the Replay tab's slider."""

    #: step this many moves (one forward animates)
    stepBy = Signal(int)
    #: show this position
    stepTo = Signal(int)
    #: show the final position
    toEnd = Signal()
    playToggled = Signal()
    #: the speed changed (moves a second)
    speedChanged = Signal(int)
    #: "show next move" was switched
    arrowToggled = Signal(bool)

    def __init__(self, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.firstButton = button(
            "|◀", "replayFirstButton", lambda: self.stepTo.emit(0), "First position (Home)", takes_focus=False
        )
        self.backButton = button(
            "◀",
            "replayBackButton",
            lambda: self.stepBy.emit(-1),
            "Back one move (Left or ,)",
            takes_focus=False,
        )
        self.playButton = button(
            "▶ Play", "replayPlayButton", self.playToggled.emit, "Play / pause (Space)", takes_focus=False
        )
        self.playButton.setCheckable(True)
        self.forwardButton = button(
            "▶",
            "replayForwardButton",
            lambda: self.stepBy.emit(1),
            "Forward one move (Right or .)",
            takes_focus=False,
        )
        self.lastButton = button(
            "▶|", "replayLastButton", self.toEnd.emit, "Last position (End)", takes_focus=False
        )
        self.speedCombo = QComboBox()
        self.speedCombo.setObjectName("replaySpeedCombo")
        for speed in SPEEDS:
            self.speedCombo.addItem(f"{speed} moves/s", speed)
        saved = get_int(settings, "replay/speed", 5)
        self.speedCombo.setCurrentIndex(SPEEDS.index(saved) if saved in SPEEDS else SPEEDS.index(5))
        self.speedCombo.currentIndexChanged.connect(self._on_speed)
        self.arrowCheck = QCheckBox("show next move")
        self.arrowCheck.setObjectName("replayArrowCheck")
        self.arrowCheck.setChecked(get_bool(settings, "replay/arrow", True))
        self.arrowCheck.toggled.connect(self._on_arrow_toggled)
        self.jumpSpin = QSpinBox()
        self.jumpSpin.setObjectName("replayJumpSpin")
        self.jumpSpin.setPrefix("move ")
        self.jumpSpin.setKeyboardTracking(False)
        self.jumpSpin.valueChanged.connect(self.stepTo)
        for w in (self.firstButton, self.backButton, self.playButton, self.forwardButton, self.lastButton):
            row.addWidget(w)
        row.addWidget(self.speedCombo)
        row.addStretch(1)
        row.addWidget(self.jumpSpin)
        row.addWidget(self.arrowCheck)

    @property
    def speed(self) -> int:
        """Moves a second."""
        return int(self.speedCombo.currentData())

    @property
    def shows_arrow(self) -> bool:
        return self.arrowCheck.isChecked()

    def _on_speed(self) -> None:
        self.settings.setValue("replay/speed", self.speed)
        self.speedChanged.emit(self.speed)

    def _on_arrow_toggled(self, on: bool) -> None:
        self.settings.setValue("replay/arrow", "true" if on else "false")
        self.arrowToggled.emit(on)

    def set_length(self, n_positions: int) -> None:
        """A game of ``n_positions`` positions (0..n-1) is shown; no position is chosen by this."""
        self.jumpSpin.blockSignals(True)
        self.jumpSpin.setRange(0, n_positions - 1)
        self.jumpSpin.setSuffix(f" / {n_positions - 1}")
        self.jumpSpin.blockSignals(False)

    def show_position(self, i: int) -> None:
        self.jumpSpin.blockSignals(True)
        self.jumpSpin.setValue(i)
        self.jumpSpin.blockSignals(False)

    def show_state(self, has_game: bool, position: int, n_positions: int, playing: bool) -> None:
        """Enable what can be done at ``position`` of ``n_positions``; Play reads Pause while playing."""
        at_start = not has_game or position <= 0
        at_end = not has_game or position >= n_positions - 1
        for w in (self.firstButton, self.backButton):
            w.setEnabled(not at_start)
        for w in (self.forwardButton, self.lastButton):
            w.setEnabled(not at_end)
        self.playButton.setEnabled(has_game and n_positions > 1)
        self.jumpSpin.setEnabled(has_game)
        self.playButton.blockSignals(True)
        self.playButton.setChecked(playing)
        self.playButton.setText("❚❚ Pause" if playing else "▶ Play")
        self.playButton.blockSignals(False)
