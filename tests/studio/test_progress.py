"""Your progress (issue 19): the service on hand-made games with hand-made stored reviews (figures worked
out by hand), the Progress tab (plots, the review button, opening a game in Replay), and the
``progress`` command's ``--json`` against the service."""

from __future__ import annotations

import datetime as dt
import json
import math

import numpy as np
import pytest

from agents.spec import AgentSpec
from engine import Direction, Game
from engine.records import GameTrace, play_recorded
from engine.store import GameStore
from studio.cli import main
from studio.services.progress import PHASES, phase_of, progress, rolling_mean
from studio.services.review import Reviewer

pytest_plugins = ("tests.studio.gui_fixtures",)

U, L, D, R = (int(d) for d in (Direction.UP, Direction.LEFT, Direction.DOWN, Direction.RIGHT))
NAN = math.nan
#: The reviewer whose (hand-made) reviews the tests prefer; a real one, so the tab can review with it.
FAST = Reviewer(AgentSpec(name="expectimax"), 1)
POINTS = {"value_kind": "points"}


def day(d: int) -> float:
    return dt.datetime(2024, 5, d, 12, 0).timestamp()


def record(store: GameStore, board: list[list[int]], moves: list[int], started: float, **kw) -> int:
    """A game from ``board`` with ``moves`` (each must be legal), seeded spawns."""
    game = Game(seed=7, board=np.array(board, dtype=np.int64))
    trace = GameTrace.start(game)
    for m in moves:
        assert game.legal_mask()[m], (board, moves)
        play_recorded(game, Direction(m), trace)
    trace.final_board = game.board
    return store.record_trace(trace, source=kw.pop("source", "human"), started=started, **kw)


def store_review(store: GameStore, game_id: int, key: str, label: str, rows: list[list[float]]) -> None:
    info = store.open_review(game_id, key, {**POINTS, "label": label, "key": key})
    store.add_review_values(info.id, 0, np.array(rows, dtype=np.float64))


# Values in action order (up, left, down, right); a "points" reviewer: loss = best - played, relative =
# loss / best; best (loss 0) scores 100, relative 5 % (50 pts of 1000, over the 20-point allowance) is
# a mistake scoring 100 * (1 - 0.05 / 0.10) = 50, relative 100 % a blunder scoring 0; a move with the
# only finite value is forced (left out of accuracy and of the graded moves).
A_BOARD = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 2, 0, 0], [512, 512, 0, 0]]  # left merges 1024
A_MOVES = [L, R, L, R]
A_VALUES = [
    [0, 1000, 0, 0],  # move 0, phase 512: left is best -> best (100)
    [1000, 0, 0, 0],  # move 1, phase 1024: right, up was worth 1000 -> blunder (0)
    [1000, 950, 0, 0],  # move 2, phase 1024: left loses 50 of 1000 -> mistake (50)
    [NAN, NAN, NAN, 500],  # move 3, phase 1024: forced
]
A_OTHER = [[0, 1000, 0, 0], [0, 0, 0, 1000], [0, 1000, 0, 0], [0, 0, 0, 1000]]  # every move best
B_BOARD = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [256, 2, 0, 0]]  # highest tile 256 all along
B_MOVES = [R, L, R]
B_VALUES = [
    [5, 5, 5, 10],  # right best -> best (100)
    [100, 0, 0, 0],  # left, up worth 100 -> blunder (0)
    [100, 0, 0, 0],  # right, up worth 100 -> blunder (0)
]
SMALL = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [4, 2, 0, 0]]


@pytest.fixture
def games(data_dir):
    """Ids of: A (reviewed twice), B (reviewed), C (no review), D (a third reviewed), E (agent's),
    F (no move), G (still being played), in the data dir's store."""
    with GameStore.open(data_dir) as store:
        a = record(store, A_BOARD, A_MOVES, day(1))
        b = record(store, B_BOARD, B_MOVES, day(2))
        c = record(store, SMALL, [R, L], day(3))
        d = record(store, SMALL, [R, L, R], day(4))
        e = record(store, SMALL, [R], day(5), source="agent", agent="greedy")
        f = record(store, SMALL, [], day(6))
        g = record(store, SMALL, [R], day(7), status="playing")
        store_review(store, a, FAST.key(), "hand A", A_VALUES)
        store_review(store, a, "other@d1:0", "hand B", A_OTHER)  # the newer review of A
        store_review(store, b, FAST.key(), "hand A", B_VALUES)
        store_review(store, d, FAST.key(), "hand A", [[0, 0, 0, 1]])  # 1 of 3 moves: unfinished
    return {"A": a, "B": b, "C": c, "D": d, "E": e, "F": f, "G": g}


