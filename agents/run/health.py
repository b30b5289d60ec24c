"""The health watch: a run that cannot recover (a non-finite metric, episodes without a move) is
stopped as :class:`~agents.run.errors.Diverged` before anything after it is saved."""

from __future__ import annotations

import math

from agents.base import MetricEvent
from agents.run.errors import Diverged

#: Episodes in a row without a single move before a run is stopped as stuck (a diverged agent that
#: picks no move plays 0-move games forever, and its store grows by the minute).
STALL_EPISODES = 200


class HealthWatch:
    """Checks every event of a run; :meth:`check` raises Diverged at the first sign of a lost run."""

    def __init__(self) -> None:
        self.last_step: int | None = None
        self.still = 0

    def check(self, event: MetricEvent) -> None:
        for name, value in event.metrics.items():
            if not math.isfinite(float(value)):
                raise Diverged(
                    f"diverged: {name} is {value} at step {event.step:,} (nothing after it is saved)"
                )
        if event.kind != "episode":
            return
        self.still = self.still + 1 if self.last_step is not None and event.step == self.last_step else 0
        self.last_step = event.step
        if self.still >= STALL_EPISODES:
            raise Diverged(
                f"stuck: {self.still} episodes in a row without a move at step {event.step:,} "
                "(nothing after it is saved)"
            )
