"""What an agent returns, checked where it is used: one named fault instead of an internal error.

An agent is someone else's code (a plug-in), so its answers are untrusted input. ``move_values`` must
be a mapping of legal :class:`~engine.Direction` to numbers, ``act`` a legal Direction. Anything else
used to surface far from its cause (``AssertionError: a legal move is always found above`` for string
keys, ``AttributeError`` for a list, ``TypeError`` for a None value, the engine's "move up changes
nothing on this board" for an illegal move), naming neither the agent nor the method. Here each is an
:class:`AgentFault`: "my-agent.move_values returned keys of type str; expected Direction".

No Qt, no printing: the callers (``Agent.act``, the arena, ``check-agent``) report the fault.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from engine import DIRECTIONS, Direction, Game

if TYPE_CHECKING:
    from agents.base import Agent

#: What a move value may be (bool is an int, but True as a value is a bug, not a rating).
_NUMBERS = (int, float, np.integer, np.floating)


class AgentFault(RuntimeError):
    """An agent broke the contract while it played: ``agent``'s ``method`` ``problem``.

    ``where`` (optional) says when (``"move 12 of game 3"``). Picklable, so a worker process's fault
    reaches the parent as itself."""

    def __init__(self, agent: str, method: str, problem: str, where: str = "") -> None:
        super().__init__(agent, method, problem, where)
        self.agent, self.method, self.problem, self.where = agent, method, problem, where

    def __str__(self) -> str:
        at = f" (at {self.where})" if self.where else ""
        return f"{self.agent}.{self.method} {self.problem}{at}"


def agent_name(agent: Any) -> str:
    """The agent's registry name, or its class's name when it has none (a name that raises is no name)."""
    try:
        name = agent.name
    except Exception:  # a plug-in's property that raises: the class still names it
        name = ""
    return name if isinstance(name, str) and name else type(agent).__name__


def _legal_text(game: Game) -> str:
    return ", ".join(d.label for d in game.legal_moves()) or "none: the game is over"


def _direction(value: object) -> Direction | None:
    """``value`` as a Direction (a Direction, or a plain int 0-3 as IntEnum keys compare), else None."""
    if isinstance(value, Direction):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= int(value) <= 3:
        return Direction(int(value))
    return None


def checked_values(
    agent: Any,
    game: Game,
    values: object,
    method: str = "move_values",
    *,
    finite: bool = True,
) -> dict[Direction, float]:
    """``values`` as ``{Direction: float}`` of legal moves, or AgentFault saying what is wrong with them.

    ``finite=False`` lets NaN and infinities through (``Agent.act`` ranks them last so that a diverged
    network still plays); the arena and ``check-agent`` ask for finite values: a NaN there is the
    agent's fault, not a move to play by the fallback order."""
    name = agent_name(agent)
    if not isinstance(values, Mapping):
        raise AgentFault(name, method, f"returned a {type(values).__name__}; expected dict[Direction, float]")
    out: dict[Direction, float] = {}
    for key, value in values.items():
        d = _direction(key)
        if d is None:
            found = f"keys of type {type(key).__name__}" if not isinstance(key, int) else f"key {key!r}"
            raise AgentFault(name, method, f"returned {found}; expected Direction")
        if not isinstance(value, _NUMBERS) or isinstance(value, bool):
            raise AgentFault(
                name, method, f"returned a value of type {type(value).__name__} for {d.label}; expected float"
            )
        v = float(value)
        if finite and not math.isfinite(v):
            raise AgentFault(
                name, method, f"returned a non-finite value ({v}) for {d.label}; expected a finite float"
            )
        out[d] = v
    mask = game.legal_mask()
    for d in out:
        if not mask[d]:
            raise AgentFault(
                name,
                method,
                f"rated {d.label}, which changes nothing on this board (legal: {_legal_text(game)})",
            )
    if not out and mask.any():
        raise AgentFault(name, method, f"rated no move (legal: {_legal_text(game)})")
    return out


