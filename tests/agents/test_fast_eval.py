"""agents.fast_eval: the jitted games in chunks are the games of one call, and of ``agent.act``; a stop
between chunks keeps the finished games."""

from __future__ import annotations

import numpy as np
import pytest

import agents.fast_eval as fe
from agents.spec import AgentSpec
from tests.agents.act_games import act_games


def test_chunks_play_the_same_games_as_act(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = AgentSpec("expectimax", {"depth": 1})
    whole = spec.build().play_fast(6, seed=40)  # one call
    monkeypatch.setattr(fe, "CHUNK_SECONDS", 0.0)  # every chunk the smallest: 4 games, then 2
    seen: list[tuple[int, int]] = []
    chunked = fe.evaluate_fast(spec, 6, seed=40, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(4, 6), (6, 6)]
    assert chunked.result.scores.tolist() == whole["score"].tolist()
    assert chunked.result.max_tiles.tolist() == whole["max_tile"].tolist()
    scores, tiles = act_games(spec.build(), 6, 40)
    assert chunked.result.scores.tolist() == scores and chunked.result.max_tiles.tolist() == tiles
    r = chunked.result
    assert r.complete and r.games == 6 and r.seconds.sum() == pytest.approx(r.wall_seconds)
    assert r.config["depth"] == 1 and r.label == "expectimax depth=1"


def test_a_stop_keeps_the_finished_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fe, "CHUNK_SECONDS", 0.0)
    asked = iter([False, True])
    out = fe.evaluate_fast(AgentSpec("expectimax", {"depth": 1}), 10, seed=1, should_stop=lambda: next(asked))
    assert out.result.cancelled and out.result.games == 4 and out.result.planned == 10
    assert np.all(out.result.moves > 0)


@pytest.mark.parametrize(
    ("spec", "games", "threads", "message"),
    [
        (AgentSpec("greedy"), 1, 1, "greedy has no jitted game loop"),
        (AgentSpec("expectimax"), 1, 2, "expectimax's jitted loop plays on one thread"),
        (AgentSpec("expectimax"), 0, 1, "games must be between 1 and"),
        (AgentSpec("expectimax"), 1, 0, "threads must be at least 1"),
    ],
)
def test_refusals_are_one_line(spec: AgentSpec, games: int, threads: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fe.evaluate_fast(spec, games, seed=0, threads=threads)
