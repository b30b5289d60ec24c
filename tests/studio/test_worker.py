"""The training worker: a generator consumed in a QThread, events as signals, pause / resume / stop, errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import studio.worker
from agents.base import Budget, Control, MetricEvent
from studio.worker import CallWorker, TrainingWorker, start_worker
from tests.studio.train_fakes import FakeConfig, FakeLearner


def _events(n: int, control: Control | None = None, delay: float = 0.0) -> Iterator[MetricEvent]:
    for i in range(n):
        if control is not None and not control.checkpoint():
            return
        if delay:
            time.sleep(delay)
        yield MetricEvent("episode", i + 1, 10 * (i + 1), 0.1 * i, {"score": float(i)})


def _run(qtbot, worker, timeout=10_000):
    with qtbot.waitSignal(worker.finished, timeout=timeout):
        start_worker(worker)
    assert worker.wait(5000)


def test_every_event_becomes_a_signal_in_order(qtbot):
    got: list[MetricEvent] = []
    batched: list[MetricEvent] = []
    worker = TrainingWorker(lambda control: _events(50))
    worker.metric.connect(got.append)
    worker.batch.connect(batched.extend)
    main_thread = threading.get_ident()
    ran_in: list[int] = []

    def factory(control: Control) -> Iterator[MetricEvent]:
        ran_in.append(threading.get_ident())
        yield from _events(50)

    worker._factory = factory
    _run(qtbot, worker)
    # everything arrived before finished, in order, on the GUI thread
    assert [e.episode for e in got] == list(range(1, 51))
    assert [e.episode for e in batched] == list(range(1, 51))
    assert ran_in and ran_in[0] != main_thread  # the generator ran off the GUI thread
    assert worker.done and not worker.qthread.isRunning()


def test_listeners_run_in_the_gui_thread(qtbot):
    worker = TrainingWorker(lambda control: _events(5))
    threads: set[int] = set()
    worker.metric.connect(lambda ev: threads.add(threading.get_ident()))
    worker.finished.connect(lambda: threads.add(threading.get_ident()))
    _run(qtbot, worker)
    assert threads == {threading.get_ident()}


def test_pause_stops_the_flow_resume_continues_stop_ends(qtbot):
    got: list[MetricEvent] = []
    worker = TrainingWorker(lambda control: _events(10**9, control, delay=0.002))
    worker.metric.connect(got.append)
    start_worker(worker)
    qtbot.waitUntil(lambda: len(got) >= 5, timeout=5000)
    worker.pause()
    qtbot.wait(150)  # events already queued arrive
    n_paused = len(got)
    qtbot.wait(300)
    assert len(got) == n_paused
    assert worker.paused
    worker.resume()
    qtbot.waitUntil(lambda: len(got) >= n_paused + 5, timeout=5000)
    with qtbot.waitSignal(worker.finished, timeout=5000):
        worker.stop()
    assert worker.wait(5000)
    assert not worker.qthread.isRunning()


def test_stop_while_paused_ends_the_run(qtbot):
    worker = TrainingWorker(lambda control: _events(10**9, control, delay=0.001))
    start_worker(worker)
    qtbot.waitUntil(lambda: worker.events_seen > 3, timeout=5000)
    worker.pause()
    qtbot.wait(100)
    with qtbot.waitSignal(worker.finished, timeout=5000):
        worker.stop()
    assert worker.wait(5000)


def test_a_generator_that_ignores_the_control_still_pauses_and_stops(qtbot, monkeypatch):
    monkeypatch.setattr(studio.worker, "STOP_GRACE_S", 0.2)
    worker = TrainingWorker(lambda control: _events(10**9, None, delay=0.001))
    start_worker(worker)
    qtbot.waitUntil(lambda: worker.events_seen > 3, timeout=5000)
    worker.pause()
    qtbot.wait(100)
    n = worker.events_seen
    qtbot.wait(200)
    assert worker.events_seen <= n + 1
    worker.resume()
    with qtbot.waitSignal(worker.finished, timeout=5000):
        worker.stop()
    assert worker.wait(5000)


def test_an_exception_becomes_the_error_signal_then_finished(qtbot):
    def factory(control: Control) -> Iterator[MetricEvent]:
        yield from _events(3)
        raise ValueError("the learner diverged")

    got: list[MetricEvent] = []
    seen: list[str] = []
    worker = TrainingWorker(factory)
    worker.batch.connect(lambda evs: (got.extend(evs), seen.append("batch")))
    worker.error.connect(lambda msg: seen.append(msg))
    worker.finished.connect(lambda: seen.append("finished"))
    _run(qtbot, worker)
    assert seen[-2:] == ["ValueError: the learner diverged", "finished"]
    assert "Traceback" in worker.traceback and "the learner diverged" in worker.traceback
    assert len(got) == 3  # what came before the error is not lost


def test_the_factory_runs_in_the_thread_and_its_errors_are_reported(qtbot):
    def factory(control: Control) -> Iterator[MetricEvent]:
        raise ImportError("no torch here")

    worker = TrainingWorker(factory)
    with qtbot.waitSignal(worker.error, timeout=5000) as sig:
        start_worker(worker)
    assert worker.wait(5000)
    assert sig.args == ["ImportError: no torch here"]


def test_a_real_agent_generator_with_control(qtbot):
    agent = FakeLearner(FakeConfig(delay_ms=0.0), seed=1)
    got: list[MetricEvent] = []
    worker = TrainingWorker(lambda control: agent.train(Budget(episodes=3), control))
    worker.metric.connect(got.append)
    _run(qtbot, worker)
    assert sum(e.kind == "episode" for e in got) == 3
    assert got[-1].episode == 3 and agent.counters.episodes == 3


def test_call_worker_reports_progress_and_result(qtbot):
    def job(report):
        for i in range(3):
            report(i + 1, 3, f"game {i + 1}")
        return {"mean": 12.5}

    progress: list[tuple] = []
    results: list[object] = []
    worker = CallWorker(job)
    worker.progress.connect(lambda *a: progress.append(a))
    worker.result.connect(results.append)
    _run(qtbot, worker)
    assert results == [{"mean": 12.5}] and worker.value == {"mean": 12.5}
    assert progress == [(1.0, 3.0, "game 1"), (2.0, 3.0, "game 2"), (3.0, 3.0, "game 3")]


def test_call_worker_error(qtbot):
    def job(report):
        raise RuntimeError("pool died")

    worker = CallWorker(job)
    with qtbot.waitSignal(worker.error, timeout=5000) as sig:
        start_worker(worker)
    assert worker.wait(5000)
    assert sig.args == ["RuntimeError: pool died"]


@pytest.mark.parametrize("interval", [0.0, 10.0])
def test_batches_are_flushed_at_the_end_whatever_the_interval(qtbot, interval):
    batched: list[MetricEvent] = []
    worker = TrainingWorker(lambda control: _events(20), batch_interval=interval)
    worker.batch.connect(batched.extend)
    _run(qtbot, worker)
    assert len(batched) == 20
