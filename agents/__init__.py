"""Agents: one small contract (``agents.base``), a lazy registry (``agents.registry``), checkpoints.

Imports engine (and torch in the learners); never Qt; never prints.
"""

from agents.base import Agent, Budget, Control, MetricEvent, TrainContext
from agents.config import AgentConfig, ConfigError, knob
from agents.registry import agent_names, create_agent, get_agent_class

__all__ = [
    "Agent",
    "AgentConfig",
    "Budget",
    "ConfigError",
    "Control",
    "MetricEvent",
    "TrainContext",
    "agent_names",
    "create_agent",
    "get_agent_class",
    "knob",
]
