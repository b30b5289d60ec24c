"""The agent registry: name -> "module:Class", for the built-in agents and for plug-ins.

Built-in agents are one module plus one line in :data:`BUILTIN_AGENTS`. Plug-ins are other installed
packages that name agents in the entry-point group :data:`ENTRY_POINT_GROUP` (``studio2048.agents``;
``name = "module:Class"``, see docs/agents.md).

Nothing is imported to *list* the agents: the built-ins are names here, the plug-ins names in the
installed packages' metadata. A module is imported when its class is asked for
(:meth:`Registry.get_agent_class`), so ``eval --help`` or opening the window does not import torch or
a plug-in's dependencies. A plug-in is checked when it is first imported: one that fails to import,
is no :class:`agents.base.Agent`, declares another name or has a config whose defaults are refused
leaves :meth:`Registry.agent_names` from then on and is listed by :meth:`Registry.broken_plugins` with
its one-line reason. Those whose metadata alone rules them out (a built-in's name, a name two packages
declare, a name that is no agent name) are never listed. :meth:`Registry.check_plugins` tries every
plug-in at once (``agents``, ``check-agent``, the window's background preload).

The state lives in a :class:`Registry` object. The process has a default one, reached through
:func:`default_registry`, and the module-level functions (:func:`agent_names`, :func:`get_agent_class`
...) ask it. Tests build a fresh one, or a copy with their fake agents, and install it for a while
with :func:`using` / :func:`registered`.

Import order (no circles): ``config`` -> ``base`` -> ``registry`` -> ``checkpoint``.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
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
    "ppo": "agents.ppo:PPOAgent",
    "imitation": "agents.imitation:ImitationAgent",
    "mcts": "agents.mcts:MCTSAgent",
}

#: What an agent name may be: it becomes a CLI word (``--agent NAME``), a file name part and a run label.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,39}")
#: What a plug-in's ``move_values`` scale may be (:attr:`agents.base.Agent.value_kind`).
VALUE_KINDS = ("points", "share", "rank")
#: Longest reason kept for a broken plug-in (an exception's text may be pages).
MAX_REASON = 300


@dataclass(frozen=True)
class Plugin:
    """A plug-in agent as found: its entry point, the package that declares it, and whether it works."""

    name: str
    target: str
    package: str
    reason: str | None = None  # None: usable (or not imported yet); else why it is left out (one line)


class UnknownAgent(KeyError):
    """No usable agent has this name; ``str()`` says why in one line (a KeyError, for older callers)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(name)
        self.name = name
        self.message = message

    def __str__(self) -> str:
        return self.message


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 1] + "…"


def contract_root(cls: type) -> Any:
    """:class:`agents.base.Agent` when ``cls`` is a subclass of it, found in ``cls``'s own bases by the
    marker the contract's root class alone defines (None otherwise). The registry imports no agent
    module: the contract and the checkpoint format build on the registry, and an import of
    ``agents.base`` here closed the circle base -> checkpoint -> registry -> base."""
    return next((k for k in cls.__mro__ if vars(k).get("__studio2048_agent_root__") is True), None)


def contract_problem(cls: Any, name: str) -> str | None:
    """Why ``cls`` cannot be agent ``name`` (one line), from what its class says without running it;
    None when it can. The checks an agent's behaviour needs are :mod:`agents.conformance`'s."""
    if not isinstance(cls, type):
        return f"it is a {type(cls).__name__}, not a class"
    root = contract_root(cls)
    if root is None:
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
    if agent.move_values is root.move_values and agent.act is root.act:
        return f"{cls.__name__} plays no move: it overrides neither act nor move_values"
    if agent.trainable and agent.train is root.train:
        return f"{cls.__name__} says it is trainable but does not override train"
    if agent.reviews_in_points is True and agent.review_values is root.review_values:
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


