"""The application layer's runs: one RunRequest -> open_run for the window and the CLI, typed errors, and
preset parity (the Train tab and ``train --preset`` store the same config, rules and budget)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from agents.base import Budget, Control
from agents.config import list_presets, load_preset
from agents.registry import get_agent_class
from agents.runner import BudgetUsedUp, NoCheckpoint, RunBusy, RunError
from engine import Rules
from engine.store import GameStore
from studio.cli import build_parser
from studio.commands import _agent_flags as flags
from studio.commands import train as train_cmd
from studio.services.runs import RunRequest, open_run, preset_budget, resolve
from tests.studio.train_fakes import register_fakes

pytest_plugins = ("tests.studio.gui_fixtures",)


def cli_request(argv: list[str]) -> RunRequest:
    """What ``python main.py train ARGV`` asks for, parsed exactly as the command parses it."""
    outer = build_parser().parse_args(["train", *argv])
    args = train_cmd.build_parser(flags.first_stage(outer.argv)).parse_args(outer.argv)
    return train_cmd.request_from_args(args)


def test_preset_budgets_of_every_kind() -> None:
    assert preset_budget({"budget": {"steps": 550000}}) == Budget(steps=550000)
    assert preset_budget({"budget": {"minutes": 2}}) == Budget(seconds=120.0)
    assert preset_budget({"budget": {"episodes": 5, "seconds": 9}}) == Budget(episodes=5, seconds=9)
    assert preset_budget({"budget": {}}) is None and preset_budget(None) is None
    assert preset_budget({"budget": {"cpu_seconds": 14400}}) == Budget(cpu_seconds=14400)


def test_the_two_hour_preset_is_two_hours_of_a_2_core_laptop_in_cpu_time() -> None:
    # "Two hours of a 2-core laptop" must mean the same training on a busy machine, so it is CPU time.
    assert load_preset("ntuple-2h")["budget"] == {"cpu_seconds": 14400}
    assert resolve(RunRequest(preset="ntuple-2h")).budget == Budget(cpu_seconds=14400)
    assert resolve(RunRequest(preset="ntuple-hour")).budget == Budget(cpu_seconds=7200)


def test_resolve_merges_defaults_preset_and_request() -> None:
    r = resolve(RunRequest(preset="td-afterstate-seed002"))
    preset = load_preset("td-afterstate-seed002")
    assert r.agent == "td-afterstate" and r.budget == Budget(steps=550000) and r.rules == Rules()
    for k, v in preset["config"].items():
        got = r.config.to_dict()[k]
        assert (list(got) if isinstance(got, tuple) else got) == v
    over = resolve(
        RunRequest(preset="td-afterstate-seed002", config={"batch_size": 64}, budget=Budget(episodes=3))
    )
    assert over.config.to_dict()["batch_size"] == 64 and over.budget == Budget(episodes=3)


@pytest.mark.parametrize(
    ("request_", "field", "words"),
    [
        (RunRequest(), "agent", "give the agent"),
        (RunRequest(agent="nope", budget=Budget(episodes=1)), "agent", "unknown agent"),
        (RunRequest(agent="greedy", budget=Budget(episodes=1)), "agent", "does not learn"),
        (RunRequest(agent="dqn"), "budget", "give a budget"),
        (RunRequest(agent="dqn", preset="ntuple-hour"), "preset", "is for agent 'ntuple'"),
        (RunRequest(agent="dqn", preset="no-such"), "preset", "no preset"),
        (RunRequest(agent="dqn", config={"lr": -1.0}, budget=Budget(episodes=1)), "lr", "lr"),
        (RunRequest(agent="ntuple", rules=Rules(rows=3, cols=3), budget=Budget(episodes=1)), "rules", "4x4"),
        (RunRequest(agent="dqn", workers=0, budget=Budget(episodes=1)), "workers", ">= 1"),
        (RunRequest(agent="dqn", backend="cloud", budget=Budget(episodes=1)), "backend", "local, ray"),
        (RunRequest(agent="dqn", resume=3), "resume", "keeps its own agent"),
    ],
)
def test_bad_requests_name_the_field_at_fault(request_: RunRequest, field: str, words: str) -> None:
    with pytest.raises(RunError, match=words) as err:
        resolve(request_)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_open_run_starts_and_resumes_through_one_call(store: GameStore, monkeypatch) -> None:
    register_fakes(monkeypatch)
    control = Control()
    run = open_run(
        RunRequest(agent="fake_learner", config={"delay_ms": 0.0}, budget=Budget(episodes=4), seed=5),
        store,
        control,
    )
    for ev in run:
        if ev.episode == 2:
            control.stop()
    assert store.get_run(run.run_id).status == "stopped"
    resumed = open_run(RunRequest(resume=run.run_id), store)
    assert resumed.budget == Budget(episodes=2)
    assert [e.episode for e in resumed if e.kind == "episode"] == [3, 4]
    with pytest.raises(BudgetUsedUp) as used:
        open_run(RunRequest(resume=run.run_id), store)
    assert used.value.field == "budget"
    # The window passes its Budget box for that case: no string matching on the message.
    more = open_run(RunRequest(resume=run.run_id, budget_if_used_up=Budget(episodes=1)), store)
    assert [e.episode for e in more if e.kind == "episode"] == [5]
    with pytest.raises(RunError, match="no run 99") as missing:
        open_run(RunRequest(resume=99), store)
    assert missing.value.field == "resume"


def test_resume_refuses_a_live_run_and_one_without_checkpoint(store: GameStore, monkeypatch) -> None:
    register_fakes(monkeypatch)
    run = open_run(RunRequest(agent="fake_learner", budget=Budget(episodes=50)), store)
    next(run)
    with pytest.raises(RunBusy):
        open_run(RunRequest(resume=run.run_id), store)
    store.set_run_status(run.run_id, "stopped")
    with pytest.raises(NoCheckpoint):
        open_run(RunRequest(resume=run.run_id), store)
    run.close()


def _trainable_presets() -> list[str]:
    return [p for p in list_presets() if get_agent_class(load_preset(p)["agent"]).trainable]


@pytest.mark.parametrize("preset", _trainable_presets())
def test_the_train_tab_and_the_cli_store_the_same_run_for_every_preset(qtbot, store, preset: str) -> None:
    """Apply the preset in the tab's form and press nothing else; run ``train --preset`` alike."""
    from studio.tabs.train import TrainTab

    data = load_preset(preset)
    tab = TrainTab(store, None)
    qtbot.addWidget(tab)
    tab.launch.select_agent(data["agent"])
    idx = tab.launch.form.presetCombo.findData(preset)
    assert idx >= 0, f"preset {preset} is not offered for {data['agent']}"
    tab.launch.form.presetCombo.setCurrentIndex(idx)
    qtbot.mouseClick(tab.launch.form.presetButton, Qt.MouseButton.LeftButton)
    argv = ["--preset", preset]
    if preset_budget(data) is None:  # the preset names no budget: give both front ends the same one
        tab.launch.set_budget(episodes=7)
        argv += ["--episodes", "7"]
    from_tab, from_cli = resolve(tab.launch.request()), resolve(cli_request(argv))
    assert from_tab.stored() == from_cli.stored()
    assert from_tab.budget == preset_budget(data) or preset_budget(data) is None
