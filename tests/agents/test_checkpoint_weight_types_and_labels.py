"""Hostile checkpoints, minor cases (issue #47 item 9): a network's weights are float32 / float64 of
the declared shape (bool or int8 tables loaded and played), and a checkpoint's recorded class must be
the class of the agent it names (a ppo checkpoint relabelled ``sb3-maskppo`` loaded: same shapes)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from agents.base import Budget
from agents.checkpoint import load_checkpoint, read_checkpoint
from agents.registry import create_agent
from engine import Game
from tests.agents.test_checkpoint_hostile import entries, files, refused, write

__all__ = ["files"]  # the module-scoped fixture of small real checkpoints, shared

HAVE_SB3 = (
    importlib.util.find_spec("stable_baselines3") is not None
    and importlib.util.find_spec("sb3_contrib") is not None
)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8])
@pytest.mark.parametrize(
    ("agent", "entry", "match"),
    [
        ("dqn", "net/net.1.weight", "'net/net.1.weight' has type {t}, not float32 or float64"),
        ("dqn", "target/net.3.bias", "'target/net.3.bias' has type {t}, not float32 or float64"),
        ("ntuple", "weights", "weights has type {t}, not float32 or float64"),
    ],
)
def test_bool_and_int8_weights_are_refused_naming_the_array(
    files: dict[str, Path], tmp_path: Path, agent: str, entry: str, match: str, dtype: type
) -> None:
    meta, arrays = entries(files[agent])
    assert entry in arrays and arrays[entry].dtype == np.float32
    arrays[entry] = (arrays[entry] > 0).astype(dtype)  # a sign table: loaded and played before
    path = write(tmp_path / "typed.npz", meta, arrays)
    err = refused(path, match.format(t=np.dtype(dtype).name))
    assert str(err).startswith("typed.npz does not fit agent")


def test_float64_weights_of_the_declared_shape_still_load(files: dict[str, Path], tmp_path: Path) -> None:
    meta, arrays = entries(files["dqn"])
    arrays = {k: v.astype(np.float64) if k.startswith("net/") else v for k, v in arrays.items()}
    loaded = load_checkpoint(write(tmp_path / "f64.npz", meta, arrays))
    game = Game(seed=5)
    assert loaded.move_values(game) == load_checkpoint(files["dqn"]).move_values(game)


def test_the_saving_class_is_recorded_and_a_mismatch_refused(files: dict[str, Path], tmp_path: Path) -> None:
    meta, arrays = entries(files["dqn"])
    assert meta["class"] == "DQNAgent"
    meta["class"] = "TDAfterstateAgent"
    refused(
        write(tmp_path / "other.npz", meta, arrays),
        r"^other.npz was saved by class TDAfterstateAgent, not by DQNAgent of agent 'dqn': relabelled, refused$",
    )
    meta["class"] = ["DQNAgent"]
    refused(write(tmp_path / "list.npz", meta, arrays), r"its class \['DQNAgent'\] is not a class name")
    # checkpoints written before the class was recorded load as before
    del meta["class"]
    assert load_checkpoint(write(tmp_path / "old.npz", meta, arrays)).name == "dqn"


@pytest.mark.skipif(not HAVE_SB3, reason="Stable-Baselines3 is not installed (pip install -e .[sb3])")
def test_a_ppo_checkpoint_relabelled_maskppo_is_refused(tmp_path: Path) -> None:
    tiny = {"n_envs": 2, "n_steps": 32, "batch_size": 32, "n_epochs": 1, "hidden": (8,), "chunk_steps": 64}
    ppo = create_agent("sb3-ppo", tiny, seed=2)
    for _ in ppo.train(Budget(steps=64)):
        pass
    path = ppo.save(tmp_path / "ppo.npz")
    assert read_checkpoint(path, arrays=False)[0]["class"] == "SB3PPOAgent"
    meta, arrays = entries(path)
    meta["agent"] = "sb3-maskppo"  # the same arrays and shapes: without the class it loaded
    refused(
        write(tmp_path / "relabelled.npz", meta, arrays),
        "relabelled.npz was saved by class SB3PPOAgent, not by SB3MaskablePPOAgent of agent 'sb3-maskppo'",
    )
    del meta["class"]  # what an older studio wrote: shapes alone cannot tell the two apart
    assert load_checkpoint(write(tmp_path / "unmarked.npz", meta, arrays)).name == "sb3-maskppo"
    assert load_checkpoint(path).name == "sb3-ppo"
