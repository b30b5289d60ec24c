"""Curves of many runs (a sweep's trials): one shared run legend, panel legends that name metrics only,
constants grouped per metric in at most three elided lines with the whole text in the tooltip."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication

from studio.widgets.curves import CONSTANT_LINES, RUN_COLOURS, RUN_LEGEND_ROWS, CurvesPanel, RunSeries
from tests.studio.tab_fixtures import shown

LRS = (1.0, 1.0, 0.3, 0.3, 0.1, 0.1, 0.03, 0.03)


def _trial(run_id: int, agent: str = "ntuple", n: int = 50, **constants: float) -> RunSeries:
    """A finished trial as the store gives it back: moving metrics, constants, one evaluation."""
    rng = np.random.default_rng(run_id)
    run = RunSeries(f"run {run_id} {agent}", agent=agent, run_id=run_id)
    t = np.arange(n, dtype=float)
    cols: dict[str, np.ndarray] = {
        "episode": t,
        "step": t * 100.0,
        "elapsed": t * 0.1,
        "score": 1000 + 50 * t * rng.random(n),
        "max_tile": 2.0 ** rng.integers(6, 10, n),
        "steps_per_s": rng.normal(1000, 30, n),
    }
    if agent == "ntuple":
        cols["td_error"] = 50 / (1 + t)
        cols["mean_score"] = 1000 + 40 * t
        for k, tile in enumerate((2048, 8192)):
            cols[f"rate_{tile}"] = np.clip(t / n - 0.3 * k, 0, 1)
    else:
        cols["loss"] = 1 / (1 + t)
    for name, value in constants.items():
        cols[name] = np.full(n, value)
    evaluation = np.full(n, np.nan)
    evaluation[-1] = 8000.0 + 1000 * run_id
    cols["eval_score"] = evaluation
    run.add_columns(cols)
    return run


def _sweep(k: int = 8) -> list[tuple[object, RunSeries]]:
    return [(i, _trial(i, lr=LRS[(i - 1) % len(LRS)])) for i in range(1, k + 1)]


@pytest.fixture
def panel(qtbot) -> CurvesPanel:
    p = shown(qtbot, CurvesPanel(), (1280, 800))
    return p


def _lines(text: str) -> list[str]:
    return text.split("\n") if text else []


def test_eight_runs_share_one_run_legend_and_panels_name_only_metrics(panel) -> None:
    panel.set_runs(_sweep(8))
    panel.redraw()
    assert panel.run_legend == [f"run {i}" for i in range(1, 9)]
    assert panel.runLegend.isVisible()
    text = panel.runLegend.text()
    for i in range(1, 9):
        assert len(re.findall(rf"run {i}(?!\d)", text)) == 1
        assert RUN_COLOURS[i - 1] in text  # each run's swatch in its colour
    assert text.count("&#9632;") == 8 and "<br>" not in text  # eight entries in one row of 1280 px
    assert "more" not in text
    # every panel's header: its metrics, no run names
    for p in panel._panels.values():
        if p.shown:
            assert not re.search(r"run \d", p.header.text()), p.header.text()
            assert not any(re.search(r"run \d", e) for e in p.entries)
    # the agent's own mean score is the mean drawn (one wording of a mean, no second "mean of 100")
    assert panel.panel_legend("Score") == ["Mean score (last 100 games)"]
    # once data comes, the series that came are listed: the tiles these runs reached (issue 44)
    assert panel.panel_legend("Tile rates") == [f"Reached {t}" for t in (2048, 8192)]
    # several metrics of a run on one axis are shades of its colour, and the header says so once
    assert panel._panels["tileRatesPlot"].header.text().count("shades") == 1
    assert "shades" not in panel._panels["tdErrorPlot"].header.text()  # one metric: nothing to tell apart
    # the series themselves are still named by run (tests, the Train tab's compare)
    assert "run 3 · ntuple · TD error" in panel.legend_names("TD error")
    assert len(panel.legend_names("Score")) == 8


def test_notes_of_eight_runs_are_grouped_per_metric_in_three_lines_at_most(panel) -> None:
    # Four constant metrics of DQN runs (more than CONSTANT_LINES): the evaluation, lr, epsilon, and
    # one that every run shares.
    runs = [(i, _trial(i, agent="dqn", lr=LRS[i - 1], epsilon=0.1 * i, mean_q=2.0)) for i in range(1, 9)]
    panel.set_runs(runs)
    panel.redraw()
    lines = _lines(panel.constantsLabel.text())
    assert 1 <= len(lines) <= CONSTANT_LINES
    assert (
        "Learning rate (constant): 1 in runs 1, 2 · 0.3 in runs 3, 4 · 0.1 in runs 5, 6 · 0.03 in runs 7, 8"
        in (panel.constants)
    )
    evaluation = next(c for c in panel.constants if c.startswith("Greedy evaluation"))
    assert "(the first value)" in evaluation and "9k in run 1" in evaluation and "16k in run 8" in evaluation
    assert "Mean Q = 2 (constant) in every run" in panel.constants
    assert len(panel.constants) == 4  # one entry per metric, not per run
    # the tooltip holds every note in full
    tip = panel.constantsLabel.toolTip()
    for note in panel.constants:
        assert note in tip
    # each shown line fits the width ("…" where it did not)
    fm = QFontMetrics(panel.constantsLabel.font())
    assert all(fm.horizontalAdvance(line) <= panel.width() for line in lines)
    panel.resize(600, 800)
    QApplication.processEvents()
    narrow = _lines(panel.constantsLabel.text())
    assert len(narrow) <= CONSTANT_LINES and any(line.endswith("…") for line in narrow)
    assert all(fm.horizontalAdvance(line) <= 600 for line in narrow)
    assert panel.constantsLabel.minimumSizeHint().width() < 600  # the notes never hold the window wide


def test_notes_stay_at_most_three_lines_for_any_number_of_runs(panel) -> None:
    panel.set_runs(_sweep(40))
    panel.redraw()
    assert len(_lines(panel.constantsLabel.text())) <= CONSTANT_LINES
    assert "48k in run 40" in panel.constantsLabel.toolTip()


def test_a_long_run_legend_wraps_to_two_rows_then_says_how_many_more(panel) -> None:
    panel.resize(500, 700)
    panel.set_runs(_sweep(40))
    QApplication.processEvents()
    text = panel.runLegend.text()
    rows = text.split("<br>")
    assert len(rows) <= RUN_LEGEND_ROWS
    found = re.search(r"\+(\d+) more", text)
    assert found is not None
    shown = len(re.findall(r"run \d+", text))
    assert shown + int(found.group(1)) == 40
    assert "run 40" in panel.runLegend.toolTip()  # every run in the tooltip, with its agent
    assert "run 40 · ntuple" in panel.runLegend.toolTip()
    # wider: more fit
    panel.resize(1280, 700)
    QApplication.processEvents()
    assert len(re.findall(r"run \d+", panel.runLegend.text())) > shown


def test_the_run_legend_is_rebuilt_only_when_the_runs_change(panel, monkeypatch) -> None:
    runs = _sweep(8)
    panel.set_runs(runs)
    panel.redraw()
    calls: list[str] = []
    real = panel.runLegend.setText

    def counting(text: str) -> None:
        calls.append(text)
        real(text)

    monkeypatch.setattr(panel.runLegend, "setText", counting)
    for k in range(5):
        runs[0][1].add_columns({"episode": np.array([100.0 + k]), "score": np.array([5.0])})
        panel.mark_dirty()
        panel.redraw()
        panel._tick()
    assert calls == []  # new points redraw plots; the legend stays as it is
    panel.add_run(9, _trial(9, lr=0.01))
    assert calls and "run 9" in calls[-1]


def test_runs_of_several_agents_are_named_with_their_agent(panel) -> None:
    panel.set_runs([(1, _trial(1, agent="dqn", lr=0.001)), (2, _trial(2, lr=1.0))])
    panel.redraw()
    assert panel.run_legend == ["run 1 · dqn", "run 2 · ntuple"]
    lr = next(c for c in panel.constants if c.startswith("Learning rate"))
    assert "in run 1 · dqn" in lr and "in run 2 · ntuple" in lr


def test_one_run_keeps_its_own_legend_and_notes(panel) -> None:
    panel.set_runs([(3, _trial(3, lr=1.0))])
    panel.redraw()
    assert not panel.runLegend.isVisible() and panel.run_legend == []
    assert panel.panel_legend("Score") == ["Mean score (last 100 games)"]
    assert panel.constants == [
        "Greedy evaluation: mean score = 11k (the first value)",
        "Learning rate = 1 (constant)",
    ]
    assert panel.constantsLabel.text() == " · ".join(panel.constants)
    # back to several and to one again: the shared legend follows
    panel.set_runs(_sweep(2))
    assert panel.runLegend.isVisible()
    panel.set_runs([(3, _trial(3, lr=1.0))])
    assert not panel.runLegend.isVisible()
    assert panel.constantsLabel.text() == " · ".join(panel.constants)


def test_plots_get_most_of_each_panels_height_with_eight_runs(panel, qtbot) -> None:
    panel.set_runs(_sweep(8))
    panel.redraw()
    QApplication.processEvents()
    shown = [p for p in panel._panels.values() if p.shown]
    assert len(shown) >= 4
    for p in shown:
        assert p.plot.height() >= 0.75 * p.box.height(), (p.title, p.plot.height(), p.box.height())
    assert panel.runLegend.height() < 3 * QFontMetrics(panel.runLegend.font()).height()


def test_a_lone_metric_under_a_title_it_begins_with_reads_without_the_title() -> None:
    """Runs compared: "Greedy evaluation: mean score" under the title "Greedy evaluation" reads "mean
    score" (it read ": mean score"), "Max tile (geo. mean of 100)" under "Max tile" reads "(geo. mean
    of 100)", and "TD error" under "TD error" says nothing more."""
    from studio.widgets.curves import _panel_header

    def header(title: str, label: str) -> str:
        curve = SimpleNamespace(name=f"run 1 · {label}", label=label, shade=0, colour="#000")
        return _panel_header(title, [curve], many_runs=True)[1]  # type: ignore[list-item]

    assert header("Greedy evaluation", "Greedy evaluation: mean score").endswith(">mean&nbsp;score</span>")
    assert header("Max tile", "Max tile (geo. mean of 100)").endswith(
        ">(geo.&nbsp;mean&nbsp;of&nbsp;100)</span>"
    )
    assert header("TD error", "TD error") == "<b>TD&nbsp;error</b>"
