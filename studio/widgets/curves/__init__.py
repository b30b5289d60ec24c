"""Live training curves (pyqtgraph), one panel per metric group that the agents shown declare.

Panels come from the metric metadata (:mod:`agents.metrics`): Score (+ moving average), Max tile
(log2 axis), one panel per group of the agent's own metrics (loss, mean Q, exploration...), Speed. A
series whose values are all equal is a line of text ("Learning rate = 1 (constant)"), not a panel.
A toolbar over the panels sets the smoothing (an EMA as TensorBoard's, the raw series faint behind),
the x axis (step / episode / wall time), log axes, and fits every panel to its data.

Several runs can be shown at once (the live ones and runs re-opened from the store to compare); a run
keeps its colour (chosen by its run id) whatever else is shown. Each series is named "run N · agent ·
metric" (:meth:`CurvesPanel.legend_names`, :meth:`CurvesPanel.curve`).

The modules, by concept (the first five import no Qt, checked by ``tests/studio/test_curves_qt_free.py``):

- :mod:`.series`: one run's metrics as they grow (buffers, moving averages, EMA smoothing);
- :mod:`.decimate`: min/max decimation of a curve to a plot's width;
- :mod:`.xaxis`: the x axis (which counter, each run's reach, log x by itself, the shared extent);
- :mod:`.ticks`: tick text (10M, 1h10m, 8k);
- :mod:`.names`: run colours and names, the constants' wording;
- :mod:`.axes`: the pyqtgraph axis items; :mod:`.plots`: a panel's plot and its curves;
- :mod:`.legend`: panel headers, the shared run legend, the constants label;
- :mod:`.toolbar`: the controls over the panels and the scrolling grid; :mod:`.panel`: :class:`CurvesPanel`.
"""

from studio.widgets.curves.axes import GridAxis, SIAxis, TileAxis, XExtent, show_grid
from studio.widgets.curves.decimate import PeakDecimator, peak_decimate, points_to_draw
from studio.widgets.curves.legend import (
    CONSTANT_LINES,
    NEUTRAL,
    RUN_LEGEND_ROWS,
    _panel_header,
)
from studio.widgets.curves.names import EMPTY_TEXT, RUN_COLOURS, mean_score_label, run_colour
from studio.widgets.curves.panel import DEFAULT_AGENT_METRICS, CurvesPanel
from studio.widgets.curves.plots import MARKER_POINTS
from studio.widgets.curves.series import (
    DEFAULT_MEAN_WINDOW,
    MAX_TILE,
    SCORE,
    SPEED,
    GrowingArray,
    MetricSeries,
    RunSeries,
    ema,
)
from studio.widgets.curves.ticks import format_duration_tick, format_si, tile_label, time_tick_spacing
from studio.widgets.curves.toolbar import MIN_ROW_PX
from studio.widgets.curves.xaxis import AUTO_LOG_X_RATIO, X_AXES, X_TITLES

__all__ = [
    "AUTO_LOG_X_RATIO",
    "CONSTANT_LINES",
    "DEFAULT_AGENT_METRICS",
    "DEFAULT_MEAN_WINDOW",
    "EMPTY_TEXT",
    "MARKER_POINTS",
    "MAX_TILE",
    "MIN_ROW_PX",
    "NEUTRAL",
    "RUN_COLOURS",
    "RUN_LEGEND_ROWS",
    "SCORE",
    "SPEED",
    "X_AXES",
    "X_TITLES",
    "CurvesPanel",
    "GridAxis",
    "GrowingArray",
    "MetricSeries",
    "PeakDecimator",
    "RunSeries",
    "SIAxis",
    "TileAxis",
    "XExtent",
    "_panel_header",
    "ema",
    "format_duration_tick",
    "format_si",
    "mean_score_label",
    "peak_decimate",
    "points_to_draw",
    "run_colour",
    "show_grid",
    "tile_label",
    "time_tick_spacing",
]