class Registry:
    """Agent names -> classes: the built-ins, those registered in code, and the plug-ins.

    ``builtins``: the built-in agents (name -> "module:Class"); ``plugins``: whether to read the
    installed packages' entry points (once, at the first question). Thread-safe; an agent's module is
    imported outside the lock, so that listing the agents never waits for torch to import.
    """

    def __init__(self, builtins: Mapping[str, str] = BUILTIN_AGENTS, *, plugins: bool = True) -> None:
        self._builtins = dict(builtins)
        self._agents: dict[str, str] = dict(builtins)
        self._cache: dict[str, type[Agent]] = {}
        self._read_plugins = plugins
        self._plugins: dict[str, Plugin] | None = None  # None: the metadata not read yet
        self._points: dict[str, EntryPoint] = {}  # usable-looking plug-ins' entry points, by name
        self._checked: set[str] = set()  # plug-ins imported and found usable
        self._lock = threading.RLock()

    def with_agents(self, agents: Mapping[str, str]) -> Registry:
        """A copy of this registry (what it found and imported so far) with ``agents`` registered too."""
        with self._lock:
            copy = Registry(self._builtins, plugins=self._read_plugins)
            copy._agents = dict(self._agents)
            copy._cache = dict(self._cache)
            copy._plugins = None if self._plugins is None else dict(self._plugins)
            copy._points = dict(self._points)
            copy._checked = set(self._checked)
        for name, target in agents.items():
            copy.register(name, target)
        return copy

    # ------------------------------------------------------------------ plug-ins
    def _found(self) -> dict[str, Plugin]:
        """The plug-ins named in the installed packages' metadata, read once (call with the lock held);
        nothing is imported."""
        if self._plugins is not None:
            return self._plugins
        found: dict[str, Plugin] = {}
        self._plugins = found
        if not self._read_plugins:
            return found
        try:
            # the module's name, looked up now: tests narrow it to the packages they make
            points = list(entry_points(group=ENTRY_POINT_GROUP))
        except Exception:  # an installed package's damaged metadata: no plug-ins rather than no studio
            log.exception("the installed packages' entry points could not be read")
            points = []
        for ep in points:
            package = ep.dist.name if ep.dist is not None else "?"
            if ep.name in found:
                if found[ep.name].reason is None:
                    # the first one keeps the name; the second is refused by the same rule as a built-in's
                    self._agents.pop(ep.name, None)
                    self._points.pop(ep.name, None)
                first = found[ep.name].package
                why = f"the name is declared by two packages ({first} and {package})"
                found[ep.name] = Plugin(ep.name, ep.value, package, why)
                continue
            if ep.name in self._builtins:
                found[ep.name] = Plugin(ep.name, ep.value, package, f"{ep.name!r} is a built-in agent's name")
                continue
            if not NAME_PATTERN.fullmatch(ep.name):
                bad = f"{ep.name!r} is not an agent name (lower-case letters, digits, - and _; 1-40)"
                found[ep.name] = Plugin(ep.name, ep.value, package, bad)
                continue
            found[ep.name] = Plugin(ep.name, ep.value, package)
            self._points[ep.name] = ep
            self._agents[ep.name] = ep.value
        return found

    def _check(self, name: str) -> type[Agent] | None:
        """Import and check plug-in ``name`` if that has not happened yet: its class, or None when it
        cannot be used (its reason recorded; it leaves the names)."""
        with self._lock:
            self._found()
            ep = self._points.get(name)
            if ep is None or self._agents.get(name) != ep.value:
                return None  # not a plug-in still in the running (or another class took the name)
            if name in self._checked:
                return self._cache.get(name)
        # Imported without the lock: a plug-in may import torch (seconds), and listing the agents
        # meanwhile (the window's other thread, the plug-in itself) must not wait for it.
        cls, reason = _load_plugin(ep)
        with self._lock:
            plugins = self._found()
            if plugins.get(name) is None or plugins[name].target != ep.value:
                return cls  # reloaded meanwhile: the answer belongs to nobody
            if cls is None:
                log.info("plug-in agent %s left out: %s", name, reason)
                plugins[name] = replace(plugins[name], reason=reason)
                self._points.pop(name, None)
                if self._agents.get(name) == ep.value:
                    self._agents.pop(name)
                return None
            self._checked.add(name)
            if self._agents.get(name) == ep.value:
                self._cache[name] = cls
            return cls

    def plugins(self) -> list[Plugin]:
        """Every plug-in agent of this environment, usable or not, each imported and checked."""
        self.check_plugins()
        with self._lock:
            return list(self._found().values())

    def check_plugins(self) -> list[tuple[str, str]]:
        """Import and check every plug-in not checked yet; :meth:`broken_plugins` then."""
        with self._lock:
            self._found()
            names = list(self._points)
        for name in names:
            self._check(name)
        return self.broken_plugins()

    def loaded_plugins(self) -> list[tuple[str, type[Agent]]]:
        """(name, class) of each usable plug-in imported so far, in the order found; imports nothing."""
        with self._lock:
            return [(n, self._cache[n]) for n in self._found() if n in self._checked and n in self._cache]

    def broken_plugins(self) -> list[tuple[str, str]]:
        """(name, one-line reason) of each plug-in known to be unusable (left out of
        :meth:`agent_names`), without importing anything: those the metadata rules out, and those
        whose import or check failed so far (:meth:`check_plugins` tries them all)."""
        with self._lock:
            return [(p.name, p.reason) for p in self._found().values() if p.reason is not None]

    def plugin_of(self, name: str) -> Plugin | None:
        """The plug-in that provides agent ``name``, checked (imported) if it was not yet; None for a
        built-in or an agent registered in code."""
        self._check(name)
        with self._lock:
            return self._found().get(name)

    def reload_plugins(self) -> None:
        """Forget the plug-ins found so far; the next question reads the metadata again (tests, after
        ``pip install``)."""
        with self._lock:
            importlib.invalidate_caches()
            for plugin in (self._plugins or {}).values():
                if self._agents.get(plugin.name) == plugin.target and plugin.name not in self._builtins:
                    self._agents.pop(plugin.name, None)
                    self._cache.pop(plugin.name, None)
            self._plugins = None
            self._points.clear()
            self._checked.clear()

    # ------------------------------------------------------------------ agents
    def register(self, name: str, target: str) -> None:
        """Register an agent class by import path (tests; worker processes told where an agent lives)."""
        with self._lock:
            self._found()  # read first, so that the metadata read later cannot replace this
            self._agents[name] = target
            self._cache.pop(name, None)

    def target_of(self, name: str) -> str | None:
        """Where agent ``name`` lives ("module:Class"), so another process can register it too."""
        with self._lock:
            self._found()
            return self._agents.get(name)

    def agent_names(self) -> list[str]:
        """Every agent not known to be unusable: the built-in ones, then those registered in code and
        by plug-ins. Imports nothing."""
        with self._lock:
            self._found()
            return list(self._agents)

    def get_agent_class(self, name: str) -> type[Agent]:
        """The class of agent ``name``, its module imported now if not before; :class:`UnknownAgent`
        (a KeyError) when no usable agent has that name (a plug-in that fails its import or check)."""
        with self._lock:
            self._found()
            target = self._agents.get(name)
            cached = self._cache.get(name)
            point = self._points.get(name)
        if target is None:
            raise UnknownAgent(name, self.unknown_agent_message(name))
        if cached is not None:
            return cached
        if point is not None and point.value == target:
            cls = self._check(name)
            if cls is None:
                raise UnknownAgent(name, self.unknown_agent_message(name))
            return cls
        # Imported without the lock: a learner's module imports torch (seconds), and listing the agents
        # meanwhile (the window's other thread) must not wait for it; Python's import lock serialises imports.
        module, _, cls_name = target.partition(":")
        found: type[Agent] = getattr(importlib.import_module(module), cls_name)
        if found.name != name:
            raise RuntimeError(f"{target} declares name {found.name!r}, registered as {name!r}")
        with self._lock:
            if self._agents.get(name) == target:
                self._cache[name] = found
        return found

    def unknown_agent_message(self, name: str) -> str:
        """Why ``name`` is no agent, in one line: a broken plug-in's reason, else the names there are."""
        with self._lock:
            plugin = self._found().get(name)
        if plugin is not None and plugin.reason is not None:
            return f"plug-in agent {name!r} ({plugin.package}) cannot be used: {plugin.reason}"
        return f"unknown agent {name!r}: choose one of {', '.join(self.agent_names())}"

    def create_agent(
        self,
        name: str,
        config: dict[str, Any] | None = None,
        rules: Rules | None = None,
        seed: int | None = None,
    ) -> Agent:
        """An agent by name, its config from a dict (validated; ConfigError names the field)."""
        try:
            cls = self.get_agent_class(name)
        except UnknownAgent as e:
            raise ValueError(e.message) from None
        except KeyError:
            raise ValueError(self.unknown_agent_message(name)) from None
        cfg = cls.config_cls.from_dict(config or {})
        return cls(cfg, rules, seed)


