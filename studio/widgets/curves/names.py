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


def _minutes(seconds: float) -> str:
    """ "10 minutes", "2 minutes", "30 seconds", "1.5 hours": a span as the evaluation plan says it."""
    if seconds < 60:
        return f"{seconds:g} seconds"
    if seconds < 5400:
        m = seconds / 60
        return f"{m:.3g} minute" + ("" if m == 1 else "s")
    return f"{seconds / 3600:.3g} hours"


def evaluation_plan(
    games: int,
    every_s: float | None,
    every_episodes: int | None,
    budget_s: float | None,
    budget_episodes: int | None,
    at_end: bool = False,
) -> tuple[bool, str]:
    """When a run's first greedy evaluation comes, from its settings: (whether one comes within the
    budget, a line saying when, or why none does). A 2-minute run evaluated every 10 minutes showed a
    "Greedy evaluation" panel that could never fill."""
    head = "Greedy evaluation"
    if games <= 0:
        return False, f"{head}: none in this run (0 evaluation games)"
    by_time = bool(every_s) and (budget_s is None or every_s is None or every_s < budget_s)
    by_episodes = bool(every_episodes) and (
        budget_episodes is None or every_episodes is None or every_episodes < budget_episodes
    )
    whens = []
    if by_time and every_s:
        whens.append(f"{_minutes(every_s)} of training")
    if by_episodes and every_episodes:
        whens.append(f"{every_episodes:,} episodes")
    if whens:
        return True, f"{head}: the first after {' or '.join(whens)}"
    if at_end:
        return True, f"{head}: at the end of the run"
    every = ([f"{_minutes(every_s)} of training"] if every_s else []) + (
        [f"{every_episodes:,} episodes"] if every_episodes else []
    )
    budget = ([_minutes(budget_s)] if budget_s else []) + (
        [f"{budget_episodes:,} episodes"] if budget_episodes else []
    )
    if not every:
        return False, f"{head}: none in this run (no evaluation interval)"
    return (
        False,
        f"{head}: none in this run (one every {' or '.join(every)}; the budget is {', '.join(budget)})",
    )
