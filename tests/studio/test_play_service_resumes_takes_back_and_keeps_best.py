"""The Play tab's Qt-free service (studio.services.play): the game to go on with, takebacks counted,
BEST of a board size, and the line under the score."""

from __future__ import annotations

from engine import Direction, Rules
from engine.store import GameStore
from studio.services.play import HUMAN, PlayRecords, agent_player, game_info


def _play_until_moved(records: PlayRecords, seed: int = 5):
    recorder = records.new_game(Rules(), seed=seed)
    moved = 0
    for d in Direction:
        if recorder.play(d, HUMAN) is not None:
            moved += 1
        if moved == 2:
            break
    assert recorder.moves == 2
    return recorder


def test_a_game_left_unfinished_is_resumed_as_the_same_record(store: GameStore) -> None:
    records = PlayRecords(store)
    recorder = _play_until_moved(records)
    token = records.resume_token(recorder)
    assert token == f"{recorder.game_id}@{store.path}"
    board, score = recorder.board.copy(), recorder.score
    recorder.close("abandoned")
    again = PlayRecords(store).resume(token)
    assert again is not None and again.game_id == recorder.game_id
    assert again.moves == 2 and again.score == score and (again.board == board).all()
    # A token that names no game for this store: nothing to go on with.
    assert PlayRecords(store).resume(f"@{store.path}") is None


def test_takebacks_are_counted_and_best_follows_the_person_live(store: GameStore) -> None:
    records = PlayRecords(store)
    assert records.best(Rules()) == 0  # no game played yet
    recorder = _play_until_moved(records)
    assert recorder.score > 0
    assert records.best(Rules()) == 0  # read once a size ...
    assert records.best_with(recorder) == recorder.score  # ... and raised live by the person's game
    assert records.best(Rules()) == recorder.score
    assert records.takeback_count(recorder) == 0
    assert recorder.take_back() is not None
    records.forget_best(recorder.rules)
    assert records.best(Rules()) == recorder.score  # read again: the move's score is gone
    assert records.takeback_count(recorder) == 1
    assert PlayRecords(store).takeback_count(recorder) == 1  # kept in the store, not in memory
    assert (
        game_info(recorder, resumed=True, taken_back=1)
        == f"4x4 · game #{recorder.game_id}, resumed, 1 taken back"
    )


def test_the_line_under_the_score_names_unusual_rules_and_an_unlogged_game(store: GameStore) -> None:
    recorder = PlayRecords(store).new_game(Rules(rows=3, cols=5, p4=0.25, spawn_per_move=2), seed=1)
    assert game_info(recorder, resumed=False, taken_back=0) == "3x5 · p4 0.25 · 2 per spawn · not logged yet"
    assert agent_player("greedy", "/x/best.npz").label.startswith("greedy")
    assert not agent_player("greedy").is_human
