"""Game2048Env under its Gymnasium id: gymnasium.make / make_vec by "studio2048/Game2048-v0", the mask in info."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import gymnasium as gym
import numpy as np

from engine.env import ENV_ID, Game2048Env, register_envs

ID = "studio2048/Game2048-v0"


def test_make_by_id_resets_and_steps_with_the_mask_in_info():
    env = gym.make(ID)
    try:
        assert ENV_ID == ID
        assert isinstance(env.unwrapped, Game2048Env)
        obs, info = env.reset(seed=3)
        assert obs.shape == (4, 4) and obs.dtype == np.uint8
        assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (4,)
        assert info["action_mask"].tolist() == env.unwrapped.game.legal_mask().astype(int).tolist()
        action = int(np.flatnonzero(info["action_mask"])[0])
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["moves"] == 1 and not info["illegal_action"]
        assert (terminated, truncated) == (False, False) and float(reward) >= 0.0
        assert info["action_mask"].tolist() == env.unwrapped.game.legal_mask().astype(int).tolist()
    finally:
        env.close()


def test_make_passes_keyword_arguments_to_the_constructor():
    env = gym.make(ID, rows=3, cols=5)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 5)
    env.close()


def test_make_vec_with_two_envs_stacks_observations_and_masks():
    envs = gym.make_vec(ID, num_envs=2, vectorization_mode="sync")
    try:
        obs, info = envs.reset(seed=[1, 2])  # type: ignore[arg-type]  # Gymnasium takes a list too
        assert obs.shape == (2, 4, 4) and obs.dtype == np.uint8
        masks = info["action_mask"]
        assert masks.shape == (2, 4)
        # each row is its own game's mask: the games of seeds 1 and 2, as Game2048Env plays them
        for row, seed in zip(masks, (1, 2)):
            _, single = Game2048Env().reset(seed=seed)
            assert row.tolist() == single["action_mask"].tolist()
        actions = np.array([int(np.flatnonzero(m)[0]) for m in masks])
        obs, rewards, terminated, _, info = envs.step(actions)
        assert rewards.shape == (2,) and terminated.tolist() == [False, False]
        assert info["moves"].tolist() == [1, 1] and info["action_mask"].shape == (2, 4)
    finally:
        envs.close()


def test_registering_twice_keeps_one_entry_without_a_warning(recwarn):
    register_envs()
    register_envs()
    assert [k for k in gym.registry if k == ID] == [ID]
    assert not [w for w in recwarn if "Overriding" in str(w.message)]


def test_entry_point_is_installed_and_registers():
    points = {e.name: e for e in importlib.metadata.entry_points(group="gymnasium.envs")}
    assert points["studio2048"].value == "engine.env:register_envs"
    assert points["studio2048"].load() is register_envs


def test_fresh_interpreter_makes_it_by_id_without_importing_the_studio():
    # Gymnasium 0.29 runs the entry point on import; from 1.0 the "module:" prefix imports engine.env
    code = (
        "import gymnasium as gym, numpy as np\n"
        "legacy = int(gym.__version__.split('.')[0]) < 1\n"
        f"env = gym.make({ID!r} if legacy else 'engine.env:' + {ID!r})\n"
        "obs, info = env.reset(seed=0)\n"
        "print(type(env.unwrapped).__name__, obs.shape, info['action_mask'].tolist())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    _, info = Game2048Env().reset(seed=0)
    assert out.stdout.split("\n")[0] == f"Game2048Env (4, 4) {info['action_mask'].tolist()}"
