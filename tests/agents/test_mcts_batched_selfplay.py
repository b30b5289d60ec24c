"""MCTS self-play with several games at once: their leaves share one network call, the games stay the same.

The twin: :func:`play_selfplay_game` (one game, ``Search.run``: every leaf valued alone) against
:func:`play_selfplay_games` (K games, one network call per round for all their leaves).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.base import Budget, Control
from agents.mcts import MCTSAgent, MCTSConfig, MCTSWorker, SelfPlayGame, SelfPlayTask, play_selfplay_game
from agents.mcts.agent import play_selfplay_games
from agents.mcts.selfplay import InlinePool, LocalPool, WorkerSpec
from agents.nn.state import module_arrays
from engine import Rules

TINY = dict(MCTSAgent.smoke_config)


def row_evaluator(exps_NRC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A fixed network that values each board on its own, in integers (so exactly, whatever else is in
    the batch): value = sum of cell_index * exponent^2, logits = small board-dependent integers."""
    x_NC = exps_NRC.reshape(len(exps_NRC), -1).astype(np.int64)
    value_N = (x_NC * x_NC) @ np.arange(1, x_NC.shape[1] + 1, dtype=np.int64)
    logits_N4 = np.stack([(x_NC[:, :4] * (a + 1)).sum(axis=1) % 7 for a in range(4)], axis=1)
    return logits_N4.astype(np.float32), value_N.astype(np.float64)


