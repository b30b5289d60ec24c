"""The Train tab's curves: :class:`CurvesPanel`, one plot per metric group that the agents shown
declare, with the toolbar, the shared run legend and the constants around them.

Events only append and mark the plots dirty; a QTimer redraws the dirty plots (one per tick, at most
10 frames a second each), so the cost of drawing does not grow with the event rate. A re-layout of the
grid (a panel folded into text, a legend grown) moves many plots at once: those paint one per tick too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from agents.base import MetricEvent
from agents.metrics import EPSILON, EVALUATION, LOSS, STANDARD, MetricInfo, metrics_of
from studio.services.runs_model import LIVE, LIVE_KEY, RunKey, RunsChange, RunsModel, ShownChanged
from studio.widgets.curves.layout import lay_panel, wanted_groups
from studio.widgets.curves.legend import ConstantsLabel, RunLegend
from studio.widgets.curves.names import EMPTY_TEXT, _compared_constants, run_colour
from studio.widgets.curves.plots import _Curve, _Panel, flat_value, make_panel, metric_curves
from studio.widgets.curves.series import RunSeries, declared_metrics
from studio.widgets.curves.toolbar import CurvesToolbar, PanelGrid, saved_choices, set_quietly
from studio.widgets.curves.xaxis import X_AXES, AutoLogX, data_x_extent, x_title

#: A panel's metrics when no agent said which (an agent unknown to this build).
DEFAULT_AGENT_METRICS: tuple[MetricInfo, ...] = (LOSS, EPSILON)


class CurvesPanel(QWidget):
    """The Train tab's plots. ``add_events`` feeds a live run; ``add_run`` overlays stored runs.

    Panels (object names): ``scorePlot`` (raw + moving average), ``maxTilePlot``, one per metric group
    of the agents shown (``lossPlot``, ``meanQPlot``, ``tdErrorPlot``...; :func:`_slug` of the group),
    ``speedPlot``. With nothing shown, the panel says so in words and :meth:`panel_titles` lists what
    the agent picked in the launch form will draw.

    The panel is a view of ``model``'s shown runs (a model of its own when given none): it draws
    each change of them, and what is done to it (a run added, the panel cleared) is done to the model.
    """

    def __init__(
        self,
        parent: QWidget | None = None,
        tick_ms: int = 20,
        settings: QSettings | None = None,
        model: RunsModel | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("curvesPanel")
        pg.setConfigOptions(antialias=False, foreground="#333", background="w")
        self.settings = settings
        self.agent_name = ""
        self.agent_infos: tuple[MetricInfo, ...] = metrics_of(
            type("Default", (), {"metrics": DEFAULT_AGENT_METRICS})
        )
        #: the runs drawn are its shown runs (see :attr:`runs`)
        self.model = model if model is not None else RunsModel()
        self._panels: dict[str, _Panel] = {}
        self._curves: list[_Curve] = []
        self._dirty: set[str] = set()  # names of plots with something new to draw
        self._x_extent = (math.nan, math.nan, math.nan)  # see data_x_extent
        self._layout_dirty = True
        self._next = 0  # round-robin position of the timer
        #: plots moved or resized by the last re-layout, painted one per tick (see _stagger_repaints)
        self._frozen: list[str] = []
        self.redraws = 0  # plot updates made (a plot's curves given new data)
        self.constants: list[str] = []  # "Learning rate = 1 (constant)" lines
        self.smoothing, self.x_axis, self.log_x, self.log_y = saved_choices(settings)
        #: log x switched on by itself for the runs shown (AUTO_LOG_X_RATIO), unless declined
        self.auto_log_x = AutoLogX()
        self._log_x_drawn = self.log_x  # what the panels were last drawn with
        self._build()
        # One dirty plot per tick, in turn: a tick's work (and the repaint after it) is one plot, so
        # the GUI thread never stalls for all of them at once.
        self.timer = QTimer(self)
        self.timer.setInterval(tick_ms)
        self.timer.timeout.connect(self._tick)
        self._rebuild()
        self.timer.start()
        self.model.subscribe(self._on_change)

    @property
    def runs(self) -> list[tuple[RunKey, RunSeries]]:
        """The runs drawn, in drawing order: the model's shown runs, under its keys."""
        return self.model.shown

    def _on_change(self, change: RunsChange) -> None:
        if isinstance(change, ShownChanged):
            self._rebuild()

    def _build(self) -> None:
        """The toolbar, the auto log x note, the run legend, the words or the grid, the constants."""
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(2)
        self.toolbar = CurvesToolbar(self.smoothing, self.x_axis, self.log_x, self.log_y)
        outer.addLayout(self.toolbar)
        self.smoothingSlider = self.toolbar.smoothingSlider
        self.smoothingValue = self.toolbar.smoothingValue
        self.xAxisCombo = self.toolbar.xAxisCombo
        self.logXCheck = self.toolbar.logXCheck
        self.logYCheck = self.toolbar.logYCheck
        self.fitButton = self.toolbar.fitButton
        self.smoothingSlider.valueChanged.connect(lambda v: self.set_smoothing(v / 100))
        self.xAxisCombo.currentIndexChanged.connect(lambda _i: self.set_x_axis(self.xAxisCombo.currentData()))
        self.logXCheck.toggled.connect(self.set_log_x)
        self.logYCheck.toggled.connect(self.set_log_y)
        self.fitButton.clicked.connect(self.fit)
        self.fitButton.setEnabled(False)  # until a panel is zoomed or panned (_update_fit)
        # Said on screen when the x axis went log by itself (runs of very different lengths).
        self.autoLogLabel = QLabel()
        self.autoLogLabel.setObjectName("autoLogXLabel")
        self.autoLogLabel.setWordWrap(True)
        self.autoLogLabel.setStyleSheet("color: #a15c00;")
        self.autoLogLabel.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.autoLogLabel.setVisible(False)
        outer.addWidget(self.autoLogLabel)
        self.runLegend = RunLegend()
        outer.addWidget(self.runLegend)
        self.emptyLabel = QLabel()
        self.emptyLabel.setObjectName("curvesEmptyLabel")
        self.emptyLabel.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.emptyLabel.setWordWrap(True)
        self.emptyLabel.setStyleSheet("color: #666; font-size: 11pt;")
        outer.addWidget(self.emptyLabel, 1)
        self.gridScroll = PanelGrid()
        self.gridHost, self.grid = self.gridScroll.host, self.gridScroll.grid
        outer.addWidget(self.gridScroll, 1)
        self.constantsLabel = ConstantsLabel()
        outer.addWidget(self.constantsLabel)

    # ------------------------------------------------------------------ the toolbar's choices
    def _save(self, key: str, value: Any) -> None:
        if self.settings is not None:
            self.settings.setValue(key, value)

    def set_smoothing(self, weight: float) -> None:
        """EMA weight 0..0.99 (0: raw values): smoothable series are drawn smoothed, raw faint behind."""
        weight = min(0.99, max(0.0, float(weight)))
        self.toolbar.show_smoothing(weight)
        if weight == self.smoothing:
            return
        self.smoothing = weight
        self._save("curves/smoothing", round(weight * 100))
        self._rebuild()

    def set_x_axis(self, axis: str) -> None:
        """ "step", "episode" or "elapsed" (wall time): every panel, every run."""
        if axis not in X_AXES:
            raise ValueError(f"no x axis {axis!r}")
        if self.xAxisCombo.currentData() != axis:
            self.xAxisCombo.setCurrentIndex(list(X_AXES).index(axis))  # comes back here
            return
        if axis == self.x_axis:
            return
        self.x_axis = axis
        self._save("curves/xAxis", axis)
        self._rebuild()
        self.fit()

    def set_log_x(self, on: bool) -> None:
        """Log x on every panel (the saved choice). Unticked while it was on by itself (runs of very
        different lengths), it stays off for these runs."""
        if self.logXCheck.isChecked() != on:
            self.logXCheck.setChecked(on)
            return
        if not on:
            self.auto_log_x.decline()
        self.log_x = bool(on)
        self._save("curves/logX", self.log_x)
        self._update_auto_log_x()
        self._rebuild()
        self.fit()

    @property
    def log_x_on(self) -> bool:
        """Whether the panels' x axes are log now: the user's choice, or by themselves (see
        :data:`AUTO_LOG_X_RATIO`) unless the user unticked it for these runs."""
        return self.log_x or self.auto_log_x.active

    @property
    def x_title(self) -> str:
        return x_title(self.x_axis, self.log_x_on)

    def _update_auto_log_x(self) -> bool:
        """Switch log x on by itself when the runs compared differ in length more than
        AUTO_LOG_X_RATIO times (once on, it stays on for these runs: a live run does not flip the
        axis back and forth), and say so; True when the axes must be drawn again."""
        self.auto_log_x.update(tuple(k for k, _r in self.runs), [r for _k, r in self.runs], self.x_axis)
        showing = self.auto_log_x.active and not self.log_x
        self.autoLogLabel.setText(self.auto_log_x.reason if showing else "")
        self.autoLogLabel.setVisible(showing)
        if self.logXCheck.isChecked() != self.log_x_on:
            set_quietly(self.logXCheck, "setChecked", self.log_x_on)
        changed = self.log_x_on != self._log_x_drawn
        self._log_x_drawn = self.log_x_on
        return changed

    def set_log_y(self, on: bool) -> None:
        if self.logYCheck.isChecked() != on:
            self.logYCheck.setChecked(on)
            return
        self.log_y = bool(on)
        self._save("curves/logY", self.log_y)
        self._layout_dirty = True
        self._relayout()
        self.fit()

    def fit(self) -> None:
        """Every panel back to auto range (its whole data)."""
        for p in self._panels.values():
            p.plot.getPlotItem().enableAutoRange()
        self.mark_dirty()
        self.redraw()
        self._update_fit()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        # Both depend on the width only: a few font measurements per resize, nothing per redraw.
        self.runLegend.pack(self.contentsRect().width())
        self.constantsLabel.elide(self.contentsRect().width())

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.timer.start()  # catch up with what arrived while hidden, one plot per tick

    def hideEvent(self, event: Any) -> None:
        # Hidden (another tab in front): events still append, nothing is drawn, so the window's thread
        # stays free for what the user looks at.
        self.timer.stop()
        super().hideEvent(event)

    # ------------------------------------------------------------------ panels
    def __getattr__(self, name: str) -> Any:
        # ``panel.scorePlot``, ``panel.lossPlot``...: the plots of the panels built now.
        panels = self.__dict__.get("_panels")
        if panels is not None and name.endswith("Plot") and name in panels:
            return panels[name].plot
        raise AttributeError(name)

    def _fallback_infos(self) -> tuple[MetricInfo, ...]:
        return self.agent_infos if self.agent_infos else STANDARD

    def panel_titles(self, shown_only: bool = True) -> list[str]:
        """Titles of the panels, in order: those drawn now (with no run shown: what the agent picked
        would draw), or all that are built but an evaluation panel no run shown can fill within its
        budget (see :meth:`RunSeries.set_evaluation`)."""
        never = bool(self.runs) and all(r.eval_plan is not None and not r.eval_plan[0] for _k, r in self.runs)
        return [
            p.title
            for p in self._panels.values()
            if (p.shown or not shown_only or not self.runs) and not (never and p.kind == "evaluation")
        ]

    def legend_names(self, title: str | None = None) -> list[str]:
        """Names of the series drawn, one per line with a legend entry ("run 1 · dqn · Loss" when runs
        are compared, "Loss" alone), of one panel (by title or object name) or of all."""
        out: list[str] = []
        for p in self._panels.values():
            if title is None or title in (p.title, p.name):
                out += p.legend
        return out

    def panel_legend(self, title: str) -> list[str]:
        """What a panel's header lists after its title (by title or object name): its series when one
        run is shown, its metrics only when runs are compared (the shared run legend names the runs)."""
        return next((list(p.entries) for p in self._panels.values() if title in (p.title, p.name)), [])

    @property
    def run_legend(self) -> list[str]:
        """The shared run legend's entries ("run 5"), one per run shown; empty with one run or none."""
        return self.runLegend.entries

    def set_agent(self, agent: Any, infos: Sequence[MetricInfo] | None = None) -> None:
        """The agent picked in the launch form (a class, a registered name, or None): with no run
        shown, the panels are that agent's (empty, with their titles) and nothing else is left."""
        if infos is None:
            if isinstance(agent, str):
                found = declared_metrics(agent)  # None: not an agent of this build
            else:
                found = metrics_of(agent) if agent is not None else None
            infos = found if found is not None else STANDARD
        self.agent_name = getattr(agent, "name", agent) or ""
        self.agent_infos = tuple(infos)
        self._rebuild()

    # ------------------------------------------------------------------ runs
    @property
    def live(self) -> RunSeries | None:
        """The first run training here (key ``("live", n)``: several may train at once)."""
        return next((run for key, run in self.runs if isinstance(key, tuple) and key[0] == LIVE), None)

    def start_live(self, label: str = "live", agent: str = "") -> RunSeries:
        """Begin a fresh live run under :data:`LIVE_KEY` (replacing the previous one); overlays stay."""
        run = RunSeries(label, agent=agent)
        self.model.show([(LIVE_KEY, run), *((k, r) for k, r in self.runs if k != LIVE_KEY)])
        return run

    def add_run(self, key: RunKey, run: RunSeries) -> None:
        """Show ``run`` (e.g. a stored run re-opened) beside the others; same key replaces."""
        self.model.add(key, run)

    def set_runs(self, runs: Sequence[tuple[RunKey, RunSeries]]) -> None:
        """Show exactly these runs."""
        self.model.show(runs)

    def remove_run(self, key: RunKey) -> None:
        self.model.remove(key)

    def clear(self) -> None:
        self.model.show([])

    def add_events(self, events: Iterable[MetricEvent], key: RunKey = LIVE_KEY) -> None:
        """Feed live run ``key`` (cheap: appends and marks dirty; the timer redraws)."""
        run = self.model.series(key)
        if run is None:
            if key != LIVE_KEY:
                return  # a run no longer shown (the user re-opened others meanwhile)
            run = self.start_live()
        run.add_events(events)
        self.mark_dirty()

    def mark_dirty(self) -> None:
        self._dirty.update(self._panels)
        self._layout_dirty = True

    # ------------------------------------------------------------------ building
    def _rebuild(self) -> None:
        wanted = wanted_groups([r for _k, r in self.runs], self._fallback_infos(), self.agent_infos)
        if [t for t, _ in wanted] != [p.title for p in self._panels.values()]:
            for p in self._panels.values():
                self.grid.removeWidget(p.box)
                p.box.setParent(None)
                p.box.deleteLater()
            self._panels = {}
            self._frozen = []  # those plots are gone
            for title, infos in wanted:
                p = make_panel(title, infos, self.x_axis, self.x_title, self.gridHost, self._range_changed)
                self._panels[p.name] = p
        else:
            for p, (_t, infos) in zip(self._panels.values(), wanted, strict=True):
                p.reset(infos, self.x_axis, self.x_title)
        for p in self._panels.values():
            p.legend = []
        self._curves = []
        many = len(self.runs) > 1
        for i, (_key, run) in enumerate(self.runs):
            colour = run_colour(run, i)
            declared = {m.name for m in (run.infos or self._fallback_infos())}
            for p in self._panels.values():
                j = 0
                count = sum(info.name in declared for info in p.infos)
                for info in p.infos:
                    if info.name not in declared:
                        continue  # only what this run's agent has: no "run 1 · dqn · TD error"
                    curves = metric_curves(p, run, info, colour, j, many, count, self.smoothing, self.x_axis)
                    self._curves += curves
                    if any(c.name for c in curves):  # a named line used the shade
                        j += 1
        self._layout_dirty = True
        self._relayout()
        self.mark_dirty()
        self._push_dirty()

    # ------------------------------------------------------------------ layout: constants, log axes
    def _relayout(self) -> None:
        """Which panels show (a group whose series are all constant is a line of text), their log axes,
        their legends, the grid; the words instead of plots when no run is shown."""
        if not self._layout_dirty:
            return
        self._layout_dirty = False
        before = self._plot_places()
        if self._update_auto_log_x():
            # The x axis changed to (or from) log by itself: the curves are drawn again on it.
            self._rebuild()
            self.fit()
            return
        width = self.contentsRect().width()
        many = len(self.runs) > 1
        self.runLegend.show_runs([run for _k, run in self.runs], width)
        runs = [run for _k, run in self.runs]
        found = [c for p in self._panels.values() for c in lay_panel(p, runs, self._curves, *self._axes())]
        if many:
            constants = _compared_constants(found, len(self.runs))
        else:
            constants = [f"{label} = {value} ({note})" for label, note, _who, value in found]
        if not many:
            # When the run's first evaluation comes (or that none comes within its budget), while the
            # evaluation panel waits for it: a panel listed for a run that never evaluates said nothing.
            constants += [
                run.eval_plan[1]
                for _k, run in self.runs
                if run.eval_plan is not None and not any(run.count(m.name) for m in EVALUATION)
            ]
        self.constants = constants
        self.constantsLabel.show_constants(constants, many, width)
        self.gridScroll.place([(p.box, p.shown) for p in self._panels.values()])
        empty = not self.runs
        if empty:
            titles = " · ".join(p.title for p in self._panels.values())
            who = f"{self.agent_name} draws" if self.agent_name else "Panels"
            self.emptyLabel.setText(f"{EMPTY_TEXT}<br><br><small>{who}: {titles}</small>")
        self.emptyLabel.setVisible(empty)
        self.gridHost.setVisible(not empty)
        self.gridScroll.setVisible(not empty)
        self._stagger_repaints(before)

    def _plot_places(self) -> dict[str, tuple[bool, Any, Any]]:
        """Where each panel's plot is: shown, its box's and its own geometry."""
        return {n: (p.box.isVisible(), p.box.geometry(), p.plot.geometry()) for n, p in self._panels.items()}

    def _stagger_repaints(self, before: dict[str, tuple[bool, Any, Any]]) -> None:
        """Plots that the re-layout moved, resized or showed are painted one per tick, not all at once.

        A panel folded into text or back, a header or the constants line growing: the grid re-lays and
        Qt repaints every plot it moved in one frame (10-25 ms a plot, 60-100 ms of the window's
        thread on a 2-core machine; 150-180 ms stalls while PPO trained). Each such plot keeps its
        old pixels (updates off) until the timer lets it paint, one a tick (:meth:`_thaw_one`).
        """
        if not self.isVisible():
            return  # nothing is painted while hidden; the timer catches up when shown
        # Settle the geometry now (Qt would do it on its next pass), so what moved is known here.
        layout = self.layout()
        if layout is not None:
            layout.activate()
        self.grid.activate()
        for p in self._panels.values():  # a header that grew or shrank moves its plot in the box
            box_layout = p.box.layout()
            if box_layout is not None:
                box_layout.activate()
        after = self._plot_places()
        for name, p in self._panels.items():
            if after[name][0] and before.get(name) != after[name] and name not in self._frozen:
                p.plot.setUpdatesEnabled(False)
                self._frozen.append(name)

    def _thaw_one(self) -> str | None:
        """Let the next frozen plot paint (updates back on repaints it whole); its name."""
        while self._frozen:
            name = self._frozen.pop(0)
            panel = self._panels.get(name)
            if panel is not None:
                panel.settle()  # its new size changed its range: settled now, or it paints twice
                panel.plot.setUpdatesEnabled(True)
                return name
        return None

    def _axes(self) -> tuple[bool, bool, str]:
        """Log y asked, log x now, the x axis's title: how the panels' axes are laid."""
        return self.log_y, self.log_x_on, self.x_title

    # ------------------------------------------------------------------ drawing
    def redraw(self) -> None:
        """Bring every dirty plot up to date now and paint them all in the next frame (tests, a run that
        ended, Fit); the timer does one per tick."""
        self._push_dirty()
        while self._thaw_one() is not None:
            pass

    def _push_dirty(self) -> None:
        """Every dirty plot's new data, now; the grid laid out (plots it moves paint one a tick)."""
        for name in list(self._panels):
            if name in self._dirty:
                self._update_plot(name)
        self._relayout()

    def _tick(self) -> None:
        names = list(self._panels)
        self._relayout()
        thawed = self._thaw_one()
        if thawed is not None:
            # This tick's paint is that plot, whole: its new data goes in the same frame.
            if thawed in self._dirty:
                self._update_plot(thawed)
            return
        for k in range(len(names)):
            name = names[(self._next + k) % len(names)]
            if name in self._dirty:
                self._next = (self._next + k + 1) % len(names)
                self._update_plot(name)
                return

    def _update_plot(self, name: str) -> None:
        """Push new data to one plot's curves.

        While a plot follows the data (auto range), its curves come from incremental decimators, so
        this costs O(plot width) per curve. Once the user zooms or pans, the visible slice is
        decimated afresh (O(visible points)) whenever the range or the data changes.
        """
        self._dirty.discard(name)
        panel = self._panels.get(name)
        if panel is None:
            return
        if panel.push(self._curves):
            self.redraws += 1
        extent = data_x_extent((c.run.metrics.get(c.metric), c.axis) for c in self._curves)
        if extent != self._x_extent:
            self._x_extent = extent
            self._dirty.update(n for n in self._panels if n != name)  # the others line up next ticks
        panel.span(extent)
        panel.flatten(flat_value(self._curves, name))
        panel.settle()

    def _range_changed(self, name: str) -> None:
        # A zoom or pan needs the visible slice decimated again (a no-op while following the data).
        self._dirty.add(name)
        self._update_fit()

    def _update_fit(self) -> None:
        # Fit can do something only once a panel left its auto range (a zoom or a pan): greyed
        # before, so that a click on it never does nothing.
        off = any(
            not all(p.plot.getPlotItem().getViewBox().autoRangeEnabled()) for p in self._panels.values()
        )
        self.fitButton.setEnabled(off)

    def data_length(self, plot_name: str) -> int:
        """Raw points behind the fullest curve of a plot (``"scorePlot"`` ...): for tests and status lines."""
        return max((c.drawn for c in self._curves if c.panel == plot_name), default=0)

    def curve(self, plot_name: str, name: str) -> _Curve:
        """The curve named ``name`` in a plot's legend (tests)."""
        return next(c for c in self._curves if c.panel == plot_name and c.name == name)
