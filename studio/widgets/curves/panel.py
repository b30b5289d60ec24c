"""The Train tab's curves: :class:`CurvesPanel`, one plot per metric group that the agents shown
declare, with the toolbar, the shared run legend and the constants around them.

Events only append and mark the plots dirty; a QTimer redraws the dirty plots (one per tick, at most
10 frames a second each), so the cost of drawing does not grow with the event rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import pyqtgraph as pg
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from agents.base import MetricEvent
from agents.metrics import EPSILON, EVALUATION, LOSS, STANDARD, MetricInfo, groups, metrics_of
from studio.widgets.curves.decimate import points_to_draw
from studio.widgets.curves.legend import ConstantsLabel, RunLegend, _metric_colour, _panel_header
from studio.widgets.curves.lines import metric_lines
from studio.widgets.curves.names import (
    EMPTY_TEXT,
    _compared_constants,
    _short_name,
    run_colour,
)
from studio.widgets.curves.plots import MARKER_POINTS, _Curve, _Panel, make_panel
from studio.widgets.curves.series import RunSeries, declared_metrics
from studio.widgets.curves.ticks import format_si
from studio.widgets.curves.toolbar import CurvesToolbar, PanelGrid, set_quietly
from studio.widgets.curves.xaxis import X_AXES, AutoLogX, data_x_extent, x_title

#: A panel's metrics when no agent said which (an agent unknown to this build).
DEFAULT_AGENT_METRICS: tuple[MetricInfo, ...] = (LOSS, EPSILON)


class RunsSource(Protocol):
    """A list of runs a panel may be a view of (the Train tab's runs model, Qt-free)."""

    def show(self, runs: Iterable[Any]) -> None: ...


class CurvesPanel(QWidget):
    """The Train tab's plots. ``add_events`` feeds a live run; ``add_run`` overlays stored runs.

    Panels (object names): ``scorePlot`` (raw + moving average), ``maxTilePlot``, one per metric group
    of the agents shown (``lossPlot``, ``meanQPlot``, ``tdErrorPlot``...; :func:`_slug` of the group),
    ``speedPlot``. With nothing shown, the panel says so in words and :meth:`panel_titles` lists what
    the agent picked in the launch form will draw.
    """

    def __init__(
        self, parent: QWidget | None = None, tick_ms: int = 20, settings: QSettings | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("curvesPanel")
        pg.setConfigOptions(antialias=False, foreground="#333", background="w")
        self.settings = settings
        self.agent_name = ""
        self.agent_infos: tuple[MetricInfo, ...] = metrics_of(
            type("Default", (), {"metrics": DEFAULT_AGENT_METRICS})
        )
        self.runs: list[tuple[object, RunSeries]] = []  # (key, series); key ("live", n), a run id...
        #: the list of runs the panel is a view of, when bound (see :meth:`bind`)
        self._source: RunsSource | None = None
        self._panels: dict[str, _Panel] = {}
        self._curves: list[_Curve] = []
        self._dirty: set[str] = set()  # names of plots with something new to draw
        self._x_extent = (math.nan, math.nan, math.nan)  # see data_x_extent
        self._layout_dirty = True
        self._next = 0  # round-robin position of the timer
        self.redraws = 0  # plot updates made (a plot's curves given new data)
        self.constants: list[str] = []  # "Learning rate = 1 (constant)" lines
        self._load_settings()
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

    def _load_settings(self) -> None:
        from studio.settings import get_bool, get_int

        s = self.settings
        self.smoothing = min(0.99, max(0.0, (get_int(s, "curves/smoothing", 0) if s else 0) / 100))
        x_axis = str(s.value("curves/xAxis", "step")) if s else "step"
        self.x_axis = x_axis if x_axis in X_AXES else "step"
        self.log_y = get_bool(s, "curves/logY", False) if s else False
        self.log_x = get_bool(s, "curves/logX", False) if s else False

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

    def _wanted_groups(self) -> list[tuple[str, list[MetricInfo]]]:
        infos: dict[str, MetricInfo] = {}
        sources = [run.infos or self._fallback_infos() for _k, run in self.runs] or [self.agent_infos]
        for src in sources:
            for m in src:
                infos.setdefault(m.name, m)
        return groups(infos.values())

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
        """The first live run (key ``"live"`` or ``("live", n)``: several may train at once)."""
        for key, run in self.runs:
            if key == "live" or (isinstance(key, tuple) and key and key[0] == "live"):
                return run
        return None

    def bind(self, source: RunsSource) -> None:
        """Make the panel a view of ``source``'s shown runs: its own changes (``add_run``, ``clear``,
        ``set_runs``...) are made there, and whoever owns ``source`` calls :meth:`draw` on its changes."""
        self._source = source

    def draw(self, runs: Sequence[tuple[object, RunSeries]]) -> None:
        """Draw exactly these runs (a bound source's shown runs; changes nothing else)."""
        self.runs = list(runs)
        self._rebuild()

    def _show(self, runs: list[tuple[object, RunSeries]]) -> None:
        if self._source is not None:
            self._source.show(runs)  # its owner draws them (and its other views follow)
        else:
            self.draw(runs)

    def _others(self, key: object) -> list[tuple[object, RunSeries]]:
        """The runs shown but the one of ``key``."""
        return [(k, r) for k, r in self.runs if k != key]

    def start_live(self, label: str = "live", agent: str = "") -> RunSeries:
        """Begin a fresh live run (replacing the previous live one); overlays stay."""
        run = RunSeries(label, agent=agent)
        self._show([("live", run), *self._others("live")])
        return run

    def add_run(self, key: object, run: RunSeries) -> None:
        """Show ``run`` (e.g. a stored run re-opened) beside the others; same key replaces."""
        self._show([*self._others(key), (key, run)])

    def set_runs(self, runs: Sequence[tuple[object, RunSeries]]) -> None:
        """Show exactly these runs."""
        self._show(list(runs))

    def remove_run(self, key: object) -> None:
        self._show(self._others(key))

    def clear(self) -> None:
        self._show([])

    def add_events(self, events: Iterable[MetricEvent], key: object = "live") -> None:
        """Feed live run ``key`` (cheap: appends and marks dirty; the timer redraws)."""
        run = next((r for k, r in self.runs if k == key), None)
        if run is None:
            if key != "live":
                return  # a run no longer shown (the user re-opened others meanwhile)
            run = self.start_live()
        run.add_events(events)
        self.mark_dirty()

    def mark_dirty(self) -> None:
        self._dirty.update(self._panels)
        self._layout_dirty = True

    # ------------------------------------------------------------------ building
    def _rebuild(self) -> None:
        wanted = self._wanted_groups()
        if [t for t, _ in wanted] != [p.title for p in self._panels.values()]:
            for p in self._panels.values():
                self.grid.removeWidget(p.box)
                p.box.setParent(None)
                p.box.deleteLater()
            self._panels = {}
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
                    if self._add_metric(p, run, info, colour, j, many, count):
                        j += 1
        self._layout_dirty = True
        self._relayout()
        self.mark_dirty()
        self.redraw()

    def _add_metric(
        self, p: _Panel, run: RunSeries, info: MetricInfo, colour: str, j: int, many: bool, count: int = 1
    ) -> bool:
        """Draw one metric of a run on a panel (the ``j``-th of its ``count`` there); False when it
        draws no named line (no shade used)."""
        transform = "log2" if p.transform == "log2" else ""
        lines = metric_lines(run, info, j, many, self.smoothing, transform)
        mc = _metric_colour(colour, j, many, count)
        pens = {
            "faint": pg.mkPen(pg.mkColor(mc).lighter(175), width=1),
            "strong": pg.mkPen(mc, width=2),
            "plain": pg.mkPen(mc, width=1.5),
        }
        for line in lines:
            item = pg.PlotDataItem(pen=pens[line.pen])
            # addItem applies the plot's downsampling / clip settings (set in make_panel) to the item.
            p.plot.addItem(item)
            line_colour = pens[line.pen].color().name()
            self._curves.append(
                _Curve(
                    item,
                    p.plot,
                    p.name,
                    run,
                    line.metric,
                    self.x_axis,
                    line.name,
                    line_colour,
                    line.moving_average,
                    line.smooth,
                    line.transform,
                    label=line.label,
                    shade=line.shade,
                )
            )
        return any(line.name for line in lines)

    # ------------------------------------------------------------------ layout: constants, log axes
    def _relayout(self) -> None:
        """Which panels show (a group whose series are all constant is a line of text), their log axes,
        their legends, the grid; the words instead of plots when no run is shown."""
        if not self._layout_dirty:
            return
        self._layout_dirty = False
        if self._update_auto_log_x():
            # The x axis changed to (or from) log by itself: the curves are drawn again on it.
            self._rebuild()
            self.fit()
            return
        width = self.contentsRect().width()
        many = len(self.runs) > 1
        self.runLegend.show_runs([run for _k, run in self.runs], width)
        found = [found for p in self._panels.values() for found in self._lay_panel(p)]
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

    def _lay_panel(self, p: _Panel) -> list[tuple[str, str, str, str]]:
        """Whether panel ``p`` shows, its log axes and its header; its constants, as (label, note, run,
        value): a group whose series are all constant is a line of text, not a plot."""
        any_events = any(run.events for _k, run in self.runs)
        many = len(self.runs) > 1
        with_agent = many and len({run.agent for _k, run in self.runs}) > 1
        mine = [c for c in self._curves if c.panel == p.name and c.name]
        with_data = [(c, c.run.metrics[c.metric]) for c in mine if c.run.count(c.metric)]
        collapsible = p.kind not in ("score", "speed")
        evaluations = {m.name for m in p.infos if m.kind == "evaluation"}
        # One value of a metric that comes with every event says nothing yet: folded into text at
        # its first value and back to a plot at its second, a moving series (the TD error) re-laid
        # the grid twice in a run's first second, and every plot was painted anew each time. A
        # single evaluation (ten minutes apart) is a value to read, so it folds at once.
        all_const = (
            bool(with_data)
            and collapsible
            and all(s.constant and (len(s) > 1 or c.metric in evaluations) for c, s in with_data)
        )
        # A panel of the agent's own metrics stays up before its data comes (DQN's losses start after
        # its first thousand moves): showing it then would re-lay the grid and paint new plots in one
        # frame, the window's longest stall. A standard panel no run fills (imitation plays no
        # games, so it has no score) goes once events flow.
        own = any(m not in STANDARD for m in p.infos)
        # A panel of evaluations alone waits folded: its first value is a line of text anyway (see
        # above), so a plot shown before it would only be folded at that first value, re-laying the
        # grid (with every plot painted anew) in a run's first second.
        waits_folded = not with_data and bool(evaluations) and len(evaluations) == len(p.infos)
        p.shown = (
            bool(self.runs)
            and not all_const
            and not waits_folded
            and (bool(with_data) or not any_events or own)
        )
        found = []
        if all_const:
            info_of = {m.name: m for m in p.infos}
            for c, s in with_data:
                note = "constant" if len(s) > 1 else "the first value"  # one evaluation is no trend yet
                value = format_si(s.lo, abs(s.lo) / 1000 or None)
                found.append((info_of[c.metric].label, note, _short_name(c.run, with_agent), value))
        log_pref = self.log_y or any(m.scale == "log" for m in p.infos)
        # No data yet counts as positive: the axis then needs no switch (a re-layout) when it comes.
        positive = all(s.lo > 0 for _c, s in with_data)
        p.set_log(self.log_x_on, log_pref and positive and p.transform != "log2", self.x_title)
        # An agent's declared series are named before their data comes, so the header keeps
        # its height then (a header that grows shrinks and repaints every plot in its row).
        named = [c for c in mine if c.run.count(c.metric) or own]
        if own and any(c.run.count(c.metric) for c in named):
            # Once data flows, what came is listed: an agent reports a tile's rate once a game
            # reached that tile, and "Reached 65536" with no line in a two-minute run said nothing.
            named = [c for c in named if c.run.count(c.metric)]
        legend = list(dict.fromkeys(c.name for c in named))
        if legend != p.legend or not p.header.text():
            p.legend = legend
            p.entries, text = _panel_header(p.title, named, many)
            p.header.setText(text)
        return found

    # ------------------------------------------------------------------ drawing
    def redraw(self) -> None:
        """Bring every dirty plot up to date now (tests, a re-opened run); the timer does one per tick."""
        for name in list(self._panels):
            if name in self._dirty:
                self._update_plot(name)
        self._relayout()

    def _tick(self) -> None:
        names = list(self._panels)
        self._relayout()
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
        vb = panel.plot.getPlotItem().getViewBox()
        xr: tuple[float, float] | None = None
        if not vb.autoRangeEnabled()[0]:  # zoomed or panned: not following the data
            lo, hi = vb.viewRange()[0]
            xr = (10.0**lo, 10.0**hi) if panel.log_x else (lo, hi)
        changed = False
        for c in self._curves:
            if c.plot is panel.plot:
                changed = self._update_curve(c, xr, panel.log_x) or changed
        if changed:
            self.redraws += 1
        extent = data_x_extent((c.run.metrics.get(c.metric), c.axis) for c in self._curves)
        if extent != self._x_extent:
            self._x_extent = extent
            self._dirty.update(n for n in self._panels if n != name)  # the others line up next ticks
        panel.span(extent)
        panel.flatten(self._flat_value(name))
        # The new range, settled here rather than in pyqtgraph's prepare-for-paint: changed there,
        # it asks for a second paint of the plot, and every update was painted twice.
        vb.updateAutoRange()
        vb.updateMatrix()

    def _flat_value(self, name: str) -> float | None:
        """The one value of every series drawn on plot ``name`` when they are all flat, else None."""
        series = [c.run.metrics.get(c.metric) for c in self._curves if c.panel == name and c.name]
        values = {(s.lo, s.hi) for s in series if s is not None and len(s)}
        if len(values) == 1:
            lo, hi = next(iter(values))
            return lo if lo == hi else None
        return None

    @staticmethod
    def _update_curve(c: _Curve, xr: tuple[float, float] | None, log_x: bool) -> bool:
        """Give one curve its points if its data or the range shown moved; False when nothing did."""
        s = c.run.metrics.get(c.metric)
        n = len(s) if s is not None else 0
        if n == c.drawn and xr == c.zoomed_range:
            return False
        c.drawn, c.zoomed_range = n, xr
        if s is None or n == 0:
            c.item.setData([], [])
            return True
        index_x = s.uses_index(c.axis)
        if index_x != c.index_x:
            c.index_x = index_x
            c.decimator.reset()
        y = c.run.values(c.metric, c.moving_average, c.smooth)
        dx, dy = points_to_draw(s.x(c.axis), y, c.decimator, xr, c.transform, log_x)
        c.show_markers(bool(c.name) and not c.moving_average and c.smooth == 0 and n <= MARKER_POINTS)
        c.item.setData(dx, dy)
        return True

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
