"""The Play tab's coach badge: how good the person's last move was, in words and a colour."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from agents.review import BEST, BLUNDER, FORCED, GOOD, INACCURACY, MISTAKE, MoveGrade
from engine import Direction
from studio.thinking import GradeResult

ARROWS = {Direction.UP: "↑", Direction.LEFT: "←", Direction.DOWN: "↓", Direction.RIGHT: "→"}
#: The coach badge's colour for each grade.
GRADE_COLOURS = {
    FORCED: "#8a8178",
    BEST: "#2e7d32",
    GOOD: "#689f38",
    INACCURACY: "#c49000",
    MISTAKE: "#e67e22",
    BLUNDER: "#c0392b",
}


def coach_text(grade: MoveGrade, points: bool) -> str:
    """The coach badge's line: the grade, and the better move when it was not the best one, e.g.
    ``mistake · ← left was better (−1,240 pts)`` (``points``: the losses are expected points)."""
    if grade.grade in (BEST, FORCED):
        return "best" if grade.grade == BEST else "forced · the only move"
    # A figure is joined by no-break spaces: the narrow badge wrapped "(15 % worse)" before "worse)".
    nb = "\N{NO-BREAK SPACE}"
    if points:
        cost = f"−{grade.loss:,.0f}{nb}pts"
    else:
        cost = f"<1{nb}%{nb}worse" if grade.relative < 0.005 else f"{grade.relative * 100:.0f}{nb}%{nb}worse"
    if grade.risky and grade.grade == BLUNDER:
        cost += ", this move may end the game"
    return f"{grade.grade} · {ARROWS[grade.best]} {grade.best.label} was better ({cost})"


class CoachBadge(QLabel):
    """The badge under the score: hidden while the coach has nothing to say, "thinking" while it
    grades, then the grade of the last move (its reviewer's values in the tooltip)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("coachBadge")
        self.setWordWrap(True)
        self.hide()

    def show_thinking(self) -> None:
        self.setText("coach is thinking…")
        self.setToolTip("")
        self.setStyleSheet("color: #8a8178; font-style: italic; padding: 3px 0;")
        self.show()

    def show_grade(self, result: GradeResult) -> None:
        """The coach's verdict on move ``result.index``; its error in red when it has none."""
        if result.error or result.grade is None:
            self.setText(f"coach: {result.error or 'no verdict'}")
            self.setStyleSheet("color: #c0392b; padding: 3px 0;")
            self.show()
            return
        g = result.grade
        self.setText(coach_text(g, True))
        colour = GRADE_COLOURS.get(g.grade, "#8a8178")
        self.setStyleSheet(
            f"QLabel {{ background: {colour}; color: white; font-weight: bold; "
            "border-radius: 5px; padding: 4px 8px; }"
        )
        values = ", ".join(f"{ARROWS[d]} {v:,.6g}" for d, v in g.values.items())
        note = f"\nReviewer: {result.fallback}" if result.fallback else ""
        self.setToolTip(
            f"Move {result.index + 1}, {ARROWS[g.played]} {g.played.label}, graded by "
            f"{result.agent_name} ({result.seconds * 1000:.0f} ms), in expected final score "
            f"(points). Its values: {values}{note}"
        )
        self.show()

    def reset(self) -> None:
        """Nothing to say: empty and hidden."""
        self.setText("")
        self.setToolTip("")
        self.hide()
