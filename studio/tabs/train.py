"""The Train tab: pick an agent, fill its generated form, press Start, watch it learn.

The learning itself is ``agents.runner`` (a recorded :class:`~agents.runner.TrainingRun` around
``agent.train``) iterated by a :class:`studio.worker.TrainingWorker` in its own thread; this tab only
builds the inputs (agent, config, rules, budget), shows the events (curves, progress, a live board)
and lists the runs of the store (re-open, compare, resume, export, hand a checkpoint to Play / Arena).

The worker opens its own store connection: the GUI's connection stays free for the runs list, and
SQLite's WAL lets the GUI read a run's metrics while the worker appends to them.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from agents.base import Agent, Budget, Control, MetricEvent, TrainContext
from agents.config import ConfigError
from engine import Rules
from studio.widgets.config_form import ConfigForm
from studio.widgets.curves import CurvesPanel, RunSeries
from studio.worker import TrainingWorker

#: The agent "Train from my games" selects, and the config it fills in.
IMITATION_AGENT = "imitation"
IMITATION_FROM_HUMANS = {"source": "human"}
#: Periodic checkpoints of GUI runs (pause, stop and the end always save one too).
CHECKPOINT_EVERY_S = 120.0
#: Live board and stats refresh (the board is a glance, not a movie).
BOARD_REFRESH_MS = 250
#: Runs list refresh while training (episodes and status of the live run).
RUNS_REFRESH_MS = 2000
RUN_COLUMNS = ("Run", "Agent", "Status", "Episodes", "Steps", "Time", "Last score", "Started")


def format_duration(seconds: float) -> str:
    if not np.isfinite(seconds) or seconds < 0:
        return "--:--"
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def write_metrics_csv(columns: dict[str, np.ndarray], path: str | Path) -> Path:
    """A run's metric columns (``GameStore.run_metrics``) as CSV: one row per event, empty where NaN."""
    path = Path(path)
    names = list(columns)
    n = len(next(iter(columns.values()))) if columns else 0
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for start in range(0, n, 10_000):
            chunk = [columns[k][start : start + 10_000] for k in names]
            for row in zip(*chunk):
                w.writerow(["" if isinstance(v, float) and v != v else _cell(v) for v in row])
    return path


def _cell(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.10g}"
    return str(v.item() if isinstance(v, np.generic) else v)


@dataclass
class _Job:
    """What the worker thread shares with the GUI about the run it drives (plain attribute writes)."""

    agent: str
    started: float = field(default_factory=time.perf_counter)
    run_id: int | None = None
    run: Any = None  # the TrainingRun, once made
    resumed_from: int | None = None
    last_progress: float = 0.0
    episodes: int = 0
    best_score: float = float("-inf")
    last_score: float | None = None
    speed: float | None = None
    announced: bool = False  # runStarted emitted


