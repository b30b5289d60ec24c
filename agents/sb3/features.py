"""Torch pieces the SB3 policies use: a one-hot board encoder and legal moves read off the board."""

from __future__ import annotations

import gymnasium as gym
import torch
import torch.nn.functional as F
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import PyTorchObs
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork

from agents.nn.masking import masked_argmax


class OneHotBoard(BaseFeaturesExtractor):
    """Exponent boards ``(B, rows, cols)`` as one-hot planes, flattened: ``rows * cols * planes`` features.

    Exponents ``>= planes`` share the last plane (as the studio's own ``onehot`` encoder does).
    """

    def __init__(self, observation_space: gym.spaces.Box, planes: int = 16) -> None:
        cells = int(observation_space.shape[0] * observation_space.shape[1])
        super().__init__(observation_space, features_dim=cells * planes)
        self.planes = planes

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        idx = observations.long().clamp(0, self.planes - 1)
        return F.one_hot(idx, self.planes).flatten(1).float()


class RawBoard(BaseFeaturesExtractor):
    """The exponents themselves, flattened and divided by ``planes`` (near [0, 1])."""

    def __init__(self, observation_space: gym.spaces.Box, planes: int = 16) -> None:
        cells = int(observation_space.shape[0] * observation_space.shape[1])
        super().__init__(observation_space, features_dim=cells)
        self.planes = planes

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return observations.float().flatten(1) / self.planes


EXTRACTORS: dict[str, type[BaseFeaturesExtractor]] = {"onehot": OneHotBoard, "raw": RawBoard}


def legal_mask_torch(exps_BRC: torch.Tensor) -> torch.Tensor:
    """Legal moves ``(B, 4)`` (up, left, down, right) of exponent boards, in torch.

    A move is legal when some tile can slide into an empty cell or merge with its equal neighbour in
    that direction (the rule of :func:`engine.core.legal_mask`; tests check the two agree).
    """
    b = exps_BRC.long()

    def toward_start(x: torch.Tensor, dim: int) -> torch.Tensor:
        # a tile at index i > 0 moves to i - 1 when that cell is empty or holds its equal
        n = x.shape[dim]
        head, tail = x.narrow(dim, 0, n - 1), x.narrow(dim, 1, n - 1)
        return ((tail != 0) & ((head == 0) | (head == tail))).flatten(1).any(dim=1)

    def toward_end(x: torch.Tensor, dim: int) -> torch.Tensor:
        n = x.shape[dim]
        head, tail = x.narrow(dim, 0, n - 1), x.narrow(dim, 1, n - 1)
        return ((head != 0) & ((tail == 0) | (head == tail))).flatten(1).any(dim=1)

    return torch.stack([toward_start(b, 1), toward_start(b, 2), toward_end(b, 1), toward_end(b, 2)], dim=1)


class MaskedQNetwork(QNetwork):
    """SB3's Q-network whose greedy action is the best **legal** move (illegal moves are no-ops in the env,
    so an unmasked greedy DQN can repeat one forever)."""

    def _predict(self, observation: PyTorchObs, deterministic: bool = True) -> torch.Tensor:
        assert isinstance(observation, torch.Tensor)  # a Box space: one tensor, never a dict
        q_values = self(observation)
        mask = legal_mask_torch(observation)
        action = masked_argmax(q_values, mask).clamp(min=0)
        return action.reshape(-1)


class MaskedDQNPolicy(DQNPolicy):
    """:class:`DQNPolicy` with :class:`MaskedQNetwork` as its online and target networks."""

    def make_q_net(self) -> QNetwork:
        net_args = self._update_features_extractor(self.net_args, features_extractor=None)
        return MaskedQNetwork(**net_args).to(self.device)
