"""``python main.py play --text``: line input (piped), key input (a real pseudo-terminal), the store log."""

from __future__ import annotations

import io
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest

from engine import Direction, Game, Rules
from engine.store import GameStore
from studio.cli import main
from studio.commands.play import QUIT, parse_line, play_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("l\n", [Direction.LEFT]),
        ("d", [Direction.DOWN]),  # seed 000's u/d/l/r: d is down on a line
        ("r", [Direction.RIGHT]),
        ("w", [Direction.UP]),
        ("  Left ", [Direction.LEFT]),
        ("llur", [Direction.LEFT, Direction.LEFT, Direction.UP, Direction.RIGHT]),
        ("up, down", [Direction.UP, Direction.DOWN]),
        ("", []),
        ("q", QUIT),
        ("quit", QUIT),
    ],
)
def test_parse_line(line, expected):
    assert parse_line(line) == expected


def test_parse_line_rejects_junk():
    with pytest.raises(ValueError, match="'xyz' is not a move: type u, d, l, r"):
        parse_line("xyz\n")


def _replay(seed: int, moves: list[Direction], rules: Rules | None = None) -> Game:
    game = Game(rules=rules or Rules(), seed=seed)
    for d in moves:
        game.step(d)
    return game


def _an_illegal_move(game: Game) -> Direction | None:
    mask = game.legal_mask()
    return next((d for d in Direction if not mask[d]), None)


def test_piped_game_is_logged_move_by_move(data_dir):
    # Find a moment where some move is illegal, to see the game refuse it without logging anything.
    game = Game(seed=5)
    played = []
    while _an_illegal_move(game) is None:
        d = game.legal_moves()[0]
        game.step(d)
        played.append(d)
    illegal = _an_illegal_move(game)
    last = game.legal_moves()[-1]
    text = "".join(d.label[0] + "\n" for d in played) + f"{illegal.label}\nxyz\n{last.label}\nq\nl\n"
    out = io.StringIO()
    with GameStore.open(data_dir) as store:
        assert play_text(store, Rules(), 5, stdin=io.StringIO(text), stdout=out) == 0
        rec = store.load_game(1)
    output = out.getvalue()
    assert f"{illegal.label} changes nothing; legal: " in output
    assert "'xyz' is not a move" in output
    moves = [*played, last]
    assert f"Left after {len(moves)} moves" in output  # "q" stopped it: the "l" after it was not played
    assert output.rstrip().endswith("Saved as game 1 (unfinished, seed 5): python main.py games show 1")
    expected = _replay(5, moves)
    assert rec.moves.tolist() == [int(d) for d in moves]
    assert rec.summary.source == "human" and rec.summary.status == "abandoned" and rec.summary.seed == 5
    assert rec.summary.score == expected.score and np.array_equal(rec.final_board, expected.board)


def test_first_frame_marks_the_start_tiles(data_dir):
    out = io.StringIO()
    with GameStore.open(data_dir) as store:
        play_text(store, Rules(rows=3, cols=3), 1, stdin=io.StringIO(""), stdout=out)
    game = Game(rules=Rules(rows=3, cols=3), seed=1)
    lines = out.getvalue().splitlines()
    assert lines[0] == "score 0   moves 0   max tile " + str(game.max_tile)
    marked = [
        (r, c)
        for r, line in enumerate(lines[1:4])
        for c, cell in enumerate(line.split())
        if cell.endswith("*")
    ]
    assert sorted(marked) == sorted((s.row, s.col) for s in game.last_spawns)
    assert "Left after 0 moves: score 0" in out.getvalue()


