"""The arena: results independent of the number of workers, games stored, the max-tile table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.arena import EvalResult, evaluate, game_seeds, play_game
from agents.baselines import GreedyAgent
from agents.spec import AgentSpec
from engine import Rules
from engine.store import GameStore


def test_two_workers_give_the_same_results_as_one() -> None:
    spec = AgentSpec("random")
    one = evaluate(spec, games=6, seed=42, workers=1)
    two = evaluate(spec, games=6, seed=42, workers=2)
    assert two.workers == 2
    for field in ("scores", "moves", "max_tiles"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field))
    other = evaluate(spec, games=6, seed=43, workers=1)
    assert not np.array_equal(one.scores, other.scores)


def test_games_are_stored_as_evaluation_from_the_parent(data_dir: Path) -> None:
    seen = []
    with GameStore.open(data_dir) as store:
        result = evaluate(
            AgentSpec("greedy"),
            games=3,
            seed=1,
            workers=1,
            store=store,
            progress=lambda done, total, g: seen.append((done, total, g.score)),
        )
        games = store.list_games(source="evaluation")
        assert sorted(g.id for g in games) == sorted(result.game_ids)
        by_id = {g.id: g for g in games}
        assert [by_id[i].score for i in result.game_ids] == result.scores.tolist()
        assert all(g.agent == "greedy" for g in games)
        record = store.load_game(result.game_ids[0])
        assert record.n_moves == result.moves[0]
    assert [s[:2] for s in seen] == [(1, 3), (2, 3), (3, 3)]


def test_a_game_depends_only_on_seed_and_index() -> None:
    a = play_game(GreedyAgent(), Rules(), seed=5, index=2)
    b = play_game(GreedyAgent(), Rules(), seed=5, index=2)
    assert (a.score, a.moves, a.max_tile) == (b.score, b.moves, b.max_tile)
    s1, r1 = game_seeds(5, 2)
    s2, r2 = game_seeds(5, 3)
    assert s1 != s2 and s1 >= 0 and r1.integers(1 << 30) != r2.integers(1 << 30)


def test_summary_figures_and_tile_table() -> None:
    r = EvalResult(
        label="x",
        agent="x",
        checkpoint=None,
        config={},
        rules=Rules(),
        seed=0,
        workers=1,
        scores=np.array([100, 300, 200, 1000]),
        moves=np.array([10, 30, 20, 40]),
        max_tiles=np.array([32, 64, 64, 128]),
        seconds=np.array([0.1, 0.3, 0.2, 0.4]),
        wall_seconds=1.0,
    )
    assert r.mean_score == 400 and r.median_score == 250 and r.max_score == 1000
    assert r.moves_per_game == 25 and r.seconds_per_move == pytest.approx(0.01)
    at_least = r.tile_at_least()
    assert at_least[32] == 1.0 and at_least[64] == 0.75 and at_least[128] == 0.25 and at_least[256] == 0.0
    assert list(at_least) == [2**k for k in range(5, 17)]
    assert r.tile_exactly() == {32: 0.25, 64: 0.5, 128: 0.25}
    d = r.to_dict()
    assert d["max_tile_at_least"]["64"] == 0.75 and d["games"] == 4


def test_other_board_sizes_and_checkpoints(tmp_path: Path) -> None:
    path = GreedyAgent(rules=Rules(rows=3, cols=3)).save(tmp_path / "g.npz")
    result = evaluate(AgentSpec(checkpoint=str(path)), games=2, seed=0)
    assert result.rules == Rules(rows=3, cols=3) and result.agent == "greedy"
    assert result.max_tiles.max() <= 1024
    with pytest.raises(ValueError, match="trained on 3x3"):
        evaluate(AgentSpec(checkpoint=str(path), rules=Rules()), games=1, seed=0)
    with pytest.raises(ValueError, match="unknown agent"):
        evaluate(AgentSpec("nope"), games=1, seed=0)
