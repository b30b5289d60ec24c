"""What a training child and a sweep's trials say to their readers, as types (Qt-free, picklable).

Three conversations, each over a pipe or a queue, each decoded by type (``match`` / ``isinstance``),
never by position:

* **A training child and its parent** (:mod:`studio.services.training_process`): the parent sends an
  :class:`Opening`, then :data:`Command` words; the child answers with :data:`ChildMessage` values: one
  :class:`Started`, :class:`Events` batches and :class:`CheckpointSaved`, and its last word, a
  :class:`Done` or a :class:`Failed` (or :class:`Detached` when the window let it go). The window's
  :class:`studio.worker.RunWorker` and a sweep's local backend read these, and a sweep's Ray backend
  says the same to the sweep (:func:`studio.services.sweep.run_sweep` reads one language).
* **A Ray trial and the sweep's driver** (:mod:`studio.services.sweep_ray`): the trial's relay store
  records :data:`RelayOp` values (the store writes the driver must make, and the trial's own word:
  :class:`TrialBegan`, :class:`TrialEnded`, :class:`Failed`), pickled into its Tune reports.
* **Ray Tune's callbacks and the driver's loop** (same process, a queue): :data:`TuneNews`.

Every class is a frozen dataclass defined at module level, so pickle (the child's frames, a Tune
report, a Ray worker on another machine importing the same checkout) finds it by name.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agents.run.errors import RunError

if TYPE_CHECKING:
    from agents.base import MetricEvent
    from engine.records import GameTrace
    from studio.services.runs import RunRequest

__all__ = [
    "COMMANDS",
    "CheckpointOp",
    "CheckpointSaved",
    "ChildMessage",
    "Command",
    "Detached",
    "Done",
    "EvalOp",
    "Events",
    "Failed",
    "MetricsOp",
    "Opening",
    "PruneOp",
    "RelayOp",
    "Started",
    "StatusOp",
    "TraceOp",
    "TrialBegan",
    "TrialEnded",
    "TrialGone",
    "TrialReport",
    "TrialWord",
    "TruncateOp",
    "TuneEnded",
    "TuneNews",
    "is_last_word",
]

# ------------------------------------------------------------------------ parent -> training child

#: What the parent may say after the opening: pause, resume, stop (cleanly, with a final checkpoint),
#: checkpoint (save one now), detach (keep training when the window goes away).
Command = Literal["pause", "resume", "stop", "checkpoint", "detach"]
COMMANDS: tuple[Command, ...] = ("pause", "resume", "stop", "checkpoint", "detach")


@dataclass(frozen=True)
class Opening:
    """The parent's first frame: the run to open, the store's file, the watchdog's limit."""

    request: RunRequest
    db_path: str
    #: seconds without a report from an unpaused learner before the child ends its run as failed
    no_progress_s: float


# ------------------------------------------------------------------------ training child -> parent


@dataclass(frozen=True)
class Started:
    """The run is in the store and trains: its id and its agent's name."""

    run_id: int
    agent: str


@dataclass(frozen=True)
class Events:
    """A batch of the learner's metric events (the child sends one at most every ``BATCH_S``)."""

    events: Sequence[MetricEvent]


@dataclass(frozen=True)
class CheckpointSaved:
    """A checkpoint file was written (its path)."""

    path: str


@dataclass(frozen=True)
class Done:
    """The run ended (finished, stopped, or failed after it reported): its last word."""

    status: str
    last_checkpoint: str | None = None
    games_logged: int = 0


@dataclass(frozen=True)
class Failed:
    """The run could not start, or raised: one line, the input at fault (``field``) and a traceback
    ("" when the one line says it all). Also a Ray trial's last word when its run raised."""

    message: str
    field: str | None = None
    traceback: str = ""

    @classmethod
    def of(cls, error: Exception) -> Failed:
        """How ``error`` ended a run: a :class:`~agents.run.errors.RunError` (refused, diverged, stuck)
        in its one line with the input at fault; anything else (a bug) with its type and the traceback
        being handled (so: call it inside the ``except``)."""
        if isinstance(error, RunError):
            return cls(str(error), error.field)
        return cls(f"{type(error).__name__}: {error}", None, traceback.format_exc())


@dataclass(frozen=True)
class Detached:
    """The child will say no more: it trains on with the store alone (the window is closing)."""


ChildMessage = Started | Events | CheckpointSaved | Done | Failed | Detached


def is_last_word(message: ChildMessage) -> bool:
    """Whether ``message`` says how the run ended (a child that dies before one was killed or crashed)."""
    return isinstance(message, Done | Failed)


# -------------------------------------------------------------------- Ray trial -> sweep's driver
# The writes a trial's relay store records for the driver to make in the real store, in order.


@dataclass(frozen=True)
class MetricsOp:
    events: Sequence[MetricEvent]


@dataclass(frozen=True)
class CheckpointOp:
    """A checkpoint file with its bytes (the trial's machine is not the driver's) and the trial's id
    for it (later ops name the checkpoint by that id)."""

    checkpoint_id: int
    name: str
    data: bytes
    episode: int
    step: int
    final: bool


@dataclass(frozen=True)
class EvalOp:
    checkpoint_id: int
    eval_score: float


@dataclass(frozen=True)
class PruneOp:
    keep_last: int
    protect: tuple[int, ...]


@dataclass(frozen=True)
class StatusOp:
    status: str
    error: str | None


@dataclass(frozen=True)
class TruncateOp:
    step: int


@dataclass(frozen=True)
class TraceOp:
    trace: GameTrace
    source: str
    agent: str | None


@dataclass(frozen=True)
class TrialBegan:
    """The trial built its agent and trains: the driver makes (or claims) the run's record now."""


@dataclass(frozen=True)
class TrialEnded:
    """The trial's run ended with ``status`` (its last word, after its runner's ops)."""

    status: str


#: A trial's ops: the store writes, then its own word (:class:`Failed` when its run raised).
RelayOp = MetricsOp | CheckpointOp | EvalOp | PruneOp | StatusOp | TruncateOp | TraceOp
TrialWord = TrialBegan | TrialEnded | Failed


# ----------------------------------------------------------------- Tune's callbacks -> the driver


@dataclass(frozen=True)
class TrialReport:
    """A trial's report: its pending ops, pickled (a list of :data:`RelayOp` and :data:`TrialWord`)."""

    trial: int
    ops: bytes


@dataclass(frozen=True)
class TrialGone:
    """Tune says the trial ended: completed, or crashed (its Ray worker failed: ``message`` says how)."""

    trial: int
    crashed: bool
    message: str = ""


@dataclass(frozen=True)
class TuneEnded:
    """``Tuner.fit`` returned (``error`` None) or raised."""

    error: BaseException | None = None


TuneNews = TrialReport | TrialGone | TuneEnded
