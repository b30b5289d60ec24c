"""A run's settings: the defaults of its options (declared in :mod:`agents.run.options`, with their
checks) and the stored budget."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from agents.base import Budget, Counters

#: Seconds between periodic checkpoints.
DEFAULT_CHECKPOINT_EVERY_S = 300.0
#: Record one training game in this many (0 = none). Learners play tens of thousands of games and a
#: stored move costs ~100 bytes with its board, so logging all of them grows the store by hundreds of
#: MB per long run, mostly early random-looking play; one in 10 keeps a dense sample of the whole
#: learning curve to replay or learn from, at a tenth of the size.
DEFAULT_LOG_EVERY = 10
#: Greedy games of each periodic evaluation (0 = no evaluation). 20 games give the mean score to
#: about +-10 % for a learner past its first minutes: enough to rank checkpoints, cheap to play.
DEFAULT_EVAL_GAMES = 20
#: Seconds of training between periodic evaluations (every other periodic checkpoint by default).
DEFAULT_EVAL_EVERY_S = 600.0
#: Seed of the evaluation games. Every evaluation of every run plays the same games, so evaluations
#: compare across a run and across runs; 0 is also ``eval``'s default seed, so ``eval --checkpoint
#: FILE --games 20`` plays the very games whose mean became the checkpoint's ``eval_score``.
DEFAULT_EVAL_SEED = 0
#: Checkpoint files a run keeps: the newest this many, plus its best (0 = keep every one).
DEFAULT_KEEP_CHECKPOINTS = 3
#: Largest checkpoint file a run writes, in MB (2**20 bytes); a larger one is refused, not written,
#: and the run goes on. An agent wrote 839 MB files every five minutes without a word (issue #45):
#: 1 GB lets the biggest networks the studio ships save (the n-tuple's full layout, ~400 MB) and
#: stops a mistake (a replay buffer or a layout far larger than meant) from filling the disk.
DEFAULT_MAX_CHECKPOINT_MB = 1024.0
#: A checkpoint larger than this share of the limit is saved with a one-line warning (once a run).
CHECKPOINT_WARN_SHARE = 0.5
#: The largest limit accepted (1 TiB): past it a checkpoint fills any disk first.
MAX_CHECKPOINT_MB_LIMIT = float(1 << 20)


def checkpoint_limits(max_checkpoint_mb: float) -> tuple[int, int]:
    """(warning size, limit) in bytes for a limit of ``max_checkpoint_mb`` MB."""
    limit = int(max_checkpoint_mb * (1 << 20))
    return int(limit * CHECKPOINT_WARN_SHARE), limit


def budget_to_dict(budget: Budget, start: Counters) -> dict[str, Any]:
    """The budget as stored with the run, with the counters it started from (so a resume knows what is left)."""
    return {
        "episodes": budget.episodes,
        "steps": budget.steps,
        "seconds": budget.seconds,
        "cpu_seconds": budget.cpu_seconds,
        "start": dataclasses.asdict(start),
    }


def remaining_budget(stored: Mapping[str, Any], counters: Counters) -> Budget | None:
    """What is left of a stored budget given the agent's counters now; None when any limit is reached."""
    start = stored.get("start") or {}
    left: dict[str, Any] = {}
    for name in ("episodes", "steps", "seconds", "cpu_seconds"):
        total = stored.get(name)
        if total is None:
            continue
        rest = total - (getattr(counters, name) - start.get(name, 0))
        if rest <= 0:
            return None  # the first limit reached ends a run
        left[name] = rest if name in ("seconds", "cpu_seconds") else int(rest)
    return Budget(**left) if left else None
