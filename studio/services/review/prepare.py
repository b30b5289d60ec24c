"""Preparing a reviewer: an n-tuple network trained as a recorded run, which becomes the default
reviewer once it is the store's strongest. Qt-free."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.store import GameStore

#: What ``review --prepare-reviewer`` trains by default (minutes).
PREPARE_MINUTES = 4.0


def prepare_request(minutes: float = PREPARE_MINUTES, seed: int | None = None) -> Any:
    """The training run that prepares a reviewer: an n-tuple network (the default layout) trained for
    ``minutes``, evaluated at the end (10 greedy games), so that its best checkpoint carries the score
    the default-reviewer rule ranks it by. Plain data: a child process (the window's) can run it."""
    from agents.base import Budget
    from studio.services.runs import RunRequest

    if not (isinstance(minutes, (int, float)) and math.isfinite(minutes) and 0 < minutes <= 24 * 60):
        raise ValueError(f"minutes must be a number in (0, 1440], got {minutes!r}")
    return RunRequest(
        agent="ntuple",
        budget=Budget(seconds=60.0 * float(minutes)),
        seed=seed,
        log_every=0,
        eval_games=10,
        eval_every_s=None,
        eval_at_end=True,
    )


def prepare_reviewer(
    store: GameStore,
    minutes: float = PREPARE_MINUTES,
    *,
    seed: int | None = None,
    control: Any = None,
    on_event: Callable[[Any], None] | None = None,
) -> int:
    """Train a reviewer in this process as a recorded run (the same call as ``train``, see
    :func:`prepare_request`); ``on_event(MetricEvent)`` for progress, ``control`` to stop it. Returns
    the run's id; once it is the store's strongest n-tuple network it is the default reviewer."""
    from studio.services.runs import open_run

    run = open_run(prepare_request(minutes, seed), store, control)
    for event in run:
        if on_event is not None:
            on_event(event)
    return int(run.run_id)
