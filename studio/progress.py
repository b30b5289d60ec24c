"""The progress line of the long headless commands (train, eval, review, sweep, bench), on stderr.

One class serves them all, drawn by `rich <https://rich.readthedocs.io>`_'s progress display so that it
fits the terminal's width (the free text is cut with an ellipsis rather than wrapped) and is redrawn in
place. Standard error is used, so ``--json`` output on standard output stays clean. When standard error
is not a terminal (a log file, a pipe, CI) no cursor control is written at all: a plain line at most
every :data:`PLAIN_EVERY_S` seconds, plus the milestones a command forces and the last state.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import TextIO

from rich.console import Console, RenderableType
from rich.constrain import Constrain
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TextColumn
from rich.progress_bar import ProgressBar
from rich.table import Column
from rich.text import Text

PLAIN_EVERY_S = 10.0
"""Seconds between two plain lines when standard error is not a terminal (forced updates aside)."""

REDRAW_EVERY_S = 0.1
"""Seconds between two hand-overs of a figure to the live display (it redraws at most 10 times a second)."""

ECHO_ROOM = 3
"""Columns left free at the right of the live row: the ``^C`` echo and the cursor after it."""


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that understands cursor control (a dumb one does not)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False
    return tty and os.environ.get("TERM", "") != "dumb"


class ProgressLine:
    """``with ProgressLine("eval", total=100) as p: p.update(done, "mean 1234")``.

    ``total`` None shows no share or ETA (a count of unknown end); ``label`` and ``total`` may be
    changed between updates. ``force=True`` marks a milestone: passed on at once, and printed as a plain
    line even between the periodic ones. ``clock`` and ``plain_every_s`` exist for the tests.
    """

    def __init__(
        self,
        label: str,
        total: float | None = None,
        stream: TextIO | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        plain_every_s: float = PLAIN_EVERY_S,
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.plain_every_s = plain_every_s
        self.live = is_terminal(self.stream)
        self._done = 0.0
        self._text = ""
        self._sent = -math.inf  # when the last figures went to the display
        self._printed = -math.inf  # when the last plain line was written
        self._unprinted = False  # figures newer than the last plain line
        self._closed = False
        # The live display only where cursor control works; elsewhere the same task object keeps the
        # elapsed time and the ETA for the plain lines.
        console = Console(
            file=self.stream,
            force_terminal=self.live,
            force_interactive=self.live,
            highlight=False,
            soft_wrap=False,
        )
        self._progress = _Display(
            TextColumn("{task.description}", markup=False, table_column=Column(no_wrap=True)),
            _Bar(console),
            TextColumn("{task.fields[share]}", markup=False, table_column=Column(no_wrap=True)),
            _TimesColumn(table_column=Column(no_wrap=True)),
            TextColumn(
                "{task.fields[text]}",
                markup=False,
                table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1, min_width=1),
            ),
            console=console,
            get_time=clock,
            disable=not self.live,
            # stderr prints (the Ctrl-C notice) land above the line; stdout is proxied only when it is
            # the terminal too, so a piped --json never passes through the display
            redirect_stderr=self.stream is sys.stderr,
            redirect_stdout=self.stream is sys.stderr and _stdout_is_terminal(),
            # each update redraws (at most every REDRAW_EVERY_S); the thread only ticks the clock between
            refresh_per_second=2,
            expand=True,
        )
        self._task: TaskID = self._progress.add_task(label, total=total, share="", text="")
        self._progress.start()

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, done: float, text: str = "", *, total: float | None = None, force: bool = False) -> None:
        """``done`` of ``total`` (or a count when there is none); ``text`` after the times.

        ``total`` given here replaces the one given at the start (a count learnt on the way).
        """
        if self._closed:
            return
        if total is not None:
            self.total = total
        now = self.clock()
        self._done, self._text = done, text
        self._unprinted = True
        if force or now - self._sent >= REDRAW_EVERY_S:
            self._sent = now
            self._send()
            if self.live:
                self._progress.refresh()
        if not self.live and (force or now - self._printed >= self.plain_every_s):
            self._print_plain(now)

    def close(self) -> None:
        """End the line: the live display's last state stays on screen; a plain stream gets the last state."""
        if self._closed:
            return
        self._closed = True
        self._send()
        if self.live:
            self._progress.refresh()
        elif self._unprinted and self._printed != -math.inf:
            self._print_plain(self.clock())
        self._progress.stop()

    def plain_text(self) -> str:
        """The line as a log shows it: label, share, elapsed time, ETA and the text, uncut."""
        self._send()
        task = self._progress.tasks[0]
        parts = [self.label]
        if self.total:
            parts.append(_share(self._done, self.total).strip())
        parts.append(_clock_text(task.elapsed or 0.0))
        if self.total:
            parts.append(f"eta {_clock_text(task.time_remaining)}")
        elif not self._text:
            parts.append(f"{self._done:g}")
        if self._text:
            parts.append(self._text)
        return " ".join(parts)

    def _send(self) -> None:
        total = self.total if self.total else None
        share = _share(self._done, total) if total else ("" if self._text else f"{self._done:g}")
        self._progress.update(
            self._task,
            description=self.label,
            total=total,
            completed=self._done,
            share=share,
            text=self._text,
        )

    def _print_plain(self, now: float) -> None:
        self._printed = now
        self._unprinted = False
        self.stream.write(self.plain_text() + "\n")
        self.stream.flush()


class _Display(Progress):
    """rich's display, kept off the terminal's last columns: a row that fills the last column leaves the
    cursor waiting to wrap, and what the terminal echoes there (``^C``, two columns) would start a new
    row that the next redraw cannot take back."""

    def get_renderables(self) -> Iterable[RenderableType]:
        live = self.__dict__.get("live")  # rich asks for a first render before it sets its display up
        for table in super().get_renderables():
            yield table if live is None else Constrain(table, max(1, live.console.width - ECHO_ROOM))


class _Bar(BarColumn):
    """The bar, 12 cells on a terminal of 90 columns or more, 6 from 70, none below: the figures come first."""

    def __init__(self, console: Console) -> None:
        super().__init__(bar_width=12)
        self.console = console

    def render(self, task: Task) -> ProgressBar | Text:  # type: ignore[override]
        width = self.console.width
        if width < 70:
            return Text("")
        self.bar_width = 12 if width >= 90 else 6
        return super().render(task)


class _TimesColumn(ProgressColumn):
    """``01:23 eta 02:34``: the elapsed time and rich's estimate from the recent speed; no ETA without a total."""

    max_refresh = 0.5  # an ETA that changes every redraw is hard to read

    def render(self, task: Task) -> Text:
        text = _clock_text(task.elapsed or 0.0)
        if task.total is not None:
            text += f" eta {_clock_text(task.time_remaining)}"
        return Text(text, style="progress.elapsed")


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _share(done: float, total: float) -> str:
    return f"{min(1.0, max(0.0, done / total)) * 100:5.1f}%"


def _clock_text(seconds: float | None) -> str:
    """``1:02:03`` / ``02:03``; ``--:--`` when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "--:--"
    whole = int(seconds)
    h, rem = divmod(whole, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"
