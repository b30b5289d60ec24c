"""Your progress (issues 19, 32): the service on hand-made games with hand-made stored reviews (figures
from a slow twin of the documented accuracy), your moves only in a game shared with an agent, the game
being played counted, no evaluation game in "mine", the Progress tab (plots, the review button, opening a game in Replay), and the
``progress`` command's ``--json`` against the service."""

from __future__ import annotations

import datetime as dt
import json
import math

import numpy as np
import pytest

from agents.review import FLOOR, POWER, SPAN
from agents.spec import AgentSpec
from engine import Direction, Game
from engine.records import GameTrace, play_recorded
from engine.store import HUMAN, GameRecorder, GameStore, Player
from studio.cli import main
from studio.services.progress import PHASES, phase_of, progress, rolling_mean
from studio.services.review import Reviewer, default_reviewer

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


# Values in action order (up, left, down, right), in points (a "points" reviewer): loss = best - played;
# Δ = 100 * loss / (score before + best + FLOOR); see agents.review. A move with the only finite value
# is forced (left out of the accuracy and of the graded moves).
A_BOARD = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 2, 0, 0], [512, 512, 0, 0]]  # left merges 1024
A_MOVES = [L, R, L, R]
A_VALUES = [
    [0, 1000, 0, 0],  # move 0, phase 512: left is best -> best
    [1000, 0, 0, 0],  # move 1, phase 1024: right, up was worth 1000 -> blunder (1000 of ~2,500)
    [1000, 950, 0, 0],  # move 2, phase 1024: left loses 50 of ~2,500 -> inaccuracy
    [NAN, NAN, NAN, 500],  # move 3, phase 1024: forced
]
A_OTHER = [[0, 1000, 0, 0], [0, 0, 0, 1000], [0, 1000, 0, 0], [0, 0, 0, 1000]]  # every move best
B_BOARD = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [256, 2, 0, 0]]  # highest tile 256 all along
B_MOVES = [R, L, R]
B_VALUES = [
    [5, 5, 5, 10],  # right best -> best
    [100, 0, 0, 0],  # left, up worth 100 -> blunder (100 of ~600)
    [100, 0, 0, 0],  # right, up worth 100 -> blunder
]
SMALL = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [4, 2, 0, 0]]
AGENT = Player("agent", "greedy")


def twin_accuracy(rec, values, counted=None) -> float:
    """The documented accuracy, worked out the slow way: 100 * Π(1 - Δ/100) ** (POWER * SPAN / max(n,
    SPAN)) over the n graded moves (not forced, counted), Δ the share of the expected final score given up."""
    kept = []
    for i, row in enumerate(values):
        legal = [v for v in row if not math.isnan(v)]
        if len(legal) <= 1 or (counted is not None and not counted[i]):
            continue
        before = int(rec.scores[i] - rec.rewards[i])
        top, mine = max(legal), row[int(rec.moves[i])]
        delta = 100 * (top - mine) / (before + top + FLOOR)
        kept.append(1 - delta / 100)
    return 100 * math.prod(kept) ** (POWER * SPAN / max(len(kept), SPAN)) if kept else 100.0


def mixed_game(store: GameStore, started: float) -> int:
    """You 3 moves, greedy 3 moves under Watch, you 2 moves again: one game, source mixed."""
    rec = GameRecorder(store, player=HUMAN, seed=11)
    for k in range(8):
        who = AGENT if 3 <= k < 6 else HUMAN
        rec.play(next(d for d in (L, D, R, U) if rec.game.legal_mask()[d]), who)
    rec.close()
    with store._tx(write=True) as con:  # a fixed start time, so the fixture's order is known
        con.execute("UPDATE games SET started = ? WHERE id = ?", (started, rec.game_id))
    return int(rec.game_id)


