"""The Train tab's runs, one model of them (Qt-free): what is shown, where each run trains, its row.

Before this module seven collections said which runs were live, read or rewritten by three modules.
Now :class:`RunsModel` holds it all and says every change as a typed event (:data:`RunsChange`); the
runs table, its buttons, the curves and the board are views that listen (the shape of napari's
layer list: an evented, Qt-free model with the Qt widgets bound to it).

* **shown**: the runs whose curves are drawn, each under a :data:`RunKey`: a stored run by its id,
  a run training here by ``("live", n)``, one training in another process by ``("follow", run_id)``.
* **where runs train**: ``here`` (run id -> "starting" / "running" / "paused" / "stopping"),
  ``elsewhere`` (run id -> its last summary from the store), ``sweep_trials`` (run id -> "sweep 3 #1",
  the trials of the window's sweep, which train in processes of their own).
* **ticked and selected** runs of the table.
* **rows**: the table's cells by :class:`Column`, formatted here once (:func:`figures`,
  :meth:`RunsModel.row`), never by column number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from engine.store import RunSummary, format_time
from engine.store.model import format_size
from studio.text import duration

if TYPE_CHECKING:
    from studio.widgets.curves import RunSeries

__all__ = [
    "FOLLOW",
    "LIVE",
    "LIVE_KEY",
    "CheckedChanged",
    "Column",
    "ElsewhereChanged",
    "RowChanged",
    "RunKey",
    "RunsChange",
    "RunsModel",
    "SelectionChanged",
    "ShownChanged",
    "StateChanged",
    "figures",
    "is_live_key",
]


class Column(IntEnum):
    """The runs table's columns, in their order."""

    RUN = 0
    AGENT = 1
    STATUS = 2
    EPISODES = 3
    MOVES = 4
    TIME = 5
    LAST_SCORE = 6
    EVAL = 7
    DISK = 8
    SWEEP = 9
    STARTED = 10


TITLES: dict[Column, str] = {
    Column.RUN: "Run",
    Column.AGENT: "Agent",
    Column.STATUS: "Status",
    Column.EPISODES: "Episodes",
    Column.MOVES: "Moves",
    Column.TIME: "Time",
    Column.LAST_SCORE: "Last score",
    Column.EVAL: "Eval",
    Column.DISK: "Disk",
    Column.SWEEP: "Sweep",
    Column.STARTED: "Started",
}

#: A run's key among the runs shown: a stored run's id, ``("live", n)`` for a run training here (it
#: has no id until its child opened it), ``("follow", run_id)`` for one training elsewhere.
RunKey = int | tuple[str, int]
LIVE, FOLLOW = "live", "follow"
#: The key of a live run given no number: a curves panel fed events directly (its own model).
LIVE_KEY: RunKey = (LIVE, 0)


def is_live_key(key: object) -> bool:
    """Keys of runs that grow: ``("live", n)`` (training here) and ``("follow", run_id)`` (training
    elsewhere); stored runs are keyed by their run id."""
    return isinstance(key, tuple) and bool(key) and key[0] in (LIVE, FOLLOW)


# ------------------------------------------------------------------------ changes


@dataclass(frozen=True)
class ShownChanged:
    """The runs drawn changed: their keys, in drawing order."""

    keys: tuple[RunKey, ...]


@dataclass(frozen=True)
class RowChanged:
    """Some cells of run ``run_id``'s row have new text."""

    run_id: int
    cells: Mapping[Column, str]


@dataclass(frozen=True)
class StateChanged:
    """A run training here changed state ("running", "paused", ...; None: it trains here no more)."""

    run_id: int
    state: str | None


@dataclass(frozen=True)
class ElsewhereChanged:
    """The runs training in other processes are now these."""

    run_ids: frozenset[int]


@dataclass(frozen=True)
class CheckedChanged:
    """The runs ticked to compare are now these."""

    run_ids: frozenset[int]


@dataclass(frozen=True)
class SelectionChanged:
    """The runs selected in the table (said again when the same runs are selected again: the views
    show what the selection shows)."""

    run_ids: tuple[int, ...]


RunsChange = ShownChanged | RowChanged | StateChanged | ElsewhereChanged | CheckedChanged | SelectionChanged


# ------------------------------------------------------------------------ one row's text


def figures(
    status: str,
    episodes: int,
    steps: int,
    elapsed: float,
    last_score: float | None,
    last_eval: float | None,
) -> dict[Column, str]:
    """The cells that grow while a run trains (here or elsewhere), formatted the one way."""
    return {
        Column.STATUS: status,
        Column.EPISODES: f"{episodes:,}",
        Column.MOVES: f"{steps:,}",
        Column.TIME: duration(elapsed),
        Column.LAST_SCORE: "" if last_score is None else f"{last_score:,.0f}",
        Column.EVAL: "" if last_eval is None else f"{last_eval:,.0f}",
    }


# ------------------------------------------------------------------------ the model


