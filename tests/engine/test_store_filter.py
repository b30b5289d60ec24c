"""``GameFilter``: the store's SQL filter against an obviously-correct Python twin over a varied library,
and the keyword form of older call sites against the filter object."""

from __future__ import annotations

import dataclasses
import itertools
import time

import numpy as np
import pytest

from engine import Direction, Game, Rules
from engine.records import GameTrace, play_recorded
from engine.store import HUMAN, GameFilter, GameRecorder, GameStore, GameSummary, Player, StoreError
from engine.store.filters import to_timestamp

DAY = 86_400.0
GREEDY = Player("agent", "greedy")
EXPECTIMAX_EVAL = Player("evaluation", "expectimax")


@pytest.fixture
def store(data_dir):
    with GameStore.open(data_dir) as s:
        yield s


def _trace(seed: int, moves: int) -> GameTrace:
    game = Game(rules=Rules(), seed=seed)
    trace = GameTrace.start(game)
    rng = np.random.default_rng(seed)
    while not game.game_over and trace.n_moves < moves:
        play_recorded(game, rng.choice(game.legal_moves()), trace)
    return trace


def _mixed(store: GameStore, seed: int, players: list[Player], moves: int) -> int:
    """A game whose moves alternate between ``players`` (source ``mixed``), left open as ``playing``."""
    rec = GameRecorder(store, player=players[0], rules=Rules(), seed=seed)
    for i in range(moves):
        legal = rec.game.legal_moves()
        rec.play(next(d for d in Direction if d in legal), player=players[i % len(players)])
    assert rec.game_id is not None
    return rec.game_id


@pytest.fixture
def library(store, tmp_path) -> list[GameSummary]:
    """Games of every source, several agents, statuses, a run, two start days and imported copies."""
    now = time.time()
    run = store.create_run("dqn", {}, Rules(), {"episodes": 1})
    store.record_trace(_trace(1, 40), "human", started=now - 3 * DAY, ended=now - 3 * DAY)
    store.record_trace(_trace(2, 15), "agent", agent="greedy", status="abandoned")
    store.record_trace(_trace(3, 10_000), "evaluation", agent="expectimax", started=now - 3 * DAY)
    store.record_trace(_trace(4, 60), "training", agent="dqn", run_id=run)
    store.record_trace(_trace(5, 200), "agent", agent="random")
    _mixed(store, 6, [HUMAN, GREEDY], 12)
    _mixed(store, 7, [GREEDY, EXPECTIMAX_EVAL], 8)
    exported = store.export_file([1, 3], tmp_path / "two.jsonl")
    store.import_file(exported)
    games = store.list_games()
    assert len(games) == 9
    return games


def _matches(g: GameSummary, f: GameFilter) -> bool:
    """The slow twin of :meth:`GameFilter.sql`: each field read off the summary, one at a time."""
    if f.source == "imported" and g.origin is None:
        return False
    if f.source not in (None, "imported") and g.source != f.source:
        return False
    # a mixed game matches an agent or a kind when any of its players is it
    agents = {g.agent} | ({p.agent for p in g.players} if g.source == "mixed" else set())
    kinds = {g.source} | ({p.kind for p in g.players} if g.source == "mixed" else set())
    if f.agent is not None and f.agent not in agents:
        return False
    if f.played_by is not None and f.played_by not in kinds:
        return False
    checks = [
        f.status is None or g.status == f.status,
        f.run_id is None or g.run_id == f.run_id,
        f.min_score is None or g.score >= f.min_score,
        f.min_max_tile is None or g.max_tile >= f.min_max_tile,
        f.since is None or g.started >= to_timestamp(f.since),
        f.until is None or g.started <= to_timestamp(f.until, end_of_day=True),
    ]
    return all(checks)


def _filters(games: list[GameSummary]) -> list[GameFilter]:
    """Every single-field filter over the values the library holds (and one it does not), plus pairs."""
    scores = sorted({g.score for g in games})
    tiles = sorted({g.max_tile for g in games})
    yesterday = time.strftime("%Y-%m-%d", time.localtime(time.time() - DAY))
    values = {
        "source": ["human", "agent", "evaluation", "training", "mixed", "unknown", "imported"],
        "agent": ["greedy", "expectimax", "dqn", "random", "nobody"],
        "played_by": ["human", "agent", "evaluation", "training"],
        "status": ["playing", "finished", "abandoned"],
        "run_id": [1, 2],
        "min_score": [0, scores[len(scores) // 2], scores[-1], scores[-1] + 1],
        "min_max_tile": [tiles[0], tiles[-1], 2 * tiles[-1]],
        "since": [yesterday, time.time() - 3600],
        "until": [yesterday, "2000-01-01"],
    }
    single = [GameFilter(**{k: v}) for k, vs in values.items() for v in vs]
    pairs = [
        GameFilter(**{a: va, b: vb})
        for a, b in itertools.combinations(values, 2)
        for va, vb in [(values[a][0], values[b][0]), (values[a][-1], values[b][1])]
    ]
    return [GameFilter(), *single, *pairs]


def test_sql_filter_matches_the_python_twin(store, library):
    filters = _filters(library)
    assert len(filters) > 60
    for f in filters:
        want = [g.id for g in library if _matches(g, f)]
        assert [g.id for g in store.list_games(f)] == want, f
        assert store.count_games(f) == len(want), f
    # the library is varied enough that the filters tell games apart
    assert store.count_games(GameFilter(agent="greedy")) == 3  # its own game and two mixed ones
    assert store.count_games(GameFilter(played_by="human")) == 3  # human, human+greedy, imported copy
    assert store.count_games(GameFilter(source="imported")) == 2
    assert store.count_games(GameFilter(run_id=1)) == 1


def test_keywords_are_the_filter_laid_over(store, library):
    f = GameFilter(played_by="agent", min_score=1)
    assert store.list_games(played_by="agent", min_score=1) == store.list_games(f)
    # keywords replace the object's fields, the rest of the object stays
    assert [g.id for g in store.list_games(f, min_score=None)] == [
        g.id for g in store.list_games(GameFilter(played_by="agent"))
    ]
    assert store.count_games(f, played_by="human") == store.count_games(
        GameFilter(played_by="human", min_score=1)
    )
    with pytest.raises(TypeError, match="sorce"):
        store.list_games(sorce="human")
    # limit and offset page through what the filter lets through, newest first
    every = store.list_games(f)
    assert store.list_games(f, limit=2, offset=1) == every[1:3]


def test_filter_object():
    assert GameFilter().is_empty() and GameFilter().sql() == ("", [])
    f = GameFilter(source="human", min_score=100)
    assert not f.is_empty()
    assert f.sql() == (" WHERE source = ? AND score >= ?", ["human", 100])
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.source = "agent"  # type: ignore[misc]
    assert hash(f) == hash(GameFilter(source="human", min_score=100))
    with pytest.raises(StoreError, match="game source must be one of"):
        GameFilter(source="robots").sql()
    with pytest.raises(StoreError, match="not a date"):
        GameFilter(since="yesterday-ish").sql()
