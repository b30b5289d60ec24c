"""The studio's log: ``DATA/logs/studio.log``, written by every process of the studio. Qt-free.

Modules only ever do ``log = logging.getLogger(__name__)`` and ``log.warning(...)`` /
``log.exception(...)``; where the records go is decided once, here, by whoever starts a process:

* the window (:func:`studio.app.create_window`) and each headless command (:func:`studio.cli.main`):
  :func:`setup_logging` with ``stderr=True``: records of INFO and above to the file, WARNING and above
  also to standard error as one tidy line each (a traceback stays in the file);
* a training child (``studio.services.training_process``, which also runs the local sweep's trials)
  and any other worker process of ours: :func:`setup_logging` with ``stderr=False``, to the same file.

One file for all processes, so "Help > Show log" shows a child's error beside the window's. Several
processes appending to one file with the standard library's ``RotatingFileHandler`` is unsafe: at a
rollover one process renames the file that another still writes to (the second then rotates again
at once, and on Windows the rename fails). A ``QueueHandler`` would need a listener in the window,
but a child trains on when the window closes ("Keep training") and ``train`` in a terminal has no
window at all. So the file is written with ``concurrent-log-handler``'s
``ConcurrentRotatingFileHandler``: the same rotation (:data:`MAX_BYTES` x :data:`BACKUPS`), with an
OS file lock around each write and rollover. Each record names its process (``gui``,
``cli train``, ``train child``...) and pid::

    2026-11-26 03:37:28,096 WARNING [gui 7716] studio.app: cannot count the games of /home/me/...
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TextIO

#: The log's file name under ``DATA/logs``; rotated copies are ``studio.log.1`` ... ``.5``.
LOG_NAME = "studio.log"
#: Rotate at this size (a busy week of warnings fits; the Show log dialog reads only the tail).
MAX_BYTES = 1_000_000
#: Rotated copies kept.
BACKUPS = 5
#: The loggers of our own packages; their INFO records are kept, other libraries' only from WARNING.
OWN_PACKAGES = ("engine", "agents", "studio")
#: Lines a headless command writes to standard error for one kind of record (the same message
#: template from the same module) before it leaves further ones to the file.
STDERR_REPEATS = 3
#: Lines a process writes to standard error from the log in all, ever.
STDERR_MAX = 20

_MARK = "_studio_handler"  # set on the handlers installed here, so that a second setup replaces them


def logs_dir(data_dir: str | os.PathLike[str]) -> Path:
    """``DATA/logs`` (not created)."""
    return Path(data_dir) / "logs"


def log_path(data_dir: str | os.PathLike[str]) -> Path:
    """``DATA/logs/studio.log`` (not created)."""
    return logs_dir(data_dir) / LOG_NAME


def setup_logging(data_dir: str | os.PathLike[str] | None, role: str, *, stderr: bool = True) -> Path | None:
    """Send this process's records to ``DATA/logs/studio.log`` (and, with ``stderr``, WARNING and above
    to standard error); the log's path, or None when there is no data dir or its folder cannot be
    written (the front end goes on all the same: a log is never a reason not to start).

    Called again (a test opening a second window, ``main()`` run twice in one process), it replaces
    the handlers it installed before and leaves any other (pytest's caplog) alone.
    """
    from concurrent_log_handler import ConcurrentRotatingFileHandler

    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _MARK, False)]:
        root.removeHandler(handler)
        handler.close()
    for name in OWN_PACKAGES:
        logging.getLogger(name).setLevel(logging.INFO)
    path = None if data_dir is None else log_path(data_dir)
    problem = None
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            file_handler = ConcurrentRotatingFileHandler(
                str(path), maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
            )
        except OSError as e:
            problem, path = e, None
        else:
            file_handler.setLevel(logging.INFO)
            file_handler.setFormatter(
                logging.Formatter(f"%(asctime)s %(levelname)-7s [{role} %(process)d] %(name)s: %(message)s")
            )
            root.addHandler(_marked(file_handler))
    if stderr:
        root.addHandler(_marked(_TidyStderr(path)))
    if problem is not None:
        logging.getLogger(__name__).warning(
            "cannot write the log in %s: %s", logs_dir(data_dir or "."), problem
        )
    return path


def setup_cli_logging(data_dir_arg: str | None, command: str) -> Path | None:
    """:func:`setup_logging` for a headless command, given ``--data-dir`` as typed (None: the default).

    A data dir that cannot be used leaves the log on standard error alone: the command itself says
    what is wrong with it, in its own one line (or never needs it: ``bench``).
    """
    from engine.paths import DataDirError, data_dir

    try:
        directory: Path | None = data_dir(data_dir_arg)
    except DataDirError:
        directory = None
    return setup_logging(directory, f"cli {command}", stderr=True)


def read_tail(data_dir: str | os.PathLike[str], max_bytes: int = 200_000) -> str:
    """The last ``max_bytes`` (about) of the log as text, reaching into ``studio.log.1`` when the log
    rotated a moment ago; whole lines only; "" when there is no log yet."""
    current = log_path(data_dir)
    parts: list[bytes] = []
    left = max_bytes
    for path in (current, current.with_name(f"{LOG_NAME}.1")):
        try:
            with open(path, "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - left))
                data = fh.read(left)
        except FileNotFoundError:
            continue
        if len(data) >= left and b"\n" in data:  # cut to a whole line
            data = data[data.index(b"\n") + 1 :]
        parts.insert(0, data)
        left -= len(data)
        if left <= 0:
            break
    return b"".join(parts).decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------------ standard error


class _TidyStderr(logging.StreamHandler):
    """One line per record on the *current* ``sys.stderr``.

    Looked up at each record, not kept: a command's progress line (rich) swaps ``sys.stderr`` for a
    proxy while it draws, and a line written through it lands above the progress line instead of
    through it. Tracebacks are left to the file (the line names the exception and the file); a record
    that repeats is shown :data:`STDERR_REPEATS` times, and a process writes at most
    :data:`STDERR_MAX` lines.
    """

    def __init__(self, log_file: Path | None) -> None:
        logging.Handler.__init__(self, logging.WARNING)  # not StreamHandler's: it would keep a stream
        self.log_file = log_file
        self.seen: dict[tuple[str, str], int] = {}
        self.written = 0

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    def emit(self, record: logging.LogRecord) -> None:
        if sys.stderr is not None:  # None: a window started without a console (pythonw, a desktop icon)
            super().emit(record)

    def filter(self, record: logging.LogRecord) -> bool:
        if not super().filter(record) or self.written >= STDERR_MAX:
            return False
        key = (record.name, str(record.msg))
        count = self.seen.get(key, 0) + 1
        self.seen[key] = count
        if count > STDERR_REPEATS:
            return False
        self.written += 1
        record.tidy_last = count == STDERR_REPEATS or self.written == STDERR_MAX
        return True

    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(record.getMessage().split())
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            text += f": {type(error).__name__}"
            if str(error):
                text += f": {' '.join(str(error).split())}"
        notes = []
        if self.log_file is not None:
            if error is not None:
                notes.append(f"traceback in {self.log_file}")
            if getattr(record, "tidy_last", False):
                notes.append(f"further ones only in {self.log_file}")
        elif getattr(record, "tidy_last", False):
            notes.append("further ones not shown")
        return f"{record.levelname.lower()}: {text}" + (f" ({'; '.join(notes)})" if notes else "")


def _marked(handler: logging.Handler) -> logging.Handler:
    setattr(handler, _MARK, True)
    return handler