class RunsModel:
    """Every fact about the runs that more than one view needs; each change said to the listeners."""

    def __init__(self) -> None:
        self.shown: list[tuple[RunKey, RunSeries]] = []
        self.here: dict[int, str] = {}
        self.elsewhere: dict[int, RunSummary] = {}
        self.sweep_trials: dict[int, str] = {}
        self.checked: set[int] = set()
        self.selected: tuple[int, ...] = ()
        self._listeners: list[Callable[[RunsChange], None]] = []

    def subscribe(self, listener: Callable[[RunsChange], None]) -> None:
        """Call ``listener`` with every change, after the listeners subscribed before it."""
        self._listeners.append(listener)

    def _say(self, change: RunsChange) -> None:
        for listener in list(self._listeners):
            listener(change)

    # ------------------------------------------------------------------ shown
    def show(self, runs: Iterable[tuple[RunKey, RunSeries]]) -> None:
        """Draw exactly these runs, in this order."""
        self.shown = list(runs)
        self._say(ShownChanged(tuple(k for k, _r in self.shown)))

    def add(self, key: RunKey, series: RunSeries) -> None:
        """Draw ``series`` last, replacing the run of the same key (its colour and label may change)."""
        self.show([*((k, r) for k, r in self.shown if k != key), (key, series)])

    def remove(self, key: RunKey) -> None:
        if any(k == key for k, _r in self.shown):
            self.show((k, r) for k, r in self.shown if k != key)

    def drop_live(self) -> None:
        """Runs that ended leave the curves; stored runs drawn beside them stay."""
        self.show((k, r) for k, r in self.shown if not is_live_key(k))

    def series(self, key: RunKey) -> RunSeries | None:
        return next((r for k, r in self.shown if k == key), None)

    # ------------------------------------------------------------------ where runs train
    def set_state(self, run_id: int, state: str | None) -> None:
        """Run ``run_id`` trains here in ``state`` (None: no more); its status cell follows."""
        if self.here.get(run_id) == state:
            return
        if state is None:
            self.here.pop(run_id, None)
        else:
            self.here[run_id] = state
            self._say(RowChanged(run_id, {Column.STATUS: state}))
        self._say(StateChanged(run_id, state))

    def set_live_figures(
        self,
        run_id: int,
        state: str,
        episodes: int,
        steps: int,
        elapsed: float,
        last_score: float | None,
        last_eval: float | None,
    ) -> None:
        """A run training here reported: its state and its row's growing cells (an evaluation not
        made yet leaves the cell as it was: a resumed run's last one stays)."""
        cells = figures(state, episodes, steps, elapsed, last_score, last_eval)
        if last_eval is None:
            del cells[Column.EVAL]
        if self.here.get(run_id) != state:
            self.here[run_id] = state
            self._say(StateChanged(run_id, state))
        self._say(RowChanged(run_id, cells))

    def set_elsewhere(self, runs: Mapping[int, RunSummary]) -> None:
        self.elsewhere = dict(runs)
        self._say(ElsewhereChanged(frozenset(self.elsewhere)))

    def update_elsewhere(self, summary: RunSummary) -> None:
        """A run training elsewhere, read again from the store: its row's growing cells."""
        self.elsewhere[summary.id] = summary
        self._say(RowChanged(summary.id, self.stored_figures(summary)))

    def set_sweep_trial(self, run_id: int, label: str | None) -> None:
        """Run ``run_id`` is a trial of the window's sweep ("sweep 3 #1"); None: no more."""
        if label is None:
            self.sweep_trials.pop(run_id, None)
        else:
            self.sweep_trials[run_id] = label

    def clear_sweep_trials(self) -> None:
        self.sweep_trials.clear()

    # ------------------------------------------------------------------ ticks and selection
    def set_checked(self, run_ids: Iterable[int]) -> None:
        ids = set(run_ids)
        if ids != self.checked:
            self.checked = ids
            self._say(CheckedChanged(frozenset(ids)))

    def select(self, run_ids: Sequence[int]) -> None:
        self.selected = tuple(run_ids)
        self._say(SelectionChanged(self.selected))

    # ------------------------------------------------------------------ rows
    def status_text(self, r: RunSummary) -> str:
        """The status cell: a live run's state here, where a run trains elsewhere, or how it ended."""
        if r.id in self.here:
            return self.here[r.id]
        if r.id in self.elsewhere and r.id in self.sweep_trials:  # a trial of the window's sweep
            return f"{r.status} ({self.sweep_trials[r.id]})"
        if r.id in self.elsewhere:
            return f"{r.status} elsewhere (pid {r.pid})"
        return r.status + (f": {r.error}" if r.error and r.status == "failed" else "")

    def stored_figures(self, r: RunSummary) -> dict[Column, str]:
        """The growing cells of a run as the store has it."""
        return figures(
            self.status_text(r),
            r.episodes,
            r.steps,
            r.elapsed,
            r.last_metrics.get("score"),
            r.last_metrics.get("eval_score"),  # the latest greedy evaluation's mean score
        )

    def row(
        self, r: RunSummary, disk: int | None = None, sweep: tuple[int, int] | None = None
    ) -> dict[Column, str]:
        """Every cell of ``r``'s row (``disk``: bytes its checkpoints take; ``sweep``: (sweep, trial))."""
        return {
            Column.RUN: str(r.id),
            Column.AGENT: r.agent,
            **self.stored_figures(r),
            Column.DISK: format_size(disk) if disk else "",
            Column.SWEEP: f"{sweep[0]} #{sweep[1]}" if sweep is not None else "",
            Column.STARTED: format_time(r.created)[:16],
        }