# ------------------------------------------------------------------------------------------ service
def test_phases_by_highest_tile():
    tiles = (2, 256, 511, 512, 1023, 1024, 2048, 4096, 65536)
    assert [phase_of(t) for t in tiles] == [0, 0, 0, 1, 1, 2, 3, 4, 4]
    assert PHASES == ("< 512", "512", "1024", "2048", "4096+")


def test_progress_by_the_preferred_reviewer(data_dir, games):
    with GameStore.open(data_dir) as store:
        out = progress(store, source="human", reviewer=FAST)
        summaries = {g: store.get_game(i) for g, i in games.items()}
    # oldest first; the agent's game, the empty one and the one being played are left out
    assert [g.game_id for g in out.games] == [games[k] for k in "ABCD"]
    a, b, c, d = out.games
    assert a.accuracy == pytest.approx(50.0)  # (100 + 0 + 50) / 3, the forced move left out
    assert a.reviewer == "hand A"
    assert a.blunders == (0, 0, 1, 0, 0) and a.graded == (0, 1, 2, 0, 0)  # 1 move at 512, 2 at 1024
    assert a.shares == [None, 0.0, 0.5, None, None]
    assert b.accuracy == pytest.approx(100 / 3)
    assert b.blunders == (2, 0, 0, 0, 0) and b.graded == (3, 0, 0, 0, 0)
    assert c.accuracy is None and d.accuracy is None  # D's review is unfinished
    assert c.graded == (0,) * 5
    assert out.unreviewed == [games["C"], games["D"]]
    assert out.mean_accuracy == pytest.approx((50 + 100 / 3) / 2)
    assert out.blunders == (2, 0, 1, 0, 0) and out.graded == (3, 1, 2, 0, 0)
    assert out.shares == [2 / 3, 0.0, 0.5, None, None]
    assert out.mean_score == pytest.approx(np.mean([summaries[k].score for k in "ABCD"]))
    assert out.best_tile == 1024 == summaries["A"].max_tile
    assert a.score == summaries["A"].score and a.moves == 4 and a.max_tile == 1024
    assert a.date == "2024-05-01 12:00"
    assert out.summary().endswith("mean accuracy 41.7 % · 2 unreviewed")


def test_progress_by_the_newest_review_and_filters(data_dir, games):
    with GameStore.open(data_dir) as store:
        newest = progress(store)  # no reviewer: each game's newest complete review
        since = progress(store, since="2024-05-02", reviewer=FAST)
        agents = progress(store, source="agent")
        every = progress(store, source="all")
        last = progress(store, source="all", limit=2)
        with pytest.raises(ValueError, match="not a date"):
            progress(store, since="May")
    a = newest.games[0]
    assert a.accuracy == 100.0 and a.reviewer == "hand B" and a.blunders == (0,) * 5
    assert newest.shares == [2 / 3, 0.0, 0.0, None, None]  # B's 2 of 3; A's 0 of 1 and 0 of 3
    assert [g.game_id for g in since.games] == [games[k] for k in "BCD"]
    assert [g.game_id for g in agents.games] == [games["E"]] and agents.unreviewed == [games["E"]]
    assert [g.game_id for g in every.games] == [games[k] for k in "ABCDE"]
    assert [g.game_id for g in last.games] == [games["D"], games["E"]]  # the newest two, oldest first


