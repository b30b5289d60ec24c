"""The QThread workers: a blocking job with progress (CallWorker) and the run supervisor's plumbing.

RunWorker (a training run in a child process) is tested end to end in test_training_process.py.
"""

from __future__ import annotations

import threading

from studio.worker import CallWorker, start_worker


def _run(qtbot, worker, timeout=10_000):
    with qtbot.waitSignal(worker.finished, timeout=timeout):
        start_worker(worker)
    assert worker.wait(5000)


def test_the_job_runs_off_the_gui_thread_and_listeners_on_it(qtbot):
    ran_in: list[int] = []
    heard_in: set[int] = set()

    def job(report):
        ran_in.append(threading.get_ident())
        for i in range(5):
            report(i + 1, 5, "")
        return "done"

    worker = CallWorker(job)
    worker.progress.connect(lambda *a: heard_in.add(threading.get_ident()))
    worker.finished.connect(lambda: heard_in.add(threading.get_ident()))
    _run(qtbot, worker)
    assert ran_in and ran_in[0] != threading.get_ident()
    assert heard_in == {threading.get_ident()}
    assert worker.done and not worker.qthread.isRunning()


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


def test_an_exception_becomes_the_error_signal_then_finished_with_its_traceback(qtbot):
    def job(report):
        report(1, 2, "")
        raise RuntimeError("pool died")

    seen: list[str] = []
    worker = CallWorker(job)
    worker.progress.connect(lambda *a: seen.append("progress"))
    worker.error.connect(seen.append)
    worker.finished.connect(lambda: seen.append("finished"))
    _run(qtbot, worker)
    assert seen == ["progress", "RuntimeError: pool died", "finished"]
    assert "Traceback" in worker.traceback and "pool died" in worker.traceback
