"""Stand-in workers for :mod:`agents.mcts.selfplay` tests (a module of its own: worker processes import it, and
it keeps them free of torch)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class SlowWorker:
    """``play(seconds)`` sleeps that long, then answers it with the worker's weights version."""

    def __init__(self, threads: int | None = None) -> None:
        self.version = -1

    def set_weights(self, arrays: Any) -> None:
        self.version = int(arrays["version"])

    def play(self, task: float, should_stop: Callable[[], bool] | None = None) -> tuple[float, int] | None:
        end = time.monotonic() + task
        while time.monotonic() < end:
            if should_stop is not None and should_stop():
                return None
            time.sleep(0.01)
        return task, self.version
