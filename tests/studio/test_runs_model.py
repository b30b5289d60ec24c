"""The Train tab's model of runs alone, without Qt (issue 46, item 1): what it holds and the typed
changes it says, each asserted by value."""

from __future__ import annotations

import subprocess
import sys

from engine import Rules
from engine.store import RunSummary
from studio.services.runs_model import (
    CheckedChanged,
    Column,
    ElsewhereChanged,
    RowChanged,
    RunsChange,
    RunsModel,
    SelectionChanged,
    ShownChanged,
    StateChanged,
    figures,
)
from studio.widgets.curves import RunSeries


def _summary(run_id: int, status: str = "finished", **kw: object) -> RunSummary:
    base: dict = dict(
        id=run_id,
        agent="ntuple",
        config={},
        rules=Rules(),
        budget={},
        seed=None,
        status=status,
        error=None,
        created=0.0,
        updated=0.0,
        episodes=1234,
        steps=56789,
        elapsed=75.0,
        last_metrics={"score": 2048.4, "eval_score": 3100.6},
        pid=4242,
    )
    base.update(kw)
    return RunSummary(**base)


def _listened() -> tuple[RunsModel, list[RunsChange]]:
    model = RunsModel()
    heard: list[RunsChange] = []
    model.subscribe(heard.append)
    return model, heard


def test_the_model_imports_no_qt():
    code = "import sys, studio.services.runs_model; print(any(m.startswith('PySide6') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_shown_runs_are_said_by_key_in_drawing_order():
    model, heard = _listened()
    a, b, c = RunSeries("run 1"), RunSeries("live"), RunSeries("run 7 elsewhere")
    model.show([(1, a)])
    model.add(("live", 1), b)
    model.add(("follow", 7), c)
    model.add(1, a)  # the same key again: drawn last, once
    assert heard == [
        ShownChanged((1,)),
        ShownChanged((1, ("live", 1))),
        ShownChanged((1, ("live", 1), ("follow", 7))),
        ShownChanged((("live", 1), ("follow", 7), 1)),
    ]
    assert model.series(("follow", 7)) is c and model.series(2) is None
    heard.clear()
    model.drop_live()  # runs that trained leave; the stored one stays
    model.remove(1)
    model.remove(1)  # not shown: nothing said
    assert heard == [ShownChanged((1,)), ShownChanged(())]
    assert model.shown == []


def test_a_run_training_here_says_its_state_and_its_row_once_per_change():
    model, heard = _listened()
    model.set_state(3, "running")
    model.set_state(3, "running")  # no change, nothing said
    model.set_state(3, "paused")
    model.set_state(3, None)
    assert heard == [
        RowChanged(3, {Column.STATUS: "running"}),
        StateChanged(3, "running"),
        RowChanged(3, {Column.STATUS: "paused"}),
        StateChanged(3, "paused"),
        StateChanged(3, None),
    ]
    assert model.here == {}


def test_live_figures_fill_the_named_columns_and_leave_an_eval_not_made_yet():
    model, heard = _listened()
    model.set_live_figures(5, "running", 1500, 123456, 3725.0, 2500.4, None)
    assert heard == [
        StateChanged(5, "running"),
        RowChanged(
            5,
            {
                Column.STATUS: "running",
                Column.EPISODES: "1,500",
                Column.MOVES: "123,456",
                Column.TIME: "1:02:05",
                Column.LAST_SCORE: "2,500",
            },
        ),
    ]
    assert figures("paused", 1, 2, 3.0, None, 4096.0)[Column.EVAL] == "4,096"
    assert figures("paused", 1, 2, 3.0, None, None)[Column.LAST_SCORE] == ""


def test_runs_elsewhere_and_sweep_trials_read_in_the_status_column():
    model, heard = _listened()
    model.set_elsewhere({8: _summary(8, "running"), 9: _summary(9, "paused")})
    model.set_sweep_trial(9, "sweep 2 #3")
    assert heard == [ElsewhereChanged(frozenset({8, 9}))]
    model.update_elsewhere(_summary(8, "running", episodes=1300))
    assert heard[-1] == RowChanged(
        8,
        {
            Column.STATUS: "running elsewhere (pid 4242)",
            Column.EPISODES: "1,300",
            Column.MOVES: "56,789",
            Column.TIME: "1:15",
            Column.LAST_SCORE: "2,048",
            Column.EVAL: "3,101",
        },
    )
    assert model.status_text(_summary(9, "paused")) == "paused (sweep 2 #3)"
    model.clear_sweep_trials()
    assert model.status_text(_summary(9, "paused")) == "paused elsewhere (pid 4242)"
    failed = _summary(4, "failed", error="boom")
    assert model.status_text(failed) == "failed: boom"
    model.set_state(4, "stopping")  # a run here says its state, whatever the store last said
    assert model.status_text(failed) == "stopping"


def test_a_whole_row_by_named_column():
    model = RunsModel()
    row = model.row(_summary(12, created=0.0), disk=2048, sweep=(3, 1))
    assert list(row) == list(Column)
    assert row[Column.RUN] == "12" and row[Column.AGENT] == "ntuple"
    assert row[Column.STATUS] == "finished" and row[Column.EVAL] == "3,101"
    assert row[Column.DISK] == "2.0 kB" and row[Column.SWEEP] == "3 #1"
    blank = model.row(_summary(13, last_metrics={}))
    assert (blank[Column.LAST_SCORE], blank[Column.EVAL], blank[Column.DISK], blank[Column.SWEEP]) == (
        "",
        "",
        "",
        "",
    )


def test_ticks_are_said_on_change_and_a_selection_every_time():
    model, heard = _listened()
    model.set_checked([2, 1])
    model.set_checked({1, 2})  # the same runs: nothing said
    model.select([4])
    model.select([4])  # selected again: said again (the views show what it shows)
    assert heard == [
        CheckedChanged(frozenset({1, 2})),
        SelectionChanged((4,)),
        SelectionChanged((4,)),
    ]
    assert model.checked == {1, 2} and model.selected == (4,)