def checked_move(agent: Any, game: Game, move: object, method: str = "act") -> Direction:
    """``move`` as a legal Direction, or AgentFault naming the agent, the method and what it returned."""
    name = agent_name(agent)
    d = _direction(move)
    if d is None:
        raise AgentFault(name, method, f"returned a {type(move).__name__} ({move!r:.40}); expected Direction")
    if not game.legal_mask()[d]:
        raise AgentFault(
            name,
            method,
            f"played {d.label}, which changes nothing on this board (legal: {_legal_text(game)})",
        )
    return d


def best_move(values: Mapping[Direction, float]) -> Direction | None:
    """The best-rated move, ties in action order; non-finite values rank below every finite one (a
    diverged network must still pick a legal move, or a game would never end). None for no values."""
    finite = {d: v for d, v in values.items() if math.isfinite(v)}
    ranked = finite or values
    best = max(finite.values()) if finite else None
    for d in DIRECTIONS:
        if d in ranked and (best is None or ranked[d] == best):
            return d
    return None


@contextmanager
def calling(agent: Any, method: str) -> Iterator[None]:
    """An exception the agent's ``method`` raises becomes an AgentFault naming both (the original is its
    ``__cause__``, for the log's traceback). NotImplementedError passes: it means "does not rate moves"."""
    try:
        yield
    except (AgentFault, NotImplementedError):
        raise
    except Exception as e:
        text = " ".join(str(e).split())
        raise AgentFault(
            agent_name(agent), method, f"raised {type(e).__name__}" + (f": {text}" if text else "")
        ) from e


def plays_best_value(agent: Agent) -> bool:
    """True when the agent's move is the best of its ``move_values`` (it keeps the base ``act``): its
    values can then be checked on every move at no extra cost."""
    # agents.base imports this module, so it is not imported back (no circle): any agent there is
    # comes from a loaded agents.base.
    base = sys.modules["agents.base"]
    return type(agent).act is base.Agent.act


def play_move(agent: Agent, game: Game) -> Direction:
    """The agent's move on ``game``, checked: legal, a Direction, and, for an agent that plays the best
    of its values, finite values. AgentFault (naming the agent) for anything else, its own exceptions
    included. What the arena plays with."""
    if plays_best_value(agent):
        with calling(agent, "move_values"):
            raw = agent.move_values(game)
        move = best_move(checked_values(agent, game, raw, "move_values", finite=True))
        if move is None:
            raise ValueError("no legal move: the game is over")
        return move
    with calling(agent, "act"):
        chosen = agent.act(game)
    return checked_move(agent, game, chosen, "act")


#: Moves of the seeded game a loaded network is tried on (:func:`require_finite_values`).
PROBE_MOVES = 8


def require_finite_values(agent: Agent, arrays: Mapping[str, np.ndarray] | None = None) -> None:
    """ValueError, one line, when ``agent`` rates a move of a short seeded game with NaN or an
    infinity: weights that are finite but huge (3e38) overflow on the way through a network, and such
    an agent would play its fallback order with every value NaN. Learners call it when they load a
    checkpoint (the loader names the file); ``arrays``: the loaded ones, for the largest weight."""
    game = Game(seed=0, rules=agent.rules)
    for _ in range(PROBE_MOVES):
        if game.game_over:
            break
        values = agent.move_values(game)
        bad = next((v for v in values.values() if not math.isfinite(v)), None)
        if bad is not None:
            floats = [np.abs(a).max() for a in (arrays or {}).values() if a.dtype.kind == "f" and a.size]
            largest = f" (largest |weight| {max(floats):.3g})" if floats else ""
            raise ValueError(
                f"its move values are not finite ({bad}) on the boards of a seeded game: the weights "
                f"overflow{largest}; the network diverged"
            )
        game.step(best_move(values) or game.legal_moves()[0])
