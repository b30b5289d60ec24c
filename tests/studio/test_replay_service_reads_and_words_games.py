"""The Replay tab's store queries and texts, without a window (``studio.services.replay``): the list is
newest first, a game opens whole with its taken-back count, every step is worded, an unreviewed game
shows no review, and a missing game is a ValueError the tab shows in its title."""

from __future__ import annotations

import pytest

from engine import Direction, Rules
from engine.store.recorder import GameRecorder
from studio.services.replay import (
    ARROWS,
    game_label,
    game_title,
    list_games,
    open_game,
    shown_review,
    step_text,
)
from studio.services.review import resolve_reviewer


def _game(store, seed: int, moves: int, take_back: bool = False) -> int:
    """A game of ``moves`` moves (the first legal of down, left, right, up), one taken back if asked."""
    rec = GameRecorder(store, rules=Rules(), seed=seed)
    for _ in range(moves):
        mask = rec.game.legal_mask()
        rec.play(next(Direction(d) for d in (2, 1, 3, 0) if mask[d]))
    if take_back:
        assert rec.take_back() is not None
    rec.close("abandoned")
    assert rec.game_id is not None
    return rec.game_id


def test_lists_newest_first_and_opens_a_game_whole(store):
    first = _game(store, seed=1, moves=5)
    second = _game(store, seed=2, moves=4, take_back=True)
    assert [g.id for g in list_games(store, None)] == [second, first]

    record, taken = open_game(store, second)
    assert (record.id, record.n_moves, taken) == (second, 3, 1)
    g = record.summary
    assert game_label(g) == f"#{second} human · {g.score:,} · max {g.max_tile} · 3 moves · unfinished"
    assert game_title(g, taken).endswith(" · 1 taken back")
    assert game_title(g).startswith(f"Game #{second} · human · 4x4 · {g.score:,} points")

    assert step_text(record, 0) == "Start · 3 moves in this game · seed 2"
    d = Direction(int(record.moves[0]))
    spawn = record.spawns_of(0)[0]
    assert step_text(record, 1) == (
        f"Move 1/3: {ARROWS[d]} {d.label} by {record.player_of(0).label} · reward {int(record.rewards[0]):,} · "
        f"score {int(record.scores[0]):,} · spawn {spawn.value} at ({spawn.row}, {spawn.col})"
    )
    assert step_text(record, 3).endswith(" · unfinished")

    reviewer = resolve_reviewer(store, "expectimax", 1, record.rules)
    assert shown_review(store, second, reviewer) is None


def test_a_missing_game_is_an_error_the_tab_shows(store):
    # a StoreError, a ValueError: the tab's title says "Cannot open game #12345: no game 12345"
    with pytest.raises(ValueError, match="no game 12345"):
        open_game(store, 12345)
