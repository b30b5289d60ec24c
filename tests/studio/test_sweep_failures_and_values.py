"""Sweeps that fail say why (the terminal with a non-zero exit, the Sweeps page in red), choice values
holding commas are one value each in a grid (the command line and the dialog), and counts read in the
singular when there is one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from PySide6.QtCore import Qt

from agents import registry
from agents.config import knob
from engine import Direction, Game
from studio.cli import main
from studio.services.sweep import SweepError, SweepPlanned, SweepProgress, parse_grid
from studio.tabs.train.sweep import LIST, RANGE
from tests.studio.gui_helpers import open_sweep_dialog, retype
from tests.studio.tab_fixtures import shown_train_tab
from tests.studio.train_fakes import FakeConfig, FakeLearner, register_fakes

CLICK = Qt.MouseButton.LeftButton
ORDERS = ("down,left,right,up", "up,down,left,right", "left")
ACT_ERROR = "RuntimeError: act exploded on purpose"


@dataclass
class TieBreakConfig(FakeConfig):
    tie_break: str = knob(ORDERS[0], "the order that breaks ties between equal moves", choices=ORDERS)


class ActRaises(FakeLearner):
    """A plug-in agent whose act raises: every trial of its sweeps fails at its first move."""

    name = "test_act_raises"
    config_cls = TieBreakConfig

    def act(self, game: Game) -> Direction:
        raise RuntimeError("act exploded on purpose")


@pytest.fixture
def act_raises() -> Iterator[str]:
    """Registered as ``gui_fixtures.rater_agent`` registers its agents; the trials' child processes
    find it through the run request's target."""
    with registry.registered({"test_act_raises": f"{__name__}:ActRaises"}):
        yield "test_act_raises"


@pytest.fixture
def tab(qtbot, store, monkeypatch, act_raises):
    register_fakes(monkeypatch)
    yield from shown_train_tab(qtbot, store, monkeypatch)


def _mode(qtbot, row, presses: int) -> None:
    row.modeCombo.setFocus()
    for _ in range(presses):
        qtbot.keyClick(row.modeCombo, Qt.Key.Key_Down)


def _dialog_row(qtbot, tab, agent: str, name: str, presses: int):
    """The sweep dialog opened for ``agent``, and its row for knob ``name`` ``presses`` modes down."""
    tab.launch.select_agent(agent)
    dialog = open_sweep_dialog(qtbot, tab)
    row = dialog.rows[name]
    _mode(qtbot, row, presses)
    return dialog, row


# ------------------------------------------------------------------ a sweep whose trials all fail


def test_a_sweep_whose_trials_all_fail_says_why_and_exits_non_zero(act_raises, data_dir, capsys):
    code = main(
        [
            "--data-dir",
            str(data_dir),
            "sweep",
            "--agent",
            act_raises,
            "--grid",
            "tie_break=down,left,right,up,up,down,left,right",  # two choices holding commas
            "--episodes",
            "1",
            "--eval-games",
            "1",
            "--workers",
            "2",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1
    lines = err.strip().splitlines()
    # Two trials side by side: either may fail first.
    assert lines[-1] in {
        f"sweep 1 failed: all 2 trials failed; the first (trial {t}, run {r}): {ACT_ERROR}"
        for t in (0, 1)
        for r in (1, 2)
    }
    assert "sweep 1 failed: ranked by eval_score" in out
    assert "down,left,right,up" in out and "up,down,left,right" in out
    assert main(["--data-dir", str(data_dir), "sweeps", "show", "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "failed" and shown["error"] == lines[-1].removeprefix("sweep 1 failed: ")
    assert shown["spec"]["grid"] == {"tie_break": list(ORDERS[:2])}


def test_the_sweeps_page_shows_why_its_one_trial_failed(qtbot, tab):
    tab.launch.select_agent("test_act_raises")
    tab.launch.form.set_values({"delay_ms": 0.0})
    tab.launch.set_budget(episodes=1)
    dialog = open_sweep_dialog(qtbot, tab)
    lr = dialog.rows["lr"]
    _mode(qtbot, lr, 1)
    retype(qtbot, lr.listEdit, "0.1")
    retype(qtbot, dialog.evalGamesSpin.lineEdit(), "1")
    assert dialog.trialsLabel.text() == "1 trial planned: a grid of 1 point, 1 seed each"
    qtbot.mouseClick(dialog.startButton, CLICK)
    assert tab.wait_sweep(240)
    panel = tab.sweepPanel
    assert panel.wait_ranked()
    expected = f"Sweep 1 failed: its one trial failed (trial 0, run 1): {ACT_ERROR}"
    qtbot.waitUntil(lambda: panel.failureLabel.isVisible() and panel.failureLabel.text() == expected)
    assert panel.summaryLabel.text().startswith("grid search, failed, 0/1 trial · 1 seed per point")
    assert tab.etaLabel.text() == "Sweep 1 failed"
    panel.grab().save("/tmp/shots/sweep_panel_failed.png")


# ------------------------------------------------------------------ choice values with commas


def test_a_choice_with_commas_is_one_grid_value_quoted_or_not():
    assert parse_grid("tie_break=down,left,right,up", TieBreakConfig) == ("tie_break", (ORDERS[0],))
    assert parse_grid("tie_break=left,up,down,left,right", TieBreakConfig) == (
        "tie_break",
        (ORDERS[2], ORDERS[1]),
    )
    assert parse_grid('tie_break="down,left,right,up",left', TieBreakConfig) == (
        "tie_break",
        (ORDERS[0], ORDERS[2]),
    )
    assert parse_grid('tag="a,b",c', TieBreakConfig) == ("tag", ("a,b", "c"))  # a free text too
    with pytest.raises(SweepError, match="tie_break: must be one of"):
        parse_grid("tie_break=down,left", TieBreakConfig)
    with pytest.raises(SweepError, match=r"""tag: a " is not closed in '"a,b'"""):
        parse_grid('tag="a,b', TieBreakConfig)


def test_the_dialog_sweeps_ticked_choices_that_hold_commas(qtbot, tab):
    dialog, row = _dialog_row(qtbot, tab, "test_act_raises", "tie_break", 1)
    assert row.mode == LIST
    qtbot.mouseClick(row.checks[1], CLICK)  # the first is ticked: the form's value
    assert dialog.request is not None
    assert dict(dialog.request.grid) == {"tie_break": ORDERS[:2]}
    assert dialog.trialsLabel.text() == "2 trials planned: a grid of 2 points, 1 seed each"
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)


# ------------------------------------------------------------------ one, not ones


def test_counts_of_one_read_in_the_singular(qtbot, tab):
    dialog, lr = _dialog_row(qtbot, tab, "fake_learner", "lr", 2)
    assert lr.mode == RANGE
    assert dialog.trialsLabel.text() == "8 trials planned: 8 random points, 1 seed each"
    retype(qtbot, dialog.samplesSpin.lineEdit(), "1")
    assert dialog.trialsLabel.text() == "1 trial planned: 1 random point, 1 seed each"
    retype(qtbot, dialog.seedsSpin.lineEdit(), "2")
    assert dialog.trialsLabel.text() == "2 trials planned: 1 random point, 2 seeds each"
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    progress = SweepProgress()
    progress.update(SweepPlanned(1, total=1))
    assert progress.text() == "0/1 trial done, 0 running"
