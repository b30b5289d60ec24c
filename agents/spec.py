"""Which agent to play with: one description and one loader for every place that plays an agent.

Play hints and Watch, the Arena, ``eval`` and anything that grades games name an agent the same way:
a registered agent with some settings, or a checkpoint file, plus play settings changed after
loading (a deeper search for a trained network: ``play={"search_depth": 2}``). It lives in
``agents`` rather than in the studio's application layer because arena worker processes build agents
from it, and ``agents`` never imports ``studio``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.base import Agent
from engine import Rules


@dataclass(frozen=True, eq=False)
class AgentSpec:
    """A registered agent (``name`` + ``config`` values) or a ``checkpoint`` file (its own config).

    ``rules``: the game the agent plays. None means the classic game for a fresh agent and the
    checkpoint's own rules for a checkpoint; a checkpoint asked to play other rules is refused with the
    reason. ``play``: settings changed after the agent is built or loaded (any knob of its config).
    ``label``: how front ends name it. ``target`` (``"module:Class"``) lets worker processes find an
    agent registered at run time (tests, plug-ins); registry agents need none. With a checkpoint,
    ``name`` (if given) is the agent the file must hold.
    """

    name: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    checkpoint: str | None = None
    rules: Rules | None = None
    label: str | None = None
    target: str | None = None
    play: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name is None and self.checkpoint is None:
            raise ValueError("an agent spec needs an agent name or a checkpoint")
        if self.checkpoint is not None and not isinstance(self.checkpoint, str):
            object.__setattr__(self, "checkpoint", str(self.checkpoint))

    @classmethod
    def from_checkpoint(cls, path: str | Path, agent: str | None = None, **kw: Any) -> AgentSpec:
        """A checkpoint file; ``agent`` (when known) is checked against the file."""
        return cls(name=agent, checkpoint=str(path), **kw)

    # ------------------------------------------------------------------ identity
    def key(self) -> str:
        """A stable text identity (equal specs, equal keys): for caches and equality."""
        return json.dumps(
            {
                "name": self.name,
                "config": dict(self.config),
                "checkpoint": self.checkpoint,
                "rules": None if self.rules is None else self.rules.to_dict(),
                "play": dict(self.play),
                "target": self.target,
            },
            sort_keys=True,
            default=str,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AgentSpec) and self.key() == other.key() and self.label == other.label

    def __hash__(self) -> int:
        return hash(self.key())

    @property
    def display(self) -> str:
        """How a person reads it: the label, else ``dqn (run-3)`` / ``ntuple (best.npz)`` / ``expectimax``."""
        if self.label:
            return self.label
        if self.checkpoint:
            path = Path(self.checkpoint)
            where = path.parent.name if path.parent.name.startswith("run-") else path.name
            return f"{self.name or 'checkpoint'} ({where})"
        extra = {**self.config, **self.play}
        if extra:
            return f"{self.name} " + " ".join(f"{k}={v}" for k, v in extra.items())
        return str(self.name)

    # ------------------------------------------------------------------ loading
    def build(self, rules: Rules | None = None, *, exact: bool = True) -> Agent:
        """The agent, ready to play ``rules`` (default: the spec's). ValueError with the reason when
        it cannot: unknown agent, damaged checkpoint, rules the checkpoint was not trained on, a bad
        setting. ``exact=False`` asks a checkpoint only for the board's shape (a person may play
        another spawn rule with a hint from a network trained on the classic one)."""
        from agents.checkpoint import load_checkpoint
        from agents.registry import create_agent, register

        rules = rules if rules is not None else self.rules
        if self.target and self.name:
            register(self.name, self.target)
        if self.checkpoint:
            # Playing runs one board at a time, where small nets are faster on the CPU than behind a
            # GPU's per-call latency (and play workers then never hold a CUDA context): play on the CPU.
            agent = load_checkpoint(self.checkpoint, expect_agent=self.name, device="cpu", play=True)
            own = agent.rules
            if rules is not None and (own != rules if exact else own.shape != rules.shape):
                raise ValueError(
                    f"{Path(self.checkpoint).name} was trained on {own.rows}x{own.cols} (p4={own.p4}), "
                    f"not {rules.rows}x{rules.cols} (p4={rules.p4})"
                )
        else:
            assert self.name is not None
            agent = create_agent(self.name, dict(self.config), rules)
        if self.play:
            agent.config = agent.config.replace(**dict(self.play))
        return agent
