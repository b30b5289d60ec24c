"""A game's review as it stands: the verdict on each reviewed move and what they add up to. Qt-free."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy.typing as npt

from agents.review import (
    GRADES,
    MISTAKES,
    SPAN,
    MoveGrade,
    accuracy,
    given_up,
    given_up_rate,
    grade_counts,
    grading_refusal,
)
from agents.review import review_subject as subject_of

from .grading import PHASES, UNIT, grade_stored

if TYPE_CHECKING:
    from engine.store import GameRecord

    from .identity import Reviewer


@dataclass
class GameReview:
    """A game's review: the verdict on each reviewed move (``moves[i]`` is move ``i``, with its player),
    and whether it covers the whole game. ``subject``: whose accuracy it is ("you", or "every player"
    in a game without the person); ``phases[i]``: the phase (:data:`PHASES`) of move ``i``;
    ``evaluated``: positions the reviewer evaluated in the call that returned it (0 when it came from
    the store)."""

    game_id: int
    reviewer: dict[str, Any]
    n_moves: int
    moves: list[MoveGrade] = field(default_factory=list)
    evaluated: int = 0
    subject: str = "every player"
    phases: list[int] = field(default_factory=list)
    #: the default reviewer's label now, when an earlier default made this review (else None)
    default_now: str | None = None

    @property
    def complete(self) -> bool:
        return len(self.moves) >= self.n_moves

    @property
    def accuracy(self) -> float:
        """Percent over the subject's graded moves, see :func:`agents.review.accuracy`."""
        return accuracy(self.moves)

    @property
    def given_up(self) -> float:
        """The share (0..1) of the expected final score the subject's graded moves gave up,
        compounded (:func:`agents.review.given_up`): what the accuracy is made from."""
        return given_up(self.moves)

    @property
    def given_up_points(self) -> float:
        """The same in points: the sum of the subject's moves' losses."""
        return float(sum(g.loss for g in self.moves if g.graded and math.isfinite(g.loss)))

    def given_up_text(self) -> str:
        """``15.2 % of the expected final score (7,400 pts)``; past :data:`agents.review.SPAN` graded
        moves also the share per SPAN moves, which the accuracy is made from."""
        text = f"{100 * self.given_up:.1f} % of the expected final score ({self.given_up_points:,.0f} pts"
        if sum(g.graded for g in self.moves) > SPAN:
            text += f"; {100 * given_up_rate(self.moves):.1f} % per {SPAN} moves"
        return text + ")"

    @property
    def counts(self) -> dict[str, int]:
        """Moves per grade, the subject's moves only."""
        return grade_counts(self.moves)

    @property
    def points(self) -> bool:
        """Losses are expected points (always, since every reviewer grades in points)."""
        return True

    @property
    def label(self) -> str:
        return str(self.reviewer.get("label") or self.reviewer.get("name") or "?")

    @property
    def fallback(self) -> str | None:
        note = self.reviewer.get("fallback")
        return str(note) if note else None

    @property
    def superseded(self) -> str | None:
        """``reviewed by X; the default is now Y — Review again`` when an earlier default made this
        review (its figures are X's, not what the default gives now), else None."""
        if self.default_now is None:
            return None
        return f"reviewed by {self.label}; the default is now {self.default_now} — Review again"

    @property
    def mixed(self) -> bool:
        """True when several players made the reviewed moves."""
        return len({g.player for g in self.moves}) > 1

    def by_player(self) -> dict[str, dict[str, Any]]:
        """Per player (in order of their first move): moves, graded moves, accuracy, counted or not."""
        out: dict[str, dict[str, Any]] = {}
        for g in self.moves:
            out.setdefault(g.player or "?", {"moves": 0, "graded": 0, "counted": g.counted, "_g": []})
            row = out[g.player or "?"]
            row["moves"] += 1
            row["graded"] += not g.forced
            row["_g"].append(g)
        for row in out.values():
            # the same geometric mean as the game's figure, so the subject's row and the headline agree
            row["accuracy"] = round(accuracy(row.pop("_g"), uncounted=True), 2)
        return out

    def phase_accuracy(self) -> dict[str, float | None]:
        """The subject's accuracy per phase (None where it made no graded move)."""
        out: dict[str, float | None] = {}
        for p, name in enumerate(PHASES):
            picked = [g for g, ph in zip(self.moves, self.phases) if ph == p and g.graded]
            out[name] = accuracy(picked) if picked else None
        return out

    def curve(self) -> list[float]:
        """The evaluation graph, one value per reviewed position: the expected final score (points)."""
        return [g.value for g in self.moves]

    def next_mistake(self, after: int = -1, grades: Sequence[str] = MISTAKES) -> int | None:
        """The first of the subject's moves after move ``after`` whose grade is in ``grades``, or None."""
        return next(
            (g.index for g in self.moves[max(after + 1, 0) :] if g.counted and g.grade in grades), None
        )

    def previous_mistake(self, before: int, grades: Sequence[str] = MISTAKES) -> int | None:
        """The last of the subject's moves before move ``before`` whose grade is in ``grades``, or None."""
        return next(
            (g.index for g in reversed(self.moves[: max(before, 0)]) if g.counted and g.grade in grades),
            None,
        )

    def header(self) -> str:
        """One line naming the game, who played, the reviewer and how much is reviewed."""
        players = ", ".join(f"{who} ({row['moves']:,} moves)" for who, row in self.by_player().items())
        return (
            f"Game #{self.game_id} · played by {players or 'nobody'} · reviewer {self.label} · "
            f"{len(self.moves):,}/{self.n_moves:,} moves reviewed"
        )

    def summary(self) -> str:
        """One line: ``game 12: accuracy 93.4 % (you) · 2 blunder, 1 mistake, ... · reviewer ...``."""
        counts = self.counts
        parts = [f"{counts[g]} {g}" for g in GRADES if counts[g]]
        done = "" if self.complete else f" (first {len(self.moves)} of {self.n_moves} moves)"
        note = f" · {self.superseded}" if self.superseded else ""
        return (
            f"game {self.game_id}: accuracy {self.accuracy:.1f} % ({self.subject}){done} · gave up "
            f"{self.given_up_text()} · {', '.join(parts) or 'no moves'} · reviewer {self.label}{note}"
        )

    def to_json(self, *, moves: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "game": self.game_id,
            "reviewer": {**self.reviewer, "label": self.label, "fallback": self.fallback},
            "unit": UNIT,
            "subject": self.subject,
            "n_moves": self.n_moves,
            "reviewed": len(self.moves),
            "complete": self.complete,
            "accuracy": round(self.accuracy, 2),
            "given_up": round(self.given_up, 6),
            "given_up_points": round(self.given_up_points, 1),
            "counts": self.counts,
            "players": self.by_player(),
            "phases": {p: _num(a) if a is not None else None for p, a in self.phase_accuracy().items()},
            "loss_unit": "points",
        }
        out["reviewer"].pop("calibration", None)  # knots: in the store, not needed to read a review
        if self.default_now is not None:
            out["default_now"] = self.default_now
        if moves:
            out["moves"] = [_move_json(g) for g in self.moves]
        return out


