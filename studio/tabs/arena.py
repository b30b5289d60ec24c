"""The Arena tab: N games of each chosen agent or checkpoint, side by side.

The games are played by :func:`agents.arena.evaluate` (several processes) from a
:class:`studio.worker.CallWorker` thread, so the window stays live; each game lands in the store
(``source="evaluation"``) as it finishes, and each contestant's row follows its games as they finish.
Results: a table of mean score ± its 95 % interval, median and max score (the figures of
:class:`agents.arena.EvalResult`, the same ``eval`` prints), a "max tile reached at least" table laid
out like seed 004's (rows: tile; columns: agents; cells: games) and a bar chart of the same shares.
The bar shows the share of the games played (each contestant's games weigh alike; the games in
flight count by their moves), which only grows; the line under it the games done and an ETA from
the moves played. The contestants are kept in the settings: the list is there again after a restart.
The games play in local processes
or, with the Ray backend (the optional extra), on Ray actors: the same games and figures either way.
Cancel gives up the games in flight (the worker processes or actors end) and keeps those that
finished. Double-click a result to replay that agent's best game.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from agents.arena import EtaModel
from studio.services import arena as service
from studio.services.arena import (  # re-exported: tests and scripts import them from here
    ContestantRow,
    LiveRows,
    fault_reason,
    one_line,
    played_share,
    result_from_json,
    result_to_json,
    rows_from_json,
    rows_to_json,
    spec_from_json,
    spec_to_json,
)
from studio.services.runs import have_ray
from studio.tabs.arena_panel import (
    BACKEND_KEY,
    BACKEND_TEXTS,
    CONTESTANTS_KEY,
    GAMES_KEY,
    SEED_KEY,
    SPEC_ROLE,
    ContestantsBox,
    GamesBox,
)
from studio.tabs.arena_results import RESULT_COLUMNS, ResultsView
from studio.tabs.common import SettingsTab, button, panes, wait_worker
from studio.text import plural
from studio.worker import CallWorker

if TYPE_CHECKING:
    from engine.store import GameStore

__all__ = [
    "BACKEND_KEY",
    "BACKEND_TEXTS",
    "CONTESTANTS_KEY",
    "GAMES_KEY",
    "LAST_RUN_KEY",
    "RESULT_COLUMNS",
    "SEED_KEY",
    "SPEC_ROLE",
    "ArenaTab",
    "ContestantRow",
    "LiveRows",
    "fault_reason",
    "one_line",
    "played_share",
    "result_from_json",
    "result_to_json",
    "rows_from_json",
    "rows_to_json",
    "spec_from_json",
    "spec_to_json",
]

#: Where the last run's rows (table, tile table and chart) are kept: JSON, see :func:`rows_to_json`.
LAST_RUN_KEY = "arena/last_run"


class ArenaTab(SettingsTab):
    """Pick contestants and a number of games, run, compare. Signals: ``status(str)``, ``gamesChanged()``,
    ``openInReplay(game_id)``, ``evaluationFinished(ok)``."""

    status = Signal(str)
    gamesChanged = Signal()
    openInReplay = Signal(int)
    evaluationFinished = Signal(bool)

    def __init__(
        self, store: GameStore, settings: QSettings | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__("arenaTab", store, settings, parent)
        self.worker: CallWorker | None = None
        self.rows: list[ContestantRow] = []  # the run's contestants, in order (the results table)
        self.results: list[Any] = []  # agents.arena.EvalResult of the rows with finished games
        self.error_box: QMessageBox | None = None
        self._live: LiveRows | None = None
        self._games_each = 0
        self._games_seen = 0  # finished games already announced with gamesChanged
        self._shown_share = 0.0  # the bar's share so far this run: it never moves back
        panes(self, self._build_left(), self._build_right(), left_width=300)
        self._restore_last_run()
        self._update_buttons()

    # ================================================================== building
    def _build_left(self) -> QWidget:
        """Contestants, the games settings, Run / Cancel and the progress."""
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        self.contestantsBox = box = ContestantsBox(self.settings, self._checkpoints_dir)
        box.changed.connect(self._update_buttons)
        box.checkpointChosen.connect(lambda path: self.add_checkpoint(None, path))
        ll.addWidget(box, 1)
        # The inputs by the names tests and scripts know them by.
        self.entryList, self.agentPicker = box.entryList, box.agentPicker
        self.addAgentButton, self.addCheckpointButton = box.addAgentButton, box.addCheckpointButton
        self.removeButton = box.removeButton
        # have_ray is looked up here (not in the box) so that tests stand in for it on this module.
        self.gamesBox = games = GamesBox(self.settings, have_ray())
        ll.addWidget(games)
        self.gamesSpin, self.seedSpin = games.gamesSpin, games.seedSpin
        self.workersSpin, self.backendCombo = games.workersSpin, games.backendCombo
        ll.addLayout(self._build_run_row())
        self.progressBar = QProgressBar()
        self.progressBar.setObjectName("arenaProgress")
        self.progressBar.setRange(0, 1000)
        self.progressBar.setToolTip(
            "Share of the games played (each contestant's games count alike); the ETA below is the time left"
        )
        ll.addWidget(self.progressBar)
        self.progressLabel = QLabel("")
        self.progressLabel.setObjectName("arenaProgressLabel")
        self.progressLabel.setWordWrap(True)
        # Room for its three lines (games · ETA, who plays, moves/s wrapped) at the default window
        # size: the contestants list gives up the height, not the progress.
        self.progressLabel.setMinimumHeight(3 * self.progressLabel.fontMetrics().lineSpacing() + 4)
        self.progressLabel.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        ll.addWidget(self.progressLabel)
        left.setMinimumWidth(280)
        return left

    def _build_run_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.runButton = button("Run", "runButton", self.run, "Play the games (in the background)")
        tip = "Stop now: the finished games are kept, the rest are skipped"
        self.cancelButton = button("Cancel", "cancelButton", self.cancel, tip)
        row.addWidget(self.runButton)
        row.addWidget(self.cancelButton)
        return row

    def _build_right(self) -> ResultsView:
        self.resultsView = view = ResultsView()
        view.bestGameAsked.connect(self.open_best_game)
        self.resultsTable, self.replayButton = view.resultsTable, view.replayButton
        self.tileTable, self.barChart = view.tileTable, view.barChart
        self.bottomSplitter = view.bottomSplitter
        return view

    def _checkpoints_dir(self) -> str:
        """Where the checkpoint dialog opens: the data folder's checkpoints."""
        from engine.paths import checkpoints_dir

        return str(checkpoints_dir(self.store.path.parent)) if hasattr(self.store, "path") else ""

    def backend(self) -> str:
        """Where the next run's games play: ``"local"`` or ``"ray"``."""
        return self.gamesBox.backend()

    def _fill_agents(self) -> None:
        self.contestantsBox.fill_agents()

    def _save_last_run(self) -> None:
        """Keep the run that just ended (rows, figures, summary line) for the next start."""
        if self.rows:
            self.keep(LAST_RUN_KEY, rows_to_json(self.rows, self._games_each, self.progressLabel.text()))

    def _restore_last_run(self) -> None:
        """The last session's results: the table, the tile table and the chart as they ended."""
        text = self.settings.value(LAST_RUN_KEY, None) if self.settings is not None else None
        if not text:
            return
        try:
            rows, games_each, summary = rows_from_json(str(text))
        except (TypeError, ValueError, KeyError, AttributeError):  # hand-edited settings: no results
            return
        self.rows = rows
        self._games_each = games_each
        self.results = service.results_of(rows)
        self._show_results()
        done = all(r.status == "done" for r in rows)
        self.progressBar.setValue(1000 if done else round(1000 * played_share(rows, games_each)))
        self.progressLabel.setText(summary)

    # ================================================================== contestants
    def add_agent(self, name: str, config: dict[str, Any] | None = None) -> None:
        """Add registered agent ``name`` (default config unless given)."""
        self.contestantsBox.add_agent(name, config)

    def add_spec(self, spec: Any) -> None:
        """Add any :class:`agents.spec.AgentSpec` (a plug-in's, with its ``target``; a labelled one)."""
        self.contestantsBox.add_spec(spec)

    def add_checkpoint(self, agent: str | None, path: str | Path) -> None:
        """Add a checkpoint file (what Train's "Use in Arena" sends)."""
        from agents.spec import AgentSpec

        p = Path(path)
        # Shown as "ntuple (run-2)" for a run's checkpoint (AgentSpec.display); the full path is in the tooltip.
        self.contestantsBox.add_spec(AgentSpec.from_checkpoint(p, agent))
        self.status.emit(f"{p.name} added to the arena")

    def use_agent(self, agent: str, checkpoint: str = "") -> None:
        """Train's "Use in Arena" (routed by the main window): add the run's checkpoint and come forward."""
        if checkpoint:
            self.add_checkpoint(agent, checkpoint)
        else:
            self.add_agent(agent)
        # Bring this tab to the front of whichever QTabWidget holds it (the main window's).
        w = self.parentWidget()
        while w is not None:
            if isinstance(w, QTabWidget):
                w.setCurrentWidget(self)
                break
            w = w.parentWidget()

    def remove_selected(self) -> None:
        self.contestantsBox.remove_selected()

    def contestants(self) -> list[Any]:
        """The ticked entries' AgentSpecs, in list order."""
        return self.contestantsBox.contestants()

    # ================================================================== running
    @property
    def is_running(self) -> bool:
        return self.worker is not None and not self.worker.done

    def run(self) -> bool:
        """Evaluate every ticked contestant in the background; False when there is nothing to run.

        Contestants play one after another (:func:`studio.services.arena.play_contestants`); each
        one's row, the tile table and the bars follow its games as they finish (a snapshot at most
        every quarter second), and the progress shows the games done and an ETA from the moves played."""
        specs = self.contestants()
        if self.is_running or not specs:
            return False
        games = self.gamesSpin.value()
        plan = service.ArenaRun(
            games, self.seedSpin.value(), self.workersSpin.value(), self.backend(), self.store.path
        )
        live = self._live = LiveRows(specs)
        self._games_each = games
        self._games_seen = 0
        self.rows = live.snapshot()
        self.results = []
        self._show_results()
        if self.worker is not None:
            self.worker.deleteLater()  # the previous evaluation's (finished) worker
        self.worker = CallWorker(partial(service.play_contestants, plan, live, specs), parent=self)
        self.worker.progress.connect(self._on_progress)
        self.worker.error.connect(self._on_error)
        self.worker.finished.connect(self._on_finished)
        self.worker.start()
        self._shown_share = 0.0
        self.progressBar.setValue(0)
        self.progressLabel.setText(service.starting_text(games * len(specs), plan.workers, plan.backend))
        self.status.emit(f"arena: {plural(len(specs), 'contestant')} × {plural(games, 'game')}")
        self._update_buttons()
        return True

    def cancel(self) -> None:
        """End early: the games in flight are given up (the worker processes or actors end at once); the
        games that finished stay in the store and in the table."""
        if self.is_running and self._live is not None:
            self._live.cancel = True
            self.progressLabel.setText("Cancelling…")

    def wait_finished(self, timeout_ms: int = 120_000) -> bool:
        return wait_worker(self.worker, timeout_ms)

    def mark_dirty(self) -> None:
        """Nothing to re-read: the arena lists its own contestants and results."""

    def shutdown(self) -> None:
        if self.is_running:
            self.cancel()
            self.wait_finished(60_000)

    def _on_progress(self, done: float, total: float, text: str) -> None:
        self._refresh()

    def _refresh(self) -> None:
        """Read the job's latest word: rows, tile table, bars, progress and ETA."""
        if self._live is None:
            return
        self.rows = self._live.snapshot()
        self.results = service.results_of(self.rows)
        self._show_results()
        if self.is_running:
            self._show_progress()

    def eta(self) -> EtaModel:
        """The time model of the run under way (or the last one), from the rows."""
        return service.run_eta(self.rows, self._games_each)

    def _show_progress(self) -> None:
        if self._live is not None and self._live.cancel:
            self.progressLabel.setText("Cancelling…")  # the bar stays where the games stopped
            return
        done = sum(r.games for r in self.rows)
        if done != self._games_seen:  # finished games are in the store: the window's count follows
            self._games_seen = done
            self.gamesChanged.emit()
        # The games played, never less than shown before (an estimate of the games in flight may waver).
        self._shown_share = max(self._shown_share, played_share(self.rows, self._games_each))
        self.progressBar.setValue(round(1000 * self._shown_share))
        self.progressLabel.setText(service.progress_text(self.rows, self._games_each))

    def _on_error(self, message: str) -> None:
        if self.error_box is not None:
            self.error_box.close()
        box = QMessageBox(
            QMessageBox.Icon.Critical, "Arena failed", message, QMessageBox.StandardButton.Ok, self
        )
        box.setObjectName("arenaErrorBox")
        if self.worker is not None and self.worker.traceback:
            box.setDetailedText(self.worker.traceback)
        self.error_box = box
        box.open()
        self.status.emit(f"arena failed: {message}")

    def _on_finished(self) -> None:
        crashed = bool(self.worker is not None and self.worker.error_message)
        live = self._live
        if live is not None:
            live.close(failed=crashed)
        self._refresh()
        cancelled = live is not None and live.cancel
        failed = [r for r in self.rows if r.status == "failed"]
        if not crashed and not cancelled:
            self.progressBar.setValue(1000)
        self.progressLabel.setText(service.finished_text(self.rows, crashed=crashed, cancelled=cancelled))
        for r in failed:
            self.status.emit(f"arena: {r.reason or r.spec.display + ' failed'}")
        self._save_last_run()
        if sum(r.games for r in self.results):
            self.gamesChanged.emit()
        self._update_buttons()
        self.evaluationFinished.emit(not crashed and not failed)

    # ================================================================== results
    def _show_results(self) -> None:
        self.resultsView.show_rows(self.rows, self.results)
        self._update_buttons()

    def reached_counts(self) -> dict[str, dict[int, int]]:
        """What the tile table shows: label -> {tile: games whose max tile is at least that tile}."""
        return service.reached_counts(self.results)

    def open_best_game(self, row: int) -> int | None:
        """Emit ``openInReplay`` with the highest-scoring stored game of result ``row``."""
        if not (0 <= row < len(self.rows)):
            return None
        r = self.rows[row].result
        if r is None or not r.games:
            return None
        if len(r.game_ids) != r.games:
            self.status.emit("these games were not stored")
            return None
        best = int(r.game_ids[int(np.argmax(r.scores))])
        self.openInReplay.emit(best)
        return best

    def _update_buttons(self) -> None:
        running = self.is_running
        self.runButton.setEnabled(not running and bool(self.contestants()))
        self.cancelButton.setEnabled(running)
        self.contestantsBox.set_running(running)
        self.gamesBox.set_running(running)
        self.replayButton.setEnabled(bool(self.results))
