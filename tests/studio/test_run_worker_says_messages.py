"""A run's worker hands its child's messages on as the objects the child sent (issue 46, item 2): one
``message(object)`` signal, decoded by type; a child that dies ends with a Failed and its traceback."""

from __future__ import annotations

import os
import signal

import pytest

from agents.base import Budget
from agents.registry import target_of
from engine.store import GameStore
from studio.services.messages import Done, Events, Failed, Started
from studio.services.runs import RunRequest
from studio.worker import RunWorker
from tests.studio.train_fakes import register_fakes


@pytest.fixture
def store(store: GameStore, monkeypatch: pytest.MonkeyPatch) -> GameStore:
    register_fakes(monkeypatch)
    return store


def _worker(store: GameStore, episodes: int, delay_ms: float) -> tuple[RunWorker, list[object]]:
    request = RunRequest(
        agent="fake_learner",
        target=target_of("fake_learner"),
        config={"delay_ms": delay_ms},
        budget=Budget(episodes=episodes),
        eval_games=0,
    )
    worker = RunWorker(request, store.path)
    heard: list[object] = []
    worker.message.connect(heard.append)
    return worker, heard


def test_a_run_says_started_events_and_done_as_objects(qtbot, store):
    worker, heard = _worker(store, episodes=3, delay_ms=0.0)
    with qtbot.waitSignal(worker.finished, timeout=60_000):
        worker.start()
    kinds = [type(m) for m in heard]
    assert kinds[0] is Started and kinds[-1] is Done
    assert Events in kinds
    started, done = heard[0], heard[-1]
    assert isinstance(started, Started) and isinstance(done, Done)
    assert started.agent == "fake_learner" and worker.run_id == started.run_id
    assert done.status == "finished" and done.last_checkpoint is not None
    episodes = [ev for m in heard if isinstance(m, Events) for ev in m.events if ev.kind == "episode"]
    assert len(episodes) == 3
    assert store.get_run(started.run_id).status == "finished"


def test_a_child_that_dies_ends_with_a_failed_message_and_its_traceback(qtbot, store):
    worker, heard = _worker(store, episodes=10**6, delay_ms=1.0)
    with qtbot.waitSignal(worker.message, timeout=30_000, check_params_cb=lambda m: isinstance(m, Started)):
        worker.start()
    assert worker.process is not None
    with qtbot.waitSignal(worker.finished, timeout=30_000):
        os.kill(worker.process.pid, signal.SIGKILL)
    last = heard[-1]
    assert isinstance(last, Failed)
    assert last.message.startswith("RuntimeError: the training process died (killed by SIGKILL)")
    assert last.field is None and "Traceback" in last.traceback
