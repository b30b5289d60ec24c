"""What the panels are and how each is laid for the runs shown: which metric groups get a panel,
whether a panel shows or folds into a line of text (its series all constant), its log axes and the
series its header names. :class:`~studio.widgets.curves.panel.CurvesPanel` lays its panels with these
whenever the runs or their data change."""

from __future__ import annotations

from collections.abc import Sequence

from agents.metrics import STANDARD, MetricInfo, groups
from studio.widgets.curves.legend import _panel_header
from studio.widgets.curves.names import _short_name
from studio.widgets.curves.plots import _Curve, _Panel
from studio.widgets.curves.series import RunSeries
from studio.widgets.curves.ticks import format_si

#: One constant series, as the constants line says it: (label, "constant" / "the first value", run, value).
Constant = tuple[str, str, str, str]


def wanted_groups(
    runs: Sequence[RunSeries], fallback: Sequence[MetricInfo], agent_infos: Sequence[MetricInfo]
) -> list[tuple[str, list[MetricInfo]]]:
    """The panels' metric groups, in order: every metric of the runs shown (``fallback``: a run's
    when its agent declared none), or with no run shown the agent picked's."""
    infos: dict[str, MetricInfo] = {}
    for src in [run.infos or fallback for run in runs] or [agent_infos]:
        for m in src:
            infos.setdefault(m.name, m)
    return groups(infos.values())


def lay_panel(
    p: _Panel, runs: Sequence[RunSeries], curves: Sequence[_Curve], log_y: bool, log_x: bool, x_title: str
) -> list[Constant]:
    """Whether panel ``p`` shows, its log axes and its header; its constants: a group whose series
    are all constant is a line of text, not a plot."""
    many = len(runs) > 1
    with_agent = many and len({run.agent for run in runs}) > 1
    mine = [c for c in curves if c.panel == p.name and c.name]
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
    # games, so it has no score) goes once a run has counted episodes without it: the first
    # events of many games at once (PPO, DQN) are updates, and a score panel hidden then came
    # back with the first finished games, the grid re-laid twice.
    own = any(m not in STANDARD for m in p.infos)
    counted = any(run.episodes_counted for run in runs)
    # A panel of evaluations alone waits folded: its first value is a line of text anyway (see
    # above), so a plot shown before it would only be folded at that first value, re-laying the
    # grid (with every plot painted anew) in a run's first second.
    waits_folded = not with_data and bool(evaluations) and len(evaluations) == len(p.infos)
    p.shown = bool(runs) and not all_const and not waits_folded and (bool(with_data) or not counted or own)
    found = []
    if all_const:
        info_of = {m.name: m for m in p.infos}
        for c, s in with_data:
            note = "constant" if len(s) > 1 else "the first value"  # one evaluation is no trend yet
            value = format_si(s.lo, abs(s.lo) / 1000 or None)
            found.append((info_of[c.metric].label, note, _short_name(c.run, with_agent), value))
    log_pref = log_y or any(m.scale == "log" for m in p.infos)
    # No data yet counts as positive: the axis then needs no switch (a re-layout) when it comes.
    positive = all(s.lo > 0 for _c, s in with_data)
    p.set_log(log_x, log_pref and positive and p.transform != "log2", x_title)
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
