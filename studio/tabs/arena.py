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

import dataclasses
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from agents.arena import BACKENDS, EtaModel, tile_thresholds
from agents.ray_util import RAY_MISSING
from studio.services.runs import have_ray
from studio.tabs.common import button, panes, spin, table, titled_row, wait_worker
from studio.text import duration, plural
from studio.widgets.curves import RUN_COLOURS, GridAxis, show_grid
from studio.worker import CallWorker

if TYPE_CHECKING:
    from engine.store import GameStore

RESULT_COLUMNS = (
    "Agent",
    "Games",
    "Mean ± 95% CI",
    "Median",
    "Max score",
    "Moves / game",
    "Best tile",
    "Time",
    "Status",
)
SPEC_ROLE = Qt.ItemDataRole.UserRole
#: The backend choice's texts, in :data:`agents.arena.BACKENDS` order.
BACKEND_TEXTS = ("Local processes", "Ray")
#: Where the backend choice is kept between sessions.
BACKEND_KEY = "arena/backend"
#: Where the contestants are kept between sessions: a JSON list of {"spec": ..., "ticked": bool}.
CONTESTANTS_KEY = "arena/contestants"
#: Where "Games each" and the seed are kept between sessions.
GAMES_KEY = "arena/games_each"
SEED_KEY = "arena/seed"
#: Where the last run's rows (table, tile table and chart) are kept: JSON, see :func:`rows_to_json`.
LAST_RUN_KEY = "arena/last_run"


def spec_to_json(spec: Any) -> dict[str, Any]:
    """An :class:`agents.spec.AgentSpec` as plain JSON values (what the settings keep)."""
    return {
        "name": spec.name,
        "config": dict(spec.config),
        "checkpoint": spec.checkpoint,
        "rules": None if spec.rules is None else spec.rules.to_dict(),
        "label": spec.label,
        "target": spec.target,
        "play": dict(spec.play),
    }


def spec_from_json(data: Any) -> Any:
    """The inverse of :func:`spec_to_json`; ValueError / TypeError for anything else."""
    from agents.spec import AgentSpec
    from engine import Rules

    if not isinstance(data, dict):
        raise TypeError("a contestant is a JSON object")
    rules = data.get("rules")
    return AgentSpec(
        name=data.get("name"),
        config=dict(data.get("config") or {}),
        checkpoint=data.get("checkpoint"),
        rules=None if rules is None else Rules.from_dict(rules),
        label=data.get("label"),
        target=data.get("target"),
        play=dict(data.get("play") or {}),
    )


def result_to_json(result: Any) -> dict[str, Any]:
    """An :class:`agents.arena.EvalResult` as plain JSON values: its per-game arrays and its head, all
    the figures the table, the tile table and the chart are drawn from (not the workers' threads)."""
    return {
        "label": result.label,
        "agent": result.agent,
        "checkpoint": result.checkpoint,
        "config": result.config,
        "rules": result.rules.to_dict(),
        "seed": int(result.seed),
        "workers": int(result.workers),
        "scores": [int(v) for v in result.scores],
        "moves": [int(v) for v in result.moves],
        "max_tiles": [int(v) for v in result.max_tiles],
        "seconds": [float(v) for v in result.seconds],
        "wall_seconds": float(result.wall_seconds),
        "game_ids": [int(v) for v in result.game_ids],
        "planned": int(result.planned),
        "cancelled": bool(result.cancelled),
    }


def result_from_json(data: Any) -> Any:
    """The inverse of :func:`result_to_json`; ValueError / TypeError / KeyError for anything else."""
    from agents.arena import EvalResult
    from engine import Rules

    if not isinstance(data, dict):
        raise TypeError("a result is a JSON object")
    scores, moves, max_tiles = (
        np.asarray(data[key], dtype=np.int64).reshape(-1) for key in ("scores", "moves", "max_tiles")
    )
    seconds = np.asarray(data["seconds"], dtype=np.float64).reshape(-1)
    if len({scores.size, moves.size, max_tiles.size, seconds.size}) != 1:
        raise ValueError("a result's per-game lists differ in length")
    return EvalResult(
        label=str(data["label"]),
        agent=str(data["agent"]),
        checkpoint=data.get("checkpoint"),
        config=dict(data.get("config") or {}),
        rules=Rules.from_dict(data["rules"]),
        seed=int(data["seed"]),
        workers=int(data["workers"]),
        wall_seconds=float(data["wall_seconds"]),
        game_ids=tuple(int(v) for v in data.get("game_ids") or ()),
        planned=int(data.get("planned", 0)),
        cancelled=bool(data.get("cancelled", False)),
        scores=scores,
        moves=moves,
        max_tiles=max_tiles,
        seconds=seconds,
    )