def _num(x: float, digits: int = 2) -> float | None:
    return round(float(x), digits) if math.isfinite(x) else None


def _move_json(g: MoveGrade) -> dict[str, Any]:
    return {
        "index": g.index,
        "player": g.player,
        "counted": g.counted,
        "played": g.played.label,
        "best": g.best.label,
        "values": {d.label: _num(v) for d, v in g.values.items()},
        "loss": _num(g.loss),
        "relative": _num(g.relative, 6),
        "rank": g.rank,
        "grade": g.grade,
        "accuracy": _num(g.score),
        "value": _num(g.value),
        "risky": g.risky,
    }


def game_review(
    rec: GameRecord,
    described: Mapping[str, Any],
    values: npt.ArrayLike,
    reviewer: Reviewer | None,
    evaluated: int = 0,
) -> GameReview:
    """The review of ``rec`` from a stored review's raw ``values`` and its reviewer's description
    (``reviewer``: who it is now, whose label and note replace the stored ones). ValueError (one line)
    when the stored calibration is refused."""
    why = grading_refusal(described)
    if why:  # a review from a file (or an older studio) whose calibration is refused: no figures
        who = described.get("label") or described.get("name") or "?"
        raise ValueError(f"the review of game {rec.id} by {who} cannot be graded: {why}")
    shown = dict(described)
    if reviewer is not None:  # the label and note as they stand now (a store may have grown a network)
        shown["label"] = reviewer.label
        shown["fallback"] = reviewer.fallback
    subject, _ = subject_of(rec)
    graded = grade_stored(rec, values, shown)
    return GameReview(rec.id, shown, rec.n_moves, graded.grades, evaluated, subject, graded.phases)
