"""Grading with a reviewer: its raw move values brought to points, one position or a stored game. Qt-free.

What a grade is (the unit, the thresholds, the accuracy) is :mod:`agents.review`'s; this module says
how one reviewing agent's values become points (:class:`Grading`: points already, or through a
calibration), evaluates a position with it, refuses values that are no number of points
(:func:`checked_points`) and grades a stored review's values (:func:`grade_stored`), the one place
the game review and Progress both grade from.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from agents.base import Agent
from agents.review import MAX_POINTS, Calibration, MoveGrade, grade_move, parse_calibration, values_in_points
from agents.review import grade_record as grades_of
from engine import DIRECTIONS, Direction, Game, Rules
from engine.core import legal_mask

from .calibration import nearest, shipped_depths

if TYPE_CHECKING:
    from engine.store import GameRecord

#: The unit every review grades in.
UNIT = "expected final score (points)"
#: Phases of a game by the highest tile on the board before the move: labels and each one's least tile.
PHASES: tuple[str, ...] = ("< 512", "512", "1024", "2048", "4096+")
PHASE_FLOORS: tuple[int, ...] = (0, 512, 1024, 2048, 4096)


def phase_of(max_tile: int) -> int:
    """Index into :data:`PHASES` of a position whose highest tile is ``max_tile``."""
    return max(i for i, floor in enumerate(PHASE_FLOORS) if max_tile >= floor)


# ------------------------------------------------------------------------- how an agent reviews


def depth_of(agent: Agent) -> int | None:
    """The search depth ``agent`` reviews at (its :attr:`~agents.base.Agent.review_depth_knob`), or
    None for an agent without one."""
    knob = type(agent).review_depth_knob
    return None if knob is None else int(getattr(agent.config, knob))


def at_depth(agent: Agent, depth: int) -> None:
    """Set ``agent`` to search ``depth`` plies (a depth-by-free-cells policy, when it has one, is
    cleared: it would override the depth). ValueError when the agent has no search depth."""
    cls = type(agent)
    if cls.review_depth_knob is None:
        raise ValueError(f"{agent.name} has no search depth to set (leave out --depth)")
    changes: dict[str, Any] = {cls.review_depth_knob: depth}
    if cls.review_policy_knob is not None:
        changes[cls.review_policy_knob] = ()
    agent.config = agent.config.replace(**changes)


def _depth_or_one(agent: Agent) -> int:
    """The depth a calibration is matched at: the agent's search depth, 1 without one (one ply)."""
    depth = depth_of(agent)
    return 1 if depth is None else depth


def _sees_death(agent: Agent) -> bool:
    """Whether ``agent``'s values see a game's end one move ahead: it searches 2+ plies everywhere."""
    cls = type(agent)
    depth = _depth_or_one(agent)
    policy = tuple(getattr(agent.config, cls.review_policy_knob) or ()) if cls.review_policy_knob else ()
    return min([depth, *policy]) >= 2


# ------------------------------------------------------------------------------------- grading