def test_game_over_ends_with_a_summary(data_dir, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("l\nr\n" * 200))
    assert main(["play", "--text", "--rows", "1", "--cols", "3", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    with GameStore.open(data_dir) as store:
        g = store.get_game(1)
    assert g.status == "finished" and g.rules == Rules(rows=1, cols=3)
    assert f"Game over! Final score {g.score}, max tile {g.max_tile}, {g.n_moves} moves." in out


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--p4", "1.5", "argument --p4: 1.5 is out of range: [0, 1]"),
        ("--p4", "nan", "argument --p4: nan is out of range: [0, 1]"),
        ("--rows", "100000", "argument --rows: 100000 is out of range (from 1 to 16)"),
        ("--seed", "-1", "argument --seed: -1 is out of range (from 0 to 4,611,686,018,427,387,904)"),
    ],
)
def test_bad_rules_are_one_line_errors(flag, value, message, capsys):
    """Each is refused while parsing, before a board is allocated (--rows 100000 --cols 100000 once
    asked numpy for 75 GB)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["play", "--text", flag, value])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"python main.py play: error: {message}"


def test_pygame_missing_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.setitem(
        sys.modules, "studio.pygame_player", None
    )  # import fails as if the module were absent
    assert main(["play", "--pygame"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python main.py play: error: the pygame player is not available here (")
    assert err.endswith("try: python main.py play --text\n")


def test_pygame_hook_gets_store_rules_and_seed(monkeypatch):
    calls = []
    fake = types.ModuleType("studio.pygame_player")
    fake.run_pygame = lambda store, rules, seed: calls.append((type(store).__name__, rules, seed)) or 0
    monkeypatch.setitem(sys.modules, "studio.pygame_player", fake)
    assert main(["play", "--pygame", "--rows", "5", "--cols", "5", "--seed", "9"]) == 0
    assert calls == [("GameStore", Rules(rows=5, cols=5), 9)]


# ---------------------------------------------------------------------------------- real processes


class Output:
    """Collects a process's stdout in a thread, so tests can wait for text with a timeout."""

    def __init__(self, stream) -> None:
        self.text = ""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream) -> None:
        for chunk in iter(lambda: os.read(stream.fileno(), 4096), b""):
            with self._lock:
                self.text += chunk.decode(errors="replace")

    def wait_for(self, pattern: str, timeout: float = 60.0, start: int = 0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                m = re.compile(pattern).search(self.text, start)
            if m:
                return m
            time.sleep(0.02)
        raise AssertionError(f"no {pattern!r} in output:\n{self.text[-2000:]}")


def test_sigkill_during_piped_play_keeps_every_move(data_dir):
    proc = subprocess.Popen(
        [sys.executable, "main.py", "play", "--text", "--seed", "3"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None
        out = Output(proc.stdout)
        pos = out.wait_for(r"move\?").end()
        sent = []
        for k in range(1, 9):
            legal = re.findall(r"legal: ([a-z, ]+)", out.text)[-1].strip().split(", ")
            d = legal[k % len(legal)]
            proc.stdin.write(f"{d}\n".encode())
            proc.stdin.flush()
            sent.append(Direction.parse(d))
            pos = out.wait_for(rf"moves {k}\b[\s\S]*?move\?", start=pos).end()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
        proc.wait(10)
    con = sqlite3.connect(data_dir / "studio.sqlite3")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    with GameStore.open(data_dir) as store:
        rec = store.load_game(1)
    assert rec.moves.tolist() == [int(d) for d in sent]  # every move shown on screen is in the store
    assert rec.summary.status == "abandoned"
    assert np.array_equal(rec.final_board, _replay(3, sent).board)


needs_pty = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")


@needs_pty
@pytest.mark.parametrize("ending", ["q", "ctrl-c"])
def test_keys_on_a_terminal_and_the_terminal_is_restored(data_dir, ending):
    import pty
    import termios

    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    proc = subprocess.Popen(
        [sys.executable, "main.py", "play", "--text", "--seed", "4"],
        cwd=ROOT,
        stdin=slave,
        stdout=subprocess.PIPE,
    )
    try:
        out = Output(proc.stdout)
        out.wait_for("arrows or W/A/S/D move, q quits")
        assert not termios.tcgetattr(slave)[3] & termios.ICANON  # cbreak: keys arrive without Enter
        game = Game(seed=4)
        arrows = {
            Direction.UP: b"\x1b[A",
            Direction.DOWN: b"\x1b[B",
            Direction.RIGHT: b"\x1b[C",
            Direction.LEFT: b"\x1b[D",
        }
        wasd = {Direction.UP: b"w", Direction.LEFT: b"a", Direction.DOWN: b"s", Direction.RIGHT: b"d"}
        played = []
        for k, keys in enumerate((arrows, wasd, arrows, wasd), start=1):
            d = game.legal_moves()[-1]
            game.step(d)
            played.append(d)
            os.write(master, keys[d])
            out.wait_for(rf"moves {k}\b")
        if ending == "q":
            os.write(master, b"q")
        else:
            proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == (0 if ending == "q" else 130)
        after = termios.tcgetattr(slave)
    finally:
        proc.kill()
        proc.wait(10)
        os.close(master)
        os.close(slave)
    assert after == before  # the terminal is given back as it was
    out.wait_for("Left after 4 moves")
    with GameStore.open(data_dir) as store:
        rec = store.load_game(1)
    assert rec.moves.tolist() == [int(d) for d in played]
    assert rec.summary.status == "abandoned" and np.array_equal(rec.final_board, game.board)
