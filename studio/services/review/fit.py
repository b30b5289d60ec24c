"""Fitting a reviewer's calibration (``review --calibrate``): it plays seeded games to the end, and its
raw value of each move it played is paired with the score the game still made. Qt-free."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.base import Agent
from agents.review import fit_calibration, parse_calibration
from agents.spec import AgentSpec
from engine import Game

from .calibration import own_depths
from .grading import depth_of
from .identity import Reviewer


def calibration_refusal(agent: Agent) -> str | None:
    """Why ``agent`` cannot be calibrated (one line), or None when it can: it needs move values that
    rank positions on one scale (not points already, not shares of a policy)."""
    if agent.value_kind == "points" or agent.reviews_in_points:
        return f"{agent.name}'s move values are points already: it grades without a calibration"
    if agent.value_kind == "share":
        return (
            f"{agent.name}'s move values are a policy's shares of 1 per position, not values that "
            "compare across positions: they cannot be calibrated to points"
        )
    if type(agent).move_values is Agent.move_values:
        return f"{agent.name} rates no moves (it has no move values to calibrate)"
    return None


def calibrate(
    reviewer: Reviewer | None = None,
    depths: Sequence[int | None] = (1, 2, 3),
    games: int = 12,
    *,
    seed: int = 1000,
    path: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fit ``reviewer``'s calibration (default: heuristic expectimax) at each of ``depths`` (None: its
    own depth) and write it to ``path`` (default: :meth:`Reviewer.calibration_file`, in the data dir;
    the shipped file is never written), keeping the depths fitted before. Returns what was written:
    ``{"name", "label", "key", "depths": {"D": knots}}``.

    The reviewer plays ``games`` seeded games to the end at that depth; at every position its raw value
    of the move it played and the score the game still made from there are a pair; the pairs are fitted
    by :func:`agents.review.fit_calibration` (a lost position's penalty counts as 0 points).
    ValueError (one line) for a reviewer that cannot be calibrated."""
    from agents.expectimax import DEFAULT_LOSS_PENALTY

    reviewer = reviewer or Reviewer(AgentSpec(name="expectimax"))
    target = path or reviewer.calibration_file()
    if target is None:
        raise ValueError("calibrate needs a data dir to write the calibration to")
    try:
        kept = {str(d): c.to_json() for d, c in own_depths(target).items()}
    except ValueError:
        kept = {}  # a refused file is replaced by this fit
    fitted: dict[str, Any] = {}
    for want in depths:
        at = Reviewer(reviewer.spec, want if want is not None else reviewer.depth)
        agent = at.agent()
        why = calibration_refusal(agent)
        if why:
            raise ValueError(why)
        searched = depth_of(agent)
        depth = 1 if searched is None else searched
        # expectimax's lost-position penalty is worth 0 points; another agent's values have no floor
        floor = -DEFAULT_LOSS_PENALTY / 2 if agent.name == "expectimax" else -math.inf
        raw: list[float] = []
        remaining: list[float] = []
        for k in range(games):
            game = Game(rules=agent.rules, seed=seed + k)
            vals: list[float] = []
            before: list[int] = []
            while not game.game_over:
                legal = set(game.legal_moves())
                values = {d: v for d, v in agent.review_values(game).items() if d in legal}
                if not values:
                    raise ValueError(f"{agent.name} rated no legal move at move {game.moves} of game {k + 1}")
                best = max(values, key=lambda d: values[d])
                vals.append(float(values[best]))
                before.append(game.score)
                game.step(best)
            raw += vals
            remaining += [game.score - s for s in before]
            if progress is not None:
                progress(f"depth {depth}: game {k + 1}/{games}, score {game.score:,}")
        cal = fit_calibration(raw, remaining, floor=floor, games=games)
        parse_calibration(cal.to_json())  # what is written reads back (knots finite and in range)
        fitted[str(depth)] = cal.to_json()
    out = {
        "name": reviewer.spec.name,
        "checkpoint": reviewer.spec.checkpoint,
        "label": reviewer.spec.display,
        "depths": {**kept, **fitted},
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    tmp.replace(target)
    return {**out, "path": str(target), "fitted": sorted(int(d) for d in fitted)}
