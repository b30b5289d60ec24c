"""The pygame player (seed 000's interface on the engine), driven with scripted pygame events."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from engine import Direction, Game, Rules

pygame = pytest.importorskip("pygame")

from studio.pygame_player import LAST_TILE, PygamePlayer, run_pygame  # noqa: E402


def _key(key: int):
    return pygame.event.Event(pygame.KEYDOWN, key=key)


def test_keys_move_and_log_like_the_engine(store):
    pygame.init()
    try:
        player = PygamePlayer(pygame, store, Rules(), seed=21)
        keys = [
            pygame.K_LEFT,
            pygame.K_w,
            pygame.K_d,
            pygame.K_DOWN,
            pygame.K_a,
            pygame.K_UP,
            pygame.K_RIGHT,
            pygame.K_s,
        ]
        directions = [Direction.LEFT, Direction.UP, Direction.RIGHT, Direction.DOWN] * 2
        ref = Game(seed=21)
        for key, d in zip(keys, directions):
            assert player.handle(_key(key))
            if ref.legal_mask()[d]:
                ref.step(d)
        assert np.array_equal(player.recorder.board, ref.board)
        record = store.load_game(player.recorder.game_id)
        assert record.summary.source == "human" and record.n_moves == ref.moves
        # Drawing: the last spawned tile's number is red, as in seed 000.
        screen = pygame.Surface((player.width, player.height))
        player.draw(screen)
        spawn = player.recorder.game.last_spawns[0]
        t = player.tile
        cell = pygame.surfarray.pixels3d(screen)[
            spawn.col * t : (spawn.col + 1) * t, spawn.row * t : (spawn.row + 1) * t
        ]
        assert np.any(np.all(cell == np.array(LAST_TILE), axis=-1))
    finally:
        pygame.quit()


def test_run_pygame_loop_logs_to_the_store_and_quits(store, monkeypatch):
    script = [
        [_key(pygame.K_LEFT)],
        [_key(pygame.K_UP), _key(pygame.K_RIGHT)],
        [],
        [pygame.event.Event(pygame.QUIT)],
    ]
    monkeypatch.setattr(
        pygame.event, "get", lambda: script.pop(0) if script else [pygame.event.Event(pygame.QUIT)]
    )
    assert run_pygame(store, Rules(rows=5, cols=5), seed=4) == 0
    games = store.list_games()
    assert len(games) == 1
    g = games[0]
    assert g.source == "human" and g.status == "abandoned" and g.rules.shape == (5, 5)
    ref = Game(rules=Rules(rows=5, cols=5), seed=4)
    n = 0
    for d in (Direction.LEFT, Direction.UP, Direction.RIGHT):
        if ref.legal_mask()[d]:
            ref.step(d)
            n += 1
    assert g.n_moves == n and g.score == ref.score


def test_big_tiles_and_big_boards_draw(store):
    pygame.init()
    try:
        player = PygamePlayer(pygame, store, Rules(rows=9, cols=3), seed=1)
        player.recorder.game._board[0, 0] = 131072  # a tile past the seed's colour table
        screen = pygame.Surface((player.width, player.height))
        player.draw(screen)
        assert player.height == player.tile * 9 + 50
    finally:
        pygame.quit()


def test_missing_pygame_gives_a_clear_message(store, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pygame", None)  # makes `import pygame` raise ImportError
    assert run_pygame(store, Rules(), seed=1) == 1
    assert "pip install pygame" in capsys.readouterr().err