def rows_to_json(rows: Sequence[ContestantRow], games_each: int, summary: str) -> str:
    """A finished run as kept in the settings: its rows (spec, status, reason, figures), the games
    each contestant was to play and the line that summed it up."""
    return json.dumps(
        {
            "games_each": int(games_each),
            "summary": summary,
            "rows": [
                {
                    "spec": spec_to_json(r.spec),
                    "status": r.status,
                    "reason": r.reason,
                    "moves": int(r.moves),
                    "elapsed": float(r.elapsed),
                    "result": None if r.result is None else result_to_json(r.result),
                }
                for r in rows
            ],
        },
        default=str,  # a config value JSON has no word for is kept as its text, not refused
    )


def rows_from_json(text: str) -> tuple[list[ContestantRow], int, str]:
    """The inverse of :func:`rows_to_json`; ValueError / TypeError / KeyError for anything else."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise TypeError("the last run is a JSON object with rows")
    rows = []
    for entry in data["rows"]:
        result = entry.get("result")
        rows.append(
            ContestantRow(
                spec=spec_from_json(entry["spec"]),
                status=str(entry["status"]),
                result=None if result is None else result_from_json(result),
                moves=int(entry.get("moves", 0)),
                elapsed=float(entry.get("elapsed", 0.0)),
                reason=str(entry.get("reason") or ""),
            )
        )
    return rows, int(data.get("games_each", 0)), str(data.get("summary") or "")


def one_line(error: BaseException) -> str:
    """An exception as one line: its message (its type when it has none)."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def fault_reason(spec: Any, error: BaseException | str) -> str:
    """Why a contestant failed, on one line that names it (a checkpoint's load error does not)."""
    text = " ".join(error.split()) if isinstance(error, str) else one_line(error)
    name = spec.display
    return text if text.startswith(name) else f"{name}: {text}"


def played_share(rows: Sequence[ContestantRow], games_each: int) -> float:
    """The progress bar's share of a run (0..1): every contestant's games weigh alike. A contestant
    done counts whole; one playing counts its finished games, plus its games in flight by their moves
    at its mean moves per finished game (at most to its next whole game each, so to say).

    Not the share of the run's time: that one follows the ETA, which rises when a slower contestant's
    first games finish (random done in a second, then expectimax), so the bar went back (81 % -> 62 %).
    The tab keeps the bar from moving back where this estimate wavers (a game longer than the mean
    finishing)."""
    if not rows or games_each <= 0:
        return 0.0
    units = 0.0
    for row in rows:
        if row.status == "done":
            units += 1.0
            continue
        done = min(row.games, games_each)
        share = done / games_each
        if row.result is not None and done and done < games_each:
            finished_moves = float(row.result.moves.sum())
            in_flight = max(0.0, row.moves - finished_moves) / max(1.0, finished_moves / done)
            share += min(in_flight, 0.99 * (games_each - done)) / games_each
        units += min(1.0, share)
    return min(1.0, units / len(rows))


@dataclass
class ContestantRow:
    """One contestant of the run: ``status`` is waiting / playing / done / cancelled / not played /
    failed; ``result`` holds its finished games so far (None before the first); ``moves`` the moves
    played so far, games in flight included; ``elapsed`` its seconds so far; ``reason`` why it failed
    (one line naming it and the fault)."""

    spec: Any
    status: str = "waiting"
    result: Any = None
    moves: int = 0
    elapsed: float = 0.0
    reason: str = ""

    @property
    def games(self) -> int:
        return self.result.games if self.result is not None else 0

    @property
    def status_text(self) -> str:
        n = self.games
        if self.status == "playing":
            return (
                f"playing · {n:,} / {self.result.planned:,}"
                if self.result is not None
                else "playing · starting"
            )
        if self.status == "cancelled":
            return f"cancelled after {n:,} game{'' if n == 1 else 's'}"
        if self.status == "failed":
            # Short, so the figures and the agent's name keep their width: the reason (naming the
            # agent, the move and the game) is the cell's tooltip and a line under the progress bar.
            return f"failed after {n:,} game{'' if n == 1 else 's'}" if n else "failed"
        return self.status


