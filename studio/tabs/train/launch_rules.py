"""The launch form's Rules box: the board and spawn rules a run trains on, and the line that says why
the agent cannot play them."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFormLayout, QGroupBox, QHBoxLayout, QLabel, QWidget

from engine import Rules
from studio.tabs.common import decimal_spin, error_label, spin


class RulesBox(QGroupBox):
    """Board size, chance of a 4, start tiles, spawns per move. Signals: ``edited()`` (any value),
    ``shapeEdited()`` (rows or columns: imitation learns from games of that shape)."""

    edited = Signal()
    shapeEdited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Rules", parent)
        rl = QFormLayout(self)
        rl.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.rowsSpin = spin("rowsSpin", 1, 16, 4, "Board rows")
        self.colsSpin = spin("colsSpin", 1, 16, 4, "Board columns")
        self.p4Spin = decimal_spin(
            "p4Spin", 0.0, 1.0, 0.1, "Probability that a spawned tile is a 4", decimals=3
        )
        self.p4Spin.setSingleStep(0.05)
        self.startTilesSpin = spin("startTilesSpin", 0, 256, 2, "Tiles on a new board")
        self.spawnSpin = spin("spawnSpin", 0, 255, 1, "Tiles spawned after each move")
        rows_cols = QHBoxLayout()
        rows_cols.addWidget(self.rowsSpin)
        rows_cols.addWidget(QLabel("×"))
        rows_cols.addWidget(self.colsSpin)
        rl.addRow("Board", rows_cols)
        rl.addRow("Chance of a 4", self.p4Spin)
        rl.addRow("Start tiles", self.startTilesSpin)
        rl.addRow("Spawns per move", self.spawnSpin)
        self.rulesError = error_label("rulesError")
        rl.addRow(self.rulesError)
        for w in (self.rowsSpin, self.colsSpin, self.startTilesSpin, self.spawnSpin):
            w.valueChanged.connect(self._edited)
        self.p4Spin.valueChanged.connect(self._edited)
        for w in (self.rowsSpin, self.colsSpin):
            w.valueChanged.connect(lambda _v: self.shapeEdited.emit())

    def _edited(self, _value: float) -> None:
        self.edited.emit()

    def rules(self) -> Rules:
        """The rules the box says (ValueError with the reason when they make no game)."""
        rows, cols, p4, start_tiles, spawn = self.state()
        return Rules(rows=rows, cols=cols, p4=p4, start_tiles=start_tiles, spawn_per_move=spawn)

    def set_rules(self, rules: Rules | dict[str, Any]) -> None:
        """Show ``rules`` (a dict: the classic game's, with its keys changed)."""
        r = Rules.from_dict({**Rules().to_dict(), **rules}) if isinstance(rules, dict) else rules
        self.rowsSpin.setValue(r.rows)
        self.colsSpin.setValue(r.cols)
        self.p4Spin.setValue(r.p4)
        self.startTilesSpin.setValue(r.start_tiles)
        self.spawnSpin.setValue(r.spawn_per_move)

    def state(self) -> tuple[Any, ...]:
        """What the box says, to tell when a preset's rules were changed."""
        return (
            self.rowsSpin.value(),
            self.colsSpin.value(),
            round(self.p4Spin.value(), 6),
            self.startTilesSpin.value(),
            self.spawnSpin.value(),
        )

    def show_problem(self, problem: str | None) -> None:
        """Say why the agent cannot play these rules (None: hide the line)."""
        self.rulesError.setText(problem or "")
        self.rulesError.setVisible(bool(problem))
