"""Metric metadata (agents.metrics): every metric a learner emits is declared, once, with its axis."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.base import Agent, Budget
from agents.metrics import (
    STANDARD,
    MetricInfo,
    by_name,
    groups,
    legacy_metrics,
    metrics_of,
)
from agents.registry import agent_names, get_agent_class
from agents.runner import EVAL_METRICS
from tests.agents.test_dqn import TINY as DQN_TINY
from tests.agents.test_imitation import SMALL as IMITATION_SMALL
from tests.agents.test_imitation import log_teacher_games
from tests.agents.test_mcts import TINY as MCTS_TINY
from tests.agents.test_policy import TINY as POLICY_TINY
from tests.agents.test_td_afterstate import TINY as TD_TINY

pytest_plugins = ("tests.agents.torch_fixtures",)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _emitted(agent: Agent, budget: Budget) -> set[str]:
    names: set[str] = set()
    for ev in agent.train(budget):
        names.update(ev.metrics)
    return names


def _train(name: str, data_dir: Path) -> tuple[type[Agent], set[str]]:
    cls = get_agent_class(name)
    if name == "dqn":
        return cls, _emitted(cls(cls.config_cls(**DQN_TINY), seed=1), Budget(episodes=4))
    if name == "td-afterstate":
        return cls, _emitted(cls(cls.config_cls(**TD_TINY), seed=1), Budget(episodes=3))
    if name == "ntuple":
        cfg = cls.config_cls(layout="4x4", restart=0.5)
        return cls, _emitted(cls(cfg, seed=1), Budget(episodes=300))
    if name == "imitation":
        log_teacher_games(data_dir, 8)
        cfg = cls.config_cls(**IMITATION_SMALL, val_frac=0.25)
        return cls, _emitted(cls(cfg, seed=1), Budget(episodes=2))
    if name == "policy":
        return cls, _emitted(cls(cls.config_cls(**POLICY_TINY), seed=1), Budget(episodes=8))
    if name == "mcts":
        cfg = cls.config_cls.from_dict({**MCTS_TINY, "validation_split": 0.5})
        return cls, _emitted(cls(cfg, seed=1), Budget(episodes=4))
    pytest.skip(f"no tiny budget known for {name}")


LEARNERS = [n for n in agent_names() if get_agent_class(n).trainable]


@pytest.mark.parametrize("name", LEARNERS)
def test_every_emitted_metric_is_declared(name: str, data_dir: Path) -> None:
    cls, emitted = _train(name, data_dir)
    declared = by_name(metrics_of(cls))
    assert emitted, f"{name} emitted nothing"
    assert emitted <= set(declared), f"{name} emits undeclared metrics: {sorted(emitted - set(declared))}"


@pytest.mark.parametrize("name", LEARNERS)
def test_declarations_are_unique_and_grouped(name: str) -> None:
    cls = get_agent_class(name)
    infos = metrics_of(cls)
    names = [m.name for m in infos]
    assert len(names) == len(set(names))
    titles = [g for g, _ in groups(infos)]
    assert titles[:2] == ["Score", "Max tile"] and "Speed" in titles
    for _, members in groups(infos):
        assert len({m.kind for m in members}) == 1  # one axis holds one kind of quantity


def test_the_panels_each_agent_asked_for() -> None:
    def titles(name: str) -> list[str]:
        return [g for g, _ in groups(metrics_of(get_agent_class(name)))]

    dqn = titles("dqn")
    assert {"Loss", "Mean Q", "Exploration ε"} <= set(dqn)  # mean Q has its own axis, not the loss's
    imitation = dict(groups(metrics_of(get_agent_class("imitation"))))
    assert [m.name for m in imitation["Loss"]] == ["loss", "val_loss"]
    assert [m.name for m in imitation["Accuracy"]] == ["accuracy", "val_accuracy"]
    assert imitation["Accuracy"][0].kind == "evaluation"
    assert {"TD error", "Learning rate"} <= set(titles("ntuple"))
    assert {"Policy loss", "Value loss"} <= set(titles("mcts"))
    assert {"Loss", "Good-move share"} <= set(titles("policy"))
    assert {"Loss", "Exploration ε", "Discount γ", "Learning rate"} <= set(titles("td-afterstate"))


def test_metric_info_defaults_and_checks() -> None:
    m = MetricInfo("val_loss")
    assert m.label == "Validation loss" and m.group == "Validation loss" and m.kind == "other"
    assert not MetricInfo("round", group="").drawn
    with pytest.raises(ValueError):
        MetricInfo("x", kind="nonsense")
    with pytest.raises(ValueError):
        MetricInfo("x", scale="cubic")
    assert {m.name for m in STANDARD} == {"score", "max_tile", "moves", "steps_per_s", *EVAL_METRICS}
    # of the runner's evaluation, only the mean score is drawn (on its own axis)
    assert [m.name for m in STANDARD if m.kind == "evaluation" and m.drawn] == ["eval_score"]


def test_older_name_lists_and_metadata_stay_in_step() -> None:
    from agents.dqn import DQNAgent

    assert DQNAgent.loss_metrics == ("loss",)
    assert DQNAgent.schedule_metrics == ("epsilon", "lr")

    class Legacy(Agent):
        loss_metrics = ("loss", "aux")
        schedule_metrics = ("epsilon",)

    assert [m.name for m in Legacy.metrics] == ["loss", "aux", "epsilon"]
    assert Legacy.metrics == legacy_metrics(("loss", "aux"), ("epsilon",))
    assert by_name(Legacy.metrics)["aux"].group == "Loss"
