"""The board widget on its own: tile paths agree with engine.slide, keys, numbers that fit, colours."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF

from engine import DIRECTIONS, Direction, Game, Rules, slide
from studio.theme import load_theme
from studio.widgets.board import BoardWidget, tile_motions
from tests.studio.tab_fixtures import shown


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (1, 6), (6, 2)])
def test_tile_motions_land_where_engine_slide_puts_the_tiles(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(60):
        board = np.where(rng.random(shape) < 0.6, 2 ** rng.integers(1, 4, shape), 0).astype(np.int64)
        for d in DIRECTIONS:
            expected, _ = slide(board, d)
            drawn = np.zeros_like(board)
            for m in tile_motions(board, d):
                assert board[m.src] == m.value
                drawn[m.dst] += m.value  # two merging tiles add up to the merged tile
            assert np.array_equal(drawn, expected), (board, d)
            merged = {m.dst for m in tile_motions(board, d) if m.merged}
            assert all(expected[c] > 0 for c in merged)


def test_keys_emit_directions(qtbot):
    board = BoardWidget()
    qtbot.addWidget(board)
    controls = [  # (arrow, letter, move): seed 000's arrows and WASD
        (Qt.Key.Key_Up, Qt.Key.Key_W, Direction.UP),
        (Qt.Key.Key_Left, Qt.Key.Key_A, Direction.LEFT),
        (Qt.Key.Key_Down, Qt.Key.Key_S, Direction.DOWN),
        (Qt.Key.Key_Right, Qt.Key.Key_D, Direction.RIGHT),
    ]
    keys = {key: move for arrow, letter, move in controls for key in (arrow, letter)}
    got: list[Direction] = []
    board.moveRequested.connect(got.append)
    for key in keys:
        qtbot.keyClick(board, key)
    qtbot.keyClick(board, Qt.Key.Key_Q)
    qtbot.keyClick(board, Qt.Key.Key_Left, Qt.KeyboardModifier.ControlModifier)  # not a move
    assert got == list(keys.values())
    passive = BoardWidget(interactive=False)
    qtbot.addWidget(passive)
    passive.moveRequested.connect(got.append)
    qtbot.keyClick(passive, Qt.Key.Key_Up)
    assert len(got) == len(keys)


def test_transitions_queue_and_end_on_the_last_board(qtbot):
    board = shown(qtbot, BoardWidget(), (300, 300))
    board.animation_ms = 200
    game = Game(rules=Rules(), seed=3)
    board.set_board(game.board)
    boards = []
    for d in (Direction.LEFT, Direction.UP, Direction.RIGHT):
        if game.legal_mask()[d]:
            before = game.board
            result = game.step(d)
            board.push_transition(before, d, game.board, result.spawns)
            boards.append(game.board)
    assert board.pending_transitions == len(boards) and board.is_animating
    assert np.array_equal(board.board, boards[-1])  # the target is known at once
    with qtbot.waitSignal(board.animationFinished, timeout=3000):
        pass
    assert not board.is_animating and board.marked_cells == tuple((s.row, s.col) for s in game.last_spawns)


@pytest.mark.parametrize("value", [2, 2048, 65536, 131072, 2**20, 2**30])
def test_numbers_fit_their_tile(qtbot, value):
    board = BoardWidget()
    qtbot.addWidget(board)
    # 40 px tiles (a 12x12 board in a small window) hold up to 6 digits; past that the font's 6 px floor
    # (smaller is unreadable) needs bigger tiles.
    for cell in (40.0, 90.0, 140.0) if value < 10**6 else (70.0, 140.0):
        font = board._font_for(value, cell)
        assert QFontMetricsF(font).horizontalAdvance(str(value)) <= cell * 0.9
    small, big = board._font_for(2, 100.0), board._font_for(131072, 100.0)
    assert small.pixelSize() > big.pixelSize()  # the font shrinks with the number of digits


def test_theme_classic_colours_and_distinct_big_tiles():
    theme = load_theme()
    # Seed 000's (and the original game's) colours.
    assert theme.tile_color(2) == "#eee4da" and theme.tile_color(2048) == "#edc22e"
    assert theme.tile_color(0) == "#cdc1b4"
    big = [theme.tile_color(2**k) for k in range(12, 18)]  # 4096 .. 131072
    assert len(set(big)) == len(big)
    assert theme.text_color(2) == theme.text_dark and theme.text_color(131072) == theme.text_light
