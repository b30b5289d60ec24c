"""Imitation's ``skip_graded`` filter (issue #19): moves a stored review of their game graded mistake
or worse (or inaccuracy or worse) are left out of the data set, of ``count_examples``' count, and of
the count the Train form shows; games without a complete review are kept whole."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

from agents.config import ConfigError
from agents.imitation import ImitationConfig, count_examples, describe_filters, graded_keep, load_dataset
from agents.review import BLUNDER, INACCURACY, MISTAKE, grade_move
from engine import Game, Rules
from engine.core import legal_mask
from engine.records import GameTrace, play_recorded
from engine.store import GameStore

pytest_plugins = ("tests.studio.gui_fixtures",)

N_MOVES = 20
POINTS = {"value_kind": "points", "label": "test reviewer"}


def _human_game(store: GameStore, seed: int, moves: int = N_MOVES) -> int:
    game = Game(rules=Rules(), seed=seed)
    trace = GameTrace.start(game)
    for _ in range(moves):
        play_recorded(game, game.legal_moves()[0], trace)
    return store.record_trace(trace, "human")


def _values(store: GameStore, game_id: int, bad: dict[int, float]) -> tuple[np.ndarray, list[int]]:
    """Review values of every move: the played move the best (10,000 points) except for the moves in
    ``bad`` (index -> the played move's value, another legal move keeping 10,000), which are put on
    moves with a choice (more than one legal move). Returns the values and the moves' indices."""
    rec = store.load_game(game_id)
    choice = [i for i in range(rec.n_moves) if legal_mask(rec.layouts[i]).sum() > 1]
    out = np.full((rec.n_moves, 4), np.nan)
    where = []
    slots = iter(choice[1::3])  # spread over the game
    bad_at = {next(slots): v for v in bad.values()}
    for i in range(rec.n_moves):
        mask = legal_mask(rec.layouts[i])
        played = int(rec.moves[i])
        out[i, mask] = 9000.0
        out[i, played] = bad_at.get(i, 10000.0)
        if i in bad_at:
            other = next(d for d in range(4) if mask[d] and d != played)
            out[i, other] = 10000.0
            where.append(i)
    return out, where


def _review(store: GameStore, game_id: int, key: str, values: np.ndarray) -> None:
    info = store.open_review(game_id, key, POINTS)
    store.add_review_values(info.id, 0, values)


def test_moves_graded_mistake_or_worse_are_left_out(store, data_dir):
    reviewed = _human_game(store, 1)
    plain = _human_game(store, 2)  # never reviewed: kept whole
    # two blunders (half the points), a mistake (5 %), an inaccuracy (2 %, 200 points: not "good")
    values, bad = _values(store, reviewed, {0: 5000.0, 1: 5000.0, 2: 9500.0, 3: 9800.0})
    _review(store, reviewed, "reviewer-a", values)
    rec = store.load_game(reviewed)
    grades = [
        grade_move(values[i], int(rec.moves[i]), board=rec.layouts[i]).grade for i in range(rec.n_moves)
    ]
    assert [grades[i] for i in bad] == [BLUNDER, BLUNDER, MISTAKE, INACCURACY]
    assert sum(g in (MISTAKE, BLUNDER) for g in grades) == 3

    everything = ImitationConfig(source="human")
    assert count_examples(everything, Rules(), data_dir) == (2, 2 * N_MOVES)
    assert len(load_dataset(everything, Rules(), data_dir)) == 2 * N_MOVES

    mistakes = ImitationConfig(source="human", skip_graded="mistake")
    data = load_dataset(mistakes, Rules(), data_dir)
    assert len(data) == 2 * N_MOVES - 3
    assert count_examples(mistakes, Rules(), data_dir) == (2, 2 * N_MOVES - 3)
    # exactly the bad moves went: the reviewed game keeps its other moves in order
    keep = graded_keep(store, rec, "mistake")
    assert keep is not None and sorted(np.flatnonzero(~keep)) == bad[:3]
    k = data.game_ids.index(reviewed)
    assert np.array_equal(data.moves_N[data.game_N == k], rec.moves[keep].astype(np.int64))
    assert int((data.game_N == data.game_ids.index(plain)).sum()) == N_MOVES
    assert "skip_graded=mistake" in describe_filters(mistakes)

    inaccuracies = ImitationConfig(source="human", skip_graded="inaccuracy")
    assert len(load_dataset(inaccuracies, Rules(), data_dir)) == 2 * N_MOVES - 4
    assert count_examples(inaccuracies, Rules(), data_dir) == (2, 2 * N_MOVES - 4)


def test_the_most_recent_complete_review_counts_and_unfinished_ones_do_not(store, data_dir):
    gid = _human_game(store, 3)
    values, _ = _values(store, gid, {0: 5000.0, 1: 5000.0})
    _review(store, gid, "old", values)
    cfg = ImitationConfig(skip_graded="mistake")
    assert count_examples(cfg, Rules(), data_dir) == (1, N_MOVES - 2)
    # a newer review that stopped half-way (two more blunders in its part) changes nothing
    half, _ = _values(store, gid, {0: 1000.0, 1: 1000.0, 2: 1000.0, 3: 1000.0})
    info = store.open_review(gid, "unfinished", POINTS)
    store.add_review_values(info.id, 0, half[: N_MOVES // 2 + 5])
    assert store.list_reviews(gid)[0].key == "unfinished"
    assert count_examples(cfg, Rules(), data_dir) == (1, N_MOVES - 2)
    assert len(load_dataset(cfg, Rules(), data_dir)) == N_MOVES - 2
    # a newer complete review that finds nothing wrong: every move is kept again
    clean, _ = _values(store, gid, {})
    _review(store, gid, "newer", clean)
    assert count_examples(cfg, Rules(), data_dir) == (1, N_MOVES)
    assert len(load_dataset(cfg, Rules(), data_dir)) == N_MOVES


def test_a_game_with_no_review_is_kept_whole_and_the_filter_is_a_choice():
    spec = next(s for s in ImitationConfig.specs() if s.name == "skip_graded")
    assert spec.default == "none" and spec.choices == ("none", "mistake", "inaccuracy")
    assert "kept whole" in spec.help
    with pytest.raises(ConfigError):
        ImitationConfig.from_dict({"skip_graded": "blunder"})


def test_the_train_forms_data_note_counts_what_the_filter_leaves(qtbot, store, monkeypatch):
    from agents import registry
    from studio.tabs.train import TrainTab
    from studio.tabs.train import launch as launch_module
    from tests.studio.train_fakes import register_fakes

    if "imitation" not in registry.agent_names():
        pytest.skip("no imitation agent in this build")
    reviewed = _human_game(store, 4)
    _human_game(store, 5)
    values, _ = _values(store, reviewed, {0: 5000.0, 1: 9500.0, 2: 9800.0})  # blunder, mistake, inaccuracy
    _review(store, reviewed, "reviewer", values)
    monkeypatch.setattr(launch_module, "MIN_IMITATION_MOVES", 10)
    register_fakes(monkeypatch)
    tab = TrainTab(store, None)
    qtbot.addWidget(tab)
    tab.resize(1200, 800)
    tab.show()
    qtbot.waitExposed(tab)
    monkeypatch.setattr(tab, "ask_close", lambda: "stop")
    try:
        qtbot.mouseClick(tab.launch.fromGamesButton, Qt.MouseButton.LeftButton)
        note = tab.launch.dataNote
        assert note.text() == f"These filters select 2 games, {2 * N_MOVES} moves."
        combo = tab.launch.form.field_widget("skip_graded")
        assert isinstance(combo, QComboBox)
        assert combo.currentText() == "none"
        combo.setFocus()
        qtbot.keyClick(combo, Qt.Key.Key_Down)  # "mistake"
        assert combo.currentText() == "mistake"
        qtbot.waitUntil(
            lambda: note.text() == f"These filters select 2 games, {2 * N_MOVES - 2} moves.", timeout=3000
        )
        qtbot.keyClick(combo, Qt.Key.Key_Down)  # "inaccuracy"
        qtbot.waitUntil(
            lambda: note.text() == f"These filters select 2 games, {2 * N_MOVES - 3} moves.", timeout=3000
        )
    finally:
        tab.shutdown()


def test_grade_record_grades_each_move_as_grade_move_does(store):
    # The one grading loop of a stored review (the game review's and this filter's), checked move by
    # move against grade_move given the same values, score before the move, board and player.
    from agents.review import grade_record, review_subject

    gid = _human_game(store, 3)
    values, bad = _values(store, gid, {0: 5000.0, 1: 9500.0})
    rec = store.load_game(gid)
    assert review_subject(rec)[0] == "you" and review_subject(rec)[1].all()
    grades = grade_record(rec, values, POINTS)
    assert len(grades) == rec.n_moves
    for i, g in enumerate(grades):
        before = int(rec.scores[i] - rec.rewards[i])
        twin = grade_move(
            values[i], int(rec.moves[i]), index=i, score_before=before, board=rec.layouts[i], sees_death=False
        )
        assert g == dataclasses.replace(twin, player=rec.summary.players[0].label)
    assert [grades[i].grade for i in bad] == [BLUNDER, MISTAKE]
    # a review stopped half-way grades the moves it reached
    assert len(grade_record(rec, values[:5], POINTS)) == 5
