"""The Train tab: pick an agent, fill its form, press Start, watch it learn; several runs at once.

Three parts, each in its own module: the launch form (:mod:`.launch`, gathers a RunRequest), the live
curves (:class:`studio.widgets.curves.CurvesPanel`) with the board being played, and the runs table
(:mod:`.runs`). This module wires them to the run workers: :class:`TrainTab` lays the tab out and
routes, :class:`RunsHere` drives the runs training from this window, :class:`TabSweeps` the window's
sweep, :class:`FastEngine` the kernels compiled ahead. What the views share about the runs (shown,
training here or elsewhere, ticked, selected, their rows by named column) is one Qt-free model,
:class:`studio.services.runs_model.RunsModel`, whose typed changes the views follow.

Every run trains in a child process (:class:`studio.worker.RunWorker` over
:mod:`studio.services.training_process`) that makes the same ``open_run`` call as ``python main.py
train``, so no learner can starve the window, and several runs train side by side, each with its own
pause / stop / checkpoint-now. The GUI thread's work is bounded whatever the learners emit: event
batches only append to the curves' buffers, the curves redraw on their own timer, and the board, the
progress line and the live rows of the runs table refresh a few times a second.

Sweeps (:mod:`.sweep`): "Sweep…" beside Start opens a dialog that varies knobs of the form; the sweep's
driver runs in a worker thread, its trials in child processes like any run. Closing the window during
a sweep offers "Keep training" as for a run: the driver stops (each trial saves a checkpoint) and
``sweep --resume`` goes on in a process of its own (:func:`.sweep.continue_headless`). The Sweeps page beside the
runs table ranks a sweep's points, plots its metric against a knob and applies the best point to the
form; picking a sweep ticks its trials' runs, so the curves compare them (live ones are followed).
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTabBar,
    QVBoxLayout,
    QWidget,
)

from agents.runner import RunError
from studio.services import messages
from studio.services.runs import RunRequest, mark_failed, write_metrics_csv
from studio.services.runs_model import FOLLOW, RunsChange, RunsModel, SelectionChanged
from studio.services.sweep import SweepEvent, SweepPlanned, SweepRequest, TrialDone, TrialStarted
from studio.tabs.common import ask_close_with_runs, button, error_box, panes
from studio.tabs.train.follow import Follower
from studio.tabs.train.launch import LaunchForm
from studio.tabs.train.live import LivePanel, LiveRun
from studio.tabs.train.runs import RunsPanel
from studio.tabs.train.sweep import (
    SweepDialog,
    SweepPanel,
    SweepWorker,
    ask_close_with_sweep,
    continue_headless,
)
from studio.text import duration
from studio.widgets.curves import RunSeries
from studio.worker import RunWorker

if TYPE_CHECKING:
    from engine.store import GameStore

__all__ = ["TrainTab", "write_metrics_csv"]

log = logging.getLogger(__name__)

#: Live board, stats, progress and the live rows of the runs table (a glance, not a movie).
LIVE_REFRESH_MS = 250
#: How often the rows of runs training in other processes are read again from the store (their
#: child writes its counters there within about a second).
ELSEWHERE_REFRESH_MS = 1000
#: The board's caption while a sweep trains and no run of the form does.
SWEEP_CAPTION = "Sweep trials play in their own processes: their curves are drawn, not their boards"
#: The status bar while the jitted learners' kernels are compiled ahead (the window's start), and after.
PREPARING_TEXT = "Preparing the fast engine… (compiling the n-tuple kernels, once)"
PREPARED_TEXT = "Fast engine ready"
#: Seconds before "Preparing" is said: kernels already in numba's cache load in about that long,
#: and a start that needs nothing compiled says nothing.
PREPARE_QUIET_S = 3.0
#: How often the preparing child is looked at, and the status bar's message said again (it fades).
PREPARE_POLL_MS = 1000
PREPARE_REPEAT_S = 5.0
#: The tab's keys (studio.app's Help > Keyboard shortcuts lists them): none is used by the Play tab
#: (arrows, WASD, H, Space, .) or the menus (Ctrl+N / I / E / Q, Ctrl+1..5, F1, F11).
SHORTCUTS: tuple[tuple[str, str], ...] = (
    ("Ctrl+Return", "startButton"),
    ("Ctrl+Enter", "startButton"),
    ("Ctrl+P", "pauseButton"),
    ("Ctrl+.", "stopButton"),
)


def eta_text(run: LiveRun) -> str:
    """The progress line of a run: "0:19 trained · 1:41 left" (the run's own clock, see eta_seconds)."""
    return f"{duration(run.trained_s)} trained · {duration(run.eta_s(), '…')} left"


class PageTabs(QWidget):
    """Pages under a tab bar, without QTabWidget's frame: the runs table's buttons already set the
    pane's minimum width, and a frame's few pixels more would come off the launch form's width."""

    currentChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.bar = QTabBar()
        self.bar.setDocumentMode(True)
        self.bar.setExpanding(False)
        self.pages = QStackedWidget()
        layout.addWidget(self.bar)
        layout.addWidget(self.pages, 1)
        self.bar.currentChanged.connect(self.pages.setCurrentIndex)
        self.bar.currentChanged.connect(self.currentChanged)

    def addTab(self, page: QWidget, title: str) -> None:
        self.pages.addWidget(page)
        self.bar.addTab(title)

    def widget(self, index: int) -> QWidget | None:
        return self.pages.widget(index)

    def currentWidget(self) -> QWidget | None:
        return self.pages.currentWidget()

    def setCurrentWidget(self, page: QWidget) -> None:
        self.bar.setCurrentIndex(self.pages.indexOf(page))


class FastEngine(QObject):
    """The jitted learners' kernels, compiled (or loaded) ahead in a child process at the window's
    start; ``status`` says so while it takes longer than a cache load."""

    status = Signal(str)

    def __init__(self, tab: QWidget) -> None:
        super().__init__(tab)
        self.tab = tab
        self.preparing: subprocess.Popen[bytes] | None = None
        self._prepare_t0 = 0.0
        self._prepare_said = 0.0  # when "Preparing" was last said (0: not yet)
        self.timer = QTimer(self)
        self.timer.setInterval(PREPARE_POLL_MS)
        self.timer.timeout.connect(self._poll)

    def start(self) -> bool:
        """At the window's start: compile (or load) the jitted learners' kernels in a child process,
        so the first n-tuple run and the first hint do not wait for numba (~30 s and ~22 s cold).
        The status bar says so while it takes longer than a cache load. False when already started."""
        from studio.services.training_process import start_prepare

        if self.preparing is not None:
            return False
        try:
            self.preparing = start_prepare()
        except OSError:  # no child process here: each run compiles its own, outside its budget
            log.warning("cannot start preparing the fast engine", exc_info=True)
            return False
        self._prepare_t0, self._prepare_said = time.monotonic(), 0.0
        self.timer.start()
        return True

    def _poll(self) -> None:
        """Timer slot: say "Preparing…" while the child compiles (again as it fades), "ready" at its end."""
        child = self.preparing
        if child is None:
            self.timer.stop()
            return
        now = time.monotonic()
        if child.poll() is None:
            if now - self._prepare_t0 >= PREPARE_QUIET_S and now - self._prepare_said >= PREPARE_REPEAT_S:
                bar = getattr(self.tab.window(), "statusBar", None)
                shown = bar().currentMessage() if callable(bar) else ""
                if shown in ("", PREPARING_TEXT):  # never over another message
                    self.status.emit(PREPARING_TEXT)
                    self._prepare_said = now
            return
        self.timer.stop()
        if child.returncode != 0:
            log.warning("preparing the fast engine ended with %s", child.returncode)
        if self._prepare_said:
            self.status.emit(
                PREPARED_TEXT if child.returncode == 0 else "The fast engine compiles on first use"
            )

    def shutdown(self) -> None:
        self.timer.stop()
        if self.preparing is not None and self.preparing.poll() is None:
            self.preparing.terminate()  # half a compile is lost; the next start compiles again


class TrainTab(QWidget):
    """Train any registered agent from a generated form, with live curves and the store's runs.

    Signals: ``status(str)`` (status bar), ``gamesChanged()`` (training games were logged),
    ``useInPlay(agent, checkpoint)`` / ``useInArena(agent, checkpoint)`` (the window routes them),
    ``runStarted(run_id)``, ``trainingFinished(status)`` ("finished" / "stopped" / "failed"),
    ``sweepFinished(status)`` (the window's sweep ended: "finished" / "stopped" / "failed").
    """

    status = Signal(str)
    gamesChanged = Signal()
    useInPlay = Signal(str, str)
    useInArena = Signal(str, str)
    runStarted = Signal(int)
    trainingFinished = Signal(str)
    sweepFinished = Signal(str)

    def __init__(
        self, store: GameStore, settings: QSettings | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("trainTab")
        self.store = store
        self.settings = settings
        self.here = RunsHere(self)
        self.error_box: QMessageBox | None = None
        self._runs_dirty = True
        self._selection_restored = False
        self.sweeps = TabSweeps(self)
        self._build()
        # Runs that train in other processes (a terminal's train, a run left to finish headless, a
        # sweep's trials): their rows are read again from the store while there are any.
        self._elsewhereTimer = QTimer(self)
        self._elsewhereTimer.setInterval(ELSEWHERE_REFRESH_MS)
        self._elsewhereTimer.timeout.connect(self._refresh_elsewhere)
        # The jitted learners' kernels, compiled ahead in a child process (prepare_fast_engine).
        self.fastEngine = FastEngine(self)
        self.fastEngine.status.connect(self.status)
        # Closing the window while training must ask first: watch the top-level window's close.
        if parent is not None:
            parent.window().installEventFilter(self)
        self._update_buttons()

    # ================================================================== building
    def _build(self) -> None:
        left = self._build_left()
        right = QSplitter(Qt.Orientation.Vertical)
        # One model of the runs; the curves, the runs table and its buttons are views of it.
        self.model = RunsModel()
        self.livePanel = LivePanel(settings=self.settings, model=self.model)
        self.curves = self.livePanel.curves
        self.liveBoard, self.statsLabel = self.livePanel.liveBoard, self.livePanel.statsLabel
        right.addWidget(self.livePanel)
        self.runsPanel = RunsPanel(self.store, model=self.model)
        self.follower = Follower(self.store, self.curves, self)
        self.model.subscribe(self._on_model_change)
        self.follower.ended.connect(self._on_followed_end)
        self.sweepPanel = SweepPanel(self.store)
        self._wire_panels()
        # The runs and the sweeps share the pane under the curves: a sweep's ranking needs the height.
        self.bottomTabs = PageTabs()
        self.bottomTabs.setObjectName("bottomTabs")
        self.bottomTabs.addTab(self.runsPanel, "Runs")
        self.bottomTabs.addTab(self.sweepPanel, "Sweeps")
        self.bottomTabs.currentChanged.connect(self._on_bottom_tab)
        right.addWidget(self.bottomTabs)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 1)
        right.setSizes([560, 190])  # room for a few runs under the curves
        self.rightSplit = right
        panes(self, left, right, left_width=420)

    def _build_left(self) -> QWidget:
        left = QWidget()
        layout = QVBoxLayout(left)
        layout.setContentsMargins(0, 0, 0, 0)
        # The form keeps the agent, preset and budget on screen and scrolls the rest itself; Start
        # and the progress line sit under it, always shown.
        self.launch = LaunchForm(self.settings, data_dir=Path(self.store.path).parent)
        self.launch.changed.connect(self._update_buttons)
        self.launch.agentChanged.connect(self._on_agent_changed)
        self.launch.fromMyGames.connect(self.train_from_my_games)
        self.launch.status.connect(self.status)
        layout.addWidget(self.launch, 1)
        row = QHBoxLayout()
        self.startButton = button("Start", "startButton", self.start, "Train with these settings (a new run)")
        self.pauseButton = button(
            "Pause",
            "pauseButton",
            self.here.toggle_pause,
            "Pause / resume this run (a paused run saves a checkpoint)",
        )
        self.stopButton = button(
            "Stop", "stopButton", self.here.stop_training, "End this run cleanly, with a final checkpoint"
        )
        self.sweepButton = button(
            "Sweep…",
            "sweepButton",
            self.sweeps.open_sweep_dialog,
            "Train these settings many times over lists or ranges of knobs, and rank the trials",
        )
        for b in (self.startButton, self.sweepButton, self.pauseButton, self.stopButton):
            row.addWidget(b)
        layout.addLayout(row)
        self._build_shortcuts()
        self.progressBar = QProgressBar()
        self.progressBar.setObjectName("progressBar")
        self.progressBar.setRange(0, 1000)
        self.progressBar.setFormat("%p%")
        layout.addWidget(self.progressBar)
        self.etaLabel = QLabel("Idle")
        self.etaLabel.setObjectName("etaLabel")
        self.etaLabel.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)  # see statsLabel
        layout.addWidget(self.etaLabel)
        left.setMinimumWidth(380)
        return left

    def _build_shortcuts(self) -> None:
        """Each key clicks its button (so it does nothing while the button is disabled), from anywhere
        in the tab while the tab is shown, also from a text field (none of them types a character)."""
        self.shortcuts: list[QShortcut] = []
        for keys, name in SHORTCUTS:
            b = getattr(self, name)
            sc = QShortcut(QKeySequence(keys), self)
            sc.setContext(Qt.ShortcutContext.WindowShortcut)
            sc.activated.connect(b.click)
            self.shortcuts.append(sc)
            if keys != "Ctrl+Enter":  # the keypad's twin of Ctrl+Return
                text = QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)
                b.setToolTip(f"{b.toolTip()} ({text})")

    def _wire_panels(self) -> None:
        """The runs' and the sweeps' panels ask the tab (their signal -> the tab's slot)."""
        p, s = self.runsPanel, self.sweepPanel
        wires = [
            (p.showRuns, self._show_ticked),
            (p.resumeRun, self.here.resume),
            (p.pauseRuns, self.here.pause_runs),
            (p.stopRuns, self.here.stop_runs),
            (p.checkpointRuns, self.here.checkpoint_runs),
            (p.useInPlay, self.useInPlay),
            (p.useInArena, self.useInArena),
            (s.sweepSelected, self.sweeps.show_sweep_runs),
            (s.applyBest, self.sweeps.apply_config),
            (s.resumeSweep, self.sweeps.resume_sweep),
            (s.stopSweep, self.sweeps.stop_sweep),
            (p.status, self.status),
            (s.status, self.status),
        ]
        for signal, slot in wires:
            signal.connect(slot)
        # The tests and the window's users know these by the tab's names.
        self.runsTable = p.runsTable
        for name in ("showRunsButton", "resumeButton", "useInPlayButton", "useInArenaButton", "exportButton"):
            setattr(self, name, getattr(p, name))
        self.selected_run_ids, self.select_runs = p.selected_run_ids, p.select_runs
        self.export_csv, self.use_in_play, self.use_in_arena = p.export_csv, p.use_in_play, p.use_in_arena

    # ================================================================== the launch form
    def _on_agent_changed(self, cls: Any) -> None:
        # A run selected in the table keeps its curves: the person picked another agent to set up a
        # new run, not to stop looking at that one (the panel read "No run yet").
        if not self.live and not self.runsPanel.selected_run_ids():
            # Nothing trains: the curves become this agent's panels, empty (no old agent's curves left
            # beside them); the compare ticks go with the runs they showed.
            self.model.show([])
            self.model.set_checked([])
            self.curves.set_agent(cls)
        self._update_buttons()

    def train_from_my_games(self) -> None:
        """Select the imitation agent, set it to learn from the person's moves in the store."""
        try:
            n = int(self.store.count_games(source="human"))
        except (sqlite3.Error, ValueError):  # the count is informative only
            log.warning("cannot count the person's games", exc_info=True)
            n = -1
        try:
            message = self.launch.prefill_imitation(n)
        except KeyError:
            self._show_error("Train from my games", "The imitation agent is not registered in this build.")
            return
        self.status.emit(message)
        self.etaLabel.setText(message)

    # ================================================================== the fast engine, ahead
    def prepare_fast_engine(self) -> bool:
        """Compile the jitted learners' kernels ahead (see :class:`FastEngine`)."""
        return self.fastEngine.start()

    @property
    def preparing(self) -> subprocess.Popen[bytes] | None:
        return self.fastEngine.preparing

    @property
    def _prepareTimer(self) -> QTimer:
        return self.fastEngine.timer

    # ================================================================== starting runs
    # The runs training from this window (RunsHere), by the names the tab's users know.
    @property
    def live(self) -> list[LiveRun]:
        return self.here.live

    @property
    def focus(self) -> LiveRun | None:
        """The run whose board, figures and progress line are shown."""
        return self.here.focus

    @property
    def form_run_starting(self) -> bool:
        return self.here.form_run_starting

    def start(self) -> bool:
        """Start a new run with the form's settings (beside any that train); False when it cannot."""
        return self.here.start()

    def _launch(
        self, request: RunRequest, series: RunSeries, anchor: tuple[float, float] | None = (0.0, 0.0)
    ) -> None:
        self.here.launch(request, series, anchor)

    def stop_training(self) -> None:
        """The Stop button: end the focused run cleanly."""
        self.here.stop_training()

    def stop_all(self) -> None:
        self.here.stop_all()

    def wait_finished(self, timeout_s: float = 60.0) -> bool:
        return self.here.wait_finished(timeout_s)

    def detach_all(self) -> None:
        self.here.detach_all()

    @property
    def is_training(self) -> bool:
        return bool(self.live)

    @property
    def is_paused(self) -> bool:
        return self.focus is not None and self.focus.worker.paused

    def _form_request(self, verb: str) -> RunRequest | None:
        """The run the form asks for; None after saying why it cannot ``verb`` (in the status bar and
        under Start)."""
        self.launch.ensure_loaded()
        try:
            return self.launch.request()
        except RunError as e:
            self.status.emit(f"cannot {verb}: {e}")
            self.etaLabel.setText(f"Fix {e.field}: {e}" if e.field else str(e))
            return None

    def shutdown(self) -> None:
        """The window is closing: stop runs cleanly (their final checkpoints are kept) and wait."""
        self.launch.save_state()  # the budget and the agent's settings come back next time
        self.fastEngine.shutdown()
        if self.live:
            self.stop_all()
            self.wait_finished(120.0)
        if self.sweep is not None:
            self.stop_sweep()
            self.wait_sweep(180.0)
        self.here.timer.stop()
        self._elsewhereTimer.stop()
        self.sweepPanel.set_running(None)
        self.follower.shutdown()
        self.curves.timer.stop()

    def _on_model_change(self, change: RunsChange) -> None:
        if isinstance(change, SelectionChanged):
            self._on_selection()

    def _on_selection(self) -> None:
        selected = list(self.model.selected)
        if selected:
            # A click on a run shows its curves (beside the ticked ones): the selection is what the
            # person looks at; it was drawn only on a double click, the panel saying "No run yet".
            self.show_runs(sorted(set(selected) | self.model.checked))
            if self.settings is not None:
                self.settings.setValue("train/selected_runs", ",".join(map(str, selected)))
        picked = self.here.live_of(selected)
        if picked and picked[0] is not self.here.focus:
            self.here.focus = picked[0]
            picked[0].dirty = True
            self.here.refresh()
        self._update_buttons()

    # ================================================================== stored runs
    def _on_followed_end(self, run_id: int, status: str) -> None:
        self.status.emit(f"run {run_id} {status}")
        self.refresh_runs()
        if run_id in self.sweeps.trial_runs:
            # A trial followed while it trained: from now on a stored run like the others (or it
            # would be drawn twice when its sweep's runs are shown again).
            self.model.remove((FOLLOW, run_id))
            if run_id in self.model.checked:
                self.show_runs(sorted(self.model.checked))
            self.curves.mark_dirty()

    def refresh_runs(self) -> None:
        """Re-read the runs table of the store (and which runs train in other processes)."""
        own = {lr.worker.process.pid for lr in self.live if lr.worker.process is not None}
        self.runsPanel.refresh(own)
        if self.model.elsewhere:
            self._elsewhereTimer.start()
        else:
            self._elsewhereTimer.stop()

    def _refresh_elsewhere(self) -> None:
        """Timer slot: the rows of runs training elsewhere; the whole table once one of them ended."""
        if self.runsPanel.refresh_elsewhere():
            self.refresh_runs()

    def _show_ticked(self, run_ids: Sequence[int]) -> None:
        """The runs table's ticks changed (or Show / compare): the ticked runs, and the selected ones
        still shown beside them (unticking another run must not take away the one looked at)."""
        self.show_runs(sorted(set(run_ids) | set(self.runsPanel.selected_run_ids())))

    def show_runs(self, run_ids: Sequence[int]) -> None:
        """Draw these stored runs beside the live ones: one re-opens, several compare; a run that
        trains elsewhere is followed (its new events drawn as they reach the store)."""
        live_ids = {lr.run_id for lr in self.live}
        elsewhere = self.model.elsewhere
        stored = [r for r in run_ids if r not in live_ids and r not in elsewhere]
        for problem in self.livePanel.show_stored(self.store, stored):
            self.status.emit(problem)
        for rid in run_ids:
            if rid in elsewhere and rid not in self.follower.followed:
                self.follower.follow(rid)

    # ================================================================== sweeps (TabSweeps)
    @property
    def sweep(self) -> SweepWorker | None:
        """The sweep this window drives now."""
        return self.sweeps.worker

    @property
    def sweepDialog(self) -> SweepDialog | None:
        return self.sweeps.dialog

    @property
    def headless(self) -> subprocess.Popen[bytes] | None:
        return self.sweeps.headless

    @property
    def is_sweeping(self) -> bool:
        return self.sweeps.worker is not None

    def stop_sweep(self) -> None:
        self.sweeps.stop_sweep()

    def wait_sweep(self, timeout_s: float = 120.0) -> bool:
        return self.sweeps.wait_sweep(timeout_s)

    def _on_bottom_tab(self, index: int) -> None:
        if self.bottomTabs.widget(index) is self.sweepPanel:
            sizes = self.rightSplit.sizes()
            total = sum(sizes)
            if total > 0 and sizes[1] < 0.38 * total:  # a ranking and a plot need more than a few rows
                self.rightSplit.setSizes([round(0.6 * total), total - round(0.6 * total)])
            self.sweepPanel.refresh_sweeps()

    # ================================================================== state, dialogs
    def _update_buttons(self) -> None:
        # The runs table's buttons read the live rows' states: bring them up to date first (they were
        # refreshed only with a run's next events, so Pause read "Pause" while paused, one state behind).
        for lr in self.live:
            if lr.run_id is not None:
                self.model.set_state(lr.run_id, lr.state_text())
        focus = self.focus
        # While the form's run starts, Start says so and waits: a second click would only start the
        # same run again. Once it trains, Start starts another one beside it.
        starting = self.form_run_starting
        self.startButton.setEnabled(self.launch.is_ready() and not starting)
        self.startButton.setText("Starting…" if starting else "Start")
        self.sweepButton.setEnabled(self.launch.is_ready() and self.sweep is None)
        active = focus is not None and not focus.worker.stopping
        self.pauseButton.setEnabled(active)
        self.pauseButton.setText("Resume" if focus is not None and focus.worker.paused else "Pause")
        self.stopButton.setEnabled(active)
        self.runsPanel.update_buttons()

    def _show_error(self, title: str, text: str, detail: str = "") -> None:
        if self.error_box is not None:
            self.error_box.close()
        self.error_box = error_box(self, title, text, detail, "trainErrorBox")

    def ask_close(self) -> str:
        """What to do with training runs when the window closes: "stop", "detach" or "cancel"
        (tests replace this)."""
        return ask_close_with_runs(self, len(self.live))

    def ask_close_sweep(self) -> str:
        """What to do with the window's sweep as the window closes: "stop", "detach" (keep training
        without the window) or "cancel" (tests replace this)."""
        w = self.sweep
        if w is None:
            return ask_close_with_sweep(self, None, 0)
        p = w.progress
        return ask_close_with_sweep(self, p.sweep_id, max(0, p.total - p.finished_trials))

    def confirm_close(self) -> bool:
        """True when the window may close: asks while training, then stops or detaches the runs and
        the sweep (the sweep is asked first: "Cancel" there leaves everything as it was)."""
        if not self.live and self.sweep is None:
            return True
        sweep_choice = self.ask_close_sweep() if self.sweep is not None else ""
        if sweep_choice == "cancel":
            return False
        if sweep_choice == "detach":
            self.sweeps.detach_sweep()
        if self.live:
            choice = self.ask_close()
            if choice == "cancel":
                return False
            if choice == "detach":
                self.detach_all()
        self.shutdown()
        return True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        busy = bool(self.live) or self.sweep is not None
        closing = event.type() == QEvent.Type.Close and watched is self.window() and busy
        if closing and not self.confirm_close():
            event.ignore()
            return True
        return super().eventFilter(watched, event)

    def mark_dirty(self) -> None:
        self._runs_dirty = True

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.launch.ensure_loaded()
        if self._runs_dirty:
            self._runs_dirty = False
            self.refresh_runs()
        if not self._selection_restored:
            # The run selected when the window last closed is selected (and drawn) again.
            self._selection_restored = True
            saved = str(self.settings.value("train/selected_runs", "") or "") if self.settings else ""
            ids = [int(x) for x in saved.split(",") if x.strip().isdigit()]
            if ids and not self.runsPanel.selected_run_ids():
                self.runsPanel.select_runs(ids)


