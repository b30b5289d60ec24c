"""The arena: results independent of the number of workers, games stored, the max-tile table."""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

import numpy as np
import pytest

from agents.arena import (
    EtaModel,
    EvalResult,
    WorkerError,
    evaluate,
    game_seeds,
    mean_ci95,
    mean_ci_text,
    play_game,
    reached_at_least,
    tile_thresholds,
)
from agents.baselines import GreedyAgent, RandomAgent
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


class BuildsOnlyInTheParent(RandomAgent):
    """Built fine here, refused in a worker process (a file gone between the two, say)."""

    name = "test_parent_only"

    def __init__(self, *args, **kwargs) -> None:
        if mp.parent_process() is not None:
            raise RuntimeError("no agent in a worker")
        super().__init__(*args, **kwargs)


class DiesInTheWorker(RandomAgent):
    """A worker process that dies in its first game (killed, out of memory)."""

    name = "test_dies"

    def act(self, game):
        if mp.parent_process() is not None and game.moves >= 3:
            os._exit(3)
        return super().act(game)


@pytest.mark.parametrize(
    "cls, message",
    [
        (
            BuildsOnlyInTheParent,
            "a worker process could not build the agent: RuntimeError: no agent in a worker",
        ),
        (DiesInTheWorker, "a worker process ended in the middle of its games"),
    ],
)
def test_a_worker_that_fails_is_an_error_not_a_wait_forever(cls, message) -> None:
    # multiprocessing.Pool restarted a failing initialiser forever and lost a dead worker's game,
    # so evaluate() waited for ever; now it says why, at once
    spec = AgentSpec(cls.name, target=f"{__name__}:{cls.__name__}")
    with pytest.raises(WorkerError, match=message):
        evaluate(spec, games=8, seed=1, workers=2)


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
    r = _result(
        [100, 300, 200, 1000], [32, 64, 64, 128], moves=[10, 30, 20, 40], seconds=[0.1, 0.3, 0.2, 0.4]
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


def test_mean_ci95_and_median_by_hand() -> None:
    # scores 100, 200, 300, 400, 1000: mean 400, sample variance (9+4+1+0+36)*1e4/4 = 125,000,
    # s = 353.553..., half-width 1.96 * s / sqrt(5) = 309.903...
    mean, half = mean_ci95([100, 200, 300, 400, 1000])
    assert mean == 400.0 and half == pytest.approx(309.9032, abs=1e-3)
    assert mean_ci_text(mean, half) == "400 ± 310"
    assert mean_ci_text(12345.4, 678.4) == "12,345 ± 678"
    assert mean_ci95([5]) == (5.0, None) and mean_ci_text(5.0, None) == "5"
    assert mean_ci_text(*mean_ci95([])) == "-"
    r = _result([100, 200, 300, 400, 1000], [32, 64, 64, 128, 256])
    assert r.median_score == 300 and r.mean_text == "400 ± 310"
    assert r.score_ci95 == pytest.approx(309.9032, abs=1e-3) and r.score_std == pytest.approx(
        353.5534, abs=1e-3
    )
    d = r.to_dict()
    assert d["mean_score_ci95"] == pytest.approx(309.9032, abs=1e-3) and d["median_score"] == 300


def test_reached_at_least_counts_every_game_at_or_above() -> None:
    tiles = [64, 128, 128, 256, 1024, 2048, 2048, 4096]
    got = reached_at_least(tiles, (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192))
    assert got == {
        32: 1.0,
        64: 1.0,
        128: 7 / 8,
        256: 5 / 8,
        512: 4 / 8,  # nobody ended on 512, yet four games reached it
        1024: 4 / 8,
        2048: 3 / 8,
        4096: 1 / 8,
        8192: 0.0,
    }
    assert reached_at_least([], (32,)) == {32: 0.0}
    # table rows: from 32 (lower on small boards) to the largest tile reached, across contestants
    assert tile_thresholds(tiles) == (32, 64, 128, 256, 512, 1024, 2048, 4096)
    assert tile_thresholds([256], [64, 512]) == (32, 64, 128, 256, 512)
    assert tile_thresholds([8, 16]) == (8, 16)
    assert tile_thresholds([]) == ()


def test_eta_from_moves_played_not_games_done() -> None:
    eta = EtaModel(games=10, contestants=2)
    assert eta.seconds_left() is None
    # 4 games of 100 moves done, 500 moves played (100 in flight) in 5 s: 100 moves/s, 1000 moves
    # expected in all, 500 left -> 5 s; the waiting contestant guessed at this one's 1 s per game.
    eta.update(0, done=4, finished_moves=400, moves_played=500, elapsed=5.0)
    assert eta.current_left() == pytest.approx(5.0)
    assert eta.seconds_left() == pytest.approx(15.0)
    assert eta.fraction() == pytest.approx(5 / 20)
    eta.finish(0, 10.0)
    assert eta.seconds_left() == pytest.approx(10.0)
    # the second one is stronger: 200 moves a game, 1200 played in 4 s (300/s): 800 moves left
    eta.update(1, done=5, finished_moves=1000, moves_played=1200, elapsed=4.0)
    assert eta.seconds_left() == pytest.approx(800 / 300)


def test_live_snapshots_and_stop_keep_the_finished_games(data_dir: Path) -> None:
    snaps: list[tuple[int, int]] = []
    seen = 0

    def stop() -> bool:
        return seen >= 3

    def progress(done: int, total: int, g: object) -> None:
        nonlocal seen
        seen = done

    with GameStore.open(data_dir) as store:
        result = evaluate(
            AgentSpec("random"),
            games=50,
            seed=4,
            store=store,
            progress=progress,
            should_stop=stop,
            live=lambda snap, moves: snaps.append((snap.games, moves)),
            live_every=0.0,
        )
        assert result.cancelled and result.games == 3 and result.planned == 50 and not result.complete
        assert len(store.list_games(source="evaluation")) == 3 and len(result.game_ids) == 3
    full = evaluate(AgentSpec("random"), games=3, seed=4)
    np.testing.assert_array_equal(result.scores, full.scores)  # the same first games
    # snapshots grow game by game; the moves count includes the game in flight
    assert [g for g, _ in snaps] == sorted(g for g, _ in snaps) and snaps[-1] == (3, int(full.moves.sum()))
    assert any(m > 0 for g, m in snaps if g == 0)


def test_stop_ends_the_worker_processes_promptly() -> None:
    import multiprocessing as mp
    import time

    t0 = time.perf_counter()
    result = evaluate(
        AgentSpec("expectimax"),
        games=40,
        seed=0,
        workers=2,
        should_stop=lambda: time.perf_counter() - t0 > 3.0,
    )
    assert result.cancelled and result.games < 40
    assert time.perf_counter() - t0 < 8.0  # expectimax's 40 games take minutes
    assert mp.active_children() == []


def _result(
    scores: list[int], tiles: list[int], moves: list[int] | None = None, seconds: list[float] | None = None
) -> EvalResult:
    """A finished evaluation of these games; moves and seconds default to 10 moves in 0.1 s a game."""
    n = len(scores)
    return EvalResult(
        label="x",
        agent="x",
        checkpoint=None,
        config={},
        rules=Rules(),
        seed=0,
        workers=1,
        scores=np.array(scores),
        moves=np.full(n, 10) if moves is None else np.array(moves),
        max_tiles=np.array(tiles),
        seconds=np.full(n, 0.1) if seconds is None else np.array(seconds),
        wall_seconds=1.0,
        planned=n,
    )


def test_a_pool_is_kept_from_one_evaluation_to_the_next() -> None:
    from agents.arena import EvalPool
    from agents.threads import PLAY_TORCH_THREADS, cpu_share, report_matches

    greedy, rnd = AgentSpec("greedy"), AgentSpec("random")
    with EvalPool(2) as pool:
        assert not pool.running
        reports = pool.prepare(greedy)  # both workers started, the agent built in each
        assert pool.running and len({r["pid"] for r in reports}) == 2
        assert all(report_matches(r, cpu_share(2), PLAY_TORCH_THREADS) for r in reports)
        pids = {r["pid"] for r in reports}
        a = evaluate(greedy, games=6, seed=42, pool=pool)
        b = evaluate(rnd, games=6, seed=42, pool=pool)  # another agent, the same processes
        assert a.workers == b.workers == 2
        assert {t["pid"] for t in (*a.worker_threads, *b.worker_threads)} <= pids
        # A stop ends the processes (the games in flight are given up); the next evaluation starts new ones.
        stopped = evaluate(rnd, games=500, seed=1, pool=pool, should_stop=lambda: True)
        assert stopped.cancelled and not pool.running
        c = evaluate(greedy, games=6, seed=42, pool=pool)
        assert not {t["pid"] for t in c.worker_threads} & pids
    assert not pool.running
    for pooled, spec in ((a, greedy), (b, rnd), (c, greedy)):
        alone = evaluate(spec, games=6, seed=42, workers=1)
        for field in ("scores", "moves", "max_tiles"):
            np.testing.assert_array_equal(getattr(pooled, field), getattr(alone, field))


def test_a_pool_worker_that_cannot_build_says_why_and_the_pool_restarts() -> None:
    from agents.arena import EvalPool

    spec = AgentSpec(BuildsOnlyInTheParent.name, target=f"{__name__}:{BuildsOnlyInTheParent.__name__}")
    with EvalPool(2) as pool:
        with pytest.raises(
            WorkerError, match="could not build the agent: RuntimeError: no agent in a worker"
        ):
            pool.prepare(spec, Rules())
        assert not pool.running
        with pytest.raises(WorkerError, match="no agent in a worker"):
            evaluate(spec, games=4, seed=1, pool=pool)
        ok = evaluate(AgentSpec("random"), games=4, seed=1, pool=pool)
        assert ok.complete and len(ok.worker_threads) >= 1


def test_chunker_hands_out_short_games_in_jobs_of_about_job_seconds_and_shrinks_at_the_end() -> None:
    from agents.arena import JOB_SECONDS, MAX_JOB_GAMES, Chunker

    c = Chunker(workers=2, games=1000)
    assert [c.next_size() for _ in range(4)] == [1, 1, 1, 1]  # nothing known: a game per job
    c.played(4, 4 * 0.002)  # 2 ms games: 25 of them make a 50 ms job
    assert JOB_SECONDS == 0.05 and c.next_size() == 25 and c.left == 996 - 25
    c.played(100, 100 * 10.0)  # now they seem to take 10 s each: one per job
    assert c.next_size() == 1
    fast = Chunker(workers=2, games=100_000)
    fast.played(1, 1e-7)
    assert fast.next_size() == MAX_JOB_GAMES
    # Near the end no job is more than a quarter of what is left (2 workers): the last jobs are short.
    end = Chunker(workers=2, games=40)
    end.played(10, 10 * 1e-4)
    sizes = []
    while end.left:
        sizes.append(end.next_size())
    assert sum(sizes) == 40 and sizes[0] == 10 and sizes == sorted(sizes, reverse=True) and sizes[-1] == 1
    slow = Chunker(workers=4, games=3)
    slow.played(1, 1e-4)
    assert [slow.next_size() for _ in range(3)] == [1, 1, 1] and slow.left == 0


def test_workers_play_the_fresh_network_this_process_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh learner draws its network when built: each worker building its own played two other
    # networks than this process's (issue #35's bench saw other scores with 2 workers). They now
    # load the network built here, so the games are those of that one network.
    import shutil

    import agents.arena as arena

    kept: list[AgentSpec] = []

    def keep(spec: AgentSpec, agent: object, folder: Path) -> AgentSpec:
        shared = original(spec, agent, folder)
        if shared.checkpoint is not None:  # a copy outlives the evaluation's temporary folder
            kept.append(AgentSpec(checkpoint=shutil.copy(shared.checkpoint, tmp_path / "net.npz")))
        return shared

    original = arena._same_agent_spec
    monkeypatch.setattr(arena, "_same_agent_spec", keep)
    spec = AgentSpec("policy", {"hidden": (8,)})
    two = evaluate(spec, games=6, seed=5, workers=2)
    assert two.workers == 2 and two.complete and len(kept) == 1
    alone = evaluate(kept[0], games=6, seed=5, workers=1)
    np.testing.assert_array_equal(two.scores, alone.scores)
    np.testing.assert_array_equal(two.moves, alone.moves)
    # Agents without weights go as they are: every process builds the same one.
    assert original(AgentSpec("greedy"), GreedyAgent(), tmp_path) == AgentSpec("greedy")