class _Live:
    """The run's rows, written by the job thread and read by the window, under one lock."""

    def __init__(self, specs: Sequence[Any]) -> None:
        self._lock = threading.Lock()
        self._rows = [ContestantRow(spec) for spec in specs]
        self.cancel = False  # set by the window; evaluate() polls it

    def set(self, k: int, **changes: Any) -> None:
        with self._lock:
            row = self._rows[k]
            for key, value in changes.items():
                setattr(row, key, value)
            if "result" in changes and changes["result"] is not None:
                row.elapsed = float(changes["result"].wall_seconds)

    def snapshot(self) -> list[ContestantRow]:
        with self._lock:
            return [dataclasses.replace(r) for r in self._rows]

    def games_done(self) -> int:
        with self._lock:
            return sum(r.games for r in self._rows)

    def results(self) -> list[Any]:
        with self._lock:
            return [r.result for r in self._rows if r.result is not None and r.result.games]

    def close(self, failed: bool) -> None:
        """The job ended: a row still playing failed; rows still waiting were not played."""
        with self._lock:
            for r in self._rows:
                if r.status == "playing":
                    r.status = "failed" if failed else "cancelled"
                elif r.status == "waiting":
                    r.status = "not played"


def _tile_tick(tile: int) -> str:
    """Axis labels that fit under grouped bars: 1024 -> 1k, 65536 -> 64k."""
    return f"{tile // 1024}k" if tile >= 1024 else str(tile)


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else duration(s)


def _set_cell(t: QTableWidget, row: int, col: int, text: str, right: bool = False) -> QTableWidgetItem:
    """Change a cell's text in place (no flicker, the selection stays while rows update live)."""
    item = t.item(row, col)
    if item is None:
        item = QTableWidgetItem(text)
        if right:
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        t.setItem(row, col, item)
    elif item.text() != text:
        item.setText(text)
    return item


