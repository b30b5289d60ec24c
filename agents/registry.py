"""The agent registry: name -> "module:Class", for the built-in agents and for plug-ins.

Built-in agents are one module plus one line in :data:`BUILTIN_AGENTS`; their modules are imported
lazily, so listing agents or opening the GUI does not import torch.

Plug-ins are other installed packages that name agents in the entry-point group
:data:`ENTRY_POINT_GROUP` (``studio2048.agents``; ``name = "module:Class"``, see docs/agents.md). They
are found once per process, the first time anyone asks for the list, and imported then, so that a
plug-in that cannot be used is known before a front end offers it: one that fails to import, is no
:class:`agents.base.Agent`, declares another name, has a config whose defaults are refused or whose
name is taken is left out of :func:`agent_names` and listed by :func:`broken_plugins` with its
one-line reason. Nothing a plug-in does while it is loaded takes the caller down.

Import order (no circles): ``base`` -> ``checkpoint`` -> ``registry``; this module imports neither
``base`` nor ``checkpoint`` at run time (``base`` only for type hints).
"""

from __future__ import annotations

import importlib
import logging
import re
import sys
import threading
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from agents.config import AgentConfig

if TYPE_CHECKING:
    from agents.base import Agent
    from engine import Rules

log = logging.getLogger(__name__)

#: The entry-point group plug-in packages add agents to.
ENTRY_POINT_GROUP = "studio2048.agents"

BUILTIN_AGENTS: dict[str, str] = {
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

#: What an agent name may be: it becomes a CLI word (``--agent NAME``), a file name part and a run label.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,39}")
#: What a plug-in's ``move_values`` scale may be (:attr:`agents.base.Agent.value_kind`).
VALUE_KINDS = ("points", "share", "rank")
#: Longest reason kept for a broken plug-in (an exception's text may be pages).
MAX_REASON = 300

_AGENTS: dict[str, str] = dict(BUILTIN_AGENTS)
_cache: dict[str, type[Agent]] = {}
_lock = threading.RLock()


@dataclass(frozen=True)
class Plugin:
    """A plug-in agent as found: its entry point, the package that declares it, and whether it works."""

    name: str
    target: str
    package: str
    reason: str | None = None  # None: usable; else why it is left out (one line)


_plugins: dict[str, Plugin] | None = None  # None: not looked for yet in this process


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 1] + "…"


def contract_problem(cls: Any, name: str) -> str | None:
    """Why ``cls`` cannot be agent ``name`` (one line), from what its class says without running it;
    None when it can. The checks an agent's behaviour needs are :mod:`agents.conformance`'s."""
    if not isinstance(cls, type):
        return f"it is a {type(cls).__name__}, not a class"
    # A subclass of Agent can only exist once agents.base is loaded (its author imported it), so
    # the check needs no import of base here (base imports checkpoint, which imports this module).
    base = sys.modules.get("agents.base")
    if base is None or not issubclass(cls, base.Agent):
        return f"{cls.__name__} is not a subclass of agents.base.Agent"
    declared = getattr(cls, "name", "")
    if declared != name:
        return f"{cls.__name__} declares name {declared!r}, registered as {name!r}"
    agent: Any = cls  # an Agent subclass from here on (checked at run time, not known to mypy)
    config_cls = getattr(cls, "config_cls", None)
    if not (isinstance(config_cls, type) and issubclass(config_cls, AgentConfig)):
        return f"{cls.__name__}.config_cls is not a subclass of agents.config.AgentConfig"
    try:
        config_cls.specs()
        config_cls()
    except (TypeError, ValueError) as e:  # ConfigError is a ValueError; TypeError: a field type not supported
        return f"its config {config_cls.__name__} is refused: {e}"
    if agent.value_kind not in VALUE_KINDS:
        return f"value_kind {agent.value_kind!r} is not one of {', '.join(VALUE_KINDS)}"
    if agent.move_values is base.Agent.move_values and agent.act is base.Agent.act:
        return f"{cls.__name__} plays no move: it overrides neither act nor move_values"
    if agent.trainable and agent.train is base.Agent.train:
        return f"{cls.__name__} says it is trainable but does not override train"
    if agent.reviews_in_points is True and agent.review_values is base.Agent.review_values:
        return f"{cls.__name__} says it reviews in points but does not override review_values"
    return None


def _load_plugin(ep: EntryPoint) -> tuple[type[Agent] | None, str | None]:
    """Import one entry point's class: (class, None) or (None, the one-line reason it cannot be used)."""
    try:
        cls = ep.load()
    except (Exception, SystemExit) as e:  # anything a foreign module raises while imported
        # INFO: the reason reaches the user through broken_plugins() (the greyed form entry, `agents`,
        # `check-agent`, a refused `--agent`); a warning would repeat it on every start of every
        # command, e.g. for the studio's own sb3-* agents wherever the optional extra is not installed
        log.info("plug-in agent %s (%s) failed to import", ep.name, ep.value, exc_info=True)
        return None, _one_line(f"cannot import {ep.value}: {type(e).__name__}: {e}")
    try:
        problem = contract_problem(cls, ep.name)
    except Exception as e:  # a class whose attributes raise when read (properties, metaclasses)
        log.info("plug-in agent %s (%s) could not be checked", ep.name, ep.value, exc_info=True)
        problem = f"{type(e).__name__}: {e}"
    if problem:
        return None, _one_line(problem)
    return cls, None


