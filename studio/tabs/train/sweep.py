"""The Train tab's sweeps: the Sweep dialog, the worker that drives a sweep, and the Sweeps panel.

* :class:`SweepDialog` turns knobs of the launch form into lists (a grid) or ranges (a random search)
  and gathers a :class:`studio.services.sweep.SweepRequest`, the same one ``python main.py sweep``
  builds from its flags. The base config, rules and per-trial budget are the form's. Every value is
  read and checked by the service (:func:`~studio.services.sweep.parse_grid`,
  :func:`~studio.services.sweep.parse_range`, :func:`~studio.services.sweep.plan_trials`): the dialog
  only writes the CLI's ``NAME=V1,V2`` / ``NAME=LOW:HIGH[:log]`` text, so both front ends refuse the
  same inputs with the same words.
* :class:`SweepWorker` runs :func:`~studio.services.sweep.run_sweep` in a worker thread (its trials are
  child processes already; the driver loop only waits on them) and re-emits each
  :class:`~studio.services.sweep.SweepEvent` in the GUI thread. Stop sets the sweep's stop event: every
  trial stops after its current step and saves a checkpoint; the sweep is then ``stopped`` and resumes.
* :class:`SweepPanel` shows one stored sweep: its points ranked (rank, knob values, mean ± std, per-seed
  figures, trial statuses, runs), a scatter of the metric against one knob, "Apply best", and Resume
  for a stopped sweep. Ranking reads the store in a worker thread too (a ``score`` metric reads every
  episode of every trial), so the GUI thread never waits on SQLite for it.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from agents.config import FieldSpec
from agents.runner import DEFAULT_EVAL_GAMES
from studio.services.library import open_data_dir
from studio.services.runs import RunRequest, have_ray
from studio.services.sweep import (
    AUTO,
    KnobRange,
    PointResult,
    SweepError,
    SweepEvent,
    SweepProgress,
    SweepRequest,
    grid_value_text,
    knob_text,
    parse_grid,
    parse_range,
    plan_trials,
    rank_sweep,
    run_sweep,
    swept_knobs,
)
from studio.tabs.common import NOTE_STYLE, button, error_label, label, spin, titled_row
from studio.tabs.train.launch import budget_words
from studio.text import plural
from studio.widgets.curves import GridAxis, show_grid
from studio.worker import CallWorker, _Loop, _Worker

if TYPE_CHECKING:
    from engine.store import GameStore, SweepInfo

__all__ = [
    "FIXED",
    "LIST",
    "RANGE",
    "KnobRow",
    "SweepDialog",
    "SweepPanel",
    "SweepWorker",
    "ask_close_with_sweep",
]

log = logging.getLogger(__name__)

FIXED, LIST, RANGE = "fixed", "list", "range"
#: How often the panel re-ranks a running sweep (besides at each trial's end).
RANK_EVERY_MS = 3000
#: Trial dots and point means in the scatter.
DOT_COLOUR, MEAN_COLOUR = "#8f7a66", "#1f77b4"
#: Where the Sweep dialog keeps what a person set in it, per agent (JSON): Cancel, Esc or closing the
#: window must not throw typed lists away. In the settings when the tab has them, else on the tab.
MEMORY_KEY = "sweep/dialog/{agent}"
MEMORY_PROPERTY = "sweepDialogMemory"


def _num(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.4g}"


# ====================================================================================== the dialog


class KnobRow(QObject):
    """One knob's row in the dialog: kept fixed at the form's value, a list of values, or a range.

    Numbers offer all three; a choice or a true/false knob offers ticks of its values; any other knob
    (a tuple, a free string) a list typed as on the command line (tuples separated by ``;``).
    """

    changed = Signal()

    def __init__(self, spec: FieldSpec, value: Any, parent: QWidget) -> None:
        super().__init__(parent)
        self.spec = spec
        self.value = value
        name = spec.name
        self.label = QLabel(spec.label or name)
        self.label.setToolTip(f"{name}: {spec.help}" if spec.help else name)
        self.modeCombo = QComboBox()
        self.modeCombo.setObjectName(f"mode_{name}")
        self.modeCombo.addItem(f"fixed ({knob_text(value)})", FIXED)
        self.modeCombo.addItem("list", LIST)
        numeric = spec.kind in ("int", "float")
        if numeric:
            self.modeCombo.addItem("range", RANGE)
        self.modeCombo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.stack = QStackedWidget()
        self.stack.addWidget(QWidget())  # fixed: nothing to edit
        self.choices: tuple[Any, ...] | None = (True, False) if spec.kind == "bool" else spec.choices
        self.checks: list[QCheckBox] = []
        self.listEdit: QLineEdit | None = None
        if self.choices:
            ticks = QWidget()
            tl = QHBoxLayout(ticks)
            tl.setContentsMargins(0, 0, 0, 0)
            for c in self.choices:
                box = QCheckBox(knob_text(c))
                box.setObjectName(f"value_{name}_{knob_text(c)}")
                box.setChecked(c == value)
                box.toggled.connect(self.changed)
                self.checks.append(box)
                tl.addWidget(box)
            tl.addStretch(1)
            self.stack.addWidget(ticks)
        else:
            self.listEdit = QLineEdit(spec.format(value) if value is not None else "")
            self.listEdit.setObjectName(f"list_{name}")
            sep = ";" if spec.kind.endswith("_tuple") else ","
            self.listEdit.setToolTip(
                f"Values separated by '{sep}' (as --grid {name}=V1{sep}V2); a value holding '{sep}' in quotes"
            )
            self.listEdit.textChanged.connect(self.changed)
            self.stack.addWidget(self.listEdit)
        self.lowEdit = self.highEdit = None
        self.logCheck: QCheckBox | None = None
        if numeric:
            low, high = self._default_range(value)
            rng = QWidget()
            rl = QHBoxLayout(rng)
            rl.setContentsMargins(0, 0, 0, 0)
            self.lowEdit = QLineEdit(knob_text(low))
            self.lowEdit.setObjectName(f"low_{name}")
            self.highEdit = QLineEdit(knob_text(high))
            self.highEdit.setObjectName(f"high_{name}")
            self.logCheck = QCheckBox("log")
            self.logCheck.setObjectName(f"log_{name}")
            self.logCheck.setChecked(spec.log)
            self.logCheck.setToolTip("Draw from a log-uniform range (for rates and other scales)")
            for w in (self.lowEdit, self.highEdit):
                w.setMinimumWidth(60)
                w.textChanged.connect(self.changed)
            self.logCheck.toggled.connect(self.changed)
            rl.addWidget(self.lowEdit, 1)
            rl.addWidget(QLabel("to"))
            rl.addWidget(self.highEdit, 1)
            rl.addWidget(self.logCheck)
            self.stack.addWidget(rng)
        self.modeCombo.currentIndexChanged.connect(self._on_mode)
        self.stack.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._on_mode()

    def _default_range(self, value: Any) -> tuple[float, float]:
        """The knob's own bounds; a side it does not declare comes from the form's value."""
        v = float(value) if isinstance(value, int | float) else 1.0
        low = self.spec.low if self.spec.low is not None else (v / 10 if v > 0 else v - 1)
        high = self.spec.high if self.spec.high is not None else (v * 10 if v > 0 else v + 1)
        if self.spec.kind == "int":
            return int(low), int(high)
        return float(low), float(high)

    @property
    def mode(self) -> str:
        return str(self.modeCombo.currentData())

    def set_mode(self, mode: str) -> None:
        self.modeCombo.setCurrentIndex(max(0, self.modeCombo.findData(mode)))

    def _on_mode(self, *_: Any) -> None:
        self.stack.setCurrentIndex({FIXED: 0, LIST: 1, RANGE: 2}[self.mode])
        self.label.setStyleSheet("" if self.mode == FIXED else "font-weight: bold;")
        self.changed.emit()

    def state(self) -> dict[str, Any]:
        """What the row holds, as JSON-able data (:meth:`restore` puts it back)."""
        out: dict[str, Any] = {"mode": self.mode}
        if self.choices:
            out["ticked"] = [
                knob_text(c) for c, b in zip(self.choices, self.checks, strict=True) if b.isChecked()
            ]
        if self.listEdit is not None:
            out["list"] = self.listEdit.text()
        if self.lowEdit is not None and self.highEdit is not None and self.logCheck is not None:
            out.update(low=self.lowEdit.text(), high=self.highEdit.text(), log=self.logCheck.isChecked())
        return out

    def restore(self, state: dict[str, Any]) -> None:
        """Put back a :meth:`state` (a part it lacks, or of another kind of knob, is left as it is)."""
        ticked = state.get("ticked")
        if self.choices and isinstance(ticked, list):
            for c, box in zip(self.choices, self.checks, strict=True):
                box.setChecked(knob_text(c) in ticked)
        for edit, key in ((self.listEdit, "list"), (self.lowEdit, "low"), (self.highEdit, "high")):
            if edit is not None and isinstance(state.get(key), str):
                edit.setText(state[key])
        if self.logCheck is not None and isinstance(state.get("log"), bool):
            self.logCheck.setChecked(state["log"])
        if self.modeCombo.findData(state.get("mode")) >= 0:
            self.set_mode(str(state["mode"]))

    def grid_text(self) -> str:
        """The knob's list as the CLI's ``--grid`` takes it (``NAME=V1,V2``; a choice holding commas
        in quotes, so it stays one value)."""
        name = self.spec.name
        if self.choices:
            picked = [c for c, box in zip(self.choices, self.checks, strict=True) if box.isChecked()]
            if not picked:
                raise SweepError(f"{name}: tick at least one value", name)
            return f"{name}=" + ",".join(grid_value_text(c, self.spec.kind) for c in picked)
        assert self.listEdit is not None
        return f"{name}={self.listEdit.text()}"

    def range_text(self) -> str:
        """The knob's range as the CLI's ``--random`` takes it (``NAME=LOW:HIGH[:log]``)."""
        assert self.lowEdit is not None and self.highEdit is not None and self.logCheck is not None
        scale = ":log" if self.logCheck.isChecked() else ""
        return f"{self.spec.name}={self.lowEdit.text().strip()}:{self.highEdit.text().strip()}{scale}"


class SweepDialog(QDialog):
    """Which knobs vary and how, seeds, metric, evaluation, workers; ``sweep_request()`` -> SweepRequest.

    ``base`` is the launch form's run (agent, preset, config, rules, budget): each trial trains with it
    except for the knobs varied here. The number of trials planned is shown as the inputs change, and a
    plan that cannot run says why in red, with Start disabled.

    The dialog is modal: the form's settings are changed by closing it. What was set here is kept
    however it closes (Start, Cancel, Esc), per agent, and is back when it opens again, also in the
    next session (``settings``: the tab's QSettings; without them the parent keeps it while it lives).
    A knob left as it opened follows the form: only what was changed here is kept.
    """

    def __init__(
        self,
        agent_cls: Any,
        base: RunRequest,
        parent: QWidget | None = None,
        settings: QSettings | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("sweepDialog")
        self.setWindowTitle(f"Sweep {base.agent}")
        self.agent_cls = agent_cls
        self.base = base
        self.request: SweepRequest | None = None
        self.problem: str | None = None
        parent_settings = getattr(parent, "settings", None)
        self.settings = settings or (parent_settings if isinstance(parent_settings, QSettings) else None)
        layout = QVBoxLayout(self)
        intro = QLabel(
            f"Train <b>{base.agent}</b> many times: every trial takes the form's settings, rules and "
            "budget (a knob left <b>fixed</b> keeps the form's value, shown beside it), except the "
            "knobs set to a <b>list</b> (every combination is tried) or a <b>range</b> (a random "
            "search draws its points from it)."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        layout.addWidget(self._knobs_box(), 1)
        layout.addWidget(self._options_box())
        self.trialsLabel = label("trialsLabel", style="font-weight: bold;")
        layout.addWidget(self.trialsLabel)
        self.errorLabel = error_label("sweepError")
        layout.addWidget(self.errorLabel)
        buttons = QDialogButtonBox()
        self.startButton = buttons.addButton("Start sweep", QDialogButtonBox.ButtonRole.AcceptRole)
        self.startButton.setObjectName("sweepStartButton")
        self.cancelButton = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(720, 640)
        self._opened_with = self.state()  # what the form gave: only changes from it are remembered
        self.restore(self._remembered())
        self.update_plan()

    # ------------------------------------------------------------------ building
    def _knobs_box(self) -> QGroupBox:
        box = QGroupBox("Knobs")
        outer = QVBoxLayout(box)
        scroll = QScrollArea()
        scroll.setObjectName("knobsScroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        grid = QGridLayout(inner)
        grid.setContentsMargins(0, 0, 6, 0)
        grid.setColumnStretch(2, 1)
        self.rows: dict[str, KnobRow] = {}
        config = dict(self.base.config)
        for i, s in enumerate(self.agent_cls.config_cls.specs()):
            row = KnobRow(s, config.get(s.name, s.default), inner)
            row.changed.connect(self.update_plan)
            grid.addWidget(row.label, i, 0)
            grid.addWidget(row.modeCombo, i, 1)
            grid.addWidget(row.stack, i, 2)
            self.rows[s.name] = row
        grid.setRowStretch(len(self.rows), 1)
        scroll.setWidget(inner)
        outer.addWidget(scroll)
        return box

    def _options_box(self) -> QGroupBox:
        box = QGroupBox("Trials")
        form = QFormLayout(box)
        self.samplesSpin = spin("samplesSpin", 1, 1000, 8, "Points a random search draws from its ranges")
        self.seedsSpin = spin("seedsSpin", 1, 100, 1, "Runs per point, seeded first seed, +1, ...")
        self.seedSpin = spin(
            "sweepSeedSpin", 0, 2**31 - 1, 1, "First seed of each point's runs, and the draws"
        )
        self.metricCombo = QComboBox()
        self.metricCombo.setObjectName("metricCombo")
        self.metricCombo.addItem("auto (the trial's closing evaluation)", AUTO)
        from agents.metrics import metrics_of

        for m in metrics_of(self.agent_cls):
            self.metricCombo.addItem(m.name, m.name)
        self.metricCombo.setToolTip("What ranks the points (a loss ranks lowest first)")
        self.evalGamesSpin = spin(
            "sweepEvalGamesSpin",
            0,
            100_000,
            DEFAULT_EVAL_GAMES,
            "Greedy games that end each trial, the same seeded games for every trial "
            "(0: rank by the training score)",
        )
        self.workersSpin = spin("sweepWorkersSpin", 1, 256, 1, "Trials that train at once")
        self.backendCombo = QComboBox()
        self.backendCombo.setObjectName("sweepBackendCombo")
        self.backendCombo.addItem("Local processes", "local")
        self.backendCombo.addItem("Ray Tune", "ray")
        if not have_ray():
            item = self.backendCombo.model().item(1)  # type: ignore[attr-defined]
            item.setEnabled(False)
            tip = "Ray is not installed: pip install -e '.[ray]'"
            self.backendCombo.setItemData(1, tip, Qt.ItemDataRole.ToolTipRole)
            self.backendCombo.setToolTip(tip)
        for w, width in ((self.samplesSpin, 90), (self.seedsSpin, 90), (self.seedSpin, 120)):
            w.setMaximumWidth(width)  # a count, not a sentence: no field across the whole dialog
        for w in (self.evalGamesSpin, self.workersSpin):
            w.setMaximumWidth(90)
        self.backendCombo.setMaximumWidth(220)
        seeds = QHBoxLayout()
        seeds.addWidget(self.seedsSpin)
        seeds.addWidget(QLabel("first seed"))
        seeds.addWidget(self.seedSpin)
        seeds.addStretch(1)
        run = QHBoxLayout()
        run.addWidget(self.workersSpin)
        run.addWidget(QLabel("at once, on"))
        run.addWidget(self.backendCombo, 1)
        run.addStretch(1)
        form.addRow("Samples (ranges)", self.samplesSpin)
        form.addRow("Seeds per point", seeds)
        form.addRow("Rank by", self.metricCombo)
        form.addRow("Closing evaluation", _with_suffix(self.evalGamesSpin, "games"))
        form.addRow("Trials", run)
        self.budgetLabel = label("sweepBudgetLabel", _budget_text(self.base), wrap=True, style=NOTE_STYLE)
        form.addRow("Each trial", self.budgetLabel)
        for s in (self.samplesSpin, self.seedsSpin, self.seedSpin, self.evalGamesSpin, self.workersSpin):
            s.valueChanged.connect(self.update_plan)
        for c in (self.metricCombo, self.backendCombo):
            c.currentIndexChanged.connect(self.update_plan)
        return box

    # ------------------------------------------------------------------ the request
    def sweep_request(self) -> SweepRequest:
        """The sweep these inputs ask for (SweepError naming the knob or input at fault)."""
        cls = self.agent_cls.config_cls
        grid: dict[str, tuple[Any, ...]] = {}
        ranges: list[KnobRange] = []
        for row in self.rows.values():
            if row.mode == LIST:
                name, values = parse_grid(row.grid_text(), cls)
                grid[name] = values
            elif row.mode == RANGE:
                ranges.append(parse_range(row.range_text(), cls))
        b = self.base
        return SweepRequest(
            agent=b.agent,
            preset=b.preset,
            config=dict(b.config),
            rules=b.rules,
            budget=b.budget,
            grid=grid,
            ranges=tuple(ranges),
            samples=self.samplesSpin.value() if ranges else 0,
            seeds=self.seedsSpin.value(),
            seed=self.seedSpin.value(),
            metric=str(self.metricCombo.currentData()),
            workers=self.workersSpin.value(),
            backend=str(self.backendCombo.currentData()),
            eval_games=self.evalGamesSpin.value(),
            checkpoint_every_s=b.checkpoint_every_s,
        )

    def update_plan(self) -> None:
        """Re-plan on every edit (a few ms even for a thousand trials): the count, or why it cannot run."""
        self.samplesSpin.setEnabled(any(r.mode == RANGE for r in self.rows.values()))
        try:
            request = self.sweep_request()
            trials = plan_trials(request)
        except SweepError as e:
            self.request, self.problem = None, str(e)
            self.trialsLabel.setText("No sweep planned")
            self.errorLabel.setText(self.problem)
            self.errorLabel.show()
            self.startButton.setEnabled(False)
            return
        self.request, self.problem = request, None
        points = len(trials) // max(1, request.seeds)
        what = (
            plural(request.samples, "random point")
            if request.ranges
            else f"a grid of {plural(points, 'point')}"
        )
        self.trialsLabel.setText(
            f"{plural(len(trials), 'trial')} planned: {what}, {plural(request.seeds, 'seed')} each"
        )
        self.errorLabel.hide()
        self.startButton.setEnabled(True)

    def _accept(self) -> None:
        self.update_plan()
        if self.request is not None:
            self.accept()

    # ------------------------------------------------------------------ remembered inputs
    def state(self) -> dict[str, Any]:
        """Everything set in the dialog, as JSON-able data: the knobs' rows and the trial options."""
        return {
            "rows": {name: row.state() for name, row in self.rows.items()},
            "samples": self.samplesSpin.value(),
            "seeds": self.seedsSpin.value(),
            "seed": self.seedSpin.value(),
            "metric": self.metricCombo.currentData(),
            "eval_games": self.evalGamesSpin.value(),
            "workers": self.workersSpin.value(),
            "backend": self.backendCombo.currentData(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Put back a :meth:`state`; what it lacks or no longer fits (a knob gone) stays as it is."""
        rows = state.get("rows")
        for name, row_state in (rows if isinstance(rows, dict) else {}).items():
            if name in self.rows and isinstance(row_state, dict):
                self.rows[name].restore(row_state)
        spins = (
            ("samples", self.samplesSpin),
            ("seeds", self.seedsSpin),
            ("seed", self.seedSpin),
            ("eval_games", self.evalGamesSpin),
            ("workers", self.workersSpin),
        )
        for key, sp in spins:
            if isinstance(state.get(key), int):
                sp.setValue(state[key])
        for key, combo in (("metric", self.metricCombo), ("backend", self.backendCombo)):
            idx = combo.findData(state.get(key))
            if idx >= 0 and combo.model().flags(combo.model().index(idx, 0)) & Qt.ItemFlag.ItemIsEnabled:
                combo.setCurrentIndex(idx)

    def _memory_key(self) -> str:
        return MEMORY_KEY.format(agent=self.base.agent)

    def _remembered(self) -> dict[str, Any]:
        """What was set the last time the dialog closed for this agent ({}: nothing, or unreadable)."""
        parent = self.parent()
        if self.settings is not None:
            text = self.settings.value(self._memory_key(), "")
        else:
            kept = parent.property(MEMORY_PROPERTY) if parent is not None else None
            text = kept.get(self.base.agent, "") if isinstance(kept, dict) else ""
        try:
            state = json.loads(str(text)) if text else {}
        except ValueError:  # a hand-edited settings file: start from the form
            log.warning("cannot read the remembered sweep dialog of %s", self.base.agent, exc_info=True)
            return {}
        return state if isinstance(state, dict) else {}

    def remember(self) -> None:
        """Keep what was set here for the next opening: the trial options, and the knobs changed from
        how they opened (a knob left alone follows the form's value next time)."""
        state = self.state()
        opened = self._opened_with["rows"]
        state["rows"] = {name: row for name, row in state["rows"].items() if row != opened.get(name)}
        text = json.dumps(state)
        if self.settings is not None:
            self.settings.setValue(self._memory_key(), text)
            return
        parent = self.parent()
        if parent is not None:
            kept = parent.property(MEMORY_PROPERTY)
            kept = dict(kept) if isinstance(kept, dict) else {}
            kept[self.base.agent] = text
            parent.setProperty(MEMORY_PROPERTY, kept)

    def done(self, result: int) -> None:
        """Start, Cancel, Esc and the close box all end here: what was set is kept first."""
        self.remember()
        super().done(result)


def _with_suffix(w: QWidget, text: str) -> QHBoxLayout:
    row = QHBoxLayout()
    row.addWidget(w)
    row.addWidget(QLabel(text))
    row.addStretch(1)
    return row


def _budget_text(base: RunRequest) -> str:
    budget = (budget_words(base.budget) if base.budget is not None else "") or "no budget"
    preset = f" (preset {base.preset})" if base.preset else ""
    return (
        f"{budget}, with the form's settings{preset} and rules. To change them, close this dialog "
        "(what you set here is kept for the next time) and edit the form."
    )


# ====================================================================================== running


class SweepWorker(_Worker):
    """Drives one sweep (new or resumed) in a worker thread; ``sweepEvent(SweepEvent)`` in the GUI thread.

    The thread opens its own store connection: the driver writes the sweep's records while the GUI
    thread reads the same file through the tab's. ``stop()`` only sets an event (never waits).
    ``progress`` (:class:`~studio.services.sweep.SweepProgress`) is up to date when ``sweepEvent``
    is emitted.
    """

    sweepEvent = Signal(object)

    def __init__(
        self,
        data_dir: str | Path,
        request: SweepRequest | None = None,
        resume: int | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.data_dir = Path(data_dir)
        self.request = request
        self.resume = resume
        self.stop_event = threading.Event()
        self.progress = SweepProgress(sweep_id=resume)

    def _body(self, loop: _Loop) -> None:
        with open_data_dir(self.data_dir) as store:
            events = run_sweep(self.request, store, resume=self.resume, stop=self.stop_event)
            try:
                for ev in events:
                    loop.result.emit(ev)
            finally:
                events.close()  # type: ignore[attr-defined]  # a generator: stops its trials

    def _handle_result(self, value: object) -> None:
        ev: SweepEvent = value  # type: ignore[assignment]  # what _body emits
        self.progress.update(ev)
        self.sweepEvent.emit(ev)

    def stop(self) -> None:
        """Every trial stops after its current step and saves a checkpoint; the sweep ends ``stopped``."""
        self.stop_event.set()
        self.progress.stopping()


def ask_close_with_sweep(parent: QWidget, sweep_id: int | None, left: int) -> str:
    """Ask what to do with the running sweep as the window closes: "stop", "detach" (keep training
    without the window) or "cancel"."""
    box = QMessageBox(parent)
    box.setObjectName("closeSweepBox")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Sweep in progress")
    name = f"Sweep {sweep_id}" if sweep_id is not None else "A sweep"
    box.setText(f"{name} is running ({left} trial{'s' if left != 1 else ''} not finished).")
    box.setInformativeText(
        "Stop it now (every trial saves a checkpoint; Resume in the Sweeps panel continues it), or "
        "let it train on without the window (its trials save a checkpoint and go on at once in a "
        "process of their own; reopen the studio to see them)?"
    )
    stop = box.addButton("Stop and close", QMessageBox.ButtonRole.AcceptRole)
    detach = box.addButton("Keep training", QMessageBox.ButtonRole.DestructiveRole)
    detach.setEnabled(sweep_id is not None)  # not planned yet: nothing to hand over
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    clicked = box.clickedButton()
    return "stop" if clicked is stop else "detach" if clicked is detach else "cancel"


def sweep_log_path(data_dir: str | Path, sweep_id: int) -> Path:
    """Where a sweep handed over to a headless process writes what the CLI prints."""
    return Path(data_dir) / "logs" / f"sweep-{sweep_id}.log"


def continue_headless(data_dir: str | Path, sweep_id: int) -> subprocess.Popen[bytes]:
    """Continue stopped sweep ``sweep_id`` in a process of its own that outlives the window:
    ``python main.py --data-dir DIR sweep --resume ID`` in a new session (the window's Ctrl-C and
    its process group are not its), its output in :func:`sweep_log_path`.

    The window's sweep driver is a thread of the window's process, so it cannot go on without it;
    the window stops it first (every trial saves a checkpoint), and the new process resumes every
    unfinished trial from its checkpoint, as ``sweep --resume`` does in a terminal.
    """
    root = Path(__file__).resolve().parents[3]
    log = sweep_log_path(data_dir, sweep_id)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                str(root / "main.py"),
                "--data-dir",
                str(data_dir),
                "sweep",
                "--resume",
                str(sweep_id),
            ],
            cwd=str(root),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


# ====================================================================================== the panel


class SweepPanel(QWidget):
    """One stored sweep at a time: its ranking, a scatter of its metric against a knob, its actions.

    Signals: ``sweepSelected(int)`` (the combo picked a sweep: the tab ticks its runs),
    ``applyBest(str, dict)`` (agent, the best point's whole config), ``resumeSweep(int)``,
    ``stopSweep()``, ``ranked()`` (the table and the scatter show a new ranking), ``status(str)``.
    """

    sweepSelected = Signal(int)
    applyBest = Signal(str, dict)
    resumeSweep = Signal(int)
    stopSweep = Signal()
    ranked = Signal()
    status = Signal(str)

    def __init__(self, store: GameStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sweepPanel")
        self.store = store
        self.data_dir = Path(store.path).parent
        self.sweep_id: int | None = None
        self.info: SweepInfo | None = None
        self.metric_name = ""
        self.points: list[PointResult] = []
        self.knobs: list[str] = []
        self.log_knobs: set[str] = set()
        #: the sweep this window runs now (its Resume is off, its Stop on)
        self.running_id: int | None = None
        self._ranker: CallWorker | None = None
        self._rank_again = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._build_head())
        layout.addWidget(self.summaryLabel)
        #: why the shown sweep failed or stopped (every trial failed: the first one's reason), in red
        self.failureLabel = error_label("sweepFailure")
        self.failureLabel.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.failureLabel)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self._build_table())
        split.addWidget(self._build_scatter())
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setSizes([500, 400])  # the ranking's columns before the plot's width
        self.split = split
        layout.addWidget(split, 1)
        self._timer = QTimer(self)
        self._timer.setInterval(RANK_EVERY_MS)
        self._timer.timeout.connect(self.rank)
        self._update_buttons()

    def _build_head(self) -> QHBoxLayout:
        """The sweep picker and the actions (the summary line under them is made here too)."""
        self.sweepCombo = QComboBox()
        self.sweepCombo.setObjectName("sweepCombo")
        self.sweepCombo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.sweepCombo.setToolTip(
            "Sweeps of the store, newest first: pick one to rank it and compare its runs"
        )
        self.sweepCombo.currentIndexChanged.connect(self._on_combo)
        self.summaryLabel = label("sweepSummary", style=NOTE_STYLE)
        self.summaryLabel.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.applyBestButton = button(
            "Apply best",
            "applyBestButton",
            self.apply_best,
            "Load the best point's settings into the form (the sweep's base settings and its knob values)",
        )
        self.resumeSweepButton = button(
            "Resume", "resumeSweepButton", self._resume, "Continue this stopped sweep's unfinished trials"
        )
        self.stopSweepButton = button(
            "Stop", "stopSweepButton", self.stopSweep.emit, "Stop the sweep: every trial saves a checkpoint"
        )
        actions = (self.applyBestButton, self.resumeSweepButton, self.stopSweepButton)
        return titled_row("Sweep", *actions, beside=[self.sweepCombo])

    def _build_table(self) -> QTableWidget:
        self.rankTable = QTableWidget(0, 0)
        self.rankTable.setObjectName("rankTable")
        self.rankTable.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.rankTable.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.rankTable.verticalHeader().hide()
        self.rankTable.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.rankTable.horizontalHeader().setStretchLastSection(True)
        return self.rankTable

    def _build_scatter(self) -> QWidget:
        """The metric against a knob: a dot a trial, a line through the points' means."""
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        xrow = QHBoxLayout()
        self.metricLabel = QLabel()
        self.metricLabel.setObjectName("sweepMetricLabel")
        xrow.addWidget(self.metricLabel)
        xrow.addStretch(1)
        xrow.addWidget(QLabel("against"))
        self.knobCombo = QComboBox()
        self.knobCombo.setObjectName("knobCombo")
        self.knobCombo.setToolTip("The knob on the scatter's x axis")
        self.knobCombo.currentIndexChanged.connect(self.draw_scatter)
        xrow.addWidget(self.knobCombo)
        rl.addLayout(xrow)
        self.plot = pg.PlotWidget(axisItems={"left": GridAxis("left"), "bottom": GridAxis("bottom")})
        self.plot.setObjectName("sweepScatter")
        self.plot.setMinimumSize(200, 120)
        show_grid(self.plot, x=True, y=True, alpha=0.15)
        self.plot.getPlotItem().hideButtons()
        self.plot.getPlotItem().getViewBox().setDefaultPadding(0.06)  # edge dots whole
        self.scatter = pg.ScatterPlotItem(
            size=7, pen=pg.mkPen(None), brush=pg.mkBrush(DOT_COLOUR + "b0"), hoverable=True
        )
        self.means = pg.PlotDataItem(
            pen=pg.mkPen(MEAN_COLOUR, width=1.5),
            symbol="o",
            symbolSize=11,
            symbolBrush=pg.mkBrush(MEAN_COLOUR + "60"),
            symbolPen=pg.mkPen(MEAN_COLOUR, width=1.5),
        )
        self.plot.addItem(self.means)
        self.plot.addItem(self.scatter)
        rl.addWidget(self.plot, 1)
        return right

    # ------------------------------------------------------------------ the sweeps
    def refresh_sweeps(self, select: int | None = None) -> None:
        """Re-read the store's sweeps into the combo; pick ``select`` (else keep the current one)."""
        try:
            sweeps = self.store.list_sweeps()
        except (sqlite3.Error, ValueError) as e:  # a broken store: say so, keep the tab alive
            log.warning("cannot list sweeps", exc_info=True)
            self.status.emit(f"cannot list sweeps: {e}")
            return
        keep = select if select is not None else self.sweep_id
        combo = self.sweepCombo
        combo.blockSignals(True)
        combo.clear()
        for s in sweeps:
            knobs = ", ".join(swept_knobs(s.spec))
            combo.addItem(f"{s.id} · {s.agent} · {knobs} · {s.status} {s.n_finished}/{s.n_trials}", s.id)
        idx = combo.findData(keep) if keep is not None else (0 if sweeps else -1)
        combo.setCurrentIndex(idx if idx >= 0 else (0 if sweeps else -1))
        combo.blockSignals(False)
        new = combo.currentData()
        if new != self.sweep_id or select is not None:
            self.show_sweep(None if new is None else int(new))
        else:
            self._update_buttons()

    def _on_combo(self, *_: Any) -> None:
        sid = self.sweepCombo.currentData()
        self.show_sweep(None if sid is None else int(sid))
        if sid is not None:
            self.sweepSelected.emit(int(sid))

    def show_sweep(self, sweep_id: int | None) -> None:
        """Show sweep ``sweep_id`` (None: none): rank it in the background."""
        self.sweep_id = sweep_id
        if sweep_id is None:
            self.info, self.points = None, []
            self._fill()
            return
        if self.sweepCombo.currentData() != sweep_id:
            self.sweepCombo.blockSignals(True)
            self.sweepCombo.setCurrentIndex(self.sweepCombo.findData(sweep_id))
            self.sweepCombo.blockSignals(False)
        self.rank()

    def set_running(self, sweep_id: int | None) -> None:
        """The sweep this window runs now (None: none); re-ranked every few seconds while it runs."""
        self.running_id = sweep_id
        if sweep_id is None:
            self._timer.stop()
        else:
            self._timer.start()
        self._update_buttons()

    # ------------------------------------------------------------------ ranking (in a worker thread)
    def rank(self) -> None:
        """Re-rank the shown sweep from the store, off the GUI thread (one ranking at a time)."""
        if self.sweep_id is None:
            return
        if self._ranker is not None:
            self._rank_again = True  # the one under way may have read the store before the news
            return
        sweep_id, data_dir = self.sweep_id, self.data_dir

        def job(_report: Any) -> tuple[int, SweepInfo, str, list[PointResult]]:
            with open_data_dir(data_dir) as store:
                info = store.get_sweep(sweep_id)
                metric, points = rank_sweep(store, sweep_id)
            return sweep_id, info, metric, points

        worker = CallWorker(job, self)
        worker.result.connect(self._on_ranked)
        worker.error.connect(lambda msg: self.status.emit(f"cannot rank sweep {sweep_id}: {msg}"))
        worker.finished.connect(self._on_rank_finished)
        self._ranker = worker
        worker.start()

    def _on_rank_finished(self) -> None:
        if self._ranker is not None:
            self._ranker.deleteLater()
        self._ranker = None
        if self._rank_again:
            self._rank_again = False
            self.rank()

    def _on_ranked(self, value: object) -> None:
        assert isinstance(value, tuple)
        sweep_id: int = value[0]
        info, metric, points = value[1], str(value[2]), list(value[3])
        if sweep_id != self.sweep_id:
            return  # another sweep was picked meanwhile
        self.info, self.metric_name, self.points = info, metric, points
        self._fill()
        self.ranked.emit()

    def wait_ranked(self, timeout_ms: int = 10_000) -> bool:
        """Block until no ranking is under way (tests and screenshots)."""
        import time

        from PySide6.QtWidgets import QApplication

        # A ranking that finishes may start the next one (news came in while it read the store): wait
        # for the last, not just the one under way now.
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            w = self._ranker
            if w is not None:
                w.wait(max(1, int((deadline - time.monotonic()) * 1000)))
            QApplication.processEvents()
            QApplication.processEvents()
            if self._ranker is None and not self._rank_again:
                return True
            if time.monotonic() >= deadline:
                return False

    # ------------------------------------------------------------------ showing the ranking
    def _fill(self) -> None:
        info = self.info
        spec = info.spec if info is not None else {}
        self.knobs = swept_knobs(spec) or list(dict.fromkeys(k for p in self.points for k in p.params))
        self.log_knobs = {r["name"] for r in spec.get("ranges", []) if r.get("log")}
        for name, values in spec.get("grid", {}).items():
            nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            # A grid spread over decades (1e-4, 1e-3, 1e-2) reads on a log axis, as a log range does.
            if len(nums) == len(values) > 1 and min(nums) > 0 and max(nums) / min(nums) >= 20:
                self.log_knobs.add(name)
        self._fill_table()
        current = self.knobCombo.currentData()
        self.knobCombo.blockSignals(True)
        self.knobCombo.clear()
        for k in self.knobs:
            self.knobCombo.addItem(k, k)
        self.knobCombo.setCurrentIndex(max(0, self.knobCombo.findData(current)))
        self.knobCombo.blockSignals(False)
        self.draw_scatter()
        if info is not None:
            seeds = int(spec.get("seeds", 1))
            self.summaryLabel.setText(
                f"{spec.get('search', 'grid')} search, {info.status}, {info.n_finished}/{info.n_trials} "
                f"{'trial' if info.n_trials == 1 else 'trials'} · {plural(seeds, 'seed')} per point · "
                f"ranked by {self.metric_name}"
            )
            self.summaryLabel.setToolTip(info.error or "")
            why = info.error if info.status in ("failed", "stopped") else None
            self.failureLabel.setText(f"Sweep {info.id} {info.status}: {why}" if why else "")
            self.failureLabel.setVisible(bool(why))
            self.metricLabel.setText(f"{self.metric_name} per trial (dots) and per point (line)")
        else:
            self.summaryLabel.setText("No sweep yet: Sweep… beside Start plans one")
            self.metricLabel.setText("")
            self.failureLabel.hide()
        self._update_buttons()

    def _fill_table(self) -> None:
        t = self.rankTable
        headers = [
            "Rank",
            *self.knobs,
            f"{self.metric_name or 'metric'} mean ± std",
            "Per seed",
            "Trials",
            "Runs",
        ]
        t.setColumnCount(len(headers))
        t.setHorizontalHeaderLabels(headers)
        t.setRowCount(len(self.points))
        n = len(self.knobs)
        for row, p in enumerate(self.points):
            mean = _num(p.mean) + ("" if p.std is None else f" ± {_num(p.std)}")
            statuses = [s or "planned" for s in p.statuses]
            done = sum(s in ("finished", "failed") for s in statuses)
            trials = (
                f"{done}/{len(statuses)} done" if done < len(statuses) else ", ".join(sorted(set(statuses)))
            )
            cells = [
                "-" if p.rank is None else str(p.rank),
                *(knob_text(p.params.get(k)) for k in self.knobs),
                mean if p.mean is not None else "-",
                " ".join(_num(v) for v in p.values),
                trials,
                ", ".join("-" if r is None else str(r) for r in p.run_ids),
            ]
            for col, text in enumerate(cells):
                item = t.item(row, col)
                if item is None:
                    item = QTableWidgetItem()
                    t.setItem(row, col, item)
                item.setText(text)
                right = col == 0 or n < col <= n + 1
                align = Qt.AlignmentFlag.AlignRight if right else Qt.AlignmentFlag.AlignLeft
                item.setTextAlignment(align | Qt.AlignmentFlag.AlignVCenter)
                item.setToolTip(
                    "\n".join(
                        f"trial {tr}: run {r if r is not None else '-'}, {s}"
                        for tr, r, s in zip(p.trials, p.run_ids, statuses, strict=True)
                    )
                )
                if p.rank == 1:
                    f = item.font()
                    f.setBold(True)
                    item.setFont(f)

    def best(self) -> PointResult | None:
        return next((p for p in self.points if p.rank == 1), None)

    def run_ids(self) -> list[int]:
        """The runs of the shown sweep's trials (those started)."""
        return [r for p in self.points for r in p.run_ids if r is not None]

    # ------------------------------------------------------------------ the scatter
    def _x_of(self, knob: str, values: Sequence[Any]) -> tuple[np.ndarray, list[tuple[float, str]] | None]:
        """x positions of ``values`` of ``knob``: log10 for a log knob (the axis labels powers of ten),
        the value for a number, the index among the sweep's values (with their names as ticks) else."""
        nums = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        if nums:
            x = np.array([float(v) for v in values])
            if knob in self.log_knobs and (x > 0).all():
                return np.log10(x), None
            return x, None
        names = list(dict.fromkeys(knob_text(v) for v in values))
        return np.array([float(names.index(knob_text(v))) for v in values]), [
            (float(i), n) for i, n in enumerate(names)
        ]

    def draw_scatter(self, *_: Any) -> None:
        knob = self.knobCombo.currentData()
        self.scatter.clear()
        self.means.setData([], [])
        axis = self.plot.getAxis("bottom")
        axis.setTicks(None)
        axis.setLogMode(False)
        if not knob or not self.points:
            self.plot.setLabel("bottom", "")
            return
        dots = [(p.params.get(knob), v) for p in self.points for v in p.values if v is not None]
        means = sorted(
            ((p.params.get(knob), p.mean) for p in self.points if p.mean is not None),
            key=lambda kv: kv[0] if isinstance(kv[0], int | float) else str(kv[0]),
        )
        all_x = [k for k, _ in dots] + [k for k, _ in means]
        if not all_x:
            self.plot.setLabel("bottom", knob)
            return
        xs, ticks = self._x_of(knob, all_x)
        nd = len(dots)
        self.scatter.setData(x=xs[:nd], y=np.array([v for _, v in dots], dtype=float), data=list(range(nd)))
        self.means.setData(xs[nd:], np.array([m for _, m in means], dtype=float))
        log_axis = knob in self.log_knobs and ticks is None
        spec = self.info.spec if self.info is not None else {}
        grid = spec.get("grid", {}).get(knob)
        if ticks is None and grid and knob not in {r["name"] for r in spec.get("ranges", [])}:
            # A grid's own values are the ticks: no crowded minor labels between 0.03 and 0.1.
            pos, _names = self._x_of(knob, list(grid))
            ticks = [(float(x), knob_text(v)) for x, v in zip(pos, grid, strict=True)]
        else:
            axis.setLogMode(log_axis)  # ticks read 10^x of the log10 positions
        if ticks is not None:
            axis.setTicks([ticks])
        self.plot.setLabel("bottom", knob + (" (log scale)" if log_axis else ""))
        self.plot.setLabel("left", self.metric_name)
        self.plot.getPlotItem().enableAutoRange()

    # ------------------------------------------------------------------ actions
    def apply_best(self) -> None:
        """The best point's knob values over the sweep's base settings, to the form."""
        best = self.best()
        if best is None or self.info is None:
            return
        config = {**dict(self.info.spec.get("config") or {}), **best.params}
        self.applyBest.emit(str(self.info.agent), config)

    def _resume(self) -> None:
        if self.sweep_id is not None:
            self.resumeSweep.emit(self.sweep_id)

    def _update_buttons(self) -> None:
        running_here = self.running_id is not None
        status = getattr(self.info, "status", None)
        self.applyBestButton.setEnabled(self.best() is not None)
        self.resumeSweepButton.setEnabled(
            self.sweep_id is not None and not running_here and status in ("stopped", "failed", "running")
        )
        self.stopSweepButton.setEnabled(running_here)
