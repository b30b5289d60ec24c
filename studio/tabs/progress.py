"""The Progress tab: a person's games over time (score, highest tile, review accuracy of the person's
moves) and the share of blunders per game phase, with a button that reviews the games not reviewed yet.

The source filter defaults to "your games": every game the person played a move in (alone, or shared
with an agent under Watch; the game being played once it has a move), never an arena, evaluation or
training game; only the person's moves count. The reviewer defaults to the default reviewer (the one
Replay, the coach and ``review`` use), named in the summary.

Every figure comes from :func:`studio.services.progress.progress` (the ``progress`` command prints the
same). Reading them grades every reviewed move again from the stored values, which takes a while for
hundreds of long games, so it runs in a worker thread on its own store connection, as does "Review N
unreviewed games" (:func:`studio.services.review.review_games`, cancellable; what was reviewed stays in
the store). The tab re-reads the store when it is shown after games changed elsewhere, after a review,
and when a filter changes. A click on a point of the per-game plots opens that game in Replay.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QDate, QSettings, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDateEdit,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QVBoxLayout,
    QWidget,
)

from studio.services.library import connect
from studio.services.progress import MINE, PHASES, Progress, progress, rolling_mean
from studio.services.review import Reviewer, resolve_reviewer
from studio.tabs.common import ReviewingTab, button, fill_reviewer_combo
from studio.widgets.curves import GridAxis, SIAxis, TileAxis, show_grid
from studio.widgets.review_graph import GRADE_COLOURS

if TYPE_CHECKING:
    from engine.store import GameStore

#: The source filter: (label, progress source). "your games" is the default; arena, evaluation and
#: training games are never mixed into it.
SOURCES: tuple[tuple[str, str], ...] = (
    ("your games", MINE),
    ("your games alone", "human"),
    ("shared with an agent", "mixed"),
    ("agents in Play", "agent"),
    ("evaluations", "evaluation"),
    ("imported", "imported"),
)
#: Games in the rolling mean drawn over each per-game series.
ROLLING = 10
POINT_COLOUR = "#3a7bd5"
MEAN_COLOUR = "#d0312d"
BAR_COLOUR = GRADE_COLOURS["blunder"]


class ProgressTab(ReviewingTab):
    """Your progress. ``openInReplay(game_id)`` when a point is clicked."""

    status = Signal(str)
    openInReplay = Signal(int)

    def __init__(self, store: GameStore, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__("progressTab", store, parent)
        self.settings = settings
        self.data: Progress | None = None
        self.load_worker: Any = None
        self._again = False  # a refresh was asked for while one was loading
        self._closed = False
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(8, 8, 8, 8)
        filters = QHBoxLayout()
        self.sourceCombo = QComboBox()
        self.sourceCombo.setObjectName("progressSource")
        for label, source in SOURCES:
            self.sourceCombo.addItem(label, source)
        self.sinceCheck = QCheckBox("since")
        self.sinceCheck.setObjectName("progressSinceCheck")
        self.sinceEdit = QDateEdit()
        self.sinceEdit.setObjectName("progressSince")
        self.sinceEdit.setCalendarPopup(True)
        self.sinceEdit.setDisplayFormat("yyyy-MM-dd")
        self.sinceEdit.setDate(QDate.currentDate().addMonths(-1))
        self.sinceEdit.setEnabled(False)
        self.reviewerCombo = QComboBox()
        self.reviewerCombo.setObjectName("progressReviewer")
        self.reviewerCombo.setToolTip(
            "Whose reviews to show and who reviews the unreviewed games (default: the default reviewer, "
            "the same as Replay, the coach and the review command)"
        )
        self._fill_reviewers()
        self.refreshButton = button("Refresh", "progressRefresh", self.refresh)
        filters.addWidget(QLabel("Games:"))
        filters.addWidget(self.sourceCombo)
        filters.addSpacing(12)
        filters.addWidget(self.sinceCheck)
        filters.addWidget(self.sinceEdit)
        filters.addSpacing(12)
        filters.addWidget(QLabel("Reviewer:"))
        filters.addWidget(self.reviewerCombo)
        filters.addStretch(1)
        filters.addWidget(self.refreshButton)
        outer.addLayout(filters)

        self.summaryLabel = QLabel("Loading…")
        self.summaryLabel.setObjectName("progressSummary")
        self.summaryLabel.setStyleSheet("font-size: 11pt; padding: 4px 0;")
        outer.addWidget(self.summaryLabel)

        review = QHBoxLayout()
        self.reviewButton = button(
            "Review unreviewed games",
            "progressReviewButton",
            self.start_review,
            "Grade every move of the games that have no review yet (in the background; Cancel keeps "
            "what was reviewed)",
        )
        self.cancelButton = button("Cancel", "progressCancelButton", self.cancel_review)
        self.reviewProgress = QProgressBar()
        self.reviewProgress.setObjectName("progressReviewBar")
        self.reviewProgress.setTextVisible(True)
        review.addWidget(self.reviewButton)
        review.addWidget(self.reviewProgress, 3)
        review.addWidget(self.cancelButton)
        review.addStretch(1)  # the button keeps its size while no progress bar shows
        outer.addLayout(review)

        outer.addLayout(self._build_plots(), 1)

        self.sourceCombo.currentIndexChanged.connect(self.refresh)
        self.sinceCheck.toggled.connect(self._on_since_toggled)
        self.sinceEdit.dateChanged.connect(self.refresh)
        self.reviewerCombo.currentIndexChanged.connect(self.refresh)
        self._update_controls()

    def _build_plots(self) -> QGridLayout:
        """Score, highest tile and accuracy per game (dots and their rolling mean), blunders per phase."""
        grid = QGridLayout()
        grid.setSpacing(6)
        self.scorePlot = self._plot("Score", "score", SIAxis("left"))
        self.tilePlot = self._plot("Highest tile", "tile", TileAxis("left"))
        self.accuracyPlot = self._plot("Review accuracy", "accuracy (%)")
        self.phasePlot = self._plot("Blunders per game phase", "blunders (% of moves)")
        self.phasePlot.setLabel("bottom", "phase: highest tile on the board")
        self.phasePlot.getAxis("bottom").setTicks([[(i, p) for i, p in enumerate(PHASES)], []])
        grid.addWidget(self.scorePlot, 0, 0)
        grid.addWidget(self.tilePlot, 0, 1)
        grid.addWidget(self.accuracyPlot, 1, 0)
        grid.addWidget(self.phasePlot, 1, 1)

        # per-game series: scatter (clickable, a tooltip per game) + rolling mean
        self.series: dict[str, tuple[pg.ScatterPlotItem, pg.PlotDataItem]] = {}
        for key, plot in (
            ("score", self.scorePlot),
            ("tile", self.tilePlot),
            ("accuracy", self.accuracyPlot),
        ):
            dots = pg.ScatterPlotItem(
                size=7,
                pen=pg.mkPen("w", width=0.5),
                brush=pg.mkBrush(POINT_COLOUR),
                hoverable=True,
                hoverSize=10,
                tip=self._tip,
            )
            dots.sigClicked.connect(self._on_points_clicked)
            mean = plot.plot([], [], pen=pg.mkPen(MEAN_COLOUR, width=2), name=f"mean of last {ROLLING}")
            plot.addItem(dots)
            self.series[key] = (dots, mean)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.6, brush=BAR_COLOUR, pen=pg.mkPen(None))
        self.phasePlot.addItem(self.bars)
        self.barLabels: list[pg.TextItem] = []
        return grid

    def _plot(self, title: str, unit: str, left: pg.AxisItem | None = None) -> pg.PlotWidget:
        w = pg.PlotWidget(axisItems={"left": left or GridAxis("left"), "bottom": GridAxis("bottom")})
        w.setObjectName(f"progressPlot{title.split()[0].title()}")
        w.setBackground("w")
        w.setMinimumHeight(160)
        w.setTitle(title, color="#444", size="11pt")
        w.setLabel("left", unit)
        w.setLabel("bottom", f"game, oldest → newest  (red: mean of the last {ROLLING})")
        show_grid(w, x=True, y=True, alpha=0.15)
        w.setMenuEnabled(False)
        w.hideButtons()
        w.setMouseEnabled(x=False, y=False)
        for name in ("left", "bottom"):
            axis = w.getAxis(name)
            axis.setTextPen("#333")
            axis.setPen("#888")
        w.getAxis("left").setWidth(54)
        return w

    # ------------------------------------------------------------------ the Tab protocol
    def shutdown(self) -> None:
        self._closed = True
        if self.reviewing:
            self.cancel_review()
        for worker in (self.review_worker, self.load_worker):
            if worker is not None:
                worker.wait(30_000)

    # ------------------------------------------------------------------ filters
    @property
    def source(self) -> str:
        return str(self.sourceCombo.currentData())

    @property
    def since(self) -> str | None:
        return self.sinceEdit.date().toString("yyyy-MM-dd") if self.sinceCheck.isChecked() else None

    def _on_since_toggled(self, on: bool) -> None:
        self.sinceEdit.setEnabled(on)
        self.refresh()

    def _fill_reviewers(self) -> None:
        fill_reviewer_combo(self.reviewerCombo, self.store)

    def reviewer(self) -> Reviewer | None:
        """The reviewer the combo names (None: the default, chosen per game's rules)."""
        data = self.reviewerCombo.currentData()
        if data is None:
            return None
        text, depth = data
        return resolve_reviewer(self.store, text, depth)

    # ------------------------------------------------------------------ loading
    @property
    def loading(self) -> bool:
        return self.load_worker is not None and not self.load_worker.done

    def refresh(self) -> None:
        """Re-read the figures in a worker thread (one load at a time; a request during one reruns it)."""
        from studio.worker import CallWorker

        if self._closed:
            return
        self._dirty = False
        self._fill_reviewers()
        if self.loading:
            self._again = True
            return
        self._again = False
        db_path = self.store.path
        source, since, reviewer = self.source, self.since, self.reviewer()

        def job(_report: Callable[..., None]) -> Progress:
            with connect(db_path) as store:  # the worker thread's own connection
                return progress(store, source=source, since=since, reviewer=reviewer)

        if self.load_worker is not None:
            self.load_worker.deleteLater()
        worker = CallWorker(job, parent=self)
        worker.result.connect(self._on_loaded)
        worker.error.connect(self._on_load_error)
        worker.finished.connect(self._on_load_finished)
        self.load_worker = worker
        worker.start()
        self._update_controls()

    def wait_loaded(self, timeout_s: float = 30.0) -> bool:
        """Block until no load is running (tests, screenshots); True when the figures are in."""
        from PySide6.QtWidgets import QApplication

        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            QApplication.processEvents()
            if not self.loading and not self._again:
                return True
            if self.load_worker is not None:
                self.load_worker.wait(50)
        return False

    def _on_loaded(self, value: object) -> None:
        data: Progress = value  # type: ignore[assignment]
        self.set_data(data)

    def _on_load_error(self, message: str) -> None:
        self.summaryLabel.setText(f"Cannot read the games: {message}")
        self.status.emit(f"Progress: {message}")

    def _on_load_finished(self) -> None:
        if self._again and not self._closed:
            self.refresh()
        self._update_controls()

    # ------------------------------------------------------------------ drawing
    def set_data(self, data: Progress) -> None:
        """Draw ``data`` (what :func:`progress` returned)."""
        self.data = data
        games = data.games
        x = np.arange(1, len(games) + 1, dtype=np.float64)
        ids = [g.game_id for g in games]
        tiles = [math.log2(max(g.max_tile, 1)) for g in games]
        accuracies = [g.accuracy for g in games]
        self._draw("score", x, [float(g.score) for g in games], ids)
        self._draw("tile", x, tiles, ids)
        self._draw("accuracy", x, accuracies, ids)
        for plot in (self.scorePlot, self.tilePlot, self.accuracyPlot):
            plot.setXRange(0.5, max(len(games), 1) + 0.5, padding=0.02)
        if tiles:
            self.tilePlot.setYRange(max(min(tiles) - 0.5, 0.5), max(tiles) + 0.5, padding=0)
        # Accuracies of a person who plays well sit between 90 and 100: a fixed 0..100 axis would flatten
        # every change into one line, so the axis starts a little under the lowest.
        known = [a for a in accuracies if a is not None]
        low = max(0.0, math.floor((min(known) if known else 0.0) / 5.0) * 5.0 - 5.0)
        self.accuracyPlot.setYRange(low, 100.0, padding=0.03)
        self._draw_phases(data)
        unreviewed = len(data.unreviewed)
        self.summaryLabel.setText(data.summary())
        self.reviewButton.setText(
            f"Review {unreviewed:,} unreviewed game{'s' if unreviewed != 1 else ''}"
            if unreviewed
            else "Every game is reviewed"
        )
        self._update_controls()

    def _draw(self, key: str, x: np.ndarray, ys: Sequence[float | None], ids: Sequence[int]) -> None:
        dots, mean = self.series[key]
        known = [i for i, y in enumerate(ys) if y is not None]
        dots.setData(
            x=[float(x[i]) for i in known],
            y=[float(ys[i]) for i in known],  # type: ignore[arg-type]
            data=[ids[i] for i in known],
        )
        # The trend is drawn at the games that have a value only: an unreviewed game has no accuracy,
        # and a line carried over it would claim one.
        xs = np.asarray([x[i] for i in known], dtype=np.float64)
        mean.setData(xs, np.asarray(rolling_mean([ys[i] for i in known], ROLLING), dtype=np.float64))

    def _draw_phases(self, data: Progress) -> None:
        shares = data.shares
        heights = [0.0 if s is None else 100.0 * s for s in shares]
        self.bars.setOpts(x=list(range(len(PHASES))), height=heights, width=0.6)
        for item in self.barLabels:
            self.phasePlot.removeItem(item)
        self.barLabels = []
        top = max([*heights, 1.0])
        for i, (s, b, n) in enumerate(zip(shares, data.blunders, data.graded)):
            text = "no moves" if s is None else f"{100 * s:.1f} %\n{b:,} of {n:,}"
            label = pg.TextItem(text, color="#333" if s is not None else "#999", anchor=(0.5, 1.0))
            label.setPos(i, heights[i] + top * 0.02)
            self.phasePlot.addItem(label)
            self.barLabels.append(label)
        self.phasePlot.setXRange(-0.6, len(PHASES) - 0.4, padding=0)
        self.phasePlot.setYRange(0, top * 1.3, padding=0)

    def _tip(self, x: float, y: float, data: Any) -> str:
        g = self._game(data)
        if g is None:
            return ""
        acc = "not reviewed" if g.accuracy is None else f"accuracy {g.accuracy:.1f} %"
        state = " · being played" if g.status == "playing" else ""
        return (
            f"game #{g.game_id} · {g.date} · {g.source}{state}\nscore {g.score:,} · tile {g.max_tile:,} · "
            f"{g.moves:,} moves counted · {acc}\nclick: open in Replay"
        )

    def _game(self, game_id: Any) -> Any:
        if self.data is None:
            return None
        return next((g for g in self.data.games if g.game_id == game_id), None)

    def _on_points_clicked(self, _item: Any, points: Any, *_: Any) -> None:
        if len(points):
            self.open_game(int(points[0].data()))

    def open_game(self, game_id: int) -> None:
        self.openInReplay.emit(int(game_id))

    def points(self, key: str) -> int:
        """Points drawn in the per-game plot ``key`` ("score", "tile", "accuracy")."""
        return len(self.series[key][0].data)

    # ------------------------------------------------------------------ reviewing
    def _update_controls(self) -> None:
        reviewing = self.reviewing
        pending = len(self.data.unreviewed) if self.data is not None else 0
        self.reviewButton.setEnabled(not reviewing and not self.loading and pending > 0)
        self.cancelButton.setVisible(reviewing)
        self.reviewProgress.setVisible(reviewing)
        for w in (self.sourceCombo, self.sinceCheck, self.reviewerCombo, self.refreshButton):
            w.setEnabled(not reviewing)
        self.sinceEdit.setEnabled(not reviewing and self.sinceCheck.isChecked())

    def start_review(self) -> bool:
        """Review the unreviewed games in a worker thread; False when there are none or one runs."""
        if self.data is None or self.reviewing or not self.data.unreviewed:
            return False
        try:
            reviewer = self.reviewer()
        except ValueError as e:
            self.status.emit(f"Cannot review: {e}")
            return False
        ids = list(self.data.unreviewed)
        db_path = self.store.path
        stop = threading.Event()

        def job(report: Callable[..., None]) -> tuple[int, list[tuple[int, str]]]:
            from studio.services.review import review_games

            def each(k: int, total: int, done: int, moves: int) -> None:
                report(k + (done / moves if moves else 1.0), total, f"game {k + 1} of {total}")

            skipped: list[tuple[int, str]] = []
            with connect(db_path) as store:  # the worker thread's own connection
                reviews = review_games(
                    store,
                    ids,
                    reviewer,
                    progress=each,
                    should_stop=stop.is_set,
                    on_skip=lambda gid, why: skipped.append((gid, why)),
                )
            return sum(r.complete for r in reviews), skipped

        worker = self._review_worker(job, stop)
        worker.finished.connect(self._on_review_finished)
        self.reviewProgress.setRange(0, 1000 * len(ids))
        self.reviewProgress.setValue(0)
        self.reviewProgress.setFormat(f"game 1 of {len(ids)}")
        worker.start()
        self.status.emit(f"Reviewing {len(ids):,} games…")
        self._update_controls()
        return True

    def wait_review(self, timeout_s: float = 120.0) -> bool:
        """Block until the review has ended and the figures are re-read (tests)."""
        from PySide6.QtWidgets import QApplication

        if self.review_worker is not None and not self.review_worker.wait(int(timeout_s * 1000)):
            return False
        QApplication.processEvents()
        return self.wait_loaded(timeout_s)

    def _on_review_progress(self, done: float, total: float, text: str) -> None:
        self.reviewProgress.setRange(0, max(int(1000 * total), 1))
        self.reviewProgress.setValue(int(1000 * done))
        self.reviewProgress.setFormat(text or "%p%")

    def _on_review_result(self, value: object) -> None:
        assert isinstance(value, tuple)  # the job's (games reviewed, [(game id, why not)])
        done: int = value[0]
        skipped: list[tuple[int, str]] = value[1]
        text = f"Reviewed {done:,} games"
        if skipped:
            gid, why = skipped[0]
            text += f"; {len(skipped):,} could not be (game {gid}: {why})"
        self.status.emit(text)

    def _on_review_error(self, message: str) -> None:
        self.status.emit(f"Review failed: {message}")
        self.summaryLabel.setText(f"Review failed: {message}")

    def _on_review_finished(self) -> None:
        self._update_controls()
        if not self._closed:
            self.refresh()  # the reviewed games (a cancelled review's finished ones too) show at once
