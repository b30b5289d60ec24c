"""Which lines a run's metric draws on its panel (Qt-free): the score and max tile as their moving
averages (their raw games faint behind for a single run), a smoothable metric as its EMA with the raw
values faint behind, any other as its values; each named "run 3 · dqn · Loss" when runs are compared."""

from __future__ import annotations

from dataclasses import dataclass

from agents.metrics import MEAN_SCORE, MetricInfo
from studio.widgets.curves.names import mean_score_label
from studio.widgets.curves.series import MAX_TILE, SCORE, RunSeries


@dataclass(frozen=True)
class Line:
    """One line of a metric: how it is drawn, what the legends call it."""

    metric: str
    pen: str  # "faint" (raw values behind), "strong" (a mean or an EMA), "plain" (the values)
    name: str = ""  # legend name ("" for the faint raw line behind a smoothed one)
    label: str = ""  # the metric part of ``name``: what a compare legend lists
    moving_average: bool = False
    smooth: float = 0.0  # EMA weight (0: the raw values)
    transform: str = ""  # "log2": tiles
    shade: int = 0  # the run's j-th metric on this axis


def metric_lines(
    run: RunSeries, info: MetricInfo, shade: int, many: bool, smoothing: float, transform: str = ""
) -> list[Line]:
    """The lines of ``run``'s metric ``info``, the run's ``shade``-th on its panel; ``many`` when runs
    are compared, ``smoothing`` the EMA weight of smoothable metrics, ``transform`` the panel's."""
    prefix = f"{run.title} · " if many else ""
    m = info.name
    if m in (SCORE, MAX_TILE):
        # Raw per-game values only for a single run: with several, they would hide each other.
        lines = [] if many else [Line(m, "faint", transform=transform)]
        if m == SCORE and run.has_own_mean:
            # The agent's own mean over its last games is the mean drawn: an average of its
            # events (each the mean of a slice of games) would be a second "mean" of other games.
            return lines
        label = (
            f"{info.label} (geo. mean of {run.ma_window})"
            if m == MAX_TILE
            else mean_score_label(run.ma_window)
        )
        return [*lines, Line(m, "strong", prefix + label, label, moving_average=True, shade=shade)]
    smooth = smoothing if info.smoothable else 0.0
    label = mean_score_label(run.mean_window) if m == MEAN_SCORE.name else info.label
    if smooth > 0:
        return [
            Line(m, "faint", transform=transform),
            Line(m, "strong", prefix + label, label, smooth=smooth, transform=transform, shade=shade),
        ]
    return [Line(m, "plain", prefix + label, label, transform=transform, shade=shade)]
