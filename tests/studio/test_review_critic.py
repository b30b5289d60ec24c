"""An actor-critic SB3 agent (MaskablePPO) as the game review's reviewer: its critic looked one move ahead,
mapped to points by a fit on games it plays itself (agents/sb3/agents.py ``_OnPolicyAgent``)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.base import Agent, Budget
from agents.registry import create_agent
from engine import DIRECTIONS, Game, Rules
from engine.core import legal_mask, slide_unchecked
from engine.records import GameTrace, play_recorded
from engine.store import GameStore
from studio.services import review as svc

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sb3_contrib") is None,
    reason="Stable-Baselines3 is not installed (pip install -e .[sb3])",
)

TINY = {"n_envs": 2, "n_steps": 32, "batch_size": 32, "n_epochs": 2, "hidden": (16,), "chunk_steps": 64}
# A corner chain with room to spawn: every move is legal but down.
CHAIN = np.array([[0, 0, 0, 0], [0, 0, 0, 2], [2, 0, 0, 4], [1024, 512, 256, 256]])


@pytest.fixture(autouse=True)
def _few_fit_games(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three games fit the map here (twelve in the product): the tiny networks' games are long enough."""
    from agents.sb3.agents import _OnPolicyAgent

    monkeypatch.setattr(_OnPolicyAgent, "REVIEW_GAMES", 3)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    agent = create_agent("sb3-maskppo", TINY, seed=3)
    for _ in agent.train(Budget(steps=256)):
        pass
    return agent.save(tmp_path_factory.mktemp("maskppo") / "maskppo.npz")


def slow_lookahead(agent: Any, board: np.ndarray) -> dict[int, float]:
    """The lookahead written out: each move's board, every spawn (a 2 or a 4 on each empty cell) with
    its probability, the critic on each board alone (0 where no move is left)."""
    cfg = agent.config
    out: dict[int, float] = {}
    for a in range(4):
        after, gained = slide_unchecked(board, DIRECTIONS[a])
        if np.array_equal(after, board):
            continue
        empty = list(zip(*np.nonzero(after == 0), strict=True))
        expected = 0.0
        for r, c in empty:
            for tile, p in ((2, 0.9), (4, 0.1)):
                child = after.copy()
                child[r, c] = tile
                alive = legal_mask(child).any()
                exps = np.log2(np.where(child > 0, child, 1)).astype(np.uint8)[None]
                v = float(agent.critic_values(exps)[0]) if alive else 0.0
                expected += p / len(empty) * v
        shaped = np.log2(1.0 + gained) * cfg.reward_scale
        out[a] = float(shaped + cfg.gamma * expected)
    return out


def test_the_lookahead_is_reward_plus_the_critics_expected_value_after_the_spawn(checkpoint: Path) -> None:
    agent: Any = Agent.load(checkpoint)
    fast = agent.lookahead(Game(board=CHAIN))
    slow = slow_lookahead(agent, CHAIN)
    assert sorted(int(d) for d in fast) == sorted(slow) == [0, 1, 3]  # up, left, right
    for d, v in fast.items():
        assert v == pytest.approx(slow[int(d)], rel=1e-5, abs=1e-6)
    # left merges 256 + 256 (a 512: log2(513) x 0.1 of shaped reward) where right merges nothing more
    assert fast[DIRECTIONS[1]] - fast[DIRECTIONS[0]] > 0.5


def test_review_values_are_points_fitted_on_its_own_games_and_keep_the_critics_order(
    checkpoint: Path,
) -> None:
    agent: Any = Agent.load(checkpoint)
    assert agent.reviews_in_points and agent.value_kind == "share"  # hints stay the policy's shares
    fit = agent.review_map()
    assert fit.games == 3 and fit.positions > 50
    assert all(b >= a for a, b in zip(fit.ys, fit.ys[1:], strict=False))  # more value, never fewer points
    game = Game(board=CHAIN, score=20_000)
    raw, points = agent.lookahead(game), agent.review_values(game)
    assert list(points) == list(raw)
    by_raw = sorted(raw, key=lambda d: raw[d])
    assert [points[d] for d in by_raw] == sorted(points.values())
    # the same weights, the same map: a second load gives the same values to the bit
    assert Agent.load(checkpoint).review_values(game) == points
    # training changes the weights: the map is fitted again
    for _ in agent.train(Budget(steps=64)):
        pass
    assert agent._review_map is None


