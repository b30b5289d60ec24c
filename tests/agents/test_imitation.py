"""Imitation from logged games: data selection, learning a trivial teacher, determinism, checkpoints."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from agents.base import Agent, Budget, TrainContext
from agents.imitation import ImitationAgent, ImitationConfig, load_dataset
from agents.registry import create_agent, get_agent_class
from engine import Game, Rules, to_exponents
from engine.records import GameTrace, play_recorded
from engine.store import HUMAN, GameRecorder, GameStore, Player
from tests.agents.checkpoint_checks import assert_refused_as, assert_same_moves

#: The teacher: up if legal, else left, else right, else down. Learnable exactly from the board.
PRIORITY = (0, 1, 3, 2)
FIXED_BOARDS = [
    np.array([[0, 2, 4, 2], [0, 4, 2, 4], [0, 2, 4, 2], [0, 4, 2, 4]]),
    np.array([[2, 2, 4, 8], [0, 0, 0, 16], [0, 0, 0, 0], [0, 0, 2, 0]]),
    np.array([[1024, 512, 256, 128], [8, 16, 32, 64], [4, 2, 0, 0], [2, 0, 0, 0]]),
]
SMALL = {"teacher": "up-first", "hidden": (64, 32), "batch_size": 128}


pytest_plugins = ("tests.agents.torch_fixtures",)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def teacher_move(game: Game) -> int:
    mask = game.legal_mask()
    return next(a for a in PRIORITY if mask[a])


def log_teacher_games(
    data_dir: Path,
    n: int,
    *,
    agent: str = "up-first",
    source: str = "agent",
    first_seed: int = 0,
    rules: Rules | None = None,
) -> list[int]:
    ids = []
    with GameStore.open(data_dir) as store:
        for s in range(first_seed, first_seed + n):
            game = Game(seed=s, rules=rules) if rules is not None else Game(seed=s)
            trace = GameTrace.start(game)
            while not game.game_over:
                play_recorded(game, teacher_move(game), trace)
            ids.append(store.record_trace(trace, source=source, agent=agent))
    return ids


@pytest.fixture
def teacher_dir(data_dir: Path) -> Path:
    log_teacher_games(data_dir, 24)
    return data_dir


def test_registered():
    assert get_agent_class("imitation") is ImitationAgent


@pytest.mark.parametrize("head", ["moves", "afterstate"])
def test_learns_a_trivial_teacher(teacher_dir, head):
    agent = ImitationAgent(ImitationConfig(**SMALL, head=head), seed=0)
    events = list(agent.train(Budget(episodes=4), context=TrainContext(data_dir=teacher_dir)))
    info = events[0]
    assert info.kind == "info" and "24 games" in info.message
    updates = [e for e in events if e.kind == "update"]
    assert len(updates) == 4 and agent.counters.episodes == 4
    for e in updates:
        assert {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(e.metrics)
        assert math.isfinite(e.metrics["loss"])
    assert updates[-1].metrics["val_accuracy"] >= 0.97
    assert updates[-1].metrics["accuracy"] >= 0.95  # averaged over the epoch, learning included
    assert updates[-1].metrics["loss"] < updates[0].metrics["loss"]
    # It plays like the teacher on games it never saw.
    agree = total = 0
    for seed in (1000, 1001, 1002):
        game = Game(seed=seed)
        while not game.game_over:
            move = agent.act(game)
            agree += int(move) == teacher_move(game)
            total += 1
            game.step(move)
    # The afterstate head sees only the boards the moves lead to, where "up first" is not always
    # visible (a left move can leave the tiles packed upwards too): nearly, not exactly, the teacher.
    assert agree / total >= (0.97 if head == "moves" else 0.9)
    assert set(ImitationAgent.loss_metrics) | set(ImitationAgent.schedule_metrics) <= set(updates[-1].metrics)


def test_validation_holds_out_whole_games(teacher_dir):
    agent = ImitationAgent(ImitationConfig(**SMALL, val_frac=0.25), seed=1)
    data = load_dataset(agent.config, agent.rules, teacher_dir)
    train, val = agent.split(data)
    assert agent.val_game_ids is not None and len(agent.val_game_ids) == 6
    assert len(train) + len(val) == len(data)
    assert not set(train.game_N.tolist()) & set(val.game_N.tolist())
    assert {data.game_ids[g] for g in set(val.game_N.tolist())} == set(agent.val_game_ids)


def test_filters_pick_the_games(data_dir):
    human = log_teacher_games(data_dir, 3, agent=None, source="human")  # type: ignore[arg-type]
    bots = log_teacher_games(data_dir, 4, agent="up-first", first_seed=10)
    log_teacher_games(data_dir, 2, rules=Rules(rows=3, cols=3), agent="up-first", first_seed=20)
    rules = Rules()

    def ids(**kw: object) -> set[int]:
        return set(load_dataset(ImitationConfig(**kw), rules, data_dir).game_ids)  # type: ignore[arg-type]

    assert ids(source="human") == set(human)
    assert ids(teacher="up-first") == set(bots)  # the 3x3 games do not fit a 4x4 agent
    assert ids() == set(human) | set(bots)
    with GameStore.open(data_dir) as store:
        scores = {g.id: g.score for g in store.list_games()}
    cut = sorted(scores[i] for i in bots)[2]
    assert ids(teacher="up-first", min_score=cut) == {i for i in bots if scores[i] >= cut}
    assert len(ids(max_games=2)) == 2
    assert ids(since="2000-01-01") == set(human) | set(bots)
    with pytest.raises(ValueError, match="no logged 4x4 games"):
        ids(until="2000-01-01")
    small = load_dataset(ImitationConfig(teacher="up-first"), Rules(rows=3, cols=3), data_dir)
    assert len(small.game_ids) == 2 and small.exps_NRC.shape[1:] == (3, 3)


def test_my_games_use_only_my_moves_of_a_game_shared_with_an_agent(data_dir):
    """A person plays 5 moves, lets greedy play 6, takes over for 4: one mixed record, split by player."""
    greedy = Player("agent", "greedy")
    with GameStore.open(data_dir) as store:
        rec = GameRecorder(store, rules=Rules(), seed=3, lazy=True)
        for who in (HUMAN,) * 5 + (greedy,) * 6 + (HUMAN,) * 4:
            assert rec.play(rec.game.legal_moves()[-1], who) is not None
        rec.close()
        mixed = store.load_game(rec.game_id)
    assert mixed.summary.source == "mixed"
    mine = [0, 1, 2, 3, 4, 11, 12, 13, 14]
    data = load_dataset(ImitationConfig(source="human"), Rules(), data_dir)
    assert data.game_ids == [mixed.id] and len(data) == 9 and data.skipped == 0
    assert data.moves_N.tolist() == mixed.moves[mine].tolist()
    assert np.array_equal(data.exps_NRC, to_exponents(mixed.layouts[mine].reshape(-1, 4)).reshape(-1, 4, 4))
    theirs = load_dataset(ImitationConfig(teacher="greedy"), Rules(), data_dir)
    assert theirs.moves_N.tolist() == mixed.moves[5:11].tolist()
    assert len(load_dataset(ImitationConfig(), Rules(), data_dir)) == 15  # any source: every move
    with pytest.raises(ValueError, match="no logged 4x4 games"):
        load_dataset(ImitationConfig(source="human", teacher="greedy"), Rules(), data_dir)


def test_no_matching_games_is_a_clear_error(data_dir):
    agent = ImitationAgent(ImitationConfig(teacher="expectimax"), seed=0)
    with pytest.raises(ValueError, match=r"no logged 4x4 games .*teacher=expectimax"):
        next(agent.train(Budget(episodes=1), context=TrainContext(data_dir=data_dir)))
    with pytest.raises(ValueError, match="date"):
        ImitationConfig(since="last tuesday")


def test_same_seed_same_losses(teacher_dir):
    def losses(seed: int) -> list[float]:
        agent = ImitationAgent(ImitationConfig(**SMALL, augment=True), seed=seed)
        events = agent.train(Budget(episodes=2), context=TrainContext(data_dir=teacher_dir))
        return [e.metrics["loss"] for e in events if e.kind == "update"]

    a = losses(5)
    assert len(a) == 2 and a == losses(5)
    assert losses(6) != a


def test_stop_between_batches(teacher_dir):
    from agents.base import Control

    control = Control()
    control.stop()
    agent = ImitationAgent(ImitationConfig(**SMALL), seed=0)
    events = list(agent.train(Budget(episodes=5), control, TrainContext(data_dir=teacher_dir)))
    assert [e.kind for e in events] == ["info"] and agent.counters.episodes == 0


def test_save_load_same_moves_and_split(teacher_dir, tmp_path):
    agent = ImitationAgent(ImitationConfig(**SMALL), seed=2)
    list(agent.train(Budget(episodes=1), context=TrainContext(data_dir=teacher_dir)))
    loaded = Agent.load(agent.save(tmp_path / "imit"))
    assert isinstance(loaded, ImitationAgent)
    assert loaded.val_game_ids == agent.val_game_ids
    assert_same_moves(loaded, agent, FIXED_BOARDS)


def test_a_checkpoint_of_another_agent_is_refused(tmp_path):
    other = create_agent("dqn", {"hidden": (8,)}, seed=0).save(tmp_path / "dqn")
    assert_refused_as(ImitationAgent, "imitation", other)
