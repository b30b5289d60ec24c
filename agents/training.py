"""Bookkeeping shared by training generators: budget, pause / stop, counters, clock, steps per second.

A learner's ``train`` creates one :class:`TrainTracker` per call and asks :meth:`TrainTracker.proceed`
between steps; it builds its :class:`~agents.base.MetricEvent` records with :meth:`TrainTracker.event`
so that counters, elapsed time and progress are filled the same way by every learner.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from agents.base import Budget, Clock, Control, Counters, MetricEvent

if TYPE_CHECKING:
    from engine.records import GameTrace


class TrainTracker:
    """One ``train`` call: what it has used of its budget and how fast it runs."""

    def __init__(
        self, counters: Counters, budget: Budget, control: Control | None, rate_window_s: float = 1.0
    ):
        self.counters = counters
        self.budget = budget
        self.control = control if control is not None else Control()
        self.clock = Clock(counters)
        self.episodes0 = counters.episodes
        self.steps0 = counters.steps
        self._rate_window_s = rate_window_s
        self._rate_t = time.perf_counter()
        self._rate_steps = counters.steps
        self._rate = 0.0

    @property
    def episodes(self) -> int:
        """Episodes finished in this call."""
        return self.counters.episodes - self.episodes0

    @property
    def steps(self) -> int:
        """Steps (moves) made in this call."""
        return self.counters.steps - self.steps0

    def proceed(self) -> bool:
        """Between steps: block while paused; False once stopped or the budget is used."""
        was_paused = self.control.paused
        t0, cpu0 = time.perf_counter(), time.process_time()
        go_on = self.control.checkpoint()
        if was_paused:
            # Time spent paused is not training time: move the clock's origins past it.
            blocked = time.perf_counter() - t0
            self.clock.t0 += blocked
            self.clock.cpu0 += time.process_time() - cpu0
            self._rate_t += blocked
        if not go_on:
            return False
        return not self.budget_used()

    def budget_used(self) -> bool:
        """Whether this call has used its budget (episodes, moves, wall or CPU seconds)."""
        clock = self.clock
        return self.budget.done(self.episodes, self.steps, clock.call_seconds, clock.call_cpu_seconds)

    @property
    def stopped(self) -> bool:
        return self.control.stopped

    def steps_per_s(self) -> float:
        """Moves per second over the last ``rate_window_s`` seconds (or longer, until a window is full)."""
        now = time.perf_counter()
        if now - self._rate_t >= self._rate_window_s:
            self._rate = (self.counters.steps - self._rate_steps) / (now - self._rate_t)
            self._rate_t = now
            self._rate_steps = self.counters.steps
        elif self._rate == 0.0 and now > self._rate_t:
            return (self.counters.steps - self._rate_steps) / (now - self._rate_t)
        return self._rate

    def progress(self) -> float:
        clock = self.clock
        return self.budget.progress(self.episodes, self.steps, clock.call_seconds, clock.call_cpu_seconds)

    def event(
        self,
        kind: str,
        metrics: Mapping[str, float],
        *,
        game: GameTrace | None = None,
        board: np.ndarray | None = None,
        message: str = "",
    ) -> MetricEvent:
        elapsed = self.clock.tick()
        clean = {k: float(v) for k, v in metrics.items()}
        return MetricEvent(
            kind=kind,
            episode=self.counters.episodes,
            step=self.counters.steps,
            elapsed=elapsed,
            metrics=clean,
            progress=self.progress(),
            message=message,
            board=board,
            game=game,
        )
