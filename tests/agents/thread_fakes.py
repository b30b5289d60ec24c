"""A stand-in agent for the worker thread tests (a module of its own: worker processes import it).

:class:`TorchRandomAgent` loads torch when built, as the learners do, so a worker's torch pools exist to
be reported; in a worker process its first move waits until ``THREAD_TEST_RENDEZVOUS`` (a folder) holds one file per worker
of ``THREAD_TEST_WORKERS``, so every worker of a pool is up before any game is handed out and each plays
a share of the games; then every move takes a few milliseconds, so no worker finishes them all alone.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from pathlib import Path

from agents.baselines import RandomAgent
from engine import Direction, Game

TARGET = "tests.agents.thread_fakes:TorchRandomAgent"
RENDEZVOUS = "THREAD_TEST_RENDEZVOUS"
WORKERS = "THREAD_TEST_WORKERS"


class TorchRandomAgent(RandomAgent):
    name = "test_threads_torch"

    def __init__(self, *args: object, **kwargs: object) -> None:
        import torch  # noqa: F401  (loaded as a learner loads it: the worker's limits must reach it)

        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._met = False

    def act(self, game: Game) -> Direction:
        folder = os.environ.get(RENDEZVOUS)
        if folder and not self._met and mp.parent_process() is not None:  # worker processes only
            Path(folder, str(os.getpid())).touch()
            deadline = time.monotonic() + 120
            while len(os.listdir(folder)) < int(os.environ[WORKERS]) and time.monotonic() < deadline:
                time.sleep(0.01)
            self._met = True
        time.sleep(0.003)
        return super().act(game)
