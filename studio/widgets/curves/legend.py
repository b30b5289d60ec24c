"""Legends of the curves: each panel's header (its metrics, in its runs' colours or shades), the
shared run legend above the grid, and the constants under it.

With several runs, colours say which run a line is: one shared run legend (:class:`RunLegend`) names
the runs ("run 5"), each panel's header names only its metrics (a run's metrics on a shared axis are
shades of its colour), and the constants (:class:`ConstantsLabel`) are one line per metric, elided to
the width, the whole text in the tooltip, so that a sweep of eight trials leaves the plots their height.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics
from PySide6.QtWidgets import QLabel, QSizePolicy

from studio.widgets.curves.names import _short_name, _unbroken, run_colour
from studio.widgets.curves.series import RunSeries

if TYPE_CHECKING:
    from studio.widgets.curves.plots import _Curve

#: Rows the shared run legend takes at most before the rest is "+N more" (in its tooltip).
RUN_LEGEND_ROWS = 2
#: Lines of constants under the grid at most, whatever the number of runs (the rest: the tooltip).
CONSTANT_LINES = 3
#: Swatch colour of a panel's metrics when runs are compared: the runs own the colours then, so a
#: metric's swatch is a neutral grey, shaded as each run's j-th metric is (see _metric_colour).
NEUTRAL = "#a0a0a0"


#: A run's metrics on one axis from this many on are drawn in distinct hues, turned from the run's
#: own (alternately either side, a step further each): four or more shades of one blue (the tile
#: rates) could not be told apart. Fewer keep the shades (a loss and its validation loss read as one
#: family). The same colours alone and compared, and never another run's palette colour.
DISTINCT_FROM = 3
#: How far each further metric's hue turns (a fraction of the colour wheel), and its shade steps.
HUE_STEP = 0.12
DISTINCT_SHADE = 10


def _metric_colour(run_colour: str, j: int, many_runs: bool, count: int = 1) -> Any:
    """Colour of a run's j-th metric (of ``count`` on the axis) on a shared plot (loss + validation loss...).

    Solid lines only: Qt strokes a dashed pen along the whole zigzag of a noisy curve, which took
    most of a second per repaint on a long run. Shades of the run's colour, alone or compared
    (``many_runs`` no longer matters): a run's second metric took another run's palette colour
    when it was shown alone, so its line changed colour between the single-run and the compare view.
    From DISTINCT_FROM metrics on, hues turned from the run's (see there) and lighter steps.
    """
    base = pg.mkColor(run_colour)
    if count >= DISTINCT_FROM and j > 0:
        h, s, v, _a = base.getHsvF()
        turn = HUE_STEP * ((j + 1) // 2) * (1 if j % 2 else -1)
        hue = (h + turn) % 1.0 if h >= 0 else 0.0  # grey (the compare legend's swatches) has no hue
        return QColor.fromHsvF(hue, s, v).darker(100 + DISTINCT_SHADE * min(j, 4))
    # Gentle steps: past a few, darker(100 + 60 j) made every run's line near black, and the colour
    # is what tells the runs apart.
    return pg.mkColor(run_colour).darker(100 + 40 * min(j, 4))


def _panel_header(title: str, curves: Sequence[_Curve], many_runs: bool) -> tuple[list[str], str]:
    """A panel's legend: (its entries, the header's HTML).

    One run: every series in its colour ("Score (mean of 100)"). Runs compared: the colours belong to
    the runs (the shared legend above the grid), so the header lists the panel's metrics once each,
    with a grey swatch shaded as each run's line of that metric is, and says so once
    ("shades per run": each run draws its metrics in shades of its colour, in this order); a lone metric
    needs no swatch, and what its name repeats of the title is left out ("Max tile (geo. mean of
    100)" under "Max tile" reads "(geo. mean of 100)").
    """
    head = f"<b>{_unbroken(title)}</b>"
    sep = "&nbsp;&nbsp; "  # the only place a header line may break: between entries, not inside one
    if not many_runs:
        entries = list(dict.fromkeys(c.name for c in curves))
        colour = {c.name: c.colour for c in reversed(curves)}  # the first curve's colour of a name
        # "Reached ■ 2048 ■ 4096 ■ 8192": the word every entry starts with, said once (a line of
        # header less is a line of plot more)
        first = {n.split(" ", 1)[0] for n in entries}
        common = (
            next(iter(first)) + " "
            if len(entries) > 2 and len(first) == 1 and all(" " in n for n in entries)
            else ""
        )
        parts = [
            f"<span style='color:{colour[n]}'>&#9632;</span>&nbsp;{_unbroken(n.removeprefix(common))}"
            for n in entries
        ]
        if common:
            parts.insert(0, _unbroken(common.strip()))
        return entries, sep.join([head, *parts])
    shade: dict[str, int] = {}
    for c in curves:
        shade.setdefault(c.label or c.name, c.shade)
    entries = list(shade)
    if not entries:
        return entries, head
    if len(entries) == 1:
        only = entries[0]
        # "Greedy evaluation: mean score" under "Greedy evaluation" reads "mean score", not ": mean score"
        rest = only[len(title) :].lstrip(" :·-–").strip() if only.startswith(title) else only
        if not rest:
            return entries, head
        return entries, f"{head}{sep}<span style='color:#555'>{_unbroken(rest)}</span>"
    # A first word all entries share is said once ("Reached ■ 2048 ■ 8192"): four tile rates and the
    # hint then fit one line of a half-width panel, and every line of header is a line less of plot.
    # The leading words all entries share are said once: "Mean score (last 1,000 games) · (last 100
    # games)", two runs' means of different windows, not "Mean ■ score (last 1,000...)".
    words = [e.split(" ") for e in entries]
    k = 0
    # (up to a parenthesis: "(last 100 games)" stays whole)
    while all(len(w) > k + 1 for w in words) and len({w[k] for w in words}) == 1 and words[0][k][:1] != "(":
        k += 1
    common = " ".join(words[0][:k]) + " " if k else ""
    if len(set(shade.values())) == 1:
        # One shade for all (each run's first metric of this axis): swatches would tell nothing apart.
        rest = " · ".join(_unbroken(e.removeprefix(common)) for e in entries)
        body = f"<span style='color:#555'>{_unbroken(common.strip())}&nbsp;{rest}</span>"
        return entries, sep.join([head, body])
    parts = [
        f"<span style='color:{_metric_colour(NEUTRAL, j, True, len(shade)).name()}'>&#9632;</span>"
        f"&nbsp;{_unbroken(e.removeprefix(common))}"
        for e, j in shade.items()
    ]
    if common:
        parts.insert(0, _unbroken(common.strip()))
    # Said once, short: in a half-width panel of the Train tab a longer hint took a line of plot.
    hint = "<span style='color:#888'>(shades&nbsp;per&nbsp;run)</span>"
    return entries, sep.join([head, *parts, hint])


class RunLegend(QLabel):
    """One legend for the runs when several are compared: colours say which run a line is, so the
    panels' legends need not repeat eight run names each (they pushed the plots to a sliver).

    Its rows are packed by hand (:meth:`pack`) to stay within RUN_LEGEND_ROWS; the Ignored width keeps
    a long row from holding the window wide before it is packed again.
    """

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("runLegend")
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setContentsMargins(2, 0, 2, 0)
        self.setVisible(False)
        #: the entries ("run 5"), one per run shown; empty with one run or none
        self.entries: list[str] = []
        self._key: tuple[tuple[str, str, str], ...] = ()  # (label, colour, title) per run

    def show_runs(self, runs: Sequence[RunSeries], width: int) -> None:
        """The entries of ``runs``, rebuilt only when the runs shown (or their names) change."""
        many = len(runs) > 1
        agents = {run.agent for run in runs}
        key = tuple(
            (_short_name(run, len(agents) > 1), run_colour(run, i), run.title) for i, run in enumerate(runs)
        )
        if not many:
            key = ()
        if key == self._key:
            return
        self._key = key
        self.entries = [label for label, _c, _t in key]
        self.setToolTip(
            "<br>".join(
                f"<span style='color:{c}'>&#9632;</span>&nbsp;{html.escape(t, quote=False)}"
                for _l, c, t in key
            )
        )
        self.setVisible(bool(key))
        self.pack(width)

    def pack(self, width: int) -> None:
        """Lay the run entries in at most RUN_LEGEND_ROWS rows of ``width`` (the panel's), then "+N more"."""
        key = self._key
        if not key:
            self.setText("")
            return
        fm = QFontMetrics(self.font())
        width = max(200, width - 8)
        gap = fm.horizontalAdvance("    ")
        sizes = [fm.horizontalAdvance(f"\u25a0 {label}") + gap for label, _c, _t in key]
        more = fm.horizontalAdvance(f"+{len(key)} more") + gap
        rows: list[list[int]] = [[]]
        used = 0
        placed = 0
        for i, size in enumerate(sizes):
            # The last row keeps room for "+N more" unless this entry is the last of all.
            room = width - (more if len(rows) == RUN_LEGEND_ROWS and i < len(sizes) - 1 else 0)
            if rows[-1] and used + size > room:
                if len(rows) == RUN_LEGEND_ROWS:
                    break
                rows.append([])
                used = 0
            rows[-1].append(i)
            used += size
            placed += 1
        sep = "&nbsp;&nbsp;&nbsp;&nbsp;"
        lines = [
            sep.join(
                f"<span style='color:{key[i][1]}'>&#9632;</span>&nbsp;{html.escape(key[i][0], quote=False)}"
                for i in row
            )
            for row in rows
        ]
        if placed < len(key):
            lines[-1] += f"{sep}<span style='color:#666'>+{len(key) - placed} more</span>"
        self.setText("<br>".join(lines))


class ConstantsLabel(QLabel):
    """The metrics whose values are all equal, as text under the grid: "Learning rate = 1 (constant)"
    for one run (wrapped as it is); for compared runs one line per metric, at most CONSTANT_LINES,
    each elided to the width (:meth:`elide`), the whole text in the tooltip."""

    def __init__(self) -> None:
        super().__init__("")
        self.setObjectName("constantsLabel")
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self.setStyleSheet("color: #555;")
        # Compared runs: Ignored width, or the longest line would set the window's least width until
        # the next resize elided it again.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._lines: list[str] = []  # compared runs: a line per metric, before eliding
        self._shown: tuple[list[str], bool] = ([], False)  # what the label says now, and how

    def show_constants(self, constants: list[str], many: bool, width: int) -> None:
        """Say ``constants`` (lines of compared runs when ``many``), at the panel's ``width``."""
        if (constants, many) != self._shown:
            self._shown = (constants, many)
            self._lines = list(constants) if many else []
            full = "<br>".join(html.escape(line, quote=False) for line in constants)
            self.setToolTip(f"<qt>{full}</qt>" if constants else "")
            self.setWordWrap(not many)
            if many:
                self.elide(width)
            else:
                # One run has a few constants: they wrap as they are (a tooltip for the same words).
                self.setText(" · ".join(constants))
        self.setVisible(bool(constants))

    def elide(self, width: int) -> None:
        """Compared runs' constants: a line per metric, at most CONSTANT_LINES (the rest joined on the
        last), each elided with "…" to ``width`` (the panel's); the tooltip has them whole."""
        lines = self._lines
        if not lines:
            return
        if len(lines) > CONSTANT_LINES:
            lines = [*lines[: CONSTANT_LINES - 1], " · ".join(lines[CONSTANT_LINES - 1 :])]
        fm = QFontMetrics(self.font())
        width = max(100, width - 8)
        elide = Qt.TextElideMode.ElideRight
        self.setText("\n".join(fm.elidedText(line, elide, width) for line in lines))
