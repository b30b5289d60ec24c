"""How the curves name runs and their constants (Qt-free): colours by run id, "run 5", "runs 1, 2",
"Learning rate (constant): 1 in runs 1, 2 · 0.3 in runs 3, 4"."""

from __future__ import annotations

import html
from collections.abc import Sequence

from studio.widgets.curves.series import RunSeries

#: Colours of runs: run N takes RUN_COLOURS[(N - 1) % 8], whatever else is shown.
RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")

#: What the panel says when nothing is shown.
EMPTY_TEXT = "No run yet. Start a run or open one from the runs table."


def mean_score_label(games: int | None) -> str:
    """The one wording of a mean score, the window's own or an agent's: "Mean score (last 100 games)"."""
    return f"Mean score (last {games:,} games)" if games else "Mean score (recent games)"


def run_colour(run: RunSeries, fallback: int = 0) -> str:
    """A run's colour, chosen by its run id so that it stays the same whatever else is shown."""
    if run.run_id is not None:
        return RUN_COLOURS[(run.run_id - 1) % len(RUN_COLOURS)]
    return RUN_COLOURS[fallback % len(RUN_COLOURS)]


def _short_name(run: RunSeries, with_agent: bool = False) -> str:
    """How the shared run legend and the compared constants name a run: "run 5" ("run 5 · dqn" when
    the runs shown are of several agents); its label until it has a run id."""
    if run.run_id is None:
        return run.label
    return f"run {run.run_id} · {run.agent}" if with_agent and run.agent else f"run {run.run_id}"


def _runs_phrase(names: Sequence[str]) -> str:
    """ "run 1", "runs 1, 2" (run names of the shared legend, said once)."""
    if len(names) == 1:
        return names[0]
    if all(n.startswith("run ") and " · " not in n for n in names):
        return "runs " + ", ".join(n.removeprefix("run ") for n in names)
    return ", ".join(names)


def _compared_constants(found: Sequence[tuple[str, str, str, str]], runs: int) -> list[str]:
    """One line per metric of the constants of compared runs, from (label, note, run name, value):
    "Learning rate (constant): 1 in runs 1, 2 · 0.3 in runs 3, 4", or "Learning rate = 1 (constant)
    in every run". Runs with the same value are named together (a sweep's seeds of one point)."""
    by_metric: dict[tuple[str, str], dict[str, list[str]]] = {}
    for label, note, who, value in found:
        by_metric.setdefault((label, note), {}).setdefault(value, []).append(who)
    lines = []
    for (label, note), values in by_metric.items():
        if len(values) == 1 and len(next(iter(values.values()))) == runs:
            lines.append(f"{label} = {next(iter(values))} ({note}) in every run")
            continue
        parts = [f"{value} in {_runs_phrase(who)}" for value, who in values.items()]
        lines.append(f"{label} ({note}): " + " · ".join(parts))
    return lines


def _unbroken(text: str) -> str:
    """``text`` as HTML that a word-wrapped label does not break ("Tile rates" stays one piece)."""
    return html.escape(text, quote=False).replace(" ", "&nbsp;")