class TabSweeps(QObject):
    """The Train tab's sweep (one at a time): its dialog, its driver in a worker thread, its trials'
    runs ticked in the runs table and followed, the progress line while no run of the form trains.
    Closing the window hands a sweep to a process of its own (``detach_sweep``)."""

    def __init__(self, tab: TrainTab) -> None:
        super().__init__(tab)
        self.tab = tab
        #: the sweep this window drives now, its dialog, and every run its trials made
        self.worker: SweepWorker | None = None
        self.dialog: SweepDialog | None = None
        self.trial_runs: set[int] = set()
        #: the process a sweep was handed to when the window closed ("Keep training"), if any
        self.headless: subprocess.Popen[bytes] | None = None

    def open_sweep_dialog(self) -> SweepDialog | None:
        """The Sweep dialog over the form's settings (None when the form cannot make a run)."""
        base = self.tab._form_request("sweep")
        if base is None:
            return None
        if self.dialog is not None:
            self.dialog.close()
            self.dialog.deleteLater()
        dialog = SweepDialog(self.tab.launch.agent_cls, base, self.tab)
        dialog.accepted.connect(lambda d=dialog: d.request is not None and self.start_sweep(d.request))
        self.dialog = dialog
        dialog.open()  # window-modal, and the event loop (and the runs training) go on
        return dialog

    def start_sweep(self, request: SweepRequest | None = None, *, resume: int | None = None) -> bool:
        """Run a sweep (``request``) or resume a stopped one (``resume``) in the background."""
        if self.worker is not None:
            self.tab.status.emit("a sweep is running already: stop it first")
            return False
        worker = SweepWorker(Path(self.tab.store.path).parent, request, resume, parent=self)
        worker.sweepEvent.connect(self._on_sweep_event)
        worker.error.connect(self._on_sweep_error)
        worker.finished.connect(self._on_sweep_finished)
        self.worker = worker
        worker.start()
        if not self.tab.live:
            # The trials play in their own processes: no board of theirs reaches this window, and a
            # run that ended before must not pass for one of them.
            self.tab.livePanel.show_idle(SWEEP_CAPTION)
        self.tab.bottomTabs.setCurrentWidget(self.tab.sweepPanel)
        self.tab.progressBar.setValue(0)
        self.tab.etaLabel.setText("Sweep starting…")
        self.tab.status.emit(f"sweep {resume} resuming…" if resume is not None else "sweep starting…")
        self.tab._update_buttons()
        return True

    def resume_sweep(self, sweep_id: int) -> bool:
        return self.start_sweep(resume=sweep_id)

    def stop_sweep(self) -> None:
        """Stop the window's sweep: every trial stops after its step and saves (Resume continues)."""
        if self.worker is not None:
            self.worker.stop()
            self.tab.etaLabel.setText("Stopping the sweep (each trial saves a checkpoint)…")
            self.tab._update_buttons()

    def show_sweep_runs(self, sweep_id: int) -> None:
        """Tick the sweep's trials' runs, so the curves compare them (live ones are followed)."""
        try:
            ids = [t.run_id for t in self.tab.store.sweep_trials(sweep_id) if t.run_id is not None]
        except (sqlite3.Error, ValueError) as e:  # a damaged store: said, and the tab goes on
            log.warning("cannot read sweep %s", sweep_id, exc_info=True)
            self.tab.status.emit(f"cannot read sweep {sweep_id}: {e}")
            return
        self.tab.model.set_checked(ids)
        self.tab.show_runs(ids)

    def apply_config(self, agent: str, config: dict) -> None:
        """Load ``config`` (a sweep's best point) into the form, choosing ``agent`` first."""
        if self.tab.launch.agent_name != agent:
            try:
                self.tab.launch.select_agent(agent)
            except KeyError:
                self.tab._show_error("Apply best", f"The agent {agent!r} is not registered in this build.")
                return
        known = set(self.tab.launch.form.values())
        self.tab.launch.form.set_values({k: v for k, v in config.items() if k in known})
        best = self.tab.sweepPanel.best()
        words = " ".join(f"{k}={v}" for k, v in (best.params if best is not None else {}).items())
        self.tab.status.emit(f"best point loaded into the form: {words}" if words else "settings loaded")
        self.tab._update_buttons()

    def _on_sweep_event(self, ev: SweepEvent) -> None:
        w = self.worker
        if w is None:
            return
        panel = self.tab.sweepPanel
        if isinstance(ev, SweepPlanned):
            panel.set_running(ev.sweep_id)
            panel.refresh_sweeps(select=ev.sweep_id)
            self.show_sweep_runs(ev.sweep_id)
        elif isinstance(ev, TrialStarted) and ev.run_id is not None:
            self.trial_runs.add(ev.run_id)
            self.tab.model.set_sweep_trial(ev.run_id, f"sweep {ev.sweep_id} #{ev.trial}")
            self.tab.refresh_runs()
            if panel.sweep_id == ev.sweep_id:
                self.tab.model.set_checked(sorted(self.tab.model.checked | {ev.run_id}))
                self.tab.show_runs(sorted(self.tab.model.checked))
            panel.rank()
        elif isinstance(ev, TrialDone):
            if ev.run_id is not None:
                self.tab.model.set_sweep_trial(ev.run_id, None)
            if ev.failure:
                self.tab.status.emit(f"sweep {ev.sweep_id}: {ev.failure}")
            self.tab.refresh_runs()
            panel.refresh_sweeps()
            panel.rank()
        if not self.tab.live:  # the progress line is the sweep's while no run of the form trains
            p = w.progress
            self.tab.progressBar.setValue(round(1000 * min(1.0, p.fraction)))
            if not w.stop_event.is_set():
                self.tab.etaLabel.setText(
                    f"Sweep {ev.sweep_id}: {p.finished_trials}/{p.total} trials done, {len(p.running)} training"
                )

    def _on_sweep_error(self, message: str) -> None:
        w = self.worker
        self.tab._show_error("Sweep failed", message, w.traceback if w is not None else "")
        self.tab.status.emit(f"sweep failed: {message}")

    def _on_sweep_finished(self) -> None:
        w = self.worker
        if w is None:
            return
        self.worker = None
        self.tab.model.clear_sweep_trials()
        status, sweep_id = w.progress.final_status, w.progress.sweep_id
        self.tab.sweepPanel.set_running(None)
        self.tab.sweepPanel.refresh_sweeps(select=sweep_id)
        self.tab.refresh_runs()
        if not self.tab.live:
            if status == "finished":
                self.tab.progressBar.setValue(1000)
            words = {"finished": "finished", "stopped": "stopped (Resume continues it)", "failed": "failed"}
            self.tab.etaLabel.setText(f"Sweep {sweep_id} {words[status]}")
        self.tab.status.emit(f"sweep {sweep_id} {status}")
        self.tab._update_buttons()
        w.deleteLater()
        self.tab.sweepFinished.emit(status)

    def wait_sweep(self, timeout_s: float = 120.0) -> bool:
        """Block (GUI events still processed) until the window's sweep ended; True when it did."""
        from PySide6.QtWidgets import QApplication

        deadline = time.monotonic() + timeout_s
        while self.worker is not None and time.monotonic() < deadline:
            QApplication.processEvents()
            time.sleep(0.01)
        QApplication.processEvents()
        return self.worker is None

    def detach_sweep(self) -> subprocess.Popen[bytes] | None:
        """Let the window's sweep train on without the window: its driver (a thread of this process)
        stops, every trial saving a checkpoint, and ``sweep --resume`` goes on in a process of its
        own (:func:`.sweep.continue_headless`). The new process, or None when there was nothing to
        hand over (the sweep ended meanwhile, or was never planned)."""
        w = self.worker
        if w is None:
            return None
        self.stop_sweep()
        self.wait_sweep(180.0)
        sweep_id = w.progress.sweep_id
        if sweep_id is None or w.progress.status == "finished":
            return None
        self.headless = continue_headless(Path(self.tab.store.path).parent, sweep_id)
        self.tab.status.emit(f"sweep {sweep_id} trains on without the window (pid {self.headless.pid})")
        return self.headless


