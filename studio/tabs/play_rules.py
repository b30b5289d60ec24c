"""The rules of the Play tab's next game: the New game dialog, and the rules the settings remember
(the last game's, so that the next start and the next New game begin from them)."""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine import Rules
from studio.settings import get_float, get_int

#: The settings keys (under ``play/``) of the last game's rules, each a field of :class:`Rules`.
RULE_FIELDS = ("rows", "cols", "p4", "start_tiles", "spawn_per_move")


def saved_rules(settings: QSettings) -> Rules:
    """The rules of the last game played (the classic game when none, or when hand-edited badly)."""
    try:
        return Rules(
            rows=get_int(settings, "play/rows", 4),
            cols=get_int(settings, "play/cols", 4),
            p4=get_float(settings, "play/p4", 0.1),
            start_tiles=get_int(settings, "play/start_tiles", 2),
            spawn_per_move=get_int(settings, "play/spawn_per_move", 1),
        )
    except (TypeError, ValueError):  # hand-edited settings: fall back to the classic game
        return Rules()


def save_rules(settings: QSettings, rules: Rules) -> None:
    """Remember ``rules`` as the last game's (see :func:`saved_rules`)."""
    for key in RULE_FIELDS:
        settings.setValue(f"play/{key}", getattr(rules, key))


class NewGameDialog(QDialog):
    """Rules of the next game: rows, cols, probability of a 4, start tiles, tiles per spawn, seed."""

    def __init__(self, rules: Rules, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("newGameDialog")
        self.setWindowTitle("New game")
        form = QFormLayout()
        self.rows = QSpinBox(minimum=1, maximum=16, value=rules.rows)
        self.cols = QSpinBox(minimum=1, maximum=16, value=rules.cols)
        self.p4 = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2, value=rules.p4)
        self.start_tiles = QSpinBox(minimum=0, maximum=256, value=rules.start_tiles)
        self.spawn = QSpinBox(minimum=0, maximum=255, value=rules.spawn_per_move)
        self.seed = QLineEdit()
        self.seed.setPlaceholderText("random")
        self.rows.setObjectName("rowsSpin")
        self.cols.setObjectName("colsSpin")
        self.p4.setObjectName("p4Spin")
        self.start_tiles.setObjectName("startTilesSpin")
        self.spawn.setObjectName("spawnSpin")
        self.seed.setObjectName("seedEdit")
        form.addRow("Rows", self.rows)
        form.addRow("Columns", self.cols)
        form.addRow("Probability of a 4", self.p4)
        form.addRow("Start tiles", self.start_tiles)
        form.addRow("Tiles per spawn", self.spawn)
        form.addRow("Seed", self.seed)
        self.error = QLabel()
        self.error.setObjectName("newGameError")
        self.error.setStyleSheet("color: #c0392b;")
        self.error.setWordWrap(True)
        self.error.hide()
        self.classicButton = classic = QPushButton("Classic 4x4")
        classic.setObjectName("classicButton")
        classic.clicked.connect(self._classic)
        # Greyed while the fields already hold the classic rules: a click that changes nothing is not offered.
        for spin in (self.rows, self.cols, self.p4, self.start_tiles, self.spawn):
            spin.valueChanged.connect(self._update_classic)
        self._update_classic()
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.addButton(classic, QDialogButtonBox.ButtonRole.ResetRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def _update_classic(self) -> None:
        r = Rules()
        now = (
            self.rows.value(),
            self.cols.value(),
            self.p4.value(),
            self.start_tiles.value(),
            self.spawn.value(),
        )
        self.classicButton.setEnabled(now != (r.rows, r.cols, r.p4, r.start_tiles, r.spawn_per_move))

    def _classic(self) -> None:
        r = Rules()
        self.rows.setValue(r.rows)
        self.cols.setValue(r.cols)
        self.p4.setValue(r.p4)
        self.start_tiles.setValue(r.start_tiles)
        self.spawn.setValue(r.spawn_per_move)

    def values(self) -> tuple[Rules, int | None]:
        """The chosen rules and seed; ValueError (from Rules) with the reason when they are not valid."""
        rules = Rules(
            rows=self.rows.value(),
            cols=self.cols.value(),
            p4=round(self.p4.value(), 4),
            start_tiles=self.start_tiles.value(),
            spawn_per_move=self.spawn.value(),
        )
        text = self.seed.text().strip()
        if text and not text.lstrip("-").isdigit():
            raise ValueError(f"the seed must be a whole number (or empty for a random game), got {text!r}")
        return rules, int(text) if text else None

    def accept(self) -> None:
        try:
            self.values()
        except ValueError as e:
            self.error.setText(str(e))
            self.error.show()
            return
        super().accept()
