"""Checks the agents' checkpoint tests share: a loaded agent plays as the saved one did, and a
checkpoint of another agent is refused by name."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

from agents.base import Agent
from agents.checkpoint import CheckpointError, load_checkpoint
from engine import Game


def assert_same_moves(loaded: Agent, agent: Agent, boards: Iterable[np.ndarray]) -> None:
    """On every board of ``boards`` both agents pick the same move and value every move alike."""
    for board in boards:
        game = Game(board=board)
        assert loaded.act(game) == agent.act(game)
        assert loaded.move_values(game) == agent.move_values(game)


def assert_same_play(a: Agent, b: Agent, *, seed: int, moves: int) -> None:
    """Along ``a``'s own game from ``seed`` (``moves`` moves at most), both agents value every move alike."""
    game = Game(seed=seed)
    for _ in range(moves):
        if game.game_over:
            break
        assert a.move_values(game) == b.move_values(game)
        game.step(a.act(game))


def assert_refused_as(cls: type[Agent], name: str, other: Path) -> None:
    """``other`` (a checkpoint of another agent) is refused by ``cls.load`` and by
    ``load_checkpoint(expect_agent=name)``, both saying it is "not 'name'"."""
    with pytest.raises(ValueError, match=f"not '{name}'"):
        cls.load(other)
    with pytest.raises(CheckpointError, match=f"not '{name}'"):
        load_checkpoint(other, expect_agent=name)
