"""``python main.py replay``: frames match the logged game; --verify catches a doctored record."""

from __future__ import annotations

import argparse
import dataclasses
import io

import pytest

from engine import Game
from engine.store import GameRecorder, GameStore
from studio.cli import main
from studio.commands import replay


@pytest.fixture
def logged_game(data_dir):
    """A seeded 3x3 game of 12 moves (cycling through the legal moves), logged as a person's."""
    with GameStore.open(data_dir) as store, GameRecorder(store, Game(3, 3, seed=11)) as rec:
        for i in range(12):
            legal = rec.game.legal_moves()
            rec.play(legal[i % len(legal)])
        game_id, final_score, final_board = rec.game_id, rec.game.score, rec.game.board
    return game_id, final_score, final_board


def test_replay_prints_every_move_and_ends_on_the_final_board(logged_game, data_dir, capsys):
    game_id, final_score, final_board = logged_game
    assert main(["--data-dir", str(data_dir), "replay", str(game_id), "--speed", "0"]) == 0
    out = capsys.readouterr().out
    frames = [f for f in out.split("\n\n") if f.strip()]
    assert len(frames) == 13  # the start + 12 moves
    assert frames[0].startswith(f"game {game_id} · start")
    assert "move 12/12 by you: " in frames[-1] and f"score {final_score}" in frames[-1]
    last_rows = frames[-1].splitlines()[1:]
    shown = [[0 if t == "." else int(t) for t in row.replace("*", " ").split()] for row in last_rows]
    assert shown == final_board.tolist()


def test_step_mode_stops_on_q(logged_game, data_dir):
    game_id, *_ = logged_game
    args = replay_args(data_dir, game_id, step=True)
    out = io.StringIO()
    assert replay.run(args, out=out, keys=io.StringIO("\n\nq\n")) == 0
    assert out.getvalue().count("move ") == 2  # two Enters, then q


def test_verify_accepts_the_real_record_and_names_the_doctored_move(logged_game, data_dir, capsys):
    game_id, *_ = logged_game
    assert main(["--data-dir", str(data_dir), "replay", str(game_id), "--verify"]) == 0
    assert "all 12 moves follow the rules" in capsys.readouterr().out
    with GameStore.open(data_dir) as store:
        rec = store.load_game(game_id)
    rewards = rec.rewards.copy()
    rewards[5] += 2
    scores = rec.scores.copy()
    scores[5:] += 2
    assert replay.verify(dataclasses.replace(rec, rewards=rewards, scores=scores)).startswith(
        "move 5: logged reward"
    )
    moves = rec.moves.copy()
    moves[3] = (moves[3] + 1) % 4
    problem = replay.verify(dataclasses.replace(rec, moves=moves))
    assert problem is not None and problem.startswith("move 3")
    spawns = rec.spawns.copy()
    spawns[7, 0, 2] = 4 if spawns[7, 0, 2] == 2 else 2  # the logged spawn no longer matches the next board
    assert replay.verify(dataclasses.replace(rec, spawns=spawns)) == (
        "move 7: the logged board after it differs from the rules' result"
    )


def test_bad_game_id_is_one_line(data_dir, capsys):
    assert main(["--data-dir", str(data_dir), "replay", "999"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "999" in err


def replay_args(data_dir, game_id, **kw):
    ns = dict(data_dir=str(data_dir), id=game_id, speed=None, step=False, start=0, stop=None, verify=False)
    ns.update(kw)
    return argparse.Namespace(**ns)
