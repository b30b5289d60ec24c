"""The agent contract, checked on every registered agent (a new agent is covered by registering it).

The checks themselves are :mod:`agents.conformance`'s, the same that ``python main.py check-agent NAME``
runs on a plug-in: one definition of "an agent that works" for the built-in agents and for plug-ins.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from agents.conformance import CHECKS, CheckResult, run_check
from agents.registry import BUILTIN_AGENTS, agent_names, get_agent_class

AGENTS = list(BUILTIN_AGENTS)


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("name", AGENTS)
def test_builtin_agent_meets_the_contract(name: str, check: str) -> None:
    result = run_check(name, check)
    assert isinstance(result, CheckResult) and result.check == check
    if result.passed is None:
        if check == "training" and not get_agent_class(name).trainable:
            pytest.skip(result.detail)
        raise AssertionError(f"{name}: {check} skipped: {result.detail}")
    assert result.passed, f"{name}: {check}: {result.detail}"
    assert "\n" not in result.detail


ABBREVIATIONS = {"lr", "lam", "tc", "eps", "nn", "s4", "tt", "puct", "val", "frac", "prob", "envs", "grad"}


@pytest.mark.parametrize("name", agent_names())
def test_every_knob_has_a_label_a_newcomer_reads(name: str) -> None:
    for spec in get_agent_class(name).config_cls.specs():
        words = set(spec.label.lower().replace(":", " ").split())
        assert spec.label and spec.label[0].isupper(), (name, spec.name, spec.label)
        assert not words & ABBREVIATIONS, (name, spec.name, spec.label)


def test_default_labels_spell_out_the_abbreviations() -> None:
    from agents.config import default_label

    assert default_label("lr") == "Learning rate"
    assert default_label("n_step") == "N-step"
    assert default_label("tc") == "Temporal coherence"
    assert default_label("eps_decay") == "Exploration decay"
    assert default_label("lam") == "Trace decay λ"
    assert default_label("c_puct") == "Exploration constant (PUCT)"
