"""Evaluation on Ray actors (issue #20): the same games as local play for the same seed, stored by the
driver, stopped early like local play, and the same figures from ``eval --backend ray``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.arena import GameOutcome, evaluate
from agents.spec import AgentSpec
from agents.threads import report_matches
from engine.store import GameStore
from studio.cli import main

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")

SEED = 2026
GAMES = 6


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    # One small local cluster for the module: starting Ray takes seconds.
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def local_random() -> Any:
    """The reference: the random agent's games (its moves come from the per-game agent stream, so an
    actor that did not seed it per game would differ) in two local processes."""
    return evaluate(AgentSpec("random"), GAMES, SEED, workers=2)


def test_ray_plays_the_same_games_as_local_processes(
    ray_cluster: Any, local_random: Any, data_dir: Path
) -> None:
    finished: list[int] = []
    lives: list[tuple[int, int]] = []
    with GameStore.open(data_dir) as store:
        on_ray = evaluate(
            AgentSpec("random"),
            GAMES,
            SEED,
            workers=2,
            store=store,
            progress=lambda done, total, g: finished.append(g.index),
            live=lambda snap, moves: lives.append((int(snap.moves.sum()), moves)),
            live_every=0.05,
            backend="ray",
        )
        # Stored by the driver, as local play stores them: one evaluation game per result, same scores.
        games = {g.id: g for g in store.list_games(source="evaluation")}
        assert sorted(games) == sorted(on_ray.game_ids)
        assert [games[i].score for i in on_ray.game_ids] == on_ray.scores.tolist()
    assert on_ray.complete and on_ray.workers == 2 and not on_ray.cancelled
    # Each actor runs its libraries on the one CPU Ray reserved for it (issue #35).
    assert on_ray.worker_threads and all(report_matches(t, 1) for t in on_ray.worker_threads)
    assert all(t["numba"] == 1 for t in on_ray.worker_threads)
    for field in ("scores", "max_tiles", "moves"):
        np.testing.assert_array_equal(getattr(on_ray, field), getattr(local_random, field))
    assert on_ray.mean_text == local_random.mean_text
    assert sorted(finished) == list(range(GAMES))
    # The live moves count games in flight too: never fewer than the finished games' moves.
    assert lives and all(moves >= done for done, moves in lives)
    assert lives[-1] == (int(on_ray.moves.sum()), int(on_ray.moves.sum()))


def test_stop_after_a_few_games_keeps_them(ray_cluster: Any, local_random: Any) -> None:
    done: list[GameOutcome] = []
    result = evaluate(
        AgentSpec("random"),
        500,
        SEED,
        workers=2,
        progress=lambda n, total, g: done.append(g),
        should_stop=lambda: len(done) >= 2,
        backend="ray",
    )
    assert result.cancelled and not result.complete and result.planned == 500
    assert 2 <= result.games < 500 and result.games == len(done)
    # Whatever finished is the very game local play plays at that index.
    local_scores = dict(enumerate(local_random.scores.tolist()))
    assert all(local_scores[g.index] == g.score for g in done if g.index < GAMES)
    assert sorted(result.scores.tolist()) == sorted(g.score for g in done)


def test_cli_eval_on_ray_prints_the_same_mean_as_local(
    ray_cluster: Any, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--data-dir", str(data_dir), "eval", "--agent", "greedy", "--games", "4", "--seed", "7", "--json"]
    assert main([*base, "--backend", "local"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main([*base, "--backend", "ray", "--workers", "2", "--no-log"]) == 0
    on_ray = json.loads(capsys.readouterr().out)
    assert on_ray["backend"] == "ray" and local["backend"] == "local"
    assert on_ray["results"][0]["mean_score"] == local["results"][0]["mean_score"]
    assert on_ray["results"][0]["max_tile_exactly"] == local["results"][0]["max_tile_exactly"]


def test_cli_without_ray_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import studio.services.runs as runs

    monkeypatch.setattr(runs, "have_ray", lambda: False)
    argv = ["--data-dir", str(data_dir), "eval", "--agent", "random", "--games", "1"]
    assert main([*argv, "--backend", "ray"]) == 2
    err = capsys.readouterr().err
    assert "optional extra" in err and ".[ray]" in err and len(err.strip().splitlines()) == 1
    assert main([*argv, "--ray-address", "10.0.0.5:6379"]) == 2  # an address implies Ray
    assert "optional extra" in capsys.readouterr().err


def test_evaluate_on_ray_without_ray_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        evaluate(AgentSpec("random"), 1, SEED, backend="slurm")
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(RuntimeError, match=r"optional extra"):
        evaluate(AgentSpec("random"), 1, SEED, backend="ray")
    with pytest.raises(RuntimeError, match=r"optional extra"):  # an address implies Ray
        evaluate(AgentSpec("random"), 1, SEED, ray_address="10.0.0.5:6379")


def test_a_silent_cluster_address_is_one_line_not_minutes(ray_cluster: Any) -> None:
    from agents.ray_util import check_reachable

    check_reachable(ray_cluster.get_runtime_context().gcs_address)  # this module's cluster answers
    with pytest.raises(ConnectionError, match=r"no Ray cluster answers at 127\.0\.0\.1:1"):
        check_reachable("127.0.0.1:1")
    check_reachable("auto")  # Ray's own forms are left to Ray