@pytest.fixture
def games(data_dir):
    """Ids of: A (reviewed by FAST, and by the default reviewer), B (reviewed), C (no review), D (a
    third reviewed), E (agent's), F (no move), G (still being played), M (you + greedy + you,
    reviewed), X (an evaluation game), in the data dir's store."""
    with GameStore.open(data_dir) as store:
        a = record(store, A_BOARD, A_MOVES, day(1))
        b = record(store, B_BOARD, B_MOVES, day(2))
        c = record(store, SMALL, [R, L], day(3))
        d = record(store, SMALL, [R, L, R], day(4))
        e = record(store, SMALL, [R], day(5), source="agent", agent="greedy")
        f = record(store, SMALL, [], day(6))
        g = record(store, SMALL, [R], day(7), status="playing")
        m = mixed_game(store, day(8))
        x = record(store, SMALL, [R, L], day(9), source="evaluation", agent="greedy")
        store_review(store, a, FAST.key(), "hand A", A_VALUES)
        store_review(store, a, default_reviewer(store).key(), "hand B", A_OTHER)
        store_review(store, b, FAST.key(), "hand A", B_VALUES)
        store_review(store, d, FAST.key(), "hand A", [[0, 0, 0, 1]])  # 1 of 3 moves: unfinished
        mixed = store.load_game(m)
        # the person's moves are best; the agent's moves give up everything (they are not the person's)
        rows = [[0.0] * 4 for _ in range(8)]
        for k in range(8):
            played = int(mixed.moves[k])
            rows[k] = [NAN if not Game(board=mixed.layouts[k]).legal_mask()[j] else 0.0 for j in range(4)]
            best = (
                next(j for j in range(4) if not math.isnan(rows[k][j]) and j != played)
                if 3 <= k < 6
                else played
            )
            rows[k][best] = 1000.0
        store_review(store, m, FAST.key(), "hand A", rows)
    return {"A": a, "B": b, "C": c, "D": d, "E": e, "F": f, "G": g, "M": m, "X": x}


# ------------------------------------------------------------------------------------------ service
def test_phases_by_highest_tile():
    tiles = (2, 256, 511, 512, 1023, 1024, 2048, 4096, 65536)
    assert [phase_of(t) for t in tiles] == [0, 0, 0, 1, 1, 2, 3, 4, 4]
    assert PHASES == ("< 512", "512", "1024", "2048", "4096+")


def test_progress_by_a_named_reviewer(data_dir, games):
    with GameStore.open(data_dir) as store:
        out = progress(store, source="human", reviewer=FAST)
        summaries = {g: store.get_game(i) for g, i in games.items()}
        recs = {k: store.load_game(games[k]) for k in "AB"}
    # oldest first; the agent's game and the empty one are left out, the one being played is in
    assert [g.game_id for g in out.games] == [games[k] for k in "ABCDG"]
    a, b, c, d, g = out.games
    assert a.accuracy == pytest.approx(twin_accuracy(recs["A"], A_VALUES))
    assert a.reviewer == FAST.label
    assert a.blunders == (0, 0, 1, 0, 0) and a.graded == (0, 1, 2, 0, 0)  # 1 move at 512, 2 at 1024
    assert a.shares == [None, 0.0, 0.5, None, None]
    assert b.accuracy == pytest.approx(twin_accuracy(recs["B"], B_VALUES))
    assert b.blunders == (2, 0, 0, 0, 0) and b.graded == (3, 0, 0, 0, 0)
    assert c.accuracy is None and d.accuracy is None  # D's review is unfinished
    assert g.status == "playing" and g.moves == 1 and g.accuracy is None
    assert c.graded == (0,) * 5
    assert out.unreviewed == [games[k] for k in "CDG"]
    assert out.mean_accuracy == pytest.approx((a.accuracy + b.accuracy) / 2)
    assert out.blunders == (2, 0, 1, 0, 0) and out.graded == (3, 1, 2, 0, 0)
    assert out.shares == [2 / 3, 0.0, 0.5, None, None]
    assert out.mean_score == pytest.approx(np.mean([summaries[k].score for k in "ABCDG"]))
    assert out.best_tile == 1024 == summaries["A"].max_tile
    assert a.score == summaries["A"].score and a.moves == 4 and a.max_tile == 1024
    assert a.date == "2024-05-01 12:00"
    assert out.summary().endswith(
        f"mean accuracy {out.mean_accuracy:.1f} % · 3 unreviewed · reviewer {FAST.label}"
    )


def test_mine_counts_your_moves_of_every_game_you_played_in_and_no_evaluation(data_dir, games):
    with GameStore.open(data_dir) as store:
        mine = progress(store, reviewer=FAST)  # source "mine" is the default
        rec = store.load_game(games["M"])
    assert [g.game_id for g in mine.games] == [games[k] for k in "ABCDGM"]  # no E (agent), no X
    m = mine.games[-1]
    assert m.source == "mixed" and m.moves == 5  # your 5 of its 8 moves
    # the agent's three moves gave up everything; none of them counts: your moves were all best
    assert m.accuracy == 100.0 and m.blunders == (0,) * 5 and sum(m.graded) <= 5
    mask = rec.moves_by(kind="human")
    assert mask.sum() == 5 and not mask[3:6].any()
    assert "your moves" in mine.summary()