class TrainTab(QWidget):
    """Train any registered agent from a generated form, with live curves and the store's runs.

    Signals: ``status(str)`` (status bar), ``gamesChanged()`` (training games were logged),
    ``useInPlay(agent, checkpoint)`` / ``useInArena(agent, checkpoint)`` (the window routes them),
    ``runStarted(run_id)``, ``trainingFinished(status)`` ("finished" / "stopped" / "failed").
    """

    status = Signal(str)
    gamesChanged = Signal()
    useInPlay = Signal(str, str)
    useInArena = Signal(str, str)
    runStarted = Signal(int)
    trainingFinished = Signal(str)

    def __init__(self, store: Any, settings: QSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("trainTab")
        self.store = store
        self.settings = settings
        self.worker: TrainingWorker | None = None
        self.job: _Job | None = None
        self.agent_cls: type[Agent] | None = None
        self.error_box: QMessageBox | None = None
        self._board_dirty = False
        self._runs_dirty = True
        self._build()
        self._board_timer = QTimer(self)
        self._board_timer.setInterval(BOARD_REFRESH_MS)
        self._board_timer.timeout.connect(self._refresh_live)
        self._runs_timer = QTimer(self)
        self._runs_timer.setInterval(RUNS_REFRESH_MS)
        self._runs_timer.timeout.connect(self.refresh_runs)
        # Closing the window while training must ask first: watch the top-level window's close.
        if parent is not None:
            parent.window().installEventFilter(self)
        self._fill_agents()
        self._update_buttons()

    # ================================================================== building
    def _build(self) -> None:
        from studio.widgets.board import BoardWidget

        outer = QHBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(splitter)

        # ---- left: what to train
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        inputs = QWidget()
        form_layout = QVBoxLayout(inputs)
        form_layout.setContentsMargins(0, 0, 6, 0)

        agent_box = QGroupBox("Agent")
        ab = QVBoxLayout(agent_box)
        self.agentCombo = QComboBox()
        self.agentCombo.setObjectName("agentCombo")
        self.agentCombo.setToolTip("Every registered agent (agents/registry.py)")
        self.agentCombo.currentIndexChanged.connect(self._on_agent_changed)
        ab.addWidget(self.agentCombo)
        self.agentDescription = QLabel()
        self.agentDescription.setObjectName("agentDescription")
        self.agentDescription.setWordWrap(True)
        self.agentDescription.setStyleSheet("color: #6b625a;")
        ab.addWidget(self.agentDescription)
        self.fromGamesButton = QPushButton("Train from my games")
        self.fromGamesButton.setObjectName("fromGamesButton")
        self.fromGamesButton.setToolTip("Imitation learning on the games you played (source = human)")
        self.fromGamesButton.clicked.connect(self.train_from_my_games)
        ab.addWidget(self.fromGamesButton)
        form_layout.addWidget(agent_box)

        settings_box = QGroupBox("Settings")
        sb = QVBoxLayout(settings_box)
        self.form = ConfigForm()
        self.form.validityChanged.connect(lambda _ok: self._update_buttons())
        self.form.presetLoaded.connect(self._apply_preset_extras)
        sb.addWidget(self.form)
        form_layout.addWidget(settings_box)

        rules_box = QGroupBox("Rules")
        rl = QFormLayout(rules_box)
        self.rowsSpin = self._spin("rowsSpin", 1, 16, 4, "Board rows")
        self.colsSpin = self._spin("colsSpin", 1, 16, 4, "Board columns")
        self.p4Spin = QDoubleSpinBox()
        self.p4Spin.setObjectName("p4Spin")
        self.p4Spin.setRange(0.0, 1.0)
        self.p4Spin.setSingleStep(0.05)
        self.p4Spin.setDecimals(3)
        self.p4Spin.setValue(0.1)
        self.p4Spin.setToolTip("Probability that a spawned tile is a 4")
        self.startTilesSpin = self._spin("startTilesSpin", 0, 256, 2, "Tiles on a new board")
        self.spawnSpin = self._spin("spawnSpin", 0, 255, 1, "Tiles spawned after each move")
        rows_cols = QHBoxLayout()
        rows_cols.addWidget(self.rowsSpin)
        rows_cols.addWidget(QLabel("×"))
        rows_cols.addWidget(self.colsSpin)
        rl.addRow("Board", rows_cols)
        rl.addRow("P(4)", self.p4Spin)
        rl.addRow("Start tiles", self.startTilesSpin)
        rl.addRow("Spawn per move", self.spawnSpin)
        self.rulesError = QLabel()
        self.rulesError.setObjectName("rulesError")
        self.rulesError.setWordWrap(True)
        self.rulesError.setStyleSheet("color: #c62828;")
        self.rulesError.hide()
        rl.addRow(self.rulesError)
        for w in (self.rowsSpin, self.colsSpin, self.startTilesSpin, self.spawnSpin):
            w.valueChanged.connect(self._check_rules)
        self.p4Spin.valueChanged.connect(self._check_rules)
        form_layout.addWidget(rules_box)

        budget_box = QGroupBox("Budget")
        bl = QFormLayout(budget_box)
        self.episodesRadio = QRadioButton("Episodes")
        self.episodesRadio.setObjectName("episodesRadio")
        self.minutesRadio = QRadioButton("Minutes")
        self.minutesRadio.setObjectName("minutesRadio")
        group = QButtonGroup(self)
        group.addButton(self.episodesRadio)
        group.addButton(self.minutesRadio)
        self.episodesRadio.setChecked(True)
        self.episodesSpin = self._spin("episodesSpin", 1, 100_000_000, 1000, "Games (or epochs) to train")
        self.minutesSpin = QDoubleSpinBox()
        self.minutesSpin.setObjectName("minutesSpin")
        self.minutesSpin.setRange(0.05, 100_000.0)
        self.minutesSpin.setDecimals(2)
        self.minutesSpin.setValue(10.0)
        self.minutesSpin.setToolTip("Wall-clock minutes of training")
        bl.addRow(self.episodesRadio, self.episodesSpin)
        bl.addRow(self.minutesRadio, self.minutesSpin)
        self.seedSpin = self._spin("seedSpin", -1, 2**31 - 1, -1, "Seed of the agent (random: a fresh one)")
        self.seedSpin.setSpecialValueText("random")
        bl.addRow("Seed", self.seedSpin)
        self.episodesRadio.toggled.connect(self._sync_budget_inputs)
        self._sync_budget_inputs()
        form_layout.addWidget(budget_box)
        form_layout.addStretch(1)
        scroll.setWidget(inputs)
        left_layout.addWidget(scroll, 1)

        buttons = QHBoxLayout()
        self.startButton = QPushButton("Start")
        self.startButton.setObjectName("startButton")
        self.startButton.setToolTip("Train with these settings (a new run)")
        self.startButton.clicked.connect(self.start)
        self.pauseButton = QPushButton("Pause")
        self.pauseButton.setObjectName("pauseButton")
        self.pauseButton.setToolTip("Pause / resume (a paused run saves a checkpoint)")
        self.pauseButton.clicked.connect(self.toggle_pause)
        self.stopButton = QPushButton("Stop")
        self.stopButton.setObjectName("stopButton")
        self.stopButton.setToolTip("End the run cleanly, with a final checkpoint")
        self.stopButton.clicked.connect(self.stop_training)
        for b in (self.startButton, self.pauseButton, self.stopButton):
            buttons.addWidget(b)
        left_layout.addLayout(buttons)
        self.progressBar = QProgressBar()
        self.progressBar.setObjectName("progressBar")
        self.progressBar.setRange(0, 1000)
        self.progressBar.setValue(0)
        self.progressBar.setFormat("%p%")
        left_layout.addWidget(self.progressBar)
        self.etaLabel = QLabel("Idle")
        self.etaLabel.setObjectName("etaLabel")
        self.etaLabel.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)  # see statsLabel
        left_layout.addWidget(self.etaLabel)
        left.setMinimumWidth(300)
        splitter.addWidget(left)

        # ---- right: curves + live board, runs below
        right = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        tl = QHBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        self.curves = CurvesPanel()
        tl.addWidget(self.curves, 1)
        live = QVBoxLayout()
        self.liveBoard = BoardWidget(interactive=False)
        self.liveBoard.setObjectName("liveBoard")
        self.liveBoard.animation_ms = 0
        self.liveBoard.setMinimumSize(140, 140)
        self.liveBoard.setMaximumSize(200, 200)
        self.liveBoard.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.liveBoard.resize(170, 170)
        live.addWidget(QLabel("Being played now"))
        live.addWidget(self.liveBoard)
        self.statsLabel = QLabel("")
        self.statsLabel.setObjectName("statsLabel")
        # A fixed size: its text changes a few times a second, and a label that resizes with its text
        # makes the whole tab lay itself out (and the plots repaint) every time.
        self.statsLabel.setFixedSize(170, 110)
        self.statsLabel.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        live.addWidget(self.statsLabel)
        live.addStretch(1)
        tl.addLayout(live)
        right.addWidget(top)

        runs = QWidget()
        rl2 = QVBoxLayout(runs)
        rl2.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(QLabel("<b>Runs</b>"))
        head.addStretch(1)
        self.showRunsButton = self._button(
            "Show / compare",
            "showRunsButton",
            self.show_selected_runs,
            "Draw the selected runs' curves (several: overlaid)",
        )
        self.resumeButton = self._button(
            "Resume",
            "resumeButton",
            self.resume_selected,
            "Continue the selected run from its last checkpoint",
        )
        self.useInPlayButton = self._button(
            "Use in Play",
            "useInPlayButton",
            self.use_selected_in_play,
            "Hint / watch with the run's last checkpoint",
        )
        self.useInArenaButton = self._button(
            "Use in Arena",
            "useInArenaButton",
            self.use_selected_in_arena,
            "Evaluate the run's last checkpoint",
        )
        self.exportButton = self._button(
            "Export CSV…", "exportButton", self.export_selected, "Save the selected run's metrics as CSV"
        )
        for b in (
            self.showRunsButton,
            self.resumeButton,
            self.useInPlayButton,
            self.useInArenaButton,
            self.exportButton,
        ):
            head.addWidget(b)
        rl2.addLayout(head)
        self.runsTable = QTableWidget(0, len(RUN_COLUMNS))
        self.runsTable.setObjectName("runsTable")
        self.runsTable.setHorizontalHeaderLabels(list(RUN_COLUMNS))
        self.runsTable.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.runsTable.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.runsTable.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.runsTable.verticalHeader().hide()
        self.runsTable.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.runsTable.horizontalHeader().setStretchLastSection(True)
        self.runsTable.itemSelectionChanged.connect(self._update_buttons)
        self.runsTable.itemDoubleClicked.connect(lambda _item: self.show_selected_runs())
        rl2.addWidget(self.runsTable)
        right.addWidget(runs)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 1)
        right.setSizes([560, 190])  # room for a few runs under the curves
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([340, 900])

    def _spin(self, name: str, low: int, high: int, value: int, tip: str) -> QSpinBox:
        s = QSpinBox()
        s.setObjectName(name)
        s.setRange(low, high)
        s.setValue(value)
        s.setToolTip(tip)
        return s

    def _button(self, text: str, name: str, slot: Any, tip: str) -> QPushButton:
        b = QPushButton(text)
        b.setObjectName(name)
        b.setToolTip(tip)
        b.clicked.connect(slot)
        return b

    # ================================================================== agent, form, rules, budget
    def _fill_agents(self) -> None:
        from agents.registry import agent_names

        names = agent_names()
        self.agentCombo.blockSignals(True)
        self.agentCombo.clear()
        for name in names:
            self.agentCombo.addItem(name, name)
        last = str(self.settings.value("train/agent", "")) if self.settings is not None else ""
        idx = self.agentCombo.findData(last) if last else -1
        if idx < 0:
            idx = self.agentCombo.findData("dqn")
        self.agentCombo.setCurrentIndex(max(0, idx))
        self.agentCombo.blockSignals(False)
        # The agent's class (and its form) is loaded when the tab is first shown: importing a learner
        # may import torch, seconds that the window's start should not wait for.

    @property
    def agent_name(self) -> str:
        return str(self.agentCombo.currentData() or "")

    def select_agent(self, name: str) -> None:
        """Choose ``name`` in the agent picker (KeyError when it is not registered)."""
        idx = self.agentCombo.findData(name)
        if idx < 0:
            raise KeyError(name)
        if idx == self.agentCombo.currentIndex():
            self._on_agent_changed()
        else:
            self.agentCombo.setCurrentIndex(idx)

    def _on_agent_changed(self, *_: Any) -> None:
        from agents.registry import get_agent_class

        name = self.agent_name
        if not name:
            return
        try:
            cls = get_agent_class(name)
        except Exception as e:  # a broken agent module must not take the tab down
            self.agent_cls = None
            self.agentDescription.setText(f"<span style='color:#c62828'>cannot load {name}: {e}</span>")
            self._update_buttons()
            return
        self.agent_cls = cls
        text = cls.description or ""
        if not cls.trainable:
            text += " <i>(does not learn: use it in Play or Arena)</i>"
        self.agentDescription.setText(text)
        self.form.set_config_class(cls.config_cls, agent=name)
        self.curves.set_agent_metrics(cls.loss_metrics, cls.schedule_metrics)
        if self.settings is not None:
            self.settings.setValue("train/agent", name)
        self._check_rules()
        self._update_buttons()

    def rules(self) -> Rules:
        """The rules of the Rules box (ValueError with the reason when they make no game)."""
        return Rules(
            rows=self.rowsSpin.value(),
            cols=self.colsSpin.value(),
            p4=round(self.p4Spin.value(), 6),
            start_tiles=self.startTilesSpin.value(),
            spawn_per_move=self.spawnSpin.value(),
        )

    def set_rules(self, rules: Rules | dict[str, Any]) -> None:
        r = Rules.from_dict(rules) if isinstance(rules, dict) else rules
        self.rowsSpin.setValue(r.rows)
        self.colsSpin.setValue(r.cols)
        self.p4Spin.setValue(r.p4)
        self.startTilesSpin.setValue(r.start_tiles)
        self.spawnSpin.setValue(r.spawn_per_move)

    def _rules_problem(self) -> str | None:
        try:
            rules = self.rules()
        except ValueError as e:
            return str(e)
        if self.agent_cls is not None:
            return self.agent_cls.unsupported_reason(rules)
        return None

    def _check_rules(self, *_: Any) -> None:
        problem = self._rules_problem()
        self.rulesError.setText(problem or "")
        self.rulesError.setVisible(bool(problem))
        self._update_buttons()

    def budget(self) -> Budget:
        if self.episodesRadio.isChecked():
            return Budget(episodes=self.episodesSpin.value())
        return Budget(seconds=self.minutesSpin.value() * 60.0)

    def set_budget(self, *, episodes: int | None = None, minutes: float | None = None) -> None:
        if episodes is not None:
            self.episodesSpin.setValue(int(episodes))
            self.episodesRadio.setChecked(True)
        elif minutes is not None:
            self.minutesSpin.setValue(float(minutes))
            self.minutesRadio.setChecked(True)

    def _sync_budget_inputs(self, *_: Any) -> None:
        self.episodesSpin.setEnabled(self.episodesRadio.isChecked() and not self.is_training)
        self.minutesSpin.setEnabled(self.minutesRadio.isChecked() and not self.is_training)

    def _apply_preset_extras(self, preset: dict) -> None:
        """A preset may carry rules and a budget besides the config: apply them too."""
        if isinstance(preset.get("rules"), dict):
            try:
                self.set_rules(Rules.from_dict({**Rules().to_dict(), **preset["rules"]}))
            except ValueError as e:
                self.status.emit(f"preset rules ignored: {e}")
        budget = preset.get("budget") or {}
        if budget.get("episodes"):
            self.set_budget(episodes=int(budget["episodes"]))
        elif budget.get("seconds"):
            self.set_budget(minutes=float(budget["seconds"]) / 60.0)
        self.status.emit(f"preset loaded: {preset.get('description', '')[:120]}")

    def train_from_my_games(self) -> None:
        """Select the imitation agent, set it to learn from the human games of the store."""
        try:
            self.select_agent(IMITATION_AGENT)
        except KeyError:
            self._show_error("Train from my games", "The imitation agent is not registered in this build.")
            return
        if self.agent_cls is None:
            return
        self.form.set_values(
            {
                k: v
                for k, v in IMITATION_FROM_HUMANS.items()
                if k in {s.name for s in self.agent_cls.config_cls.specs()}
            }
        )
        n = 0
        try:
            n = int(self.store.count_games(source="human"))
        except Exception:  # the count is informative only
            n = -1
        if n == 0:
            self.status.emit("No human games in the store yet: play some in the Play tab first")
            self.etaLabel.setText("No human games yet: play a few in Play first.")
        elif n > 0:
            self.status.emit(f"Imitation will learn from your {n} games")
            self.etaLabel.setText(f"Ready: imitation of your {n} games.")

    # ================================================================== training
    @property
    def is_training(self) -> bool:
        return self.worker is not None and not self.worker.done

    @property
    def is_paused(self) -> bool:
        return self.is_training and self.worker is not None and self.worker.paused

    def start(self) -> bool:
        """Start a new run with the form's settings; False (and the reason shown) when it cannot."""
        if self.is_training:
            return False
        if self.agent_cls is None:
            self._on_agent_changed()
        if self.agent_cls is None:
            self._show_error("Cannot start", f"Agent {self.agent_name!r} could not be loaded.")
            return False
        if not self.agent_cls.trainable:
            self._show_error("Cannot start", f"{self.agent_name} does not learn: there is nothing to train.")
            return False
        try:
            config = self.form.config()
        except ConfigError as e:
            self.status.emit(f"fix {e.field}: {e.reason}")
            self.etaLabel.setText(f"Fix {e.field}: {e.reason}")
            return False
        problem = self._rules_problem()
        if problem:
            self.etaLabel.setText(problem)
            return False
        rules, budget = self.rules(), self.budget()
        seed = self.seedSpin.value() if self.seedSpin.value() >= 0 else None
        name, config_dict = self.agent_name, config.to_dict()
        db_path = self.store.path
        job = _Job(agent=name)

        def factory(control: Control) -> Iterator[MetricEvent]:
            from agents.registry import create_agent
            from agents.runner import run_training
            from engine.store import GameStore

            store = GameStore(db_path)  # this thread's own connection
            try:
                agent = create_agent(name, config_dict, rules, seed)
                context = TrainContext(data_dir=Path(db_path).parent)
                run = run_training(
                    agent, budget, store, control, context, checkpoint_every_s=CHECKPOINT_EVERY_S
                )
                job.run, job.run_id = run, run.run_id
                yield from run
            finally:
                store.close()

        self._launch(job, factory, RunSeries(f"{name} (live)"))
        return True

    def resume(self, run_id: int) -> bool:
        """Continue run ``run_id`` from its last checkpoint (what is left of its budget, else the Budget box's)."""
        if self.is_training:
            return False
        try:
            summary = self.store.get_run(run_id)
            checkpoint = self.store.last_checkpoint(run_id)
        except Exception as e:
            self._show_error("Cannot resume", str(e))
            return False
        if checkpoint is None:
            self._show_error("Cannot resume", f"Run {run_id} saved no checkpoint, so it cannot be resumed.")
            return False
        if summary.status in ("running", "paused"):
            self._show_error(
                "Cannot resume", f"Run {run_id} is {summary.status} elsewhere: stop it there first."
            )
            return False
        fallback = self.budget()
        db_path = self.store.path
        job = _Job(agent=summary.agent, resumed_from=run_id)

        def factory(control: Control) -> Iterator[MetricEvent]:
            from agents.runner import resume_run
            from engine.store import GameStore

            store = GameStore(db_path)
            try:
                context = TrainContext(data_dir=Path(db_path).parent)
                try:
                    run = resume_run(
                        run_id, store, None, control, context, checkpoint_every_s=CHECKPOINT_EVERY_S
                    )
                except ValueError as e:
                    if "whole budget" not in str(e):
                        raise
                    # The run used its budget: go on with the Budget box's.
                    run = resume_run(
                        run_id, store, fallback, control, context, checkpoint_every_s=CHECKPOINT_EVERY_S
                    )
                job.run, job.run_id = run, run.run_id
                yield from run
            finally:
                store.close()

        series = RunSeries(f"run {run_id} (live)")
        with contextlib.suppress(Exception):
            series.add_columns(self.store.run_metrics(run_id))  # the curves go on from where they were
        with contextlib.suppress(KeyError):
            self.select_agent(summary.agent)
        self._launch(job, factory, series)
        return True

    def _launch(self, job: _Job, factory: Any, series: RunSeries) -> None:
        from agents.registry import get_agent_class

        try:
            cls = get_agent_class(job.agent)
            series_metrics = (cls.loss_metrics, cls.schedule_metrics)
        except Exception:
            series_metrics = (self.curves.loss_metrics, self.curves.schedule_metrics)
        # The live run first (first colour), the runs shown before stay as overlays to compare with.
        self.curves.runs = [("live", series)] + [(k, r) for k, r in self.curves.runs if k != "live"]
        self.curves.set_agent_metrics(*series_metrics)  # rebuilds the curves
        self.job = job
        if self.worker is not None:
            self.worker.deleteLater()  # the previous run's (finished) worker
        self.worker = TrainingWorker(factory, parent=self)
        self.worker.batch.connect(self._on_batch)
        self.worker.error.connect(self._on_error)
        self.worker.finished.connect(self._on_finished)
        self.worker.start()
        self._board_timer.start()
        self._runs_timer.start()
        self.progressBar.setValue(0)
        self.etaLabel.setText("Starting…")
        self.statsLabel.setText("")
        self.status.emit(f"training {job.agent}…")
        self._update_buttons()

    def toggle_pause(self) -> None:
        if not self.is_training or self.worker is None:
            return
        if self.worker.paused:
            self.resume_training()
        else:
            self.pause()

    def pause(self) -> None:
        if self.is_training and self.worker is not None and not self.worker.paused:
            self.worker.pause()
            self.etaLabel.setText("Paused (checkpoint saved)")
            self.status.emit("training paused")
            self._update_buttons()

    def resume_training(self) -> None:
        if self.is_training and self.worker is not None and self.worker.paused:
            self.worker.resume()
            self.status.emit("training resumed")
            self._update_buttons()

    def stop_training(self) -> None:
        """End the run cleanly: the agent returns between steps, the runner saves a final checkpoint."""
        if self.is_training and self.worker is not None:
            self.worker.stop()
            self.etaLabel.setText("Stopping (saving a checkpoint)…")
            self._update_buttons()

    def wait_finished(self, timeout_s: float = 60.0) -> bool:
        """Block (GUI events still processed) until the worker ended; True when it did."""
        from PySide6.QtWidgets import QApplication

        deadline = time.monotonic() + timeout_s
        while self.is_training and time.monotonic() < deadline:
            if self.worker is not None and self.worker.wait(50):
                QApplication.processEvents()
                break
            QApplication.processEvents()
        QApplication.processEvents()
        return not self.is_training

    def shutdown(self) -> None:
        """The window is closing: stop a run cleanly (its final checkpoint is kept) and wait for it."""
        if self.is_training:
            self.stop_training()
            self.wait_finished(120.0)
        self._board_timer.stop()
        self._runs_timer.stop()
        self.curves.timer.stop()

    # ---------------------------------------------------------------- events from the worker
    def _on_batch(self, events: list[MetricEvent]) -> None:
        job = self.job
        if job is None:
            return
        self.curves.add_events(events)
        for ev in events:
            score = ev.metrics.get("score")
            if ev.kind == "episode" and score is not None:
                job.last_score = score
                job.best_score = max(job.best_score, score)
            sp = ev.metrics.get("steps_per_s")
            if sp is not None:
                job.speed = sp
        last = events[-1]
        job.episodes = last.episode
        job.last_progress = last.progress
        self._board_dirty = True
        self._announce_run()

    def _announce_run(self) -> None:
        """Once the worker has created the run in the store: list it and say so (``runStarted``)."""
        job = self.job
        if job is not None and job.run_id is not None and not job.announced:
            job.announced = True
            self.runStarted.emit(job.run_id)
            self.refresh_runs()

    def _refresh_live(self) -> None:
        """Timer slot: live board, stats, progress and ETA (a few times a second, not per event)."""
        self._announce_run()  # an agent may take a while before its first event (compiling kernels)
        job = self.job
        if job is None or not self._board_dirty:
            return
        self._board_dirty = False
        live = self.curves.live
        if live is not None and live.last_board is not None:
            self.liveBoard.set_board(live.last_board)
        p = job.last_progress
        self.progressBar.setValue(round(1000 * p))
        wall = time.perf_counter() - job.started
        if self.is_paused:
            self.etaLabel.setText("Paused (checkpoint saved)")
        elif p > 0:
            self.etaLabel.setText(
                f"{format_duration(wall)} elapsed · ETA {format_duration(wall * (1 - p) / p)}"
            )
        parts = [f"Episode {job.episodes:,}"]
        if job.last_score is not None:
            parts.append(f"Last score {job.last_score:,.0f}")
            parts.append(f"Best score {job.best_score:,.0f}")
        if job.speed is not None:
            parts.append(f"{job.speed:,.0f} moves/s")
        if job.run_id is not None:
            parts.append(f"Run {job.run_id}")
        self.statsLabel.setText("\n".join(parts))

    def _on_error(self, message: str) -> None:
        job = self.job
        # The runner marks its run failed before re-raising; make sure of it in case it died earlier.
        if job is not None and job.run_id is not None:
            try:
                if self.store.get_run(job.run_id).status in ("running", "paused"):
                    self.store.set_run_status(job.run_id, "failed", message)
            except Exception:
                pass
        detail = self.worker.traceback if self.worker is not None else ""
        self._show_error("Training failed", message, detail)
        self.status.emit(f"training failed: {message}")

    def _on_finished(self) -> None:
        job = self.job
        self._announce_run()
        self._refresh_live()
        self._board_timer.stop()
        self._runs_timer.stop()
        self.curves.mark_dirty()
        self.curves.redraw()
        final = "failed" if (self.worker is not None and self.worker.error_message) else "finished"
        run = job.run if job is not None else None
        if run is not None:
            final = run.status
        text = {"finished": "Finished", "stopped": "Stopped", "failed": "Failed"}.get(
            final, final.capitalize()
        )
        if run is not None and run.last_checkpoint is not None and final != "failed":
            text += f" · checkpoint {Path(run.last_checkpoint).name}"
            if final == "finished":
                self.progressBar.setValue(1000)
        self.etaLabel.setText(text)
        self.status.emit(f"training {final}")
        games_logged: int = getattr(run, "games_logged", 0) if run is not None else 0
        if games_logged:
            self.gamesChanged.emit()
        self.refresh_runs()
        self._update_buttons()
        self.trainingFinished.emit(final)

    # ================================================================== runs list
    def refresh_runs(self) -> None:
        """Re-read the runs of the store (keeps the selection)."""
        try:
            runs = self.store.list_runs()
        except Exception as e:  # a closed or broken store: say so, keep the tab alive
            self.status.emit(f"cannot list runs: {e}")
            return
        selected = set(self.selected_run_ids())
        table = self.runsTable
        table.setSortingEnabled(False)
        table.setRowCount(len(runs))
        for row, r in enumerate(runs):
            score = r.last_metrics.get("score")
            started = _dt.datetime.fromtimestamp(r.created).strftime("%Y-%m-%d %H:%M")
            cells = (
                str(r.id),
                r.agent,
                r.status + (f": {r.error}" if r.error and r.status == "failed" else ""),
                f"{r.episodes:,}",
                f"{r.steps:,}",
                format_duration(r.elapsed),
                "" if score is None else f"{score:,.0f}",
                started,
            )
            for col, text in enumerate(cells):
                item = table.item(row, col)
                if item is None:
                    item = QTableWidgetItem()
                    table.setItem(row, col, item)
                item.setText(text)
                item.setData(Qt.ItemDataRole.UserRole, r.id)
                if col == 2 and r.error:
                    item.setToolTip(r.error)
        table.clearSelection()
        mode = table.selectionMode()
        table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for row, r in enumerate(runs):
            if r.id in selected:
                table.selectRow(row)
        table.setSelectionMode(mode)
        self._update_buttons()

    def selected_run_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.runsTable.selectedIndexes()})
        out = []
        for row in rows:
            item = self.runsTable.item(row, 0)
            if item is not None:
                out.append(int(item.data(Qt.ItemDataRole.UserRole)))
        return out

    def select_runs(self, ids: Sequence[int]) -> None:
        table = self.runsTable
        table.clearSelection()
        mode = table.selectionMode()
        table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for row in range(table.rowCount()):
            item = table.item(row, 0)
            if item is not None and int(item.data(Qt.ItemDataRole.UserRole)) in ids:
                table.selectRow(row)
        table.setSelectionMode(mode)
        self._update_buttons()

    def show_runs(self, run_ids: Sequence[int]) -> None:
        """Draw these stored runs (beside the live one while training): one re-opens, several compare."""
        from agents.registry import get_agent_class

        keep = [(k, r) for k, r in self.curves.runs if k == "live" and self.is_training]
        loaded: list[tuple[object, RunSeries]] = []
        metrics: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        for rid in run_ids:
            if keep and self.job is not None and rid == self.job.run_id:
                continue  # already drawn live
            try:
                summary = self.store.get_run(rid)
                cols = self.store.run_metrics(rid)
            except Exception as e:
                self.status.emit(f"cannot read run {rid}: {e}")
                continue
            series = RunSeries(f"run {rid} {summary.agent}")
            series.add_columns(cols)
            loaded.append((rid, series))
            if metrics is None:
                try:
                    cls = get_agent_class(summary.agent)
                    metrics = (cls.loss_metrics, cls.schedule_metrics)
                except Exception:
                    pass
        self.curves.runs = keep + loaded
        if metrics is not None and not keep:
            self.curves.set_agent_metrics(*metrics)
        else:
            self.curves.set_agent_metrics(self.curves.loss_metrics, self.curves.schedule_metrics)

    def show_selected_runs(self) -> None:
        ids = self.selected_run_ids()
        if ids:
            self.show_runs(ids)

    def resume_selected(self) -> None:
        ids = self.selected_run_ids()
        if len(ids) == 1:
            self.resume(ids[0])

    def _checkpoint_of(self, run_id: int) -> tuple[str, str] | None:
        try:
            summary = self.store.get_run(run_id)
            path = self.store.last_checkpoint(run_id)
        except Exception as e:
            self._show_error("No checkpoint", str(e))
            return None
        if path is None or not Path(path).exists():
            self._show_error("No checkpoint", f"Run {run_id} has no checkpoint file to use.")
            return None
        return summary.agent, str(path)

    def use_in_play(self, run_id: int) -> bool:
        found = self._checkpoint_of(run_id)
        if found is not None:
            self.useInPlay.emit(*found)
        return found is not None

    def use_in_arena(self, run_id: int) -> bool:
        found = self._checkpoint_of(run_id)
        if found is not None:
            self.useInArena.emit(*found)
        return found is not None

    def use_selected_in_play(self) -> None:
        ids = self.selected_run_ids()
        if len(ids) == 1:
            self.use_in_play(ids[0])

    def use_selected_in_arena(self) -> None:
        for rid in self.selected_run_ids():
            self.use_in_arena(rid)

    def export_csv(self, run_id: int, path: str | Path) -> Path:
        """Write run ``run_id``'s metrics to ``path`` as CSV."""
        out = write_metrics_csv(self.store.run_metrics(run_id), path)
        self.status.emit(f"run {run_id} metrics saved to {out}")
        return out

    def export_selected(self) -> None:
        ids = self.selected_run_ids()
        if len(ids) != 1:
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export run metrics", f"run-{ids[0]}-metrics.csv", "CSV files (*.csv)"
        )
        if path:
            try:
                self.export_csv(ids[0], path)
            except Exception as e:
                self._show_error("Export failed", str(e))

    # ================================================================== state, dialogs
    def _update_buttons(self) -> None:
        training = self.is_training
        paused = self.is_paused
        trainable = bool(self.agent_cls is not None and self.agent_cls.trainable)
        can_start = not training and trainable and self.form.is_valid() and self._rules_problem() is None
        self.startButton.setEnabled(can_start)
        self.pauseButton.setEnabled(
            training and not (self.worker is not None and self.worker.control.stopped)
        )
        self.pauseButton.setText("Resume" if paused else "Pause")
        self.stopButton.setEnabled(training and not (self.worker is not None and self.worker.control.stopped))
        for w in (
            self.agentCombo,
            self.form,
            self.fromGamesButton,
            self.rowsSpin,
            self.colsSpin,
            self.p4Spin,
            self.startTilesSpin,
            self.spawnSpin,
            self.episodesRadio,
            self.minutesRadio,
            self.seedSpin,
        ):
            w.setEnabled(not training)
        self._sync_budget_inputs()
        n_sel = len(self.selected_run_ids())
        self.showRunsButton.setEnabled(n_sel >= 1)
        self.resumeButton.setEnabled(n_sel == 1 and not training)
        self.useInPlayButton.setEnabled(n_sel == 1)
        self.useInArenaButton.setEnabled(n_sel >= 1)
        self.exportButton.setEnabled(n_sel == 1)

    def _show_error(self, title: str, text: str, detail: str = "") -> None:
        """A non-blocking error box (the app and its event loop go on)."""
        if self.error_box is not None:
            self.error_box.close()
        box = QMessageBox(QMessageBox.Icon.Critical, title, text, QMessageBox.StandardButton.Ok, self)
        box.setObjectName("trainErrorBox")
        if detail:
            box.setDetailedText(detail)
        self.error_box = box
        box.open()

    def ask(self, title: str, text: str) -> bool:
        """A yes/no question (tests replace this)."""
        answer = QMessageBox.question(
            self,
            title,
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def confirm_close(self) -> bool:
        """True when the window may close: asks while training, then stops the run and waits for its
        final checkpoint."""
        if not self.is_training:
            return True
        if not self.ask(
            "Training in progress",
            "A run is training. Stop it and close? Its last checkpoint is kept, and it can be "
            "resumed from the Runs list.",
        ):
            return False
        self.shutdown()
        return True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        closing = event.type() == QEvent.Type.Close and watched is self.window() and self.is_training
        if closing and not self.confirm_close():
            event.ignore()
            return True
        return super().eventFilter(watched, event)

    def mark_dirty(self) -> None:
        self._runs_dirty = True

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self.agent_cls is None and not self.form.config_cls:
            self._on_agent_changed()
        if self._runs_dirty:
            self._runs_dirty = False
            self.refresh_runs()
