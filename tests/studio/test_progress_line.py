"""The progress line of the headless commands: in place and within the width on a terminal, sparse plain
lines elsewhere, and --json output untouched.

The terminal is a real pseudo-terminal (``os.openpty``) sized 100x30, with ``COLUMNS=100`` as a shell
exports it; what the line writes is read back from the master side and cut at every carriage return and
newline, with the escape sequences taken out: what remains is what the terminal shows on one row.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import struct
import termios
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import pytest

from studio.cli import main
from studio.progress import ECHO_ROOM, ProgressLine
from tests.agents.fake_learner import registered, train_argv

WIDTH = 100
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# What `train` put on its line before: about 250 characters, 42 wrapped rows a minute at 100 columns.
LONG_TEXT = (
    "ep 123,456 score 23,456 mean 21,987 tile 2,048 loss 0.01234 td_error 0.5678 lr 0.001 epsilon 0.05 "
    "mean_q 1,234.5 evaluation 45,678 412,345 steps/s evaluation: checkpoint 7 mean 45,678 (20 games) "
    "best so far"
)


class FakeClock:
    """A clock the test moves: a minute of updates takes no time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@contextmanager
def terminal(width: int = WIDTH) -> Iterator[tuple[TextIO, list[bytes]]]:
    """A pseudo-terminal ``width`` columns wide: its slave as a text stream, and what arrives at the master."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, width, 0, 0))
    got: list[bytes] = []

    def drain() -> None:  # a pty holds a few KiB: read as it is written so writes never block
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the slave side closed
                return
            if not chunk:
                return
            got.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stream = os.fdopen(slave, "w", encoding="utf-8", buffering=1)
    try:
        yield stream, got
    finally:
        stream.close()
        reader.join(timeout=5)
        os.close(master)


def rows(raw: bytes) -> tuple[list[str], int]:
    """The rows the terminal showed (each redraw is one, escapes removed) and the newlines written."""
    text = ESCAPES.sub("", raw.decode("utf-8"))
    pieces = [p for p in re.split(r"[\r\n]", text) if p.strip()]
    return pieces, text.count("\n")


def test_on_a_terminal_a_minute_of_updates_redraws_one_row_within_the_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    clock = FakeClock()
    with (
        terminal() as (stream, got),
        ProgressLine("train ntuple run 12", total=1.0, stream=stream, clock=clock) as line,
    ):
        assert line.live
        for k in range(480):  # eight updates a second for a minute (a step a float holds exactly)
            clock.now += 0.125
            line.update(k / 480, f"{LONG_TEXT} {k}")
    shown, newlines = rows(b"".join(got))
    # in place: the whole minute ends in one newline (the line left on screen), never a wrapped row
    assert newlines == 1
    assert len(shown) >= 480  # it was redrawn for every update
    assert max(len(r) for r in shown) <= WIDTH - ECHO_ROOM
    assert all(r.startswith("train ntuple run 12 ") for r in shown)
    last = shown[-1]
    assert "99.8%" in last and "01:00" in last  # the share and the minute elapsed
    assert last.endswith("…")  # the text is cut to the width, not wrapped
    assert "ep 123,456 score 23,456" in last


def test_the_row_follows_a_narrower_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    clock = FakeClock()
    with (
        terminal(60) as (stream, got),
        ProgressLine("eval greedy", total=200, stream=stream, clock=clock) as line,
    ):
        for k in range(1, 201):
            clock.now += 0.5
            line.update(k, f"mean score {k * 37:,}")
    shown, newlines = rows(b"".join(got))
    assert newlines == 1 and max(len(r) for r in shown) <= 60 - ECHO_ROOM
    # the bar gives way to the figures on a narrow terminal
    assert " ".join(shown[-1].split()) == "eval greedy 100.0% 01:40 eta 00:00 mean score 7,400"


def test_off_a_terminal_a_plain_line_at_most_every_n_seconds() -> None:
    clock = FakeClock()
    out = io.StringIO()
    with ProgressLine("train ntuple run 12", total=1.0, stream=out, clock=clock, plain_every_s=10) as line:
        assert not line.live
        for k in range(480):  # eight updates a second for a minute
            clock.now += 0.125
            line.update(k / 480, f"{LONG_TEXT} {k}")
        clock.now += 0.125
        line.update(1.0, f"{LONG_TEXT} done")
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    # the first update, then one every ten seconds of the minute: 0, 10, ..., 60 s
    assert len(lines) == 7
    assert lines[0] == f"train ntuple run 12 0.0% 00:00 eta --:-- {LONG_TEXT} 0"
    assert lines[1].startswith("train ntuple run 12 16.7% 00:10 eta 00:")
    # a log does not wrap: the text is whole
    assert lines[-1] == f"train ntuple run 12 100.0% 01:00 eta 00:00 {LONG_TEXT} done"


def test_off_a_terminal_milestones_are_printed_at_once_and_a_count_has_no_eta() -> None:
    clock = FakeClock()
    out = io.StringIO()
    with ProgressLine("bench engine", stream=out, clock=clock) as line:
        line.update(0, "warming up", force=True)
        clock.now += 0.5
        line.update(0, "compiled", force=True)
        clock.now += 0.5
        line.update(3, "")  # not forced, within the ten seconds: waits for the end
        line.total = 10
        clock.now += 2
        line.update(10, "done", force=True)
    assert out.getvalue().splitlines() == [
        "bench engine 00:00 warming up",
        "bench engine 00:00 compiled",
        "bench engine 100.0% 00:03 eta 00:00 done",
    ]


def test_a_total_learnt_on_the_way() -> None:
    clock = FakeClock()
    out = io.StringIO()
    with ProgressLine("review game 1", stream=out, clock=clock) as line:
        line.update(10, "10/57 moves", total=57)
    assert out.getvalue().splitlines() == ["review game 1 17.5% 00:00 eta --:-- 10/57 moves"]


def test_train_on_a_terminal_fits_and_keeps_stdout_for_results(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    """``train`` end to end with its standard error on a 100-column terminal."""
    registered(monkeypatch)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    with terminal() as (stream, got):
        monkeypatch.setattr("sys.stderr", stream)
        rc = main(train_argv(400))
        monkeypatch.undo()
    assert rc == 0
    shown, newlines = rows(b"".join(got))
    assert newlines == 1 and shown and max(len(r) for r in shown) <= WIDTH - ECHO_ROOM
    assert shown[-1].startswith("train fake-learner run 1 ") and "100.0%" in shown[-1]
    # the telling figures first, where a narrow terminal does not cut them
    assert re.search(r"100\.0% \d\d:\d\d eta 00:00 ep 400 mean [\d,]+ tile \d+ [\d,]+ step", shown[-1])
    out = capsys.readouterr().out
    assert out.startswith("run 1 finished: 400 episodes") and "\x1b" not in out


def test_eval_json_stays_clean_while_the_line_draws_on_the_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    with terminal() as (stream, got):
        monkeypatch.setattr("sys.stderr", stream)
        rc = main(["eval", "--agent", "greedy", "--games", "6", "--seed", "1", "--json"])
        monkeypatch.undo()
    assert rc == 0
    data = json.loads(capsys.readouterr().out)  # one JSON object, nothing else on stdout
    assert data["results"][0]["games"] == 6
    shown, _ = rows(b"".join(got))
    assert shown and shown[-1].startswith("eval greedy") and "100.0%" in shown[-1]
