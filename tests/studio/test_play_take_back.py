"""Taking back a move in Play (issue 44): Ctrl+Z, Game > Take back and the Take back button.

The game goes back to exactly where it was, spawn generator included, so the same move brings the same
tile; the record drops the move (it still replays from its seed, and Review grades the moves that
stood) and counts it; closing and reopening keeps all of that.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from engine import Direction, Game, Rules
from engine.store import HUMAN
from engine.store.recorder import takebacks
from tests.studio.gui_helpers import ARROW_KEYS, open_window

pytest_plugins = ("tests.studio.gui_fixtures",)

SEED = 11
KEYS = ARROW_KEYS


def _key(qtbot, window, key: Qt.Key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    qtbot.keyClick(QApplication.focusWidget() or window, key, modifier)


def _ctrl_z(qtbot, window) -> None:
    _key(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)


def test_ctrl_z_takes_back_exactly_and_the_record_keeps_the_moves_that_stood(qtbot, data_dir, qsettings):
    win = open_window(qtbot, data_dir, qsettings, active=True)
    play = win.play
    play.new_game(Rules(), seed=SEED)
    replica = Game(rules=Rules(), seed=SEED)
    played: list[Direction] = []
    for _ in range(3):
        d = replica.legal_moves()[0]
        replica.step(d)
        played.append(d)
        _key(qtbot, win, KEYS[d])
    assert play.recorder.moves == 3 and np.array_equal(play.recorder.board, replica.board)
    after_three = replica.copy()

    # Ctrl+Z: back to the position after two moves, on the board, the score and in the store.
    two = Game(rules=Rules(), seed=SEED)
    for d in played[:2]:
        two.step(d)
    _ctrl_z(qtbot, win)
    assert play.recorder.moves == 2
    assert np.array_equal(play.recorder.board, two.board)
    assert np.array_equal(play.board.board, two.board)
    assert play.scoreLabel.text() == str(two.score)
    assert play.movesLabel.text() == "Moves: 2"
    game_id = play.recorder.game_id
    summary = win.store.get_game(game_id)
    assert (summary.n_moves, summary.score, summary.status) == (2, two.score, "playing")

    # The same move brings the same tile (the spawn generator went back too).
    _key(qtbot, win, KEYS[played[2]])
    assert np.array_equal(play.recorder.board, after_three.board)
    assert play.recorder.score == after_three.score

    # Take it back again and play another move instead: that one stands.
    _ctrl_z(qtbot, win)
    other = next(d for d in two.legal_moves() if d != played[2])
    _key(qtbot, win, KEYS[other])
    two.step(other)
    assert np.array_equal(play.recorder.board, two.board)
    assert play.gameInfoLabel.text().endswith("2 taken back")

    rec = win.store.load_game(game_id)
    assert [Direction(int(m)) for m in rec.moves] == [*played[:2], other]
    assert int(rec.scores[-1]) == two.score
    assert [(t.index, t.direction, t.player) for t in takebacks(win.store, game_id)] == [
        (2, played[2], HUMAN),
        (2, played[2], HUMAN),
    ]
    win.close()

    # The stored game replays from its seed to the final board, and reopens with its takebacks.
    rec = win_store_record(data_dir, game_id)
    game = Game(rules=rec.rules, seed=rec.summary.seed)
    for m in rec.moves:
        game.step(int(m))
    assert np.array_equal(game.board, rec.final_board)
    assert np.array_equal(rec.final_board, two.board)

    again = open_window(qtbot, data_dir, qsettings, active=True)
    assert again.play.recorder.game_id == game_id and again.play.recorder.moves == 3
    assert "2 taken back" in again.play.gameInfoLabel.text()
    # A resumed game's moves can be taken back too: back to the position after two moves.
    _ctrl_z(qtbot, again)
    back = Game(rules=Rules(), seed=SEED)
    for d in played[:2]:
        back.step(d)
    assert np.array_equal(again.play.recorder.board, back.board)
    assert again.store.get_game(game_id).n_moves == 2
    assert len(takebacks(again.store, game_id)) == 3
    again.close()


def win_store_record(data_dir: Path, game_id: int):
    from engine.store import GameStore

    with GameStore.open(data_dir) as store:
        return store.load_game(game_id)


def test_take_back_from_the_game_menu_and_the_button(qtbot, window):
    play = window.play
    play.new_game(Rules(), seed=SEED)
    start = play.recorder.board
    assert not play.takeBackButton.isEnabled()
    d = play.recorder.game.legal_moves()[0]
    _key(qtbot, window, KEYS[d])
    assert play.takeBackButton.isEnabled()

    # Game > Take back, by keyboard: Alt+G, then the item's mnemonic T.
    qtbot.keyClick(window, Qt.Key.Key_G, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is not None, timeout=2000)
    qtbot.keyClick(QApplication.activePopupWidget(), Qt.Key.Key_T)
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None, timeout=2000)
    assert play.recorder.moves == 0 and np.array_equal(play.recorder.board, start)
    assert not play.takeBackButton.isEnabled()

    _key(qtbot, window, KEYS[d])
    qtbot.mouseClick(play.takeBackButton, Qt.MouseButton.LeftButton)
    assert play.recorder.moves == 0 and np.array_equal(play.recorder.board, start)
    assert window.store.get_game(play.recorder.game_id).n_moves == 0
    # The button did not take the keyboard: the next arrow plays.
    _key(qtbot, window, KEYS[d])
    assert play.recorder.moves == 1


def test_nothing_to_take_back_changes_nothing(qtbot, window):
    play = window.play
    play.new_game(Rules(), seed=SEED)
    start = play.recorder.board
    _ctrl_z(qtbot, window)
    assert play.recorder.moves == 0 and np.array_equal(play.recorder.board, start)
    assert play.recorder.game_id is None  # nothing was written
    assert window.statusBar().currentMessage() == "No move to take back"


def test_review_grades_the_move_that_stood_not_the_one_taken_back(qtbot, window):
    from studio.services.review import review_game

    play = window.play
    play.new_game(Rules(), seed=SEED)
    first = play.recorder.game.legal_moves()
    _key(qtbot, window, KEYS[first[0]])
    _ctrl_z(qtbot, window)
    _key(qtbot, window, KEYS[first[-1]])
    game_id = play.recorder.game_id
    review = review_game(window.store, game_id)
    assert review.n_moves == 1 and len(review.moves) == 1
    assert review.moves[0].played == first[-1]

    # Replay names the takeback beside the game's title.
    qtbot.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
    window.replay.open_game(game_id)
    assert window.replay.titleLabel.text().endswith("· 1 taken back")
