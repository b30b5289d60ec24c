"""A text progress line for long headless commands (stderr, so --json output stays clean)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressLine:
    """``with ProgressLine("eval", total=100) as p: p.update(done, "mean 1234")``: redraws one line, <= 10 Hz."""

    def __init__(self, label: str, total: float | None = None, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._width = 0

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, done: float, text: str = "", *, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        elapsed = now - self.t0
        if self.total:
            frac = min(1.0, done / self.total)
            bar = "#" * int(frac * 24)
            eta = (elapsed / frac - elapsed) if frac > 0 else float("nan")
            head = f"{self.label} [{bar:<24}] {frac * 100:5.1f}% {_fmt_s(elapsed)} eta {_fmt_s(eta)}"
        else:
            head = f"{self.label} {done:g} {_fmt_s(elapsed)}"
        line = f"{head} {text}".rstrip()
        pad = max(0, self._width - len(line))
        self._width = len(line)
        if self.stream.isatty():
            self.stream.write("\r" + line + " " * pad)
        else:
            # Logs and CI: one line per second at most, no carriage returns.
            if now - getattr(self, "_last_nl", 0.0) < 1.0 and not force:
                return
            self._last_nl = now
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.stream.isatty() and self._width:
            self.stream.write("\n")
            self.stream.flush()


def _fmt_s(seconds: float) -> str:
    if seconds != seconds:  # NaN
        return "--:--"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"