@dataclass(frozen=True)
class Grading:
    """How a reviewer's raw values become points: ``value_kind`` (``"points"`` when they are points
    already), its ``calibration`` otherwise, and ``sees_death`` (its values see a game's end one move
    ahead). Stored with every review in the reviewer's description (:meth:`to_json`), read back with
    :meth:`from_json`."""

    value_kind: str
    calibration: Calibration | None = None
    sees_death: bool = False
    unit: str = UNIT

    def points(self, raw: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Raw values (any shape) in points (NaN stays NaN)."""
        values = np.asarray(raw, dtype=np.float64)
        if self.value_kind == "points" or self.calibration is None:
            return values
        return self.calibration.points(values)

    def to_json(self) -> dict[str, Any]:
        """The fields of a reviewer's description. The knots go as compact text: a description is a
        flat object (game files carry it and refuse nested values, engine.store.exchange)."""
        cal = self.calibration
        return {
            "value_kind": self.value_kind,
            "unit": self.unit,
            "calibration": None if cal is None else json.dumps(cal.to_json(), separators=(",", ":")),
            "sees_death": self.sees_death,
        }

    @classmethod
    def from_json(cls, described: Mapping[str, Any]) -> Grading:
        """A stored description's grading: its calibration as text (as stored) or as an object, read by
        :func:`agents.review.parse_calibration`; ValueError (one line) when it is refused."""
        kind = str(described.get("value_kind") or "rank")
        cal = None if kind == "points" else parse_calibration(described.get("calibration"))
        return cls(kind, cal, bool(described.get("sees_death", False)), str(described.get("unit") or UNIT))


#: a built reviewer -> its calibrations by depth (:meth:`Reviewer.build`), so :func:`grading_of` and
#: the live coach (:func:`grade_played` without ``grading``) read the data dir's calibration too
_CALIBRATED: weakref.WeakKeyDictionary[Agent, dict[int, Calibration]] = weakref.WeakKeyDictionary()


def remember_calibrations(agent: Agent, depths: dict[int, Calibration]) -> None:
    """Tie a built reviewer to its calibrations by depth (the data dir's over the shipped ones)."""
    _CALIBRATED[agent] = depths


def _shipped_for(agent: Agent) -> Calibration | None:
    """The shipped calibration of an agent not built as a reviewer: only for the settings it was fitted
    with (:attr:`~agents.base.Agent.review_fit_knobs` at their defaults)."""
    defaults = type(agent.config)()
    changed = {
        k: getattr(agent.config, k)
        for k in type(agent).review_fit_knobs
        if getattr(agent.config, k) != getattr(defaults, k)
    }
    return nearest(shipped_depths(agent.name, changed), _depth_or_one(agent))


def grading_of(agent: Agent) -> Grading:
    """How ``agent``'s values become points. ValueError (one line) when the agent cannot grade. A
    reviewer built by :meth:`Reviewer.build` uses its own calibrations (the data dir's first); any other
    agent the shipped ones."""
    sees_death = _sees_death(agent)
    if agent.value_kind == "points" or agent.reviews_in_points:
        # an agent that reviews in points sees a game's end one move ahead
        return Grading("points", None, sees_death or agent.reviews_in_points)
    if agent in _CALIBRATED:
        cal = nearest(_CALIBRATED[agent], _depth_or_one(agent))
    else:
        cal = _shipped_for(agent)
    if cal is None:
        raise ValueError(
            f"{agent.name}'s move values are not points and it has no calibration, so it cannot grade "
            f"moves (review with an n-tuple checkpoint, or expectimax; review --calibrate --reviewer "
            f"{agent.name} fits one)"
        )
    return Grading(agent.value_kind, cal, sees_death)


def grading_info(agent: Agent) -> dict[str, Any]:
    """:func:`grading_of` as a description's fields (:meth:`Grading.to_json`)."""
    return grading_of(agent).to_json()


def to_points(values: np.ndarray, info: Grading | Mapping[str, Any]) -> np.ndarray:
    """A reviewer's raw values in points (``info``: its :class:`Grading`, or a stored description)."""
    if isinstance(info, Grading):
        return info.points(values)
    return values_in_points(values, info)


def position_values(agent: Agent, rules: Rules, board: np.ndarray, score: int = 0) -> np.ndarray:
    """The agent's raw value of each move from ``board``, float64[4] in action order (NaN: illegal)."""
    game = Game(rules=rules, board=board, score=score)
    out = np.full(4, np.nan)
    for d, v in agent.review_values(game).items():
        out[int(d)] = v
    mask = game.legal_mask()
    out[~mask] = np.nan  # an agent rating an illegal move never makes it the best
    return out


class ReviewerFault(ValueError):
    """A reviewer's values refused (:func:`checked_points`): its fault, named in one line."""


def checked_points(agent: Agent, raw: np.ndarray, grading: Grading, board: np.ndarray, index: int) -> None:
    """Refuse a reviewer's values of one position (raw, action order) that are not a finite number of
    points within reach of a game (±MAX_POINTS) for every legal move: NaN, infinities or 1e308 would
    grade every move "best" (all tied, or all past any score). Its fault, named, in one line."""
    points = grading.points(raw)
    legal = legal_mask(np.asarray(board, dtype=np.int64))
    for d in DIRECTIONS:
        if not legal[d]:
            continue
        v = float(points[d])
        if not (math.isfinite(v) and abs(v) <= MAX_POINTS):
            raise ReviewerFault(
                f"reviewer {agent.name} rated {d.label} at move {index + 1} as {float(raw[d])!r}: not a "
                f"finite value within ±{MAX_POINTS:g} points, the reviewer's fault (nothing stored)"
            )


def grade_played(
    agent: Agent,
    rules: Rules,
    board: np.ndarray,
    played: Direction | int,
    score: int = 0,
    index: int = 0,
    grading: Grading | None = None,
) -> MoveGrade:
    """The verdict on one move (``board``: the position before it): the live coach's badge.
    ``grading``: :func:`grading_of` ``agent`` (worked out when not given)."""
    grading = grading if grading is not None else grading_of(agent)
    position = np.asarray(board, dtype=np.int64)
    raw = position_values(agent, rules, position, score)
    checked_points(agent, raw, grading, position, index)
    return grade_move(
        grading.points(raw),
        int(played),
        index=index,
        score_before=score,
        board=position,
        sees_death=grading.sees_death,
    )


@dataclass(frozen=True)
class GradedGame:
    """A stored review's values graded: ``grades[i]`` is move ``i`` (as many as were reviewed), and
    ``phases[i]`` its phase (:data:`PHASES`, by the highest tile before the move)."""

    grades: list[MoveGrade]
    phases: list[int]


def grade_stored(rec: GameRecord, values: npt.ArrayLike, described: Mapping[str, Any]) -> GradedGame:
    """Grade the moves of logged game ``rec`` from a stored review's raw ``values`` (``described``: what
    its reviewer said about itself). Grades are derived, never stored: a change of thresholds shows at
    once wherever a review is read (the game review, Progress)."""
    grades = grades_of(rec, values, described)
    return GradedGame(grades, [phase_of(int(rec.layouts[g.index].max())) for g in grades])