# ---------------------------------------------------------------------------------- the default one

_default: Registry | None = None
_default_lock = threading.Lock()


def default_registry() -> Registry:
    """The process's registry (made at the first question: the built-ins and the installed plug-ins)."""
    global _default
    current = _default
    if current is not None:
        return current
    with _default_lock:
        if _default is None:
            _default = Registry()
        return _default


def set_default_registry(registry: Registry | None) -> Registry | None:
    """Make ``registry`` the process's (None: a fresh one at the next question); the one before."""
    global _default
    with _default_lock:
        previous, _default = _default, registry
    return previous


@contextlib.contextmanager
def using(registry: Registry) -> Iterator[Registry]:
    """Inside: ``registry`` answers the module-level functions; the one before is put back after."""
    previous = set_default_registry(registry)
    try:
        yield registry
    finally:
        set_default_registry(previous)


@contextlib.contextmanager
def registered(agents: Mapping[str, str]) -> Iterator[Registry]:
    """Inside: the default registry plus ``agents`` (name -> "module:Class"); nothing of it after."""
    with using(default_registry().with_agents(agents)) as registry:
        yield registry


def plugins() -> list[Plugin]:
    """:meth:`Registry.plugins` of the default registry."""
    return default_registry().plugins()


def check_plugins() -> list[tuple[str, str]]:
    """:meth:`Registry.check_plugins` of the default registry."""
    return default_registry().check_plugins()


