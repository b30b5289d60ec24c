"""Work off the GUI thread, reported through Qt signals: a training run's supervisor and blocking jobs.

Two objects per job, on purpose:

* ``_Loop`` lives in the worker thread and does the work (reads a training child's messages, or calls
  a blocking function), sending what it has across the thread boundary as queued signals; a child's
  events arrive in batches (at most ten a second), never one signal per event.
* the facade the GUI holds (:class:`RunWorker`, :class:`CallWorker`) lives in the GUI thread and
  re-emits what the loop reports. Because these are emitted from the GUI thread, any listener (a widget
  method, a lambda, a pytest-qt blocker) runs in the GUI thread: in PySide6 a signal connected to a
  plain callable runs that callable in the *emitting* thread, so emitting from the worker thread
  directly would be a trap.

Training itself never runs in this process: :class:`RunWorker`'s thread supervises a child process
(:mod:`studio.services.training_process`), so a learner cannot starve the window. Its commands only
write to the child's pipe; they never wait.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from agents.base import MetricEvent
from studio.services import messages

if TYPE_CHECKING:
    from pathlib import Path

    from studio.services.runs import RunRequest
    from studio.services.training_process import TrainingProcess

log = logging.getLogger(__name__)


class _Loop(QObject):
    """The part that runs in the worker thread: calls ``body(self)``, reports errors, always ends with ``done``."""

    batch = Signal(object)
    progress = Signal(float, float, str)
    result = Signal(object)
    error = Signal(str, str)  # "Type: message", traceback
    done = Signal()

    def __init__(self, body: Callable[[_Loop], None]) -> None:
        super().__init__()
        self._body = body

    @Slot()
    def run(self) -> None:
        try:
            self._body(self)
        except Exception as e:  # any failure goes to the GUI (and the log); the app must live on
            log.exception("a worker thread's job failed")
            self.error.emit(f"{type(e).__name__}: {e}", traceback.format_exc())
        finally:
            self.done.emit()


class _Worker(QObject):
    """Facade in the GUI thread: owns the QThread and the loop, re-emits the loop's reports."""

    #: "ExceptionType: message" of an exception raised by the job (the traceback is in ``.traceback``)
    error = Signal(str)
    #: always emitted last, after an error too; the thread has ended by then
    finished = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.traceback = ""
        self.error_message = ""
        self.done = False
        self._thread: QThread | None = None
        self._loop: _Loop | None = None

    def _body(self, loop: _Loop) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start the job in a new thread (once)."""
        if self._thread is not None:
            raise RuntimeError("a worker runs once; make a new one")
        loop = _Loop(self._body)
        thread = QThread()
        loop.moveToThread(thread)
        thread.started.connect(loop.run)
        queued = Qt.ConnectionType.QueuedConnection
        loop.batch.connect(self._on_batch, queued)
        loop.progress.connect(self._on_progress, queued)
        loop.result.connect(self._on_result, queued)
        loop.error.connect(self._on_error, queued)
        loop.done.connect(self._on_done, queued)
        # quit() is thread-safe; direct, so the thread ends even while the GUI thread waits for it.
        loop.done.connect(thread.quit, Qt.ConnectionType.DirectConnection)
        self._loop, self._thread = loop, thread
        thread.start()

    def wait(self, timeout_ms: int = 10_000) -> bool:
        """Block until the thread has ended (True) or ``timeout_ms`` passed (False)."""
        return self._thread is None or self._thread.wait(timeout_ms)

    @property
    def qthread(self) -> QThread | None:
        """The worker thread (``thread()`` is QObject's: the thread this facade lives in)."""
        return self._thread

    @property
    def running(self) -> bool:
        return self._thread is not None and not self.done

    # Slots run in the GUI thread (queued from the loop). Subclasses override the plain ``_handle_*``
    # hooks, never these slots: PySide6 6.12 does not deliver queued signals to a slot overridden in
    # a subclass when annotations are strings (seen with ``from __future__ import annotations``).
    @Slot(object)
    def _on_batch(self, events: object) -> None:
        self._handle_batch(events)  # type: ignore[arg-type]

    @Slot(float, float, str)
    def _on_progress(self, done: float, total: float, text: str) -> None:
        self._handle_progress(done, total, text)

    @Slot(object)
    def _on_result(self, value: object) -> None:
        self._handle_result(value)

    def _handle_batch(self, events: list[MetricEvent]) -> None:
        pass

    def _handle_progress(self, done: float, total: float, text: str) -> None:
        pass

    def _handle_result(self, value: object) -> None:
        pass

    def _handle_error(self, message: str, tb: str) -> None:
        self.error.emit(message)

    @Slot(str, str)
    def _on_error(self, message: str, tb: str) -> None:
        self.error_message, self.traceback = message, tb
        self._handle_error(message, tb)

    @Slot()
    def _on_done(self) -> None:
        if self._thread is not None:
            self._thread.wait()
        self.done = True
        self.finished.emit()


class CallWorker(_Worker):
    """Runs ``fn(report)`` once in a worker thread; ``report(done, total, text)`` becomes ``progress``.

    For blocking jobs with a progress callback (the arena's ``evaluate``): the return value comes back
    in ``result``, an exception in ``error``; ``finished`` always comes last.
    """

    progress = Signal(float, float, str)
    result = Signal(object)
    #: what the job hands over while it runs (``report(done, total, text, payload)``), e.g. a review so
    #: far: the GUI thread draws it without reading it back from the store itself
    partial = Signal(object)

    def __init__(self, fn: Callable[[Callable[..., None]], Any], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._fn = fn
        self.value: Any = None

    def _body(self, loop: _Loop) -> None:
        def report(done: float, total: float = 0.0, text: str = "", payload: object = None, *_: Any) -> None:
            loop.progress.emit(float(done), float(total), str(text))
            if payload is not None:
                loop.batch.emit(payload)

        loop.result.emit(self._fn(report))

    def _handle_batch(self, events: Any) -> None:
        self.partial.emit(events)  # the loop's batch signal carries a job's payload here

    def _handle_progress(self, done: float, total: float, text: str) -> None:
        self.progress.emit(done, total, text)

    def _handle_result(self, value: object) -> None:
        self.value = value
        self.result.emit(value)


def start_worker(worker: _Worker) -> _Worker:
    """``worker.start()`` and return it (keep a reference until ``finished``)."""
    worker.start()
    return worker


class RunWorker(_Worker):
    """Supervises one training run in a child process (:mod:`studio.services.training_process`).

    The run's QThread reads what the child says; the GUI thread receives each of its messages as it
    was sent, in ``message(object)``: a :class:`~studio.services.messages.Started`, batches of
    :class:`~studio.services.messages.Events`, :class:`~studio.services.messages.CheckpointSaved`,
    then the last word, a :class:`~studio.services.messages.Done` or
    :class:`~studio.services.messages.Failed` (also when the run's thread raised or the child died:
    then with the traceback) unless the run was detached; ``finished`` always comes last. Listeners
    decode by type, never by position. Commands (pause, resume, stop, checkpoint now, detach) go down
    the pipe and never wait; ``run_id``, ``paused`` and ``stopping`` say where the run stands.
    """

    #: every message of the child, as its object (see :data:`studio.services.messages.ChildMessage`)
    message = Signal(object)
    #: a checkpoint was written (its path): for a listener that waits on that alone
    checkpointSaved = Signal(str)

    def __init__(self, request: RunRequest, db_path: str | Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self.db_path = db_path
        self.process: TrainingProcess | None = None
        self.run_id: int | None = None
        self.paused = False
        self.stopping = False

    def start(self) -> None:
        from studio.services.training_process import TrainingProcess

        # Started here, in the GUI thread (a fork+exec takes milliseconds), so pid and commands work
        # at once; the thread only reads.
        self.process = TrainingProcess(self.request, self.db_path)
        super().start()

    # ------------------------------------------------------------------ commands (GUI thread)
    # The caller updates its own view after a command: the worker says nothing of it.
    def _command(self, cmd: str) -> None:
        if self.process is not None and not self.done:
            self.process.send(cmd)

    def pause(self) -> None:
        if not self.paused and not self.stopping:
            self.paused = True
            self._command("pause")

    def resume(self) -> None:
        if self.paused and not self.stopping:
            self.paused = False
            self._command("resume")

    def stop(self) -> None:
        if not self.stopping:
            self.stopping, self.paused = True, False
            self._command("stop")

    def checkpoint_now(self) -> None:
        self._command("checkpoint")

    def detach(self) -> None:
        """Let the run finish without the window (it keeps writing to the store)."""
        if self.process is not None and not self.done:
            self.process.detach()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    # ------------------------------------------------------------------ the reading thread
    def _body(self, loop: _Loop) -> None:
        from studio.services.training_process import exit_reason

        proc = self.process
        assert proc is not None  # start() made it
        ended = False
        for msg in proc.messages():
            ended = ended or messages.is_last_word(msg)
            loop.result.emit(msg)  # Events too: one path, in order, each message whole
        if proc.detached:
            return  # the run trains on without this window: nothing to wait for
        code = proc.wait(60)
        if code is None:  # it said its last word but does not exit (a stuck library thread): end it
            proc.kill()
            code = proc.wait(10)
        if not ended:
            raise RuntimeError(
                f"the training process died ({exit_reason(code)}); resume continues from its last checkpoint"
            )

    def _handle_result(self, value: object) -> None:
        # The GUI thread: what the commands need is kept, and the message goes on as it came.
        match value:
            case messages.Started(run_id=run_id):
                self.run_id = run_id
            case messages.CheckpointSaved(path=path):
                self.checkpointSaved.emit(path)
        self.message.emit(value)

    def _handle_error(self, message: str, tb: str) -> None:
        # The thread raised (the child died, or a bug): the run's last word, like a child's Failed.
        self.message.emit(messages.Failed(message, None, tb))