def test_a_maskppo_run_is_offered_as_a_reviewer_and_reviews_a_game(checkpoint: Path, tmp_path: Path) -> None:
    with GameStore.open(tmp_path / "data") as store:
        run = store.create_run("sb3-maskppo", TINY, Rules(), {"steps": 256})
        store.add_checkpoint(run, checkpoint, 1, 256)
        label = f"sb3-maskppo run {run}"
        entry = dict(svc.reviewer_choices(store))[label]
        assert entry == (str(checkpoint.resolve()), None)
        chosen = svc.resolve_reviewer(store, *entry)
        assert chosen.label == label and chosen.spec.name == "sb3-maskppo"
        # the same file given by its path is the same reviewer (one key, one stored review)
        assert svc.resolve_reviewer(store, str(checkpoint)).key() == chosen.key()

        # A game of the reviewer's own choices by its review values: every move best or forced.
        agent = chosen.build(Rules())
        game = Game(seed=11)
        trace = GameTrace.start(game)
        while not game.game_over and game.moves < 60:
            values = agent.review_values(game)
            play_recorded(game, max(values, key=lambda d: values[d]), trace)
        trace.final_board = game.board
        gid = store.record_trace(trace, "agent", "sb3-maskppo")
        review = svc.review_game(store, gid, chosen)
        assert review.complete and review.reviewer["value_kind"] == "points"
        assert review.reviewer["sees_death"] is True
        assert review.accuracy == 100.0
        assert review.counts["best"] + review.counts["forced"] == trace.n_moves

        # Random play, graded by the same reviewer: moves given up, in points.
        rng = np.random.default_rng(0)
        game = Game(seed=12)
        trace = GameTrace.start(game)
        while not game.game_over and game.moves < 60:
            legal = np.flatnonzero(game.legal_mask())
            play_recorded(game, DIRECTIONS[int(rng.choice(legal))], trace)
        trace.final_board = game.board
        rand = svc.review_game(store, store.record_trace(trace, "agent", "random"), chosen)
        assert rand.complete and rand.accuracy < 100.0
        assert sum(rand.counts[g] for g in ("inaccuracy", "mistake", "blunder", "good")) > 0


def test_the_reviewer_box_lists_them_from_metadata_without_importing_sb3(
    checkpoint: Path, tmp_path: Path
) -> None:
    """The box is filled on the window's thread: finding the runs that can review reads their checkpoints'
    metadata and imports no SB3 (seconds)."""
    from agents.checkpoint import read_checkpoint

    assert read_checkpoint(checkpoint, arrays=False)[0]["reviews_in_points"] is True
    data = tmp_path / "data"
    with GameStore.open(data) as store:
        runs = [store.create_run("sb3-maskppo", TINY, Rules(), {"steps": 256}) for _ in range(4)]
        for run in runs:
            store.add_checkpoint(run, checkpoint, 1, 256)
    code = (
        "import sys, json; from engine.store import GameStore; from studio.services import review as svc\n"
        f"store = GameStore.open({str(data)!r})\n"
        "labels = [c.label for c in svc.critic_reviewers(store)]\n"
        "print(json.dumps([labels, 'stable_baselines3' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    labels, sb3_loaded = json.loads(out)
    assert labels == [f"sb3-maskppo run {r}" for r in runs[:0:-1]]  # the newest three, newest first
    assert not sb3_loaded


def test_a_store_without_actor_critic_runs_offers_no_run_reviewer(tmp_path: Path) -> None:
    with GameStore.open(tmp_path / "data") as store:
        store.create_run("greedy", {}, Rules(), {"episodes": 1})
        assert svc.critic_reviewers(store) == []
        assert not [label for label, _ in svc.reviewer_choices(store) if " run " in label]
