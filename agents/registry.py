"""The agent registry: name -> "module:Class". Adding an agent is one module plus one line here.

Modules are imported lazily, so listing agents or opening the GUI does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.base import Agent
    from engine import Rules

_AGENTS: dict[str, str] = {
    "random": "agents.baselines:RandomAgent",
    "greedy": "agents.baselines:GreedyAgent",
    "expectimax": "agents.expectimax:ExpectimaxAgent",
    "ntuple": "agents.ntuple:NTupleAgent",
    "td-afterstate": "agents.td_afterstate:TDAfterstateAgent",
    "dqn": "agents.dqn:DQNAgent",
    "policy": "agents.policy:PolicyAgent",
    "imitation": "agents.imitation:ImitationAgent",
    "mcts": "agents.mcts:MCTSAgent",
}

_cache: dict[str, type[Agent]] = {}


def register(name: str, target: str) -> None:
    """Register an agent class by import path (used by tests and plug-ins)."""
    _AGENTS[name] = target
    _cache.pop(name, None)


def target_of(name: str) -> str | None:
    """Where agent ``name`` lives ("module:Class"), so another process can register it too."""
    return _AGENTS.get(name)


def agent_names() -> list[str]:
    return list(_AGENTS)


def get_agent_class(name: str) -> type[Agent]:
    if name not in _AGENTS:
        raise KeyError(name)
    if name not in _cache:
        module, _, cls_name = _AGENTS[name].partition(":")
        cls = getattr(importlib.import_module(module), cls_name)
        if cls.name != name:
            raise RuntimeError(f"{_AGENTS[name]} declares name {cls.name!r}, registered as {name!r}")
        _cache[name] = cls
    return _cache[name]


def unknown_agent_message(name: str) -> str:
    return f"unknown agent {name!r}: choose one of {', '.join(agent_names())}"


def create_agent(
    name: str,
    config: dict[str, Any] | None = None,
    rules: Rules | None = None,
    seed: int | None = None,
) -> Agent:
    """An agent by registry name, its config from a dict (validated; ConfigError names the field)."""
    try:
        cls = get_agent_class(name)
    except KeyError:
        raise ValueError(unknown_agent_message(name)) from None
    cfg = cls.config_cls.from_dict(config or {})
    return cls(cfg, rules, seed)
