"""Why a run cannot start or go on: :class:`RunError` and its kinds, each naming the input at fault."""

from __future__ import annotations


class RunError(ValueError):
    """A run that cannot start or go on. ``field`` names the input at fault, so a front end can show
    the message where the user fixes it (``"budget"``, ``"resume"``, ``"agent"``, a knob's name...);
    a ValueError, so the CLI prints it as one line."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class BudgetUsedUp(RunError):
    """A resumed run has used its whole budget and no new one was given."""


class RunBusy(RunError):
    """The run is running or paused in another process (it has one owner at a time)."""


class NoCheckpoint(RunError):
    """The run saved no checkpoint, so there is nothing to resume from."""


class Diverged(RunError):
    """The learner reported a non-finite value, or stopped making moves: a run that cannot recover."""


class IncompatibleCheckpoint(RunError):
    """The run's checkpoint cannot be loaded (other agent, damaged, settings this version lacks)."""
