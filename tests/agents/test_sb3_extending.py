"""SB3Agent as a base to extend: a plug-in with its own CNN feature extractor (docs/agents.md's example,
"Extending SB3Agent") builds, trains a few hundred moves, plays legal moves and round-trips a checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="Stable-Baselines3 is not installed (pip install -e .[sb3])")
pytest.importorskip("sb3_contrib", reason="sb3-contrib is not installed (pip install -e .[sb3])")

# ---- docs/agents.md's example, as a plug-in module would hold it --------------------------------
import gymnasium as gym
import torch
import torch.nn.functional as F
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from agents.config import knob
from agents.sb3.agents import SB3PPOAgent
from agents.sb3.config import PPOConfig


class BoardCNN(BaseFeaturesExtractor):
    """One-hot planes of the exponents, two 2x2 convolutions, flattened."""

    def __init__(self, observation_space: gym.spaces.Box, planes: int = 16, channels: int = 32) -> None:
        rows, cols = observation_space.shape
        super().__init__(observation_space, features_dim=channels * (rows - 2) * (cols - 2))
        self.planes = planes
        self.net = nn.Sequential(
            nn.Conv2d(planes, channels, 2),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 2),
            nn.ReLU(),
            nn.Flatten(),
        )

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        idx = observations.long().clamp(0, self.planes - 1)  # (B, rows, cols) exponents, as floats
        return self.net(F.one_hot(idx, self.planes).permute(0, 3, 1, 2).float())


@dataclass
class CNNPPOConfig(PPOConfig):
    channels: int = knob(32, "convolution channels", low=1, high=1024)


class CNNPPOAgent(SB3PPOAgent):
    name = "cnn-ppo"
    config_cls = CNNPPOConfig
    description = "PPO whose policy reads the board through two 2x2 convolutions."
    config: CNNPPOConfig

    def features_extractor(self) -> tuple[type[BaseFeaturesExtractor], dict[str, Any]]:
        return BoardCNN, {"planes": self.config.planes, "channels": self.config.channels}


# -------------------------------------------------------------------------------------------------

from agents import registry  # noqa: E402
from agents.base import Budget  # noqa: E402
from agents.checkpoint import load_checkpoint  # noqa: E402
from engine import Game, Rules  # noqa: E402
from engine.boards import game_exponents  # noqa: E402

TINY: dict[str, Any] = {
    "n_envs": 2,
    "n_steps": 32,
    "batch_size": 32,
    "n_epochs": 2,
    "hidden": (16,),
    "chunk_steps": 64,
}


def test_a_cnn_plugin_builds_trains_and_round_trips(tmp_path, monkeypatch):
    monkeypatch.setattr(
        registry, "_default", registry.default_registry().with_agents({"cnn-ppo": f"{__name__}:CNNPPOAgent"})
    )
    agent = CNNPPOAgent(CNNPPOConfig(channels=8, **TINY), Rules(), seed=3)
    policy: Any = agent.model.policy
    assert isinstance(policy.features_extractor, BoardCNN)
    assert policy.features_extractor.features_dim == 8 * 2 * 2
    assert policy.mlp_extractor.policy_net[0].in_features == 32  # the CNN's features, not the board's 16
    conv: Any = policy.features_extractor.net[0]
    conv_before = conv.weight.detach().clone()

    events = list(agent.train(Budget(steps=128)))
    assert agent.counters.steps >= 128 and agent.counters.updates > 0
    assert any(e.kind == "update" for e in events)
    assert not torch.equal(conv.weight, conv_before)  # the CNN learnt

    game = Game(seed=7)
    for _ in range(20):  # its moves are legal ones
        if game.game_over:
            break
        move = agent.act(game)
        assert game.legal_mask()[move]
        game.step(move)

    path = agent.save(tmp_path / "cnn.npz")
    loaded: Any = load_checkpoint(path, device="cpu")
    assert type(loaded) is CNNPPOAgent and loaded.config.channels == 8
    board = np.stack([game_exponents(Game(seed=s)) for s in range(4)])
    mask = np.ones((4, 4), dtype=bool)
    assert torch.equal(loaded.action_values(board, mask), agent.action_values(board, mask))


def test_policy_kwargs_is_the_hook_for_more_sb3_options():
    class NoOrthoInit(SB3PPOAgent):
        name = "sb3-ppo"  # not registered: a subclass used in place

        def policy_kwargs(self) -> dict[str, Any]:
            return {**super().policy_kwargs(), "ortho_init": False, "share_features_extractor": False}

    plain = SB3PPOAgent(PPOConfig(**TINY), Rules(), seed=1)
    other = NoOrthoInit(PPOConfig(**TINY), Rules(), seed=1)
    assert plain.model.policy.ortho_init is True and plain.model.policy.share_features_extractor is True
    assert other.model.policy.ortho_init is False and other.model.policy.share_features_extractor is False
    assert plain.policy_kwargs()["net_arch"] == [16] and plain.features_extractor()[1] == {"planes": 16}
