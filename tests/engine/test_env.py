"""Game2048Env: the Gymnasium contract, on several board sizes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from engine import Game, Game2048Env, Rules, to_exponents
from tests.engine.strategies import SHAPES


def test_passes_gymnasium_env_checker():
    check_env(Game2048Env(), skip_render_check=True)
    check_env(Game2048Env(rows=3, cols=5), skip_render_check=True)


def test_spaces():
    env = Game2048Env()
    assert env.action_space == gym.spaces.Discrete(4)
    assert env.observation_space.shape == (4, 4) and env.observation_space.dtype == np.uint8
    assert env.observation_space.high.max() == 17  # 16 cells + a spawned 4: 2**17 is the largest tile
    assert Game2048Env(rows=3, cols=5).observation_space.shape == (3, 5)


@pytest.mark.parametrize(("rows", "cols"), SHAPES)
def test_episode_matches_game_from_the_same_seed(rows, cols):
    env = Game2048Env(rows=rows, cols=cols)
    obs, info = env.reset(seed=5)
    game = Game(rows, cols, seed=5)
    assert np.array_equal(obs, to_exponents(game.board)) and obs.dtype == np.uint8
    assert info["action_mask"].tolist() == game.legal_mask().astype(int).tolist()
    assert info["action_mask"].dtype == np.int8
    rng = np.random.default_rng(0)
    terminated = False
    total = 0.0
    while not terminated:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        res = game.step(action)
        total += reward
        assert reward == res.reward and terminated == res.game_over and truncated is False
        assert np.array_equal(obs, to_exponents(game.board)) and env.observation_space.contains(obs)
        assert (
            info["score"] == game.score and info["max_tile"] == game.max_tile and not info["illegal_action"]
        )
    assert total == game.score and info["action_mask"].sum() == 0


def test_illegal_action_is_a_noop_with_a_flag():
    env = Game2048Env()
    board = np.array([[2, 4, 0, 0], [0] * 4, [0] * 4, [0] * 4])
    obs, info = env.reset(seed=1, options={"board": board})
    assert info["action_mask"].tolist() == [0, 0, 1, 1]
    rng_before = env.game.rng_state
    obs2, reward, terminated, truncated, info2 = env.step(1)  # left changes nothing
    assert reward == 0.0 and not terminated and not truncated and info2["illegal_action"]
    assert np.array_equal(obs2, obs) and env.game.rng_state == rng_before and env.game.moves == 0
    _obs3, reward, terminated, _, info3 = env.step(3)  # right is legal
    assert not info3["illegal_action"] and env.game.moves == 1


def test_terminates_when_no_move_is_left():
    env = Game2048Env(rules=Rules(p4=0.0))
    # one legal move (left/right merge of the two 2s); afterwards the board is stuck whatever spawns
    board = np.array([[2, 2, 8, 16], [32, 64, 128, 256], [512, 1024, 2048, 4096], [8192, 16384, 32768, 4]])
    env.reset(seed=0, options={"board": board})
    _obs, reward, terminated, truncated, info = env.step(1)
    assert reward == 4.0 and terminated and not truncated and info["action_mask"].sum() == 0


def test_reset_without_seed_is_driven_by_np_random():
    a, b = Game2048Env(), Game2048Env()
    a.reset(seed=3)
    b.reset(seed=3)
    oa, _ = a.reset()
    ob, _ = b.reset()
    assert np.array_equal(oa, ob)


def test_big_tiles_show_as_exponents():
    env = Game2048Env()
    board = np.array([[65536, 65536, 0, 0], [0] * 4, [0] * 4, [0] * 4])
    obs, _ = env.reset(seed=0, options={"board": board})
    assert obs[0, 0] == 16
    obs, reward, *_ = env.step(1)
    assert reward == 131072.0 and obs[0, 0] == 17


def test_render_ansi_and_action_masks():
    env = Game2048Env(render_mode="ansi")
    env.reset(seed=2)
    assert env.render() == env.game.render_text()
    assert env.action_masks().dtype == bool
    assert Game2048Env().render() is None


@pytest.mark.parametrize("action", [4, -1, 1.0, "up", True])
def test_bad_actions(action):
    env = Game2048Env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="0 \\(up\\)"):
        env.step(action)


def test_bad_construction():
    with pytest.raises(ValueError, match="render_mode"):
        Game2048Env(render_mode="human")
    with pytest.raises(ValueError, match="disagree"):
        Game2048Env(rules=Rules(rows=3, cols=3), rows=4)
    with pytest.raises(ValueError, match="Rules"):
        Game2048Env(rows=0)
