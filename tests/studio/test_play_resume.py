"""The Play tab opens on the game you left (issue #33), and BEST follows the score live under Watch.

A game left unfinished (the window closed, the app killed) goes on after a restart as the same
record: same board, score, moves and game id; the moves that follow append to it, and the record
still replays from its seed as one game. BEST is the person's best score on the board size: the
games they played in, agents' help included, the same live and after a restart.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt

from agents.spec import AgentSpec
from engine import Direction, Game, Rules
from engine.store import HUMAN, GameRecorder, GameStore, Player
from studio.commands.replay import verify
from tests.studio.gui_helpers import open_window

pytest_plugins = ("tests.studio.gui_fixtures",)

KEY_OF = {
    Direction.UP: Qt.Key.Key_Up,
    Direction.LEFT: Qt.Key.Key_Left,
    Direction.DOWN: Qt.Key.Key_Down,
    Direction.RIGHT: Qt.Key.Key_Right,
}
CLICK = Qt.MouseButton.LeftButton


def _press_legal(qtbot, play, n: int) -> None:
    """``n`` real key presses of legal moves (the first legal one in up, left, down, right order, so
    that the game does not end)."""
    for _ in range(n):
        legal = play.recorder.game.legal_mask()
        d = next(d for d in (Direction.LEFT, Direction.DOWN, Direction.RIGHT, Direction.UP) if legal[d])
        qtbot.keyClick(play.board, KEY_OF[d])
    qtbot.waitUntil(lambda: not play.board.is_animating, timeout=5000)


def _replays_from_its_seed(record) -> None:
    g = Game(rules=record.rules, seed=record.summary.seed)
    assert np.array_equal(g.board, record.initial_board)
    for i, m in enumerate(record.moves):
        assert np.array_equal(g.board, record.layouts[i]), f"move {i}"
        g.step(int(m))
    assert np.array_equal(g.board, record.final_board)
    assert verify(record) is None


def test_a_game_left_open_goes_on_after_a_restart(qtbot, data_dir, qsettings):
    win = open_window(qtbot, data_dir, qsettings)
    play = win.play
    play.new_game(Rules(), seed=21)
    _press_legal(qtbot, play, 12)
    game_id, board, score, moves = play.recorder.game_id, play.recorder.board, play.recorder.score, 12
    assert play.recorder.moves == moves and score > 0
    win.close()

    again = open_window(qtbot, data_dir, qsettings)
    play = again.play
    assert play.recorder.game_id == game_id and play.recorder.moves == moves
    assert np.array_equal(play.recorder.board, board) and np.array_equal(play.board.board, board)
    assert play.scoreLabel.text() == str(score) and play.movesLabel.text() == f"Moves: {moves}"
    assert play.gameInfoLabel.text() == f"4x4 · game #{game_id}, resumed"
    qtbot.waitUntil(lambda: again.statusBar().currentMessage().startswith(f"Resumed game #{game_id}: "))
    assert again.store.get_game(game_id).status == "playing"

    _press_legal(qtbot, play, 5)  # more moves append to the same record
    assert play.recorder.game_id == game_id
    assert again.store.count_games() == 1
    again.close()
    with GameStore.open(data_dir) as store:
        record = store.load_game(game_id)
        assert record.n_moves == moves + 5 and record.summary.status == "abandoned"
        assert [record.player_of(i) for i in range(record.n_moves)] == [HUMAN] * (moves + 5)
        _replays_from_its_seed(record)


def test_new_game_and_game_over_leave_nothing_to_resume(qtbot, data_dir, qsettings):
    win = open_window(qtbot, data_dir, qsettings)
    play = win.play
    play.new_game(Rules(), seed=5)
    _press_legal(qtbot, play, 4)
    left = play.recorder.game_id
    play.new_game(Rules(rows=2, cols=2), seed=3)  # the person chose to leave it
    for _ in range(200):  # a 2x2 game ends quickly
        if play.recorder.closed:
            break
        _press_legal(qtbot, play, 1)
    assert play.recorder.closed
    win.close()

    again = open_window(qtbot, data_dir, qsettings)
    assert again.play.recorder.moves == 0 and again.play.recorder.game_id is None
    assert again.play.movesLabel.text() == "Moves: 0"
    assert again.store.get_game(left).status == "abandoned"  # left alone


def test_a_fresh_profile_resumes_the_last_unfinished_game_of_the_store(qtbot, data_dir, qsettings):
    """No word in the settings (a new profile, or one from before resuming): the store says which."""
    with GameStore.open(data_dir) as store:
        for seed in (1, 2):
            rec = GameRecorder(store, rules=Rules(), seed=seed)
            for _ in range(6 + seed):
                rec.play(rec.game.legal_moves()[0])
            rec.close()
        last, board = rec.game_id, rec.board
        # A later game an agent played alone is not the person's own unfinished game.
        agent = GameRecorder(store, Game(rules=Rules(), seed=9), player=Player("agent", "greedy"))
        agent.play(agent.game.legal_moves()[0])
        agent.close()
    assert qsettings.value("play/resume") is None  # nothing said
    win = open_window(qtbot, data_dir, qsettings)
    assert win.play.recorder.game_id == last and np.array_equal(win.play.board.board, board)
    assert win.play.recorder.moves == 8


def test_a_killed_game_goes_on_as_the_same_record(tmp_path):
    """The process playing is killed between two moves: the next store resumes it, the seed still
    replays it."""
    script = textwrap.dedent(
        """
        import os, sys
        from engine import Rules
        from engine.store import GameRecorder, GameStore
        store = GameStore.open(sys.argv[1])
        rec = GameRecorder(store, rules=Rules(), seed=77)
        for _ in range(15):
            rec.play(rec.game.legal_moves()[-1])
        print(rec.game_id, rec.score, flush=True)
        os._exit(0)  # killed: no close, the game stays "playing"
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    game_id, score = map(int, out.stdout.split())
    with GameStore.open(tmp_path) as store:
        assert store.get_game(game_id).status == "abandoned"  # its process is gone
        rec = GameRecorder.resume(store, game_id)
        assert (rec.game_id, rec.moves, rec.score) == (game_id, 15, score)
        assert store.get_game(game_id).status == "playing"
        for _ in range(10):
            rec.play(rec.game.legal_moves()[0])
        rec.close()
        record = store.load_game(game_id)
        assert record.n_moves == 25 and store.count_games() == 1
        _replays_from_its_seed(record)


