"""Runs that train in another process: left to finish without the window, or ``train`` in a terminal.

Reopening the studio shows them in the runs table ("running elsewhere"); "Show" follows one: its
whole history is drawn once, then only its new events are read from the store every
:data:`FOLLOW_MS` (the child writes them within about a second), until the run ends. "Stop" sends
it SIGINT, which both the window's training child and ``python main.py train`` take as "stop after
this step and save a checkpoint". Only runs on this machine can be stopped from here.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from agents.runner import RunError
from studio.services.runs import stop_elsewhere
from studio.services.runs_model import FOLLOW
from studio.widgets.curves import CurvesPanel, RunSeries

if TYPE_CHECKING:
    from engine.store import GameStore, RunSummary

FOLLOW_MS = 1000
LIVE_STATUSES = ("running", "paused")

log = logging.getLogger(__name__)


class Follower(QObject):
    """Follows runs owned by other processes: their curves from the store (shown in the model of runs
    that ``curves`` draws), and a stop request."""

    #: a followed run ended (run id, its final status)
    ended = Signal(int, str)

    def __init__(
        self,
        store: GameStore,
        curves: CurvesPanel,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.curves = curves
        self.model = curves.model  # the runs the curves draw: a followed run is shown there
        self.followed: dict[int, int] = {}  # run id -> events read so far
        self._timer = QTimer(self)
        self._timer.setInterval(FOLLOW_MS)
        self._timer.timeout.connect(self.poll)

    @staticmethod
    def elsewhere(runs: list[RunSummary], own_pids: set[int]) -> dict[int, RunSummary]:
        """Runs of the store that train now in a process that is not one of this window's."""
        return {r.id: r for r in runs if r.status in LIVE_STATUSES and r.pid not in own_pids}

    def follow(self, run_id: int) -> None:
        """Draw run ``run_id`` and keep drawing its new events while it trains."""
        summary = self.store.get_run(run_id)
        cols = self.store.run_metrics(run_id)
        series = RunSeries(f"run {run_id} {summary.agent} (elsewhere)")
        series.set_config(summary.config)
        series.add_columns(cols)
        self.model.add((FOLLOW, run_id), series)
        self.followed[run_id] = len(cols["episode"])
        self._timer.start()

    def poll(self) -> None:
        """Timer slot: the new events of every followed run; runs that ended are let go."""
        for run_id, seen in list(self.followed.items()):
            series = self.model.series((FOLLOW, run_id))
            try:
                cols = self.store.run_metrics(run_id, since=seen)
                status = self.store.get_run(run_id).status
            except (ValueError, sqlite3.Error) as e:  # StoreError: deleted meanwhile, the store closing
                log.warning("stopped following run %d: %s", run_id, e)
                status, cols = "stopped", {"episode": np.empty(0)}
            if series is not None and len(cols["episode"]):
                series.add_columns(cols)
                self.curves.mark_dirty()
            self.followed[run_id] = seen + len(cols["episode"])
            if status not in LIVE_STATUSES or series is None:
                del self.followed[run_id]
                self.ended.emit(run_id, status)
        if not self.followed:
            self._timer.stop()

    def stop(self, summary: RunSummary) -> str:
        """Ask the process that trains ``summary``'s run to stop and save; what happened, in words."""
        try:
            return stop_elsewhere(summary)
        except RunError as e:
            return str(e)

    def shutdown(self) -> None:
        self._timer.stop()
        self.followed.clear()
