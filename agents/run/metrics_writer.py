"""The run's metric history: events written to the store in batches, never more than about
:data:`FLUSH_AFTER_S` seconds late, so a killed run loses at most the last second of metrics."""

from __future__ import annotations

import dataclasses
import threading
import time

from agents.base import MetricEvent
from agents.run.store import RunStore

#: Metric events wait at most this long in memory before they are written.
FLUSH_AFTER_S = 0.5
#: ... or until this many are waiting (fast agents emit thousands per second).
FLUSH_BATCH = 500


class MetricWriter:
    """Batches metric events for the store. The training thread writes a batch when one is due as it
    adds an event; a daemon thread writes those that would otherwise wait (an agent gone quiet)."""

    def __init__(self, store: RunStore, run_id: int) -> None:
        self._store = store
        self._run_id = run_id
        self._buf: list[MetricEvent] = []
        self._oldest = 0.0
        self._buf_lock = threading.Lock()  # held briefly, by the training thread too
        self._write_lock = threading.Lock()  # held while writing: keeps batches in order
        self._error: BaseException | None = None
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"run-{run_id}-metrics", daemon=True)
        self._thread.start()

    def add(self, event: MetricEvent) -> None:
        """Queue ``event`` (its board and game dropped); write the batch when it is due. Raises what the
        background thread failed with."""
        self._raise_error()
        with self._buf_lock:
            if not self._buf:
                self._oldest = time.monotonic()
            # Boards and games are not stored with metrics: drop them so the buffer stays small.
            self._buf.append(dataclasses.replace(event, board=None, game=None))
            due = len(self._buf) >= FLUSH_BATCH or time.monotonic() - self._oldest >= FLUSH_AFTER_S
        if due:
            self.flush()

    def flush(self) -> None:
        """Write what waits now."""
        with self._write_lock:
            with self._buf_lock:
                events, self._buf = self._buf, []
            if events:
                self._store.log_metrics(self._run_id, events)

    def _loop(self) -> None:
        while not self._closed.wait(FLUSH_AFTER_S / 2):
            with self._buf_lock:
                due = bool(self._buf) and time.monotonic() - self._oldest >= FLUSH_AFTER_S
            if due:
                try:
                    self.flush()
                except BaseException as e:  # handed to the training thread, which reports it
                    self._error = e
                    return

    def _raise_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def close(self) -> None:
        """Stop the thread and write what is left."""
        self._closed.set()
        self._thread.join()
        self.flush()
        self._raise_error()