def test_a_game_that_does_not_replay_from_its_seed_is_not_resumed(data_dir):
    from engine.store import StoreError

    with GameStore.open(data_dir) as store:
        # A game recorded from a hand-set board: its seed does not draw its start.
        odd = GameRecorder(store, Game(rules=Rules(), board=np.eye(4, dtype=np.int64) * 2, seed=4))
        odd.play(odd.game.legal_moves()[0])
        odd.close()
        finished = GameRecorder(store, rules=Rules(rows=2, cols=2), seed=3)
        while not finished.closed:
            finished.play(finished.game.legal_moves()[0])
        for game_id, why in ((odd.game_id, "does not start"), (finished.game_id, "is finished")):
            try:
                GameRecorder.resume(store, game_id)
            except StoreError as e:
                assert why in str(e)
            else:
                raise AssertionError(f"game {game_id} resumed")
            assert store.get_game(game_id).status in ("abandoned", "finished")


# ------------------------------------------------------------------------------------------ BEST


def test_best_follows_the_score_while_an_agent_plays_your_game_on(qtbot, data_dir, qsettings, rater_agent):
    win = open_window(qtbot, data_dir, qsettings)
    play = win.play
    play.set_agent(AgentSpec(rater_agent))
    play.speedSlider.setValue(40)
    play.new_game(Rules(rows=5, cols=5), seed=9)
    _press_legal(qtbot, play, 2)  # your game: an agent's moves in it count for BEST
    seen: list[tuple[str, str]] = []
    play.gamesChanged.connect(lambda: seen.append((play.scoreLabel.text(), play.bestLabel.text())))
    start = play.recorder.moves
    qtbot.mouseClick(play.autoplayButton, CLICK)
    qtbot.waitUntil(lambda: play.recorder.moves >= start + 12, timeout=20000)
    qtbot.mouseClick(play.autoplayButton, CLICK)
    assert not play.watching
    assert len(seen) >= 12 and all(score == best for score, best in seen), seen  # live, move by move
    mixed_score = play.recorder.score
    assert int(play.bestLabel.text()) == mixed_score > 0

    # A game the agent plays from its first move is not yours: BEST stays.
    play.new_game(Rules(rows=5, cols=5), seed=10)
    qtbot.mouseClick(play.autoplayButton, CLICK)
    qtbot.waitUntil(lambda: play.recorder.moves >= 3, timeout=20000)
    qtbot.mouseClick(play.autoplayButton, CLICK)
    assert play.bestLabel.text() == str(mixed_score)
    win.close()

    # After a restart BEST means the same: the mixed game counts, the agent's own does not.
    again = open_window(qtbot, data_dir, qsettings)
    again.play.new_game(Rules(rows=5, cols=5))
    assert again.play.bestLabel.text() == str(mixed_score)
    assert "with or without an agent's help" in again.play.best_box.toolTip()
