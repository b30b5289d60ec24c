"""Training runs, the public names in one place: see :mod:`agents.run` for what a run does.

The code lives in :mod:`agents.run` by idea: the loop (:mod:`agents.run.loop`), the health watch,
the metric writer, the periodic evaluator, checkpoint retention, settings and errors.
"""

from __future__ import annotations

from agents.run.errors import (
    BudgetUsedUp,
    Diverged,
    IncompatibleCheckpoint,
    NoCheckpoint,
    RunBusy,
    RunError,
)
from agents.run.evaluator import (
    EVAL_METRICS,
    EVAL_POLL_S,
    EVALUATOR_THREADS,
    _evaluator_main,
    evaluate_checkpoint,
    evaluation_metrics,
)
from agents.run.health import STALL_EPISODES
from agents.run.loop import TrainingRun, resume_run, run_training
from agents.run.metrics_writer import FLUSH_AFTER_S, FLUSH_BATCH
from agents.run.options import RunOptions
from agents.run.settings import (
    DEFAULT_CHECKPOINT_EVERY_S,
    DEFAULT_EVAL_EVERY_S,
    DEFAULT_EVAL_GAMES,
    DEFAULT_EVAL_SEED,
    DEFAULT_KEEP_CHECKPOINTS,
    DEFAULT_LOG_EVERY,
    budget_to_dict,
    remaining_budget,
)
from agents.run.store import RunStore

__all__ = [
    "DEFAULT_CHECKPOINT_EVERY_S",
    "DEFAULT_EVAL_EVERY_S",
    "DEFAULT_EVAL_GAMES",
    "DEFAULT_EVAL_SEED",
    "DEFAULT_KEEP_CHECKPOINTS",
    "DEFAULT_LOG_EVERY",
    "EVALUATOR_THREADS",
    "EVAL_METRICS",
    "EVAL_POLL_S",
    "FLUSH_AFTER_S",
    "FLUSH_BATCH",
    "STALL_EPISODES",
    "BudgetUsedUp",
    "Diverged",
    "IncompatibleCheckpoint",
    "NoCheckpoint",
    "RunBusy",
    "RunError",
    "RunOptions",
    "RunStore",
    "TrainingRun",
    "_evaluator_main",
    "budget_to_dict",
    "evaluate_checkpoint",
    "evaluation_metrics",
    "remaining_budget",
    "resume_run",
    "run_training",
]