class CountingEvaluator:
    """:func:`row_evaluator` that records the size of every call."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __call__(self, exps_NRC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.sizes.append(len(exps_NRC))
        return row_evaluator(exps_NRC)


def assert_same_game(a: SelfPlayGame, b: SelfPlayGame) -> None:
    assert a.seed == b.seed and a.moves == b.moves and a.score == b.score
    assert a.trace.moves == b.trace.moves and a.truncated == b.truncated
    assert np.array_equal(a.exps_NRC, b.exps_NRC)
    assert np.array_equal(a.policy_N4, b.policy_N4)  # the visit counts, move by move
    assert np.array_equal(a.root_values_N, b.root_values_N)
    assert np.array_equal(a.rewards_N, b.rewards_N) and a.tail_value == b.tail_value


# 4x4 runs the packed FastOps and its games are cut at max_moves; 3x3 runs GeneralOps and its games end
# (finished games are worth 0, and a finished game's place in the batch goes to the next seed).
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize(("shape", "max_moves"), [((4, 4), 40), ((3, 3), 400)])
def test_batched_games_are_the_one_game_loops_games(k: int, shape: tuple[int, int], max_moves: int) -> None:
    rules = Rules(*shape)
    config = MCTSConfig.from_dict({"simulations": 8, "max_moves": max_moves})
    seeds = [3, 4, 5, 6, 7]
    alone = [play_selfplay_game(row_evaluator, rules, config, s) for s in seeds]
    evaluate = CountingEvaluator()
    together = list(play_selfplay_games(evaluate, rules, config, seeds, batch=k))
    assert [i for i, _ in together] == [0, 1, 2, 3, 4]  # seed order, one record per game
    for a, (_, b) in zip(alone, together):
        assert_same_game(a, b)
    if shape == (3, 3):
        assert not any(g.truncated for g in alone)  # games that ended, not cut
    else:
        assert all(g.moves == 40 and g.truncated for g in alone)
    # K = 3: one call serves several games (a chance node on 4x4 has at most 30 outcomes).
    if k == 3 and shape == (4, 4):
        assert max(evaluate.sizes) > 30


def test_real_network_plays_the_same_moves_batched() -> None:
    # Torch's products for a batch of 1-3 rows may differ in the last float bit from the same rows inside
    # a larger batch (measured: <= 7.5e-9 relative on values, on this CPU), and the batched loop puts a
    # 2-outcome chance node's rows into a larger batch. So: the same moves and scores on short games, and
    # policy targets / root values equal up to that rounding (rel 1e-6 on values; a visit count could
    # only move on an exact tie of PUCT scores, which these seeds do not hit).
    config = MCTSConfig.from_dict({"max_moves": 20, "simulations": 12})  # the default network
    worker = MCTSWorker(config.to_dict(), Rules().to_dict())
    seeds = [11, 12, 13]
    alone = [play_selfplay_game(worker.evaluate, worker.rules, worker.config, s) for s in seeds]
    together = list(worker.play_many([SelfPlayTask(s) for s in seeds]))
    assert worker.config.batch_games > 1 and [i for i, _ in together] == [0, 1, 2]
    for a, (_, b) in zip(alone, together):
        assert a.trace.moves == b.trace.moves and a.score == b.score and a.moves == b.moves == 20
        assert np.array_equal(a.policy_N4, b.policy_N4)
        assert np.allclose(a.root_values_N, b.root_values_N, rtol=1e-6, atol=0.0)


def test_batched_games_are_abandoned_before_a_network_call_when_asked() -> None:
    evaluate = CountingEvaluator()
    asked: list[int] = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) == 5

    config = MCTSConfig.from_dict({"simulations": 4, "max_moves": 1000})
    games = list(play_selfplay_games(evaluate, Rules(), config, [1, 2], should_stop, batch=2))
    assert games == [] and len(asked) == 5
    assert len(evaluate.sizes) == 4  # four rounds ran, the fifth did not start


@pytest.mark.parametrize(
    ("n", "workers", "batch", "groups"),
    [
        (3, 1, 1, [[0], [1], [2]]),
        (10, 2, 8, [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]),  # no worker idle while another plays 8
        (5, 1, 2, [[0, 1], [2, 3], [4]]),
        (4, 3, 16, [[0, 1], [2, 3]]),
    ],
)
def test_pools_hand_out_consecutive_groups(n: int, workers: int, batch: int, groups: list[list[int]]) -> None:
    pool = LocalPool(WorkerSpec("agents.mcts:MCTSWorker"), workers, batch)
    assert pool.groups(n) == groups


def test_pools_return_one_batched_game_per_task_in_task_order() -> None:
    config = MCTSConfig.from_dict({**TINY, "max_moves": 12, "batch_games": 2})
    spec = WorkerSpec("agents.mcts:MCTSWorker", {"config": config.to_dict(), "rules": Rules().to_dict()})
    worker = MCTSWorker(config.to_dict(), Rules().to_dict())
    tasks = [SelfPlayTask(s) for s in (21, 22, 23, 24, 25)]
    alone = [play_selfplay_game(worker.evaluate, worker.rules, config, t.seed) for t in tasks]
    weights = module_arrays(worker.net, "net/")  # a new worker's network has its own random weights
    with InlinePool(spec, batch=2) as inline:
        inline.set_weights(weights)
        inline_games = list(inline.run(tasks))
    assert [i for i, _ in inline_games] == [0, 1, 2, 3, 4]
    with LocalPool(spec, 2, batch=2) as local:
        local.set_weights(weights)
        local_games = sorted(local.run(tasks), key=lambda r: r[0])  # finishing order across processes
    assert [i for i, _ in local_games] == [0, 1, 2, 3, 4]
    for a, (_, b), (_, c) in zip(alone, inline_games, local_games):
        assert a.seed == b.seed == c.seed
        assert a.trace.moves == b.trace.moves == c.trace.moves and a.score == b.score == c.score


def test_smoke_training_with_batched_selfplay() -> None:
    agent = MCTSAgent(
        MCTSConfig.from_dict({**TINY, "games_per_generation": 3, "batch_games": 3, "validation_split": 0.0}),
        seed=4,
    )
    events = list(agent.train(Budget(episodes=6), Control()))
    episodes = [e for e in events if e.kind == "episode"]
    assert len(episodes) == 6 and all(e.game is not None for e in episodes)
    assert [e.metrics["moves"] for e in episodes] == [25] * 6  # the smoke config cuts games at 25 moves
    assert agent.counters.episodes == 6 and agent.counters.steps == 150 == len(agent.window)
    losses = [e.metrics for e in events if "policy_loss" in e.metrics]
    assert len(losses) == 2 and all(np.isfinite(m["value_loss"]) for m in losses)
    gens = [e.metrics["generation"] for e in events if e.kind == "update" and "window_positions" in e.metrics]
    assert gens == [1, 2]


def test_bench_torch_measures_mcts_per_batch_size(capsys: pytest.CaptureFixture[str]) -> None:
    from studio.cli import main

    args = ["bench", "torch", "--json", "--seconds", "0.5", "--rounds", "1", "-o", "devices=cpu"]
    args += ["-o", "agents=mcts", "-o", "warmup=0", "-o", "mcts_batches=1,2", "-o", "mcts.filters=4"]
    args += ["-o", "mcts.dense=8", "-o", "mcts.simulations=2", "-o", "mcts.max_moves=5"]
    args += ["-o", "mcts.games_per_generation=2"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    figures = report["results"]
    assert figures["mcts-b1_train_cpu_cpu"]["moves"] > 0 and figures["mcts-b2_train_cpu_cpu"]["moves"] > 0
    assert report["info"]["config"]["mcts-b2"]["batch_games"] == 2
    assert report["info"]["config"]["mcts-b1"]["batch_games"] == 1
