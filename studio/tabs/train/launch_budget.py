"""The launch form's Budget box: episodes, minutes, moves and/or CPU minutes, each ticked or not (the first limit
reached ends the run, as on the command line), and what it remembers of them between sessions."""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QFormLayout, QGroupBox, QSpinBox, QWidget

from agents.base import Budget
from agents.runner import RunError
from studio.tabs.common import decimal_spin, error_label, spin


class Limits(TypedDict, total=False):
    """The budget's limits by name, as :meth:`BudgetBox.set_budget` takes them (each one given is ticked)."""

    episodes: int | None
    minutes: float | None
    steps: int | None
    cpu_minutes: float | None


class BudgetBox(QGroupBox):
    """The budget's limits. Signals: ``toggled()`` (a limit ticked or unticked), ``edited()`` (a value)."""

    toggled = Signal()
    edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Budget (the first limit reached ends the run)", parent)
        self.setObjectName("budgetBox")
        bl = QFormLayout(self)
        bl.setContentsMargins(6, 4, 6, 4)
        bl.setVerticalSpacing(3)
        self.episodesCheck = QCheckBox("Episodes")
        self.episodesCheck.setObjectName("episodesCheck")
        self.episodesSpin = spin("episodesSpin", 1, 2_000_000_000, 1000, "Games (or epochs) to train")
        self.minutesCheck = QCheckBox("Minutes")
        self.minutesCheck.setObjectName("minutesCheck")
        self.minutesSpin = decimal_spin(
            "minutesSpin", 0.05, 100_000.0, 10.0, "Wall-clock minutes of training"
        )
        self.stepsCheck = QCheckBox("Moves")
        self.stepsCheck.setObjectName("stepsCheck")
        self.stepsSpin = spin("stepsSpin", 1, 2_000_000_000, 1_000_000, "Moves (environment steps) to train")
        self.stepsSpin.setSingleStep(10_000)
        self.cpuCheck = QCheckBox("CPU minutes")
        self.cpuCheck.setObjectName("cpuCheck")
        # Why a CPU budget: it means the same on a busy machine as on an idle one, and a learner on two
        # threads spends it twice as fast as wall time (two hours of a 2-core laptop = 240 CPU minutes).
        self.cpuSpin = decimal_spin(
            "cpuSpin",
            0.05,
            1_000_000.0,
            240.0,
            "CPU minutes the training process may use (all its threads count): the same amount of "
            "training however busy the machine is; 2 hours on 2 cores = 240",
        )
        self.episodesCheck.setChecked(True)
        for _name, check, editor in self.rows():
            bl.addRow(check, editor)
            check.toggled.connect(lambda _on: self.toggled.emit())
            editor.valueChanged.connect(lambda _v: self.edited.emit())
        self.budgetError = error_label("budgetError")
        bl.addRow(self.budgetError)

    def rows(self) -> list[tuple[str, QCheckBox, QSpinBox | QDoubleSpinBox]]:
        """(limit, its tick, its value) for episodes, minutes, steps and CPU minutes."""
        return [
            ("episodes", self.episodesCheck, self.episodesSpin),
            ("minutes", self.minutesCheck, self.minutesSpin),
            ("steps", self.stepsCheck, self.stepsSpin),
            ("cpu_minutes", self.cpuCheck, self.cpuSpin),
        ]

    def budget(self) -> Budget:
        """The ticked limits (RunError when none is ticked)."""
        episodes = self.episodesSpin.value() if self.episodesCheck.isChecked() else None
        seconds = self.minutesSpin.value() * 60.0 if self.minutesCheck.isChecked() else None
        steps = self.stepsSpin.value() if self.stepsCheck.isChecked() else None
        cpu_seconds = self.cpuSpin.value() * 60.0 if self.cpuCheck.isChecked() else None
        if episodes is None and seconds is None and steps is None and cpu_seconds is None:
            raise RunError("tick at least one limit: episodes, minutes, moves or CPU minutes", "budget")
        return Budget(episodes=episodes, steps=steps, seconds=seconds, cpu_seconds=cpu_seconds)

    def set_budget(self, **limits: Unpack[Limits]) -> None:
        """Tick exactly the limits given (and set their values)."""
        for name, check, editor in self.rows():
            value = limits.get(name)
            check.setChecked(value is not None)
            if value is not None:
                editor.setValue(value)  # type: ignore[arg-type]

    def state(self) -> tuple[Any, ...]:
        """What the box says, to tell when a preset's budget was changed."""
        return tuple(
            (check.isChecked(), editor.value() if check.isChecked() else None)
            for _name, check, editor in self.rows()
        )

    def remembered(self) -> dict[str, list[Any]]:
        """Every limit as [ticked, value], to keep between sessions (:meth:`restore`)."""
        return {name: [check.isChecked(), editor.value()] for name, check, editor in self.rows()}

    def restore(self, saved: dict[str, Any]) -> None:
        """The limits :meth:`remembered` kept; nothing when none of them was ticked (the defaults)."""
        rows = [(check, editor, saved.get(name)) for name, check, editor in self.rows()]
        if not any(isinstance(v, list) and len(v) == 2 and v[0] for _c, _e, v in rows):
            return  # nothing remembered (or no limit ticked): the defaults
        for check, editor, value in rows:
            if not (isinstance(value, list) and len(value) == 2):
                continue
            ticked, number = value
            check.setChecked(bool(ticked))
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                editor.setValue(type(editor.value())(number))  # type: ignore[arg-type]  # its own type

    def sync(self) -> None:
        """Only ticked limits can be edited; a change hides the last error."""
        for _name, check, editor in self.rows():
            editor.setEnabled(check.isChecked())
        self.budgetError.hide()
