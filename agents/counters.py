"""``Counters``: an agent's lifetime training counters, part of the agent contract (``agents.base``
re-exports it) and saved by the checkpoint format, which imports this module and not ``agents.base``:
base -> checkpoint -> registry stays one-way (tests/agents/test_contract.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Counters:
    """An agent's lifetime training counters, saved in checkpoints so a resumed run continues them."""

    episodes: int = 0
    steps: int = 0
    seconds: float = 0.0
    updates: int = 0
    #: CPU time of the training process's threads (Budget.cpu_seconds counts it)
    cpu_seconds: float = 0.0