def loaded_plugins() -> list[tuple[str, type[Agent]]]:
    """:meth:`Registry.loaded_plugins` of the default registry (imports nothing)."""
    return default_registry().loaded_plugins()


def broken_plugins() -> list[tuple[str, str]]:
    """:meth:`Registry.broken_plugins` of the default registry (imports nothing)."""
    return default_registry().broken_plugins()


def plugin_of(name: str) -> Plugin | None:
    """:meth:`Registry.plugin_of` of the default registry."""
    return default_registry().plugin_of(name)


def reload_plugins() -> None:
    """:meth:`Registry.reload_plugins` of the default registry."""
    default_registry().reload_plugins()


def register(name: str, target: str) -> None:
    """:meth:`Registry.register` in the default registry."""
    default_registry().register(name, target)


def target_of(name: str) -> str | None:
    """:meth:`Registry.target_of` of the default registry."""
    return default_registry().target_of(name)


def agent_names() -> list[str]:
    """:meth:`Registry.agent_names` of the default registry (imports nothing)."""
    return default_registry().agent_names()


def get_agent_class(name: str) -> type[Agent]:
    """:meth:`Registry.get_agent_class` of the default registry."""
    return default_registry().get_agent_class(name)


def unknown_agent_message(name: str) -> str:
    """:meth:`Registry.unknown_agent_message` of the default registry."""
    return default_registry().unknown_agent_message(name)


def create_agent(
    name: str,
    config: dict[str, Any] | None = None,
    rules: Rules | None = None,
    seed: int | None = None,
) -> Agent:
    """:meth:`Registry.create_agent` of the default registry."""
    return default_registry().create_agent(name, config, rules, seed)
