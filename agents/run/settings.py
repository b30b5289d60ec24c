"""A run's settings: the defaults front ends offer, the checks they share, and the stored budget."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from agents.base import Budget, Counters
from agents.run.errors import RunError

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


def check_checkpoint_limit(max_checkpoint_mb: float) -> None:
    """RunError (field ``max_checkpoint_mb``) for a checkpoint size limit that is not a size."""
    if not (math.isfinite(max_checkpoint_mb) and 0 < max_checkpoint_mb <= MAX_CHECKPOINT_MB_LIMIT):
        raise RunError(
            f"the checkpoint size limit must be more than 0 and at most {MAX_CHECKPOINT_MB_LIMIT:,.0f} MB, "
            f"got {max_checkpoint_mb:g}",
            "max_checkpoint_mb",
        )


def budget_to_dict(budget: Budget, start: Counters) -> dict[str, Any]:
    """The budget as stored with the run, with the counters it started from (so a resume knows what is left)."""
    return {
        "episodes": budget.episodes,
        "steps": budget.steps,
        "seconds": budget.seconds,
        "start": dataclasses.asdict(start),
    }


def remaining_budget(stored: Mapping[str, Any], counters: Counters) -> Budget | None:
    """What is left of a stored budget given the agent's counters now; None when any limit is reached."""
    start = stored.get("start") or {}
    left: dict[str, Any] = {}
    for name in ("episodes", "steps", "seconds"):
        total = stored.get(name)
        if total is None:
            continue
        rest = total - (getattr(counters, name) - start.get(name, 0))
        if rest <= 0:
            return None  # the first limit reached ends a run
        left[name] = rest if name == "seconds" else int(rest)
    return Budget(**left) if left else None


def check_eval_options(
    eval_games: int,
    eval_every_s: float | None,
    eval_every_episodes: int | None,
    eval_seed: int,
    keep_checkpoints: int,
    eval_at_end: bool = False,
) -> None:
    """RunError (with the field at fault) for evaluation and retention settings that make no sense."""
    from agents.arena import MAX_GAMES

    if not 0 <= eval_games <= MAX_GAMES:
        raise RunError(
            f"evaluation games must be between 0 (none) and {MAX_GAMES:,}, got {eval_games}", "eval_games"
        )
    if eval_every_s is not None and not (math.isfinite(eval_every_s) and eval_every_s >= 0):
        raise RunError(
            f"seconds between evaluations must be >= 0 (0 = not by time), got {eval_every_s}", "eval_every_s"
        )
    if eval_every_episodes is not None and eval_every_episodes < 0:
        raise RunError(
            f"episodes between evaluations must be >= 0 (0 = not by episodes), got {eval_every_episodes}",
            "eval_every_episodes",
        )
    if eval_games and not eval_every_s and not eval_every_episodes and not eval_at_end:
        raise RunError(
            "evaluations need a cadence: seconds and/or episodes between them (or 0 evaluation games)",
            "eval_every_s",
        )
    if not 0 <= eval_seed < 2**63:
        raise RunError(f"evaluation seed must be between 0 and 2**63 - 1, got {eval_seed}", "eval_seed")
    if keep_checkpoints < 0:
        raise RunError(
            f"checkpoints to keep must be >= 0 (0 = all), got {keep_checkpoints}", "keep_checkpoints"
        )