def test_the_default_reviewer_and_filters(data_dir, games):
    with GameStore.open(data_dir) as store:
        default = progress(store)  # no reviewer: the default one (here expectimax, the fallback)
        since = progress(store, since="2024-05-02", reviewer=FAST)
        agents = progress(store, source="agent")
        every = progress(store, source="all")
        last = progress(store, source="all", limit=2)
        label = default_reviewer(store).label
        with pytest.raises(ValueError, match="not a date"):
            progress(store, since="May")
        with pytest.raises(ValueError, match="source must be one of"):
            progress(store, source="nope")
    a = default.games[0]
    assert a.accuracy == 100.0 and a.reviewer == label and a.blunders == (0,) * 5
    assert default.reviewer == label and default.unreviewed == [games[k] for k in "BCDGM"]
    assert [g.game_id for g in since.games] == [games[k] for k in "BCDGM"]
    assert [g.game_id for g in agents.games] == [games["E"]] and agents.unreviewed == [games["E"]]
    assert [g.game_id for g in every.games] == [games[k] for k in "ABCDEGMX"]
    assert [g.game_id for g in last.games] == [games["M"], games["X"]]  # the newest two, oldest first


def test_empty_selection_and_rolling_mean(data_dir):
    with GameStore.open(data_dir) as store:
        out = progress(store)
    assert out.games == [] and out.mean_score is None and out.mean_accuracy is None
    assert (
        out.summary() == "No games of yours yet: play one in the Play tab" and out.to_json()["n_games"] == 0
    )
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
    assert main(["--data-dir", str(data_dir), "progress", "--reviewer", "expectimax", "--depth", "1"]) == 0
    text = capsys.readouterr().out
    assert "1024: 50.0 % (1/2)" in text and "3 unreviewed" in text and "mixed" in text
    assert "python main.py review --source human" in text and "python main.py review --source mixed" in text
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
    assert tab.sourceCombo.currentData() == "mine" and tab.reviewerCombo.currentText() == "default"
    assert [g.game_id for g in tab.data.games] == [games[k] for k in "ABCDGM"]
    assert tab.points("score") == 6 and tab.points("tile") == 6
    assert tab.points("accuracy") == 1  # A alone has a review by the default reviewer
    text = tab.summaryLabel.text()
    assert (
        "6 games" in text
        and "your moves" in text
        and "5 unreviewed" in text
        and "reviewer expectimax" in text
    )
    tab.reviewerCombo.setCurrentIndex(tab.reviewerCombo.findText("expectimax d1"))
    assert tab.wait_loaded() and tab.points("accuracy") == 3  # A, B and the shared game M
    assert list(tab.bars.opts["height"])[2] == pytest.approx(50.0)  # A's 1 blunder of 2 at 1024
    assert tab.reviewButton.text() == "Review 3 unreviewed games" and tab.reviewButton.isEnabled()
    assert tab.sourceCombo.findData("all") == -1  # "all" never mixes arena games into your progress
    tab.sourceCombo.setCurrentIndex(tab.sourceCombo.findData("evaluation"))
    assert tab.wait_loaded() and [g.game_id for g in tab.data.games] == [games["X"]]
    tab.sourceCombo.setCurrentIndex(tab.sourceCombo.findData("mine"))
    assert tab.wait_loaded()
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
    assert "Reviewed 3 games" in said
    assert tab.data.unreviewed == []
    assert tab.points("accuracy") == 6
    assert "0 unreviewed" in tab.summaryLabel.text()
    assert not tab.reviewButton.isEnabled() and tab.reviewButton.text() == "Every game is reviewed"
    with GameStore.open(data_dir) as store:
        for k in "CDG":
            info = store.get_review(games[k], FAST.key())
            assert info is not None and info.reviewed == store.get_game(games[k]).n_moves
        rec = store.load_game(games["A"])
    # the hand-made reviews were kept: A reads as before
    assert tab.data.games[0].accuracy == pytest.approx(twin_accuracy(rec, A_VALUES))


def test_tab_review_can_be_cancelled(qtbot, data_dir, games, window):
    tab = _progress_tab(window)
    tab.reviewerCombo.setCurrentIndex(tab.reviewerCombo.findText("expectimax d1"))
    assert tab.wait_loaded()
    assert tab.start_review()
    tab.cancel_review()
    assert tab.wait_review()
    assert not tab.reviewing and tab.reviewButton.isEnabled() == bool(tab.data.unreviewed)
