"""The launch form's Run box: the agent's seed and the run's options, each row made from the option's
declaration (:class:`agents.run.options.RunOptions`: label, range, unit, tooltip), so the form, the
command line and the run loop agree on what an option is and what it accepts."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QSpinBox, QWidget

from agents.run.options import OptionSpec, option_spec
from studio.tabs.common import decimal_spin, spin

#: Periodic checkpoints of runs started here, in minutes (pause, stop and the end always save one):
#: more often than the command line's, since a window's run is watched and resumed from its last one.
CHECKPOINT_EVERY_MIN = 2.0
#: Each option's spin box (its object name, what tests and benchmarks find it by) and decimals.
SPINS: dict[str, tuple[str, int]] = {
    "checkpoint_every_s": ("checkpointSpin", 1),
    "keep_checkpoints": ("keepSpin", 0),
    "max_checkpoint_mb": ("maxCheckpointSpin", 0),
    "eval_games": ("evalGamesSpin", 0),
    "eval_every_s": ("evalEverySpin", 1),
    "log_every": ("logEverySpin", 0),
}
#: The form shows seconds as minutes (a run's cadences are minutes long).
SECONDS_PER_SHOWN = {"s": 60.0}
SHOWN_UNIT = {"s": "min", "MB": "MB"}


def option_spin(spec: OptionSpec) -> QSpinBox | QDoubleSpinBox:
    """A spin box of option ``spec``: its declared (form) range, unit, default, tooltip and 0's text."""
    name, decimals = SPINS[spec.name]
    low, high = spec.form_range or (spec.low or 0, spec.high or 2**31 - 1)
    per = SECONDS_PER_SHOWN.get(spec.unit, 1.0)
    if spec.kind is int:
        box: QSpinBox | QDoubleSpinBox = spin(name, int(low), int(high), int(spec.default), spec.tip)
    else:
        box = decimal_spin(name, low, high, spec.default / per, spec.tip, decimals)
    if spec.unit:
        box.setSuffix(f" {SHOWN_UNIT[spec.unit]}")
    if spec.form_zero:
        box.setSpecialValueText(spec.form_zero)
    return box


class RunBox(QGroupBox):
    """Seed, checkpoint cadence, files kept, the size limit, evaluations and logged games."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Run", parent)
        rl = QFormLayout(self)
        rl.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)  # a narrow panel: labels above
        self.seedSpin = spin("seedSpin", -1, 2**31 - 1, -1, "Seed of the agent (random: a fresh one)")
        self.seedSpin.setSpecialValueText("random")
        self.spins = {name: option_spin(option_spec(name)) for name in SPINS}
        self.checkpointSpin = self.spins["checkpoint_every_s"]
        self.checkpointSpin.setValue(CHECKPOINT_EVERY_MIN)  # type: ignore[arg-type]  # a QDoubleSpinBox
        self.keepSpin = self.spins["keep_checkpoints"]
        self.maxCheckpointSpin = self.spins["max_checkpoint_mb"]
        self.evalGamesSpin = self.spins["eval_games"]
        self.evalEverySpin = self.spins["eval_every_s"]
        self.logEverySpin = self.spins["log_every"]
        self.evalGamesSpin.valueChanged.connect(lambda n: self.evalEverySpin.setEnabled(n > 0))
        evaluate = QHBoxLayout()  # "20 games every 10.0 min": one row of two options
        evaluate.addWidget(self.evalGamesSpin)
        evaluate.addWidget(QLabel(option_spec("eval_every_s").label))
        evaluate.addWidget(self.evalEverySpin)
        rl.addRow("Seed", self.seedSpin)
        for name in ("checkpoint_every_s", "keep_checkpoints", "max_checkpoint_mb"):
            rl.addRow(option_spec(name).label, self.spins[name])
        rl.addRow(option_spec("eval_games").label, evaluate)
        rl.addRow(option_spec("log_every").label, self.logEverySpin)

    def seed(self) -> int | None:
        """The agent's seed; None for a fresh one."""
        seed = self.seedSpin.value()
        return seed if seed >= 0 else None

    def options(self) -> dict[str, Any]:
        """The options the box sets, by field name, in the field's unit (seconds, not minutes)."""
        return {
            name: box.value() * SECONDS_PER_SHOWN.get(option_spec(name).unit, 1.0)
            for name, box in self.spins.items()
        }