class ArenaTab(QWidget):
    """Pick contestants and a number of games, run, compare. Signals: ``status(str)``, ``gamesChanged()``,
    ``openInReplay(game_id)``, ``evaluationFinished(ok)``."""

    status = Signal(str)
    gamesChanged = Signal()
    openInReplay = Signal(int)
    evaluationFinished = Signal(bool)

    def __init__(
        self, store: GameStore, settings: QSettings | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("arenaTab")
        self.store = store
        self.settings = settings
        self.worker: CallWorker | None = None
        self.rows: list[ContestantRow] = []  # the run's contestants, in order (the results table)
        self.results: list[Any] = []  # agents.arena.EvalResult of the rows with finished games
        self.error_box: QMessageBox | None = None
        self._live: _Live | None = None
        self._games_each = 0
        self._games_seen = 0  # finished games already announced with gamesChanged
        self._shown_share = 0.0  # the bar's share so far this run: it never moves back
        self._restoring = False
        self._build()
        self._fill_agents()
        self._restore_contestants()
        self._restore_games_settings()
        self._restore_last_run()
        self._update_buttons()

    # ================================================================== building
    def _build(self) -> None:
        panes(self, self._build_left(), self._build_right(), left_width=300)

    def _build_left(self) -> QWidget:
        """Contestants, the games settings, Run / Cancel and the progress."""
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        box = QGroupBox("Contestants")
        bl = QVBoxLayout(box)
        self.entryList = QListWidget()
        self.entryList.setObjectName("entryList")
        self.entryList.setToolTip("Ticked entries play; untick to leave one out")
        self.entryList.setMinimumHeight(60)
        self.entryList.itemSelectionChanged.connect(self._update_buttons)
        self.entryList.itemChanged.connect(self._on_entry_changed)
        bl.addWidget(self.entryList)
        add_row = QHBoxLayout()
        self.agentPicker = QComboBox()
        self.agentPicker.setObjectName("agentPicker")
        add_row.addWidget(self.agentPicker, 1)
        self.addAgentButton = button(
            "Add", "addAgentButton", self._add_picked, "Add this agent (default settings)"
        )
        add_row.addWidget(self.addAgentButton)
        bl.addLayout(add_row)
        row2 = QHBoxLayout()
        self.addCheckpointButton = button(
            "Add checkpoint…",
            "addCheckpointButton",
            self._add_checkpoint_dialog,
            "Add a trained agent from its file",
        )
        self.removeButton = button(
            "Remove", "removeButton", self.remove_selected, "Remove the selected entries"
        )
        row2.addWidget(self.addCheckpointButton)
        row2.addWidget(self.removeButton)
        bl.addLayout(row2)
        ll.addWidget(box, 1)

        settings_box = QGroupBox("Games")
        fl = QFormLayout(settings_box)
        self.gamesSpin = spin("gamesSpin", 1, 1_000_000, 100, "Games per contestant")
        self.seedSpin = spin("seedSpin", 0, 2**31 - 1, 0, "Seed: game i gets the same spawns for every agent")
        self.workersSpin = spin(
            "workersSpin",
            1,
            max(1, os.cpu_count() or 1),
            min(4, os.cpu_count() or 1),
            "Processes (or Ray actors) playing in parallel",
        )
        self.backendCombo = QComboBox()
        self.backendCombo.setObjectName("backendCombo")
        for name, text in zip(BACKENDS, BACKEND_TEXTS):
            self.backendCombo.addItem(text, name)
        self._ray_available = have_ray()
        if self._ray_available:
            self.backendCombo.setToolTip(
                "Where the games play: processes on this machine, or Ray actors (the same games either way)"
            )
            saved = str(self.settings.value(BACKEND_KEY, "local")) if self.settings is not None else "local"
            self.backendCombo.setCurrentIndex(max(0, self.backendCombo.findData(saved)))
        else:
            # Stays on local processes (a saved "ray" from a machine with Ray is not applied here).
            self.backendCombo.setToolTip(RAY_MISSING[0].upper() + RAY_MISSING[1:])
        self.backendCombo.currentIndexChanged.connect(self._save_backend)
        fl.addRow("Games each", self.gamesSpin)
        fl.addRow("Seed", self.seedSpin)
        fl.addRow("Processes", self.workersSpin)
        fl.addRow("Backend", self.backendCombo)
        ll.addWidget(settings_box)

        buttons = QHBoxLayout()
        self.runButton = button("Run", "runButton", self.run, "Play the games (in the background)")
        self.cancelButton = button(
            "Cancel",
            "cancelButton",
            self.cancel,
            "Stop now: the finished games are kept, the rest are skipped",
        )
        buttons.addWidget(self.runButton)
        buttons.addWidget(self.cancelButton)
        ll.addLayout(buttons)
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

    def _build_right(self) -> QSplitter:
        """Results table above; seed 004's max-tile table beside its bar chart below."""
        right = QSplitter(Qt.Orientation.Vertical)
        self.resultsTable = table("resultsTable", list(RESULT_COLUMNS))
        self.resultsTable.setToolTip(
            "Mean ± 95% CI: the mean score and its 95% confidence interval (1.96·s/√n).\n"
            "Double-click: replay this agent's best game"
        )
        header = self.resultsTable.horizontalHeader()
        header.setStretchLastSection(False)
        # Every figure as wide as it needs; the agent's name takes what is left (elided, full in its tooltip).
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(40)
        self.resultsTable.itemDoubleClicked.connect(lambda item: self.open_best_game(item.row()))
        self.replayButton = button(
            "Replay best game",
            "replayButton",
            lambda: self.open_best_game(self.resultsTable.currentRow()),
            "Open the selected agent's highest-scoring game in Replay",
        )
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addLayout(titled_row("Results", self.replayButton))
        tl.addWidget(self.resultsTable)
        right.addWidget(top)
        # Below: seed 004's table beside its bar chart.
        bottom = QSplitter(Qt.Orientation.Horizontal)
        self.bottomSplitter = bottom
        self.tileTable = table("tileTable", ["Max tile"])
        self.tileTable.setToolTip(
            "Games whose largest tile was at least this one (seed 004's table): a game that made 4096 reached 2048"
        )
        self.tileTable.horizontalHeader().setStretchLastSection(False)
        mid = QWidget()
        ml = QVBoxLayout(mid)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.addWidget(QLabel("<b>Max tile reached at least</b> (games)"))
        ml.addWidget(self.tileTable)
        bottom.addWidget(mid)
        self.barChart = pg.PlotWidget(axisItems={"left": GridAxis("left"), "bottom": GridAxis("bottom")})
        self.barChart.setObjectName("barChart")
        self.barChart.setBackground("w")
        self.barChart.setTitle("Max tile reached at least (% of games)", size="9pt")
        self.barChart.setLabel("left", "% of games")
        show_grid(self.barChart, x=False, y=True, alpha=0.2)
        self.barChart.setMouseEnabled(x=False, y=False)
        self.barChart.setLabel("bottom", "max tile reached at least")
        # One line of names across the top, above the 100 % line (bars reach it on the left).
        self.barChart.addLegend(offset=(10, 2), labelTextSize="8pt", colCount=6)
        self.barChart.setMinimumHeight(180)
        bottom.addWidget(self.barChart)
        bottom.setStretchFactor(0, 2)
        bottom.setStretchFactor(1, 3)
        bottom.setSizes([380, 560])
        right.addWidget(bottom)
        right.setStretchFactor(0, 1)
        right.setStretchFactor(1, 3)
        right.setSizes([200, 520])
        return right

    def backend(self) -> str:
        """Where the next run's games play: ``"local"`` or ``"ray"``."""
        return str(self.backendCombo.currentData())

    def _save_backend(self, _index: int = 0) -> None:
        if self.settings is not None:
            self.settings.setValue(BACKEND_KEY, self.backend())

    def _fill_agents(self) -> None:
        from agents.registry import agent_names

        self.agentPicker.clear()
        for name in agent_names():
            self.agentPicker.addItem(name, name)
        idx = self.agentPicker.findData("random")
        self.agentPicker.setCurrentIndex(max(0, idx))

    def _restore_games_settings(self) -> None:
        """ "Games each" and the seed of the last session (then kept as they change)."""
        if self.settings is not None:
            for box, key in ((self.gamesSpin, GAMES_KEY), (self.seedSpin, SEED_KEY)):
                try:
                    value = int(str(self.settings.value(key, box.value())))
                except ValueError:  # hand-edited settings: the default stays
                    continue
                box.setValue(max(box.minimum(), min(box.maximum(), value)))
        self.gamesSpin.valueChanged.connect(lambda v: self._save_setting(GAMES_KEY, v))
        self.seedSpin.valueChanged.connect(lambda v: self._save_setting(SEED_KEY, v))

    def _save_setting(self, key: str, value: int) -> None:
        if self.settings is not None:
            self.settings.setValue(key, int(value))

    def _save_last_run(self) -> None:
        """Keep the run that just ended (rows, figures, summary line) for the next start."""
        if self.settings is not None and self.rows:
            text = rows_to_json(self.rows, self._games_each, self.progressLabel.text())
            self.settings.setValue(LAST_RUN_KEY, text)

    def _restore_last_run(self) -> None:
        """The last session's results: the table, the tile table and the chart as they ended."""
        if self.settings is None:
            return
        text = self.settings.value(LAST_RUN_KEY, None)
        if not text:
            return
        try:
            rows, games_each, summary = rows_from_json(str(text))
        except (TypeError, ValueError, KeyError, AttributeError):  # hand-edited settings: no results
            return
        self.rows = rows
        self._games_each = games_each
        self.results = [r.result for r in rows if r.result is not None and r.result.games]
        self._show_results()
        done = all(r.status == "done" for r in rows)
        self.progressBar.setValue(1000 if done else round(1000 * played_share(rows, games_each)))
        self.progressLabel.setText(summary)

    # ================================================================== contestants
    def _on_entry_changed(self, _item: QListWidgetItem) -> None:
        self._update_buttons()
        self._save_contestants()

    def _save_contestants(self) -> None:
        """Keep the list (and which are ticked) in the settings, for the next start."""
        if self.settings is None or self._restoring:
            return
        entries = []
        for i in range(self.entryList.count()):
            item = self.entryList.item(i)
            entries.append(
                {
                    "spec": spec_to_json(item.data(SPEC_ROLE)),
                    "ticked": item.checkState() == Qt.CheckState.Checked,
                }
            )
        self.settings.setValue(CONTESTANTS_KEY, json.dumps(entries))

    def _restore_contestants(self) -> None:
        """The list of the last session; a checkpoint whose file is gone stays listed, unticked, saying so."""
        if self.settings is None:
            return
        try:
            entries = json.loads(str(self.settings.value(CONTESTANTS_KEY, "[]")))
        except ValueError:  # hand-edited settings: start with an empty list
            return
        self._restoring = True
        try:
            for entry in entries if isinstance(entries, list) else []:
                try:
                    spec = spec_from_json(entry.get("spec") if isinstance(entry, dict) else None)
                except (TypeError, ValueError, AttributeError, KeyError):  # not a spec: left out
                    continue
                item = self._add_entry(spec)
                ticked = bool(entry.get("ticked", True))
                if spec.checkpoint and not Path(spec.checkpoint).exists():
                    ticked = False
                    item.setText(f"{spec.display} (file missing)")
                    item.setToolTip(f"{spec.checkpoint} is not there any more")
                item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
        finally:
            self._restoring = False

    def _add_entry(self, spec: Any) -> QListWidgetItem:
        for i in range(self.entryList.count()):
            item = self.entryList.item(i)
            if item.data(SPEC_ROLE) == spec:
                item.setCheckState(Qt.CheckState.Checked)
                return item
        item = QListWidgetItem(spec.display)
        item.setData(SPEC_ROLE, spec)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked)
        item.setToolTip(spec.checkpoint or f"registered agent {spec.name} with its default settings")
        self.entryList.addItem(item)
        self._update_buttons()
        self._save_contestants()
        return item

    def add_agent(self, name: str, config: dict[str, Any] | None = None) -> None:
        """Add registered agent ``name`` (default config unless given)."""
        from agents.spec import AgentSpec

        self._add_entry(AgentSpec(name=name, config=dict(config or {})))

    def add_spec(self, spec: Any) -> None:
        """Add any :class:`agents.spec.AgentSpec` (a plug-in's, with its ``target``; a labelled one)."""
        self._add_entry(spec)

    def add_checkpoint(self, agent: str | None, path: str | Path) -> None:
        """Add a checkpoint file (what Train's "Use in Arena" sends)."""
        from agents.spec import AgentSpec

        p = Path(path)
        # Shown as "ntuple (run-2)" for a run's checkpoint (AgentSpec.display); the full path is in the tooltip.
        self._add_entry(AgentSpec.from_checkpoint(p, agent))
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

    def _add_picked(self) -> None:
        name = self.agentPicker.currentData()
        if name:
            self.add_agent(str(name))

    def _add_checkpoint_dialog(self) -> None:
        from engine.paths import checkpoints_dir

        start = str(checkpoints_dir(self.store.path.parent)) if hasattr(self.store, "path") else ""
        path, _ = QFileDialog.getOpenFileName(self, "Add a checkpoint", start, "Checkpoints (*.npz)")
        if path:
            self.add_checkpoint(None, path)

    def remove_selected(self) -> None:
        for item in self.entryList.selectedItems():
            self.entryList.takeItem(self.entryList.row(item))
        self._update_buttons()
        self._save_contestants()

    def contestants(self) -> list[Any]:
        """The ticked entries' AgentSpecs, in list order."""
        out = []
        for i in range(self.entryList.count()):
            item = self.entryList.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(item.data(SPEC_ROLE))
        return out

    # ================================================================== running
    @property
    def is_running(self) -> bool:
        return self.worker is not None and not self.worker.done

    def run(self) -> bool:
        """Evaluate every ticked contestant in the background; False when there is nothing to run.

        Contestants play one after another; each one's row, the tile table and the bars follow its
        games as they finish (a snapshot at most every quarter second), and the progress shows the
        games done and an ETA from the moves played."""
        specs = self.contestants()
        if self.is_running or not specs:
            return False
        games, seed, workers = self.gamesSpin.value(), self.seedSpin.value(), self.workersSpin.value()
        backend = self.backend()
        db_path = self.store.path
        live = _Live(specs)
        self._live = live
        self._games_each = games
        self._games_seen = 0
        total = games * len(specs)

        def job(report: Callable[..., None]) -> list[Any]:
            from agents.arena import evaluate
            from engine.store import GameStore

            with GameStore(db_path) as store:  # the worker thread's own connection
                for k, spec in enumerate(specs):
                    if live.cancel:
                        break
                    live.set(k, status="playing")
                    report(live.games_done(), total, "")

                    def on_live(snap: Any, moves: int, k: int = k) -> None:
                        live.set(k, result=snap, moves=moves, elapsed=snap.wall_seconds)
                        report(live.games_done(), total, "")

                    try:
                        result = evaluate(
                            spec,
                            games,
                            seed,
                            workers,
                            store=store,
                            should_stop=lambda: live.cancel,
                            live=on_live,
                            backend=backend,
                        )
                    except Exception as e:
                        # One contestant's fault (an illegal move, an agent that raises, a checkpoint
                        # that does not load) is its row's, not the run's: the others still play.
                        live.set(k, status="failed", reason=fault_reason(spec, e))
                        report(live.games_done(), total, "")
                        continue
                    # evaluate() ends an agent that breaks the rules (an illegal move, an exception of
                    # its own) with the games it finished and ``failure``, the line naming the fault.
                    failure = getattr(result, "failure", None)
                    if failure:
                        live.set(k, status="failed", result=result, reason=fault_reason(spec, failure))
                    else:
                        live.set(k, status="cancelled" if result.cancelled else "done", result=result)
                    report(live.games_done(), total, "")
            return live.results()

        self.rows = live.snapshot()
        self.results = []
        self._show_results()
        if self.worker is not None:
            self.worker.deleteLater()  # the previous evaluation's (finished) worker
        self.worker = CallWorker(job, parent=self)
        self.worker.progress.connect(self._on_progress)
        self.worker.error.connect(self._on_error)
        self.worker.finished.connect(self._on_finished)
        self.worker.start()
        self._shown_share = 0.0
        self.progressBar.setValue(0)
        players = (
            f"{workers} Ray actor{'s' if workers > 1 else ''}"
            if backend == "ray"
            else f"{workers} process{'es' if workers > 1 else ''}"
        )
        self.progressLabel.setText(f"0 / {total:,} games · ETA …\nStarting {players}…")
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
        self.results = [r.result for r in self.rows if r.result is not None and r.result.games]
        self._show_results()
        if self.is_running:
            self._show_progress()

    def eta(self) -> EtaModel:
        """The time model of the run under way (or the last one), from the rows."""
        n = max(1, len(self.rows))
        model = EtaModel(self._games_each, n)
        for k, row in enumerate(self.rows):
            if row.status in ("done", "cancelled"):
                model.finish(k, row.elapsed)
            elif row.status == "playing":
                games = row.result.games if row.result is not None else 0
                finished_moves = int(row.result.moves.sum()) if row.result is not None else 0
                model.update(k, games, finished_moves, row.moves, row.elapsed)
                break
        return model

    def _show_progress(self) -> None:
        total = self._games_each * len(self.rows)
        done = sum(r.result.games for r in self.rows if r.result is not None)
        if self._live is not None and self._live.cancel:
            self.progressLabel.setText("Cancelling…")  # the bar stays where the games stopped
            return
        if done != self._games_seen:  # finished games are in the store: the window's count follows
            self._games_seen = done
            self.gamesChanged.emit()
        model = self.eta()
        # The games played, never less than shown before (an estimate of the games in flight may waver).
        self._shown_share = max(self._shown_share, played_share(self.rows, self._games_each))
        self.progressBar.setValue(round(1000 * self._shown_share))
        lines = [f"{done:,} / {total:,} games · ETA {duration(model.seconds_left(), '…')}"]
        for k, row in enumerate(self.rows):
            if row.status == "playing":
                rate = row.moves / row.elapsed if row.elapsed > 0 else 0.0
                lines.append(
                    f"Playing {row.spec.display} ({k + 1} of {len(self.rows)})"
                    + (f" · {rate:,.0f} moves/s" if rate else "")
                )
        self.progressLabel.setText("\n".join(lines))

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
        n = sum(r.games for r in self.results)
        cancelled = live is not None and live.cancel
        failed = [r for r in self.rows if r.status == "failed"]
        if crashed:
            self.progressLabel.setText(f"Failed after {n:,} game{'' if n == 1 else 's'}")
        else:
            wall = sum(r.elapsed for r in self.rows)
            if cancelled:
                text = f"Cancelled after {n:,} game{'' if n == 1 else 's'}"
            else:
                self.progressBar.setValue(1000)
                text = f"Done: {plural(n, 'game')} in {duration(wall)}"
            text += " (in the store)" if n else ""
            if failed:
                # Each failed contestant on its own line: who, and the move or fault that stopped it.
                text += "\n" + "\n".join(f"Failed: {r.reason or r.spec.display}" for r in failed)
            self.progressLabel.setText(text)
        for r in failed:
            self.status.emit(f"arena: {r.reason or r.spec.display + ' failed'}")
        self._save_last_run()
        if n:
            self.gamesChanged.emit()
        self._update_buttons()
        self.evaluationFinished.emit(not crashed and not failed)

    # ================================================================== results
    def _show_results(self) -> None:
        t = self.resultsTable
        t.setRowCount(len(self.rows))
        for row, state in enumerate(self.rows):
            r = state.result
            figures: tuple[str, ...] = ("",) * 7
            if r is not None and r.games:
                figures = (
                    f"{r.games:,}",
                    r.mean_text,
                    f"{r.median_score:,.0f}",
                    f"{r.max_score:,}",
                    f"{r.moves_per_game:,.1f}",
                    f"{r.best_tile:,}",
                    _seconds(state.elapsed),
                )
            for col, text in enumerate((state.spec.display, *figures, state.status_text)):
                item = _set_cell(t, row, col, text, right=0 < col < len(RESULT_COLUMNS) - 1)
                if col == 0:
                    item.setToolTip(state.spec.checkpoint or state.spec.display)
                elif col == len(RESULT_COLUMNS) - 1:
                    item.setToolTip(state.reason)  # the whole reason where the column cuts it
        # Seed 004's layout: one row per tile, one column per agent, games that reached at least it.
        results = self.results
        thresholds = tile_thresholds(*(r.max_tiles for r in results))
        tt = self.tileTable
        tt.setColumnCount(1 + len(results))
        tt.setHorizontalHeaderLabels(["Max tile"] + [r.label for r in results])
        tt.setRowCount(len(thresholds))
        shares = [r.tile_at_least(thresholds) for r in results]
        for row, tile in enumerate(thresholds):
            _set_cell(tt, row, 0, f"≥ {tile:,}")
            for col, (r, share) in enumerate(zip(results, shares), start=1):
                count = round(share[tile] * r.games)
                _set_cell(
                    tt, row, col, f"{count:,}  ({100.0 * share[tile]:.0f}%)" if count else "0", right=True
                )
        self._fit_tile_table()
        self._draw_bars(thresholds)
        self._update_buttons()

    def _fit_tile_table(self) -> None:
        """Give the tile table the width its columns need (up to 60 % of the pane), the chart the rest."""
        tt = self.tileTable
        tt.resizeColumnsToContents()
        need = sum(tt.horizontalHeader().sectionSize(c) for c in range(tt.columnCount()))
        need += (
            2 * tt.frameWidth() + (tt.verticalScrollBar().sizeHint().width() if tt.rowCount() > 8 else 0) + 4
        )
        sizes = self.bottomSplitter.sizes()
        total = sum(sizes)
        if total > 0 and sizes[0] < need:
            left = min(need, int(total * 0.6))
            self.bottomSplitter.setSizes([left, total - left])

    def reached_counts(self) -> dict[str, dict[int, int]]:
        """What the tile table shows: label -> {tile: games whose max tile is at least that tile}."""
        thresholds = tile_thresholds(*(r.max_tiles for r in self.results))
        return {
            r.label: {t: int(np.count_nonzero(r.max_tiles >= t)) for t in thresholds} for r in self.results
        }

    def _draw_bars(self, thresholds: Sequence[int]) -> None:
        chart = self.barChart
        chart.clear()
        legend = chart.getPlotItem().legend
        if legend is not None:
            legend.clear()
        n = len(self.results)
        if not n or not thresholds:
            return
        width = 0.8 / n
        x = np.arange(len(thresholds), dtype=float)
        for k, r in enumerate(self.results):
            shares = r.tile_at_least(thresholds)
            colour = RUN_COLOURS[k % len(RUN_COLOURS)]
            bars = pg.BarGraphItem(
                x=x - 0.4 + width * (k + 0.5),
                height=np.array([100.0 * shares[t] for t in thresholds]),
                width=width * 0.95,
                brush=colour,
                pen=pg.mkPen(colour),
                name=r.label,  # the plot's legend picks the name up by itself
            )
            chart.addItem(bars)
        chart.getAxis("bottom").setTicks([[(i, _tile_tick(t)) for i, t in enumerate(thresholds)]])
        chart.getAxis("left").setTicks([[(v, str(v)) for v in range(0, 101, 20)]])
        chart.setXRange(-0.6, len(thresholds) - 0.4, padding=0)
        chart.setYRange(0, 100 + 24 * (1 + (n - 1) // 6), padding=0)  # room for the legend above 100 %

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
        self.removeButton.setEnabled(not running and bool(self.entryList.selectedItems()))
        for w in (
            self.addAgentButton,
            self.addCheckpointButton,
            self.agentPicker,
            self.gamesSpin,
            self.seedSpin,
            self.workersSpin,
            self.entryList,
        ):
            w.setEnabled(not running)
        self.backendCombo.setEnabled(not running and self._ray_available)
        self.replayButton.setEnabled(bool(self.results))