def _discover() -> dict[str, Plugin]:
    """The plug-ins of this environment, each imported and checked once (call with the lock held)."""
    global _plugins
    if _plugins is not None:
        return _plugins
    # Published before the imports: a plug-in module that asks for the agents while it is imported
    # sees those found so far instead of starting the search again.
    found: dict[str, Plugin] = {}
    _plugins = found
    try:
        points = list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # an installed package's damaged metadata: no plug-ins rather than no studio
        log.exception("the installed packages' entry points could not be read")
        points = []
    for ep in points:
        package = ep.dist.name if ep.dist is not None else "?"
        if ep.name in found:
            if found[ep.name].reason is None:
                # the first one keeps the name; the second is refused by the same rule as a built-in's
                _AGENTS.pop(ep.name, None)
                _cache.pop(ep.name, None)
            found[ep.name] = Plugin(
                ep.name,
                ep.value,
                package,
                f"the name is declared by two packages ({found[ep.name].package} and {package})",
            )
            continue
        if ep.name in BUILTIN_AGENTS:
            found[ep.name] = Plugin(ep.name, ep.value, package, f"{ep.name!r} is a built-in agent's name")
            continue
        if not NAME_PATTERN.fullmatch(ep.name):
            bad = f"{ep.name!r} is not an agent name (lower-case letters, digits, - and _; 1-40)"
            found[ep.name] = Plugin(ep.name, ep.value, package, bad)
            continue
        cls, reason = _load_plugin(ep)
        found[ep.name] = Plugin(ep.name, ep.value, package, reason)
        if cls is not None:
            _AGENTS[ep.name] = ep.value
            _cache[ep.name] = cls
        else:
            log.info("plug-in agent %s left out: %s", ep.name, reason)
    return found


def plugins() -> list[Plugin]:
    """Every plug-in agent of this environment, usable or not, in the order they were found."""
    with _lock:
        return list(_discover().values())


def broken_plugins() -> list[tuple[str, str]]:
    """(name, one-line reason) of each plug-in agent that cannot be used (left out of :func:`agent_names`)."""
    return [(p.name, p.reason) for p in plugins() if p.reason is not None]


def plugin_of(name: str) -> Plugin | None:
    """The plug-in that provides agent ``name`` (None for a built-in or an agent registered in code)."""
    with _lock:
        return _discover().get(name)


def reload_plugins() -> None:
    """Forget the plug-ins found so far; the next question looks again (tests, after ``pip install``)."""
    global _plugins
    with _lock:
        importlib.invalidate_caches()
        for plugin in (_plugins or {}).values():
            if _AGENTS.get(plugin.name) == plugin.target and plugin.name not in BUILTIN_AGENTS:
                _AGENTS.pop(plugin.name, None)
                _cache.pop(plugin.name, None)
        _plugins = None


def register(name: str, target: str) -> None:
    """Register an agent class by import path (tests; worker processes told where an agent lives)."""
    with _lock:
        _AGENTS[name] = target
        _cache.pop(name, None)


def target_of(name: str) -> str | None:
    """Where agent ``name`` lives ("module:Class"), so another process can register it too."""
    with _lock:
        _discover()
        return _AGENTS.get(name)


def agent_names() -> list[str]:
    """Every usable agent: the built-in ones, then those registered in code and by plug-ins."""
    with _lock:
        _discover()
        return list(_AGENTS)


def get_agent_class(name: str) -> type[Agent]:
    """The class of agent ``name``; KeyError when no usable agent has that name."""
    with _lock:
        _discover()
        if name not in _AGENTS:
            raise KeyError(name)
        cached = _cache.get(name)
        target = _AGENTS[name]
    if cached is not None:
        return cached
    # Imported without the lock: a learner's module imports torch (seconds), and listing the agents
    # meanwhile (the window's other thread) must not wait for it; Python's import lock serialises imports.
    module, _, cls_name = target.partition(":")
    cls: type[Agent] = getattr(importlib.import_module(module), cls_name)
    if cls.name != name:
        raise RuntimeError(f"{target} declares name {cls.name!r}, registered as {name!r}")
    with _lock:
        if _AGENTS.get(name) == target:
            _cache[name] = cls
    return cls


def unknown_agent_message(name: str) -> str:
    """Why ``name`` is no agent, in one line: a broken plug-in's reason, else the names there are."""
    plugin = plugin_of(name)
    if plugin is not None and plugin.reason is not None:
        return f"plug-in agent {name!r} ({plugin.package}) cannot be used: {plugin.reason}"
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