class RunsHere(QObject):
    """The runs training from this window: their workers, what their children say, their control
    (pause / resume, stop, checkpoint now, detach) and the focused run's board, figures and progress
    line, refreshed by a timer a few times a second (a glance, not a movie). The runs' rows and
    curves go through the tab's :class:`~studio.services.runs_model.RunsModel`."""

    def __init__(self, tab: TrainTab) -> None:
        super().__init__(tab)
        self.tab = tab
        self.live: list[LiveRun] = []
        self.focus: LiveRun | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(LIVE_REFRESH_MS)
        self.timer.timeout.connect(self.refresh)

    @property
    def form_run_starting(self) -> bool:
        """Whether a run started from the form has not said it trains yet (its child still opens it).
        Start waits for it: three quick clicks made three identical runs."""
        return any(lr.run_id is None and lr.worker.request.resume is None for lr in self.live)

    def start(self) -> bool:
        """Start a new run with the form's settings (beside any that train); False when it cannot."""
        if self.form_run_starting:
            self.tab.status.emit("a run is starting: Start is back once it trains")
            return False
        request = self.tab._form_request("start")
        if request is None:
            return False
        series = RunSeries(f"{request.agent} (new run)")
        series.set_config(request.config)
        series.set_evaluation(  # the curves say when its first evaluation comes (issue 44)
            request.eval_games,
            request.eval_every_s,
            request.eval_every_episodes,
            request.budget,
            request.eval_at_end,
        )
        self.tab._launch(request, series)
        self.tab.launch.warn_if_little_data()  # imitation on too few moves: said again, in the status bar
        return True

    def resume(self, run_id: int) -> bool:
        """Continue run ``run_id`` from its last checkpoint: what is left of its budget, or the Budget
        box's when it used it all."""
        if any(lr.run_id == run_id for lr in self.live):
            return False
        try:
            summary = self.tab.store.get_run(run_id)
            fallback = self.tab.launch.budget()
        except (ValueError, RunError) as e:
            self.tab._show_error("Cannot resume", str(e))
            return False
        from agents.registry import target_of

        request = RunRequest(resume=run_id, budget_if_used_up=fallback, target=target_of(summary.agent))
        series = RunSeries(f"run {run_id} {summary.agent}", agent=summary.agent, run_id=run_id)
        series.set_config(summary.config)
        try:
            series.add_columns(self.tab.store.run_metrics(run_id))  # the curves go on from where they were
        except (sqlite3.Error, ValueError):  # the run resumes all the same, its curves start afresh
            log.warning("cannot read run %s's history", run_id, exc_info=True)
        # Its counters go on from the checkpoint: the time left is measured from its first event.
        self.tab._launch(request, series, anchor=None)
        return True

    def launch(
        self, request: RunRequest, series: RunSeries, anchor: tuple[float, float] | None = (0.0, 0.0)
    ) -> None:
        worker = RunWorker(request, self.tab.store.path, parent=self)
        live = LiveRun(worker, series, anchor=anchor)
        worker.message.connect(partial(self._on_message, live))
        worker.finished.connect(partial(self._on_finished, live))
        if not self.live:
            # The first live run decides the panels; finished live runs leave (they are in the store,
            # a tick in the runs table brings them back); stored overlays stay.
            self.tab.model.drop_live()
            cls = self.tab.launch.agent_cls
            if cls is not None and request.agent:
                self.tab.curves.set_agent(cls)
        if request.agent and not series.agent:
            series.set_agent(request.agent)
        self.tab.model.add(live.key, series)
        self.live.append(live)
        self.focus = live
        worker.start()
        self.timer.start()
        self.tab.progressBar.setValue(0)
        self.tab.etaLabel.setText("Starting…")
        self.tab.statsLabel.setText("")
        self.tab.status.emit(f"training {request.agent or f'run {request.resume}'}…")
        self.tab._update_buttons()

    def live_of(self, run_ids: Sequence[int]) -> list[LiveRun]:
        return [lr for lr in self.live if lr.run_id in run_ids]

    def pause_runs(self, run_ids: Sequence[int]) -> None:
        """Pause the runs, or resume them when all are paused (a paused run saves a checkpoint)."""
        runs = self.live_of(run_ids)
        resume = bool(runs) and all(lr.worker.paused for lr in runs)
        for lr in runs:
            lr.worker.resume() if resume else lr.worker.pause()
            lr.dirty = True  # the board's caption and the figures say paused / playing at once
        if self.focus in runs:
            self.tab.etaLabel.setText("Training" if resume else "Paused (checkpoint saved)")
        self.tab.status.emit("training resumed" if resume else "training paused")
        self.refresh()
        self.tab._update_buttons()

    def stop_runs(self, run_ids: Sequence[int]) -> None:
        for lr in self.live_of(run_ids):
            lr.worker.stop()
        for rid in run_ids:
            if rid in self.tab.model.elsewhere:
                self.tab.status.emit(self.tab.follower.stop(self.tab.model.elsewhere[rid]))
        self.tab._update_buttons()

    def checkpoint_runs(self, run_ids: Sequence[int]) -> None:
        for lr in self.live_of(run_ids):
            lr.worker.checkpoint_now()
        self.tab.status.emit("saving a checkpoint…")

    def toggle_pause(self) -> None:
        """The Pause / Resume button: the focused run."""
        if self.focus is not None and self.focus.run_id is not None:
            self.pause_runs([self.focus.run_id])

    def stop_training(self) -> None:
        """End the focused run cleanly: the agent returns between steps, the runner saves a checkpoint."""
        if self.focus is not None:
            self.focus.worker.stop()
            self.tab.etaLabel.setText("Stopping (saving a checkpoint)…")
            self.tab._update_buttons()

    def stop_all(self) -> None:
        for lr in self.live:
            lr.worker.stop()
        self.tab._update_buttons()

    def wait_finished(self, timeout_s: float = 60.0) -> bool:
        """Block (GUI events still processed) until every run ended; True when they did."""
        from PySide6.QtWidgets import QApplication

        deadline = time.monotonic() + timeout_s
        while self.live and time.monotonic() < deadline:
            QApplication.processEvents()
            time.sleep(0.01)
        QApplication.processEvents()
        return not self.live

    def detach_all(self) -> None:
        """Let every run finish without the window (each keeps writing to the store)."""
        for lr in list(self.live):
            lr.worker.detach()
        self.wait_finished(10.0)

    def _on_started(self, live: LiveRun, run_id: int, agent: str) -> None:
        live.series.label = f"run {run_id} {agent}"
        live.series.set_agent(agent, run_id)  # its colour and legend names follow the run id now
        self.tab.model.add(live.key, live.series)
        self.tab.model.set_state(run_id, "running")
        self.tab.refresh_runs()
        self.tab.runsPanel.select_runs([run_id])
        self.tab._update_buttons()  # Start is back
        self.tab.runStarted.emit(run_id)

    def _on_message(self, live: LiveRun, msg: messages.ChildMessage) -> None:
        """What run ``live``'s child said, as its object (decoded by type, never by position)."""
        live.heard(msg)
        match msg:
            case messages.Events(events=events) if events:
                self.tab.curves.add_events(events, key=live.key)
                for ev in events:  # a run's notices: a checkpoint refused or large, an evaluation failed
                    if ev.kind == "info" and ev.message:
                        live.notice = ev.message
                        self.tab.status.emit(f"run {live.run_id}: {ev.message}")
            case messages.Started(run_id=run_id, agent=agent):
                self._on_started(live, run_id, agent)
            case messages.Failed():
                self._on_error(live, msg)

    def refresh(self) -> None:
        """Timer slot: live rows of the runs table; the focused run's board, figures, progress, ETA."""
        for each in self.live:
            if each.run_id is not None and each.dirty:
                self.tab.model.set_live_figures(
                    each.run_id,
                    each.state_text(),
                    each.episodes,
                    each.steps,
                    each.elapsed,
                    each.last_score,
                    each.last_eval,
                )
        lr = self.focus
        if lr is None or not lr.dirty:
            return
        lr.dirty = False
        self.tab.livePanel.show_run(lr, len(self.live))
        self.tab.progressBar.setValue(round(1000 * lr.progress))
        if lr.worker.paused:
            self.tab.etaLabel.setText("Paused (checkpoint saved)")
        elif lr.progress > 0:
            self.tab.etaLabel.setText(eta_text(lr))

    def _on_error(self, live: LiveRun, failed: messages.Failed) -> None:
        run_id, message = live.run_id, failed.message
        log.warning("run %s failed: %s\n%s", run_id, message, failed.traceback)
        if run_id is not None:
            mark_failed(self.tab.store, run_id, message)
        if failed.field and run_id is None:
            self.tab.launch.show_error(RunError(message, failed.field))
        self.tab._show_error(
            "Training failed" if run_id is not None else "Cannot start", message, failed.traceback
        )
        self.tab.status.emit(f"training failed: {message}")

    def _on_finished(self, live: LiveRun) -> None:
        w = live.worker
        self.live.remove(live)
        if w.run_id is not None:
            self.tab.model.set_state(w.run_id, None)
        live.dirty = True
        was_focus = live is self.focus
        if was_focus:
            self.refresh()
            self.focus = self.live[-1] if self.live else None
        self.tab.curves.mark_dirty()
        self.tab.curves.redraw()
        end = live.end()
        final = end.status
        if was_focus:
            if end.complete:
                self.tab.progressBar.setValue(1000)
            self.tab.etaLabel.setText(end.text)
            if self.focus is None:
                self.tab.livePanel.show_ended(w.run_id, final)
        said = f"run {w.run_id} {final}" if w.run_id is not None else f"training {final}"
        # its last notice stays in sight (a final checkpoint refused would be gone in a moment)
        self.tab.status.emit(f"{said}; last notice: {live.notice}" if live.notice else said)
        if live.games_logged:
            self.tab.gamesChanged.emit()
        if not self.live:
            self.timer.stop()
        self.tab.refresh_runs()
        if w.run_id is not None:
            # "Use in Play" / "Use in Arena" / "Export" act on the run that just ended.
            self.tab.runsPanel.select_runs([w.run_id])
        self.tab._update_buttons()
        w.deleteLater()
        self.tab.trainingFinished.emit(final)
