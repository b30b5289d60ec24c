"""The dqn agent's ``ntuple`` network: an n-tuple network as one sparse neural layer (issue #48).

The encoder's vectorised tuple indices are checked against a hand-made board and against their slow
twin (a plain loop over each tuple's cells on the rotated / mirrored board); the network is symmetric;
training is deterministic, moves the table and survives a checkpoint; the agent contract holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from agents.base import Budget
from agents.conformance import CHECKS, run_check
from agents.dqn import DQNAgent, DQNConfig
from agents.nn.encoders import NTupleEncoder
from agents.nn.networks import NTupleNetwork
from agents.nn.optimizers import RowMeanSGD
from agents.ntuple.agent import LAYOUTS
from engine import Game, Rules
from engine.boards import symmetries

#: quick settings: the tiny 4x4 layout (262,144 rows) keeps tests light
SMALL: dict[str, Any] = {
    "network": "ntuple",
    "layout": "4x4",
    "symmetric_play": False,
    "augment": False,
    "target_update": 0,
    "gamma": 1.0,
    "reward_scale": 0.01,
    "lr": 0.01,
    "envs": 8,
    "batch_size": 32,
    "learning_starts": 64,
    "train_every": 8,
    "replay_capacity": 4000,
}


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def slow_indices(exps_RC: np.ndarray, tuples: tuple[tuple[int, ...], ...]) -> list[int]:
    """The slow twin: for each tuple, for each of the 8 symmetries (rotate k quarter turns, then mirror
    for the second four), read the tuple's cells off the transformed board one by one."""
    out: list[int] = []
    offset = 0
    for tup in tuples:
        for s in range(8):
            view = np.rot90(exps_RC, s % 4)
            if s >= 4:
                view = np.fliplr(view)
            index = 0
            for p, cell in enumerate(tup):
                index += min(int(view[cell // 4, cell % 4]), 15) * 16**p
            out.append(offset + index)
        offset += 16 ** len(tup)
    return out


def test_hand_made_board_gives_known_tuple_indices() -> None:
    # exponents: row 0 = 2 4 8 16, row 1 = 32 64 . ., the rest empty but one 2 in the corner
    board = np.array([[1, 2, 3, 4], [5, 6, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]], np.uint8)
    idx = NTupleEncoder("4x6").encode(board)
    assert idx.shape == (1, 32) and idx.dtype == np.int64
    # tuple 0 = cells (0, 1, 2, 3, 4, 5) as they stand (symmetry 0): exponents 1..6, nibble p = cell p
    assert idx[0, 0] == 1 + 2 * 16 + 3 * 16**2 + 4 * 16**3 + 5 * 16**4 + 6 * 16**5 == 0x654321
    # tuple 1 = cells (4, 5, 6, 7, 8, 9): exponents 5, 6, 0, 0, 0, 0
    assert idx[0, 8] == 16**6 + 5 + 6 * 16
    # tuple 0 read on the board turned a quarter (np.rot90): its top row is the old right column
    # (4, 0, 0, 1), the next row starts with the old third column (3, 0)
    assert idx[0, 1] == 4 + 0 * 16 + 0 * 16**2 + 1 * 16**3 + 3 * 16**4 + 0 * 16**5
    assert idx[0].tolist() == slow_indices(board, LAYOUTS["4x6"])


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_vectorised_indices_match_the_slow_twin(layout: str) -> None:
    rng = np.random.default_rng(7)
    boards = rng.integers(0, 18, size=(50, 4, 4)).astype(np.uint8)  # 16, 17 read as 15
    idx = NTupleEncoder(layout).encode(boards)
    assert idx.tolist() == [slow_indices(b, LAYOUTS[layout]) for b in boards]
    assert idx.max() < NTupleEncoder(layout).size


def test_the_network_rates_every_symmetry_of_a_board_alike() -> None:
    enc = NTupleEncoder("4x6")
    net = NTupleNetwork(enc.size)
    with torch.no_grad():
        net.table.weight.normal_(generator=torch.Generator().manual_seed(3))
    board = np.random.default_rng(2).integers(0, 12, size=(4, 4)).astype(np.uint8)
    views = np.stack([sym.apply(board[None])[0] for sym in symmetries(4, 4)])
    values = net(enc.tensor(views)).squeeze(1).detach().numpy()
    assert len(values) == 8 and np.ptp(values) < 1e-3 * (1 + abs(values[0]))


def test_ntuple_is_refused_off_4x4() -> None:
    with pytest.raises(ValueError, match="4x4"):
        DQNAgent(DQNConfig(**SMALL), Rules(rows=3, cols=3), seed=1)


def test_row_mean_sgd_moves_a_shared_row_by_the_mean_gradient() -> None:
    table = torch.nn.EmbeddingBag(10, 1, mode="sum", sparse=True)
    torch.nn.init.zeros_(table.weight)
    opt = RowMeanSGD(table.parameters(), lr=1.0)
    # two bags share row 3; their outputs' gradients are 1 and 3: row 3 moves by -(1 + 3) / 2
    out = table(torch.tensor([[3, 4], [3, 5]]))
    (out.squeeze(1) * torch.tensor([1.0, 3.0])).sum().backward()
    opt.step()
    w = table.weight.detach().squeeze(1).tolist()
    assert w[3] == -2.0 and w[4] == -1.0 and w[5] == -3.0 and w[0] == 0.0


def _table(agent: DQNAgent) -> torch.Tensor:
    net = agent.net
    assert isinstance(net, NTupleNetwork)
    return net.table.weight.detach()


def _train(seed: int, steps: int) -> tuple[DQNAgent, list[float]]:
    agent = DQNAgent(DQNConfig(**SMALL), seed=seed)
    scores = [e.metrics["score"] for e in agent.train(Budget(steps=steps)) if e.kind == "episode"]
    return agent, scores


def test_same_seed_same_games_and_weights() -> None:
    a, scores_a = _train(5, 1600)
    b, scores_b = _train(5, 1600)
    assert scores_a and scores_a == scores_b
    assert torch.equal(_table(a), _table(b))
    _, scores_c = _train(6, 1600)
    assert scores_c != scores_a


def test_training_moves_the_table_and_a_checkpoint_keeps_it(tmp_path: Path) -> None:
    agent, _ = _train(1, 1600)
    weight = _table(agent)
    assert agent.counters.updates > 100
    assert torch.isfinite(weight).all() and int((weight != 0).sum()) > 1000
    game = Game(seed=4)
    before = agent.move_values(game)
    path = agent.save(tmp_path / "ck.npz")
    loaded = DQNAgent.load(path)
    assert isinstance(loaded, DQNAgent) and isinstance(loaded.net, NTupleNetwork)
    assert loaded.move_values(game) == before
    # the moves it rates differ: it has learned something about the board
    assert len(set(before.values())) > 1


@pytest.mark.parametrize("check", list(CHECKS))
def test_dqn_with_the_ntuple_network_meets_the_contract(
    check: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    smoke = {**DQNAgent.smoke_config, **SMALL, "envs": 2, "batch_size": 16, "learning_starts": 50}
    monkeypatch.setattr(DQNAgent, "smoke_config", smoke)
    result = run_check("dqn", check, tmp_path)
    assert result.passed, f"{check}: {result.detail}"


def test_symmetric_play_and_augmentation_are_skipped_as_they_would_change_nothing() -> None:
    agent, _ = _train(2, 1600)
    on = DQNAgent(DQNConfig(**{**SMALL, "symmetric_play": True, "augment": True}), seed=2)
    assert on.symmetric_play is False
    # what averaging the 8 views would give: the same move values as one view
    exps = np.random.default_rng(5).integers(0, 9, size=(20, 4, 4)).astype(np.uint8)
    with torch.no_grad():
        one = agent.head_outputs(exps)
        averaged = agent.symmetric_outputs(exps)
    assert torch.allclose(one, averaged, rtol=1e-5, atol=1e-4)