def test_empty_selection_and_rolling_mean(data_dir):
    with GameStore.open(data_dir) as store:
        out = progress(store)
    assert out.games == [] and out.mean_score is None and out.mean_accuracy is None
    assert out.summary() == "No games yet" and out.to_json()["n_games"] == 0
    assert rolling_mean([1.0, 3.0, None, 5.0, 7.0], window=2) == [1.0, 2.0, 2.0, 4.0, 6.0]
    assert math.isnan(rolling_mean([None, 1.0])[0])


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_json_is_the_service_output(data_dir, games, capsys):
    for argv, kwargs in (
        ([], {}),
        (["--reviewer", "expectimax", "--depth", "1"], {"reviewer": FAST}),
        (["--source", "all", "--since", "2024-05-02"], {"source": "all", "since": "2024-05-02"}),
    ):
        assert main(["--data-dir", str(data_dir), "progress", "--json", *argv]) == 0
        printed = json.loads(capsys.readouterr().out)
        with GameStore.open(data_dir) as store:
            expected = progress(store, **kwargs).to_json()
        assert printed == json.loads(json.dumps(expected))
    assert printed["blunder_share"]["< 512"] == pytest.approx(2 / 3, abs=1e-4)
    assert main(["--data-dir", str(data_dir), "progress", "--reviewer", "expectimax", "--depth", "1"]) == 0
    text = capsys.readouterr().out
    assert "50.0 %" in text and "1024: 50.0 % (1/2)" in text and "2 unreviewed" in text
    assert "python main.py review --source human" in text
    assert main(["--data-dir", str(data_dir), "progress", "--since", "May"]) == 2
    assert "not a date" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- tab
def _progress_tab(window):
    window.show_tab("Progress")
    tab = window.tab("Progress")
    assert tab.wait_loaded()
    return tab


def test_tab_plots_the_games(qtbot, data_dir, games, window):
    tab = _progress_tab(window)
    assert [g.game_id for g in tab.data.games] == [games[k] for k in "ABCD"]
    assert tab.points("score") == 4 and tab.points("tile") == 4
    assert tab.points("accuracy") == 2  # A and B are reviewed
    assert list(tab.bars.opts["height"])[:2] == pytest.approx([200 / 3, 0.0])  # newest reviews
    assert "4 games" in tab.summaryLabel.text() and "2 unreviewed" in tab.summaryLabel.text()
    assert tab.reviewButton.text() == "Review 2 unreviewed games" and tab.reviewButton.isEnabled()
    tab.sourceCombo.setCurrentIndex(tab.sourceCombo.findData("all"))
    assert tab.wait_loaded() and tab.points("score") == 5
    # a click on a game's point opens it in Replay
    dots = tab.series["score"][0]
    first = dots.points()[0]
    dots.sigClicked.emit(dots, [first], None)
    assert window.tabs.currentWidget() is window.replay
    assert window.replay.record is not None and window.replay.record.id == games["A"]


def test_tab_reviews_the_unreviewed_games(qtbot, data_dir, games, window):
    tab = _progress_tab(window)
    tab.reviewerCombo.setCurrentIndex(tab.reviewerCombo.findText("expectimax d1"))
    assert tab.wait_loaded()
    said: list[str] = []
    tab.status.connect(said.append)
    assert tab.start_review()
    assert tab.wait_review()
    assert "Reviewed 2 games" in said
    assert tab.data.unreviewed == []
    assert tab.points("accuracy") == 4
    assert "0 unreviewed" in tab.summaryLabel.text()
    assert not tab.reviewButton.isEnabled() and tab.reviewButton.text() == "Every game is reviewed"
    with GameStore.open(data_dir) as store:
        for k in "CD":
            info = store.get_review(games[k], FAST.key())
            assert info is not None and info.reviewed == store.get_game(games[k]).n_moves
    # the hand-made reviews were kept: A and B read as before
    assert tab.data.games[0].accuracy == pytest.approx(50.0)


def test_tab_review_can_be_cancelled(qtbot, data_dir, games, window):
    tab = _progress_tab(window)
    tab.reviewerCombo.setCurrentIndex(tab.reviewerCombo.findText("expectimax d1"))
    assert tab.wait_loaded()
    assert tab.start_review()
    tab.cancel_review()
    assert tab.wait_review()
    assert not tab.reviewing and tab.reviewButton.isEnabled() == bool(tab.data.unreviewed)
