"""PPO with action masking, on many games at once (issue #48).

``envs`` games run side by side on :class:`engine.batch.BatchEngine` (other rules: one
:class:`engine.Game` after another, :mod:`agents.nn.batch_games`). Each step is one forward pass of
one network over every game's board: four move logits and a value. Illegal moves get logit -inf, a
move is sampled from the rest, and every game moves in one call. After ``rollout`` steps the learner
computes generalised advantage estimates (GAE) and runs ``epochs`` passes of clipped-surrogate
minibatch updates over the ``envs x rollout`` moves (Schulman et al. 2017, with the invalid-action
masking of Huang & Ontañón 2020, as SB3-contrib's MaskablePPO does).

Every finished game yields one ``episode`` event with its trace; the x axis counts moves. Greedy play
(outside training) takes the most probable legal move.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from agents.base import Budget, Control, MetricEvent, TrainContext
from agents.config import AgentConfig, knob
from agents.metrics import LOSS, LR, MetricInfo
from agents.nn.agent import PolicyNetAgent
from agents.nn.batch_games import StepOut, TrainingGames, training_games
from agents.nn.device import device_knob, threads_knob, torch_threads
from agents.nn.encoders import ENCODERS, check_encoder_fits
from agents.nn.masking import masked_log_softmax, masked_softmax, sample_from_probs
from agents.training import TrainTracker
from engine import Rules
from engine.boards import N_ACTIONS

REWARDS = ("score", "log2_score")


@dataclass
class PPOConfig(AgentConfig):
    """Masked PPO settings (defaults sized for a 2-core laptop; a GPU takes more games)."""

    # named as dqn's: "games" would shadow the --games flag of eval and the Arena
    envs: int = knob(128, "games played side by side (one forward pass moves them all)", low=1, high=65_536)
    rollout: int = knob(64, "moves per game between updates", low=1, high=100_000)
    epochs: int = knob(3, "passes over each rollout", low=1, high=100)
    minibatch: int = knob(2048, "moves per gradient step", low=1, high=1_000_000)
    clip: float = knob(0.2, "PPO clip range of the probability ratio", low=0.0, high=10.0)
    gae_lambda: float = knob(0.95, "GAE lambda", low=0.0, high=1.0)
    gamma: float = knob(0.99, "discount factor", low=0.0, high=1.0)
    entropy: float = knob(0.01, "entropy bonus coefficient", low=0.0, high=10.0)
    value_coef: float = knob(0.5, "value loss weight", low=0.0, high=100.0)
    lr: float = knob(3e-4, "Adam learning rate", low=1e-7, high=1.0, log=True)
    grad_clip: float = knob(0.5, "gradient norm clip; 0 = off", low=0.0, high=1e6)
    reward: str = knob(
        "log2_score", "reward of a move: score gained or log2(1 + score gained)", choices=REWARDS
    )
    reward_scale: float = knob(0.1, "rewards are multiplied by this", low=1e-6, high=1e6)
    network: str = knob("mlp", "shared policy / value network", choices=("mlp", "cnn"))
    hidden: tuple[int, ...] = knob(
        (128, 128), "hidden layer widths (cnn: filters, head width)", low=1, high=4096
    )
    encoder: str = knob("onehot", "board encoding", choices=ENCODERS)
    planes: int = knob(16, "one-hot planes (exponents >= planes share the last plane)", low=2, high=32)
    threads: int = threads_knob()
    device: str = device_knob()

    def validate(self) -> None:
        check_encoder_fits(self.network, self.encoder)


@dataclass
class Rollout:
    """``rollout`` steps of every game: T steps x N games."""

    obs: list[np.ndarray] = field(default_factory=list)  # (N, R, C) uint8 each
    masks: list[np.ndarray] = field(default_factory=list)  # (N, 4) bool
    actions: list[np.ndarray] = field(default_factory=list)  # (N,) int64
    logps: list[np.ndarray] = field(default_factory=list)  # (N,) float32
    values: list[np.ndarray] = field(default_factory=list)  # (N,) float32
    rewards: list[np.ndarray] = field(default_factory=list)  # (N,) float32
    dones: list[np.ndarray] = field(default_factory=list)  # (N,) bool

    def __len__(self) -> int:
        return len(self.actions)


def gae(
    rewards_TN: np.ndarray,
    values_TN: np.ndarray,
    dones_TN: np.ndarray,
    last_values_N: np.ndarray,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and returns ``(T, N)``. A game that ended at step t has no future:
    its bootstrap value and the advantage flowing back from step t + 1 (the next game's) are cut."""
    t_len = len(rewards_TN)
    adv_TN = np.zeros_like(rewards_TN)
    last_N = np.zeros_like(last_values_N)
    next_v_N = last_values_N
    for t in range(t_len - 1, -1, -1):
        live_N = 1.0 - dones_TN[t].astype(np.float32)
        delta_N = rewards_TN[t] + gamma * next_v_N * live_N - values_TN[t]
        last_N = delta_N + gamma * lam * live_N * last_N
        adv_TN[t] = last_N
        next_v_N = values_TN[t]
    return adv_TN, adv_TN + values_TN


class PPOAgent(PolicyNetAgent):
    """Masked PPO on many games at once: sampled legal moves, GAE, clipped minibatch updates."""

    name = "ppo"
    smoke_config: ClassVar[Mapping[str, Any]] = {
        "envs": 4,
        "rollout": 16,
        "epochs": 2,
        "minibatch": 32,
        "hidden": (32, 32),
    }
    config_cls = PPOConfig
    description = (
        "Masked PPO: many games on the batched engine, one forward pass per move for all of them, "
        "illegal moves masked, GAE and clipped minibatch updates."
    )
    metrics = (
        LOSS,
        MetricInfo("value_loss", "Value loss", group="Loss", kind="loss", scale="log"),
        MetricInfo(
            "entropy", "Policy entropy", group="Entropy", help="mean entropy of the legal-move policy"
        ),
        MetricInfo(
            "clip_frac", "Clipped share", group="Clipped share", help="share of moves whose ratio was clipped"
        ),
        LR,
    )
    config: PPOConfig

    def __init__(self, config: PPOConfig | None = None, rules: Rules | None = None, seed: int | None = None):
        super().__init__(config, rules, seed)
        cfg = self.config
        # One network, two heads: outputs 0..3 are the move logits, output 4 the board's value.
        self.build_net(cfg.encoder, cfg.planes, cfg.network, cfg.hidden, N_ACTIONS + 1)
        self.place_on_device()

    def _build_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.net.parameters(), lr=self.config.lr, eps=1e-5)

    def head_outputs(self, exps_BRC: np.ndarray, net: nn.Module | None = None) -> torch.Tensor:
        """The move logits (the value output is dropped): what play and move values read."""
        return super().head_outputs(exps_BRC, net)[:, :N_ACTIONS]

    def _rewards(self, merged_N: np.ndarray) -> np.ndarray:
        if self.config.reward == "score":
            r = merged_N.astype(np.float32)
        else:
            r = np.log2(1.0 + merged_N).astype(np.float32)
        return r * np.float32(self.config.reward_scale)

    # ------------------------------------------------------------------ collection
    @torch.no_grad()
    def policy_step(
        self, obs_NRC: np.ndarray, mask_NA: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One forward pass over every game: (sampled legal moves, their log-probabilities, values)."""
        if self.net.training:
            self.net.eval()
        out_NO = self.net(self.encoder.tensor(obs_NRC))
        probs_NA = masked_softmax(out_NO[:, :N_ACTIONS], self.tensor(mask_NA)).cpu().numpy()
        values_N = out_NO[:, N_ACTIONS].cpu().numpy().astype(np.float32)
        moves_N = sample_from_probs(probs_NA, mask_NA, self.rng.random(len(mask_NA)))
        picked_N = probs_NA[np.arange(len(moves_N)), moves_N]
        logps_N = np.log(np.maximum(picked_N, 1e-30)).astype(np.float32)
        return moves_N, logps_N, values_N

    @torch.no_grad()
    def _values(self, obs_NRC: np.ndarray) -> np.ndarray:
        if self.net.training:
            self.net.eval()
        return self.net(self.encoder.tensor(obs_NRC))[:, N_ACTIONS].cpu().numpy().astype(np.float32)

    def _collect_step(self, games: TrainingGames, roll: Rollout) -> StepOut:
        obs, mask = games.obs, games.mask
        moves_N, logps_N, values_N = self.policy_step(obs, mask)
        out = games.step(moves_N)
        roll.obs.append(obs)
        roll.masks.append(mask)
        roll.actions.append(moves_N)
        roll.logps.append(logps_N)
        roll.values.append(values_N)
        roll.rewards.append(self._rewards(out.reward_N))
        roll.dones.append(out.done_N)
        self.counters.steps += games.n
        return out

    # ------------------------------------------------------------------ learning
    def learn(self, roll: Rollout, last_obs_NRC: np.ndarray) -> dict[str, float]:
        """GAE over the rollout, then ``epochs`` passes of clipped minibatch steps; the mean statistics."""
        cfg = self.config
        adv_TN, ret_TN = gae(
            np.stack(roll.rewards),
            np.stack(roll.values),
            np.stack(roll.dones),
            self._values(last_obs_NRC),
            cfg.gamma,
            cfg.gae_lambda,
        )
        x = self.encoder.tensor(np.concatenate(roll.obs))
        masks = self.tensor(np.concatenate(roll.masks))
        actions = self.tensor(np.concatenate(roll.actions))
        old_logps = self.tensor(np.concatenate(roll.logps))
        adv = self.tensor(adv_TN.reshape(-1))
        ret = self.tensor(ret_TN.reshape(-1))
        n = len(actions)
        mb = min(cfg.minibatch, n)
        stats: dict[str, list[float]] = {"loss": [], "value_loss": [], "entropy": [], "clip_frac": []}
        self.net.train()
        for _ in range(cfg.epochs):
            order = self.rng.permutation(n)
            for start in range(0, n, mb):
                idx = self.tensor(order[start : start + mb])
                for key, value in self._minibatch(
                    x[idx], masks[idx], actions[idx], old_logps[idx], adv[idx], ret[idx]
                ).items():
                    stats[key].append(value)
        return {k: float(np.mean(v)) for k, v in stats.items()}

    def _minibatch(
        self,
        x: torch.Tensor,
        mask_BA: torch.Tensor,
        actions_B: torch.Tensor,
        old_logps_B: torch.Tensor,
        adv_B: torch.Tensor,
        ret_B: torch.Tensor,
    ) -> dict[str, float]:
        cfg = self.config
        out_BO = self.net(x)
        logp_BA = masked_log_softmax(out_BO[:, :N_ACTIONS], mask_BA)
        logp_B = logp_BA.gather(1, actions_B[:, None]).squeeze(1)
        # Illegal moves have probability 0 and log-probability -inf: they add nothing to the entropy.
        entropy_B = -(logp_BA.exp() * logp_BA.masked_fill(~mask_BA, 0.0)).sum(dim=1)
        if len(adv_B) > 1:
            adv_B = (adv_B - adv_B.mean()) / (adv_B.std() + 1e-8)
        ratio_B = torch.exp(logp_B - old_logps_B)
        surrogate_B = torch.min(ratio_B * adv_B, ratio_B.clamp(1 - cfg.clip, 1 + cfg.clip) * adv_B)
        policy_loss = -surrogate_B.mean()
        value_loss = (out_BO[:, N_ACTIONS] - ret_B).pow(2).mean()
        entropy = entropy_B.mean()
        loss = policy_loss + cfg.value_coef * value_loss - cfg.entropy * entropy
        self.descend(loss, cfg.grad_clip)
        clipped = ((ratio_B - 1.0).abs() > cfg.clip).float().mean()
        return {
            "loss": float(loss.item()),
            "value_loss": float(value_loss.item()),
            "entropy": float(entropy.item()),
            "clip_frac": float(clipped.item()),
        }

    # ------------------------------------------------------------------ training
    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        with torch_threads(self.config.threads):
            yield from self._train(budget, control)

    def _train(self, budget: Budget, control: Control | None) -> Iterator[MetricEvent]:
        cfg = self.config
        tracker = self.start_training(budget, control)
        games = training_games(cfg.envs, self.rules, self.rng)
        pending: dict[str, float] = {}
        live_t = tracker.clock.call_seconds
        while True:
            roll = Rollout()
            while len(roll) < cfg.rollout and tracker.proceed():
                out = self._collect_step(games, roll)
                for f in out.finished:
                    self.counters.episodes += 1
                    metrics = {
                        **f.metrics(),
                        "lr": cfg.lr,
                        "steps_per_s": tracker.steps_per_s(),
                        **pending,
                    }
                    # The statistics of an update go with the first game that ends after it.
                    pending = {}
                    yield tracker.event("episode", metrics, game=f.trace)
            if len(roll) < cfg.rollout:
                break  # budget used or stopped: a partial rollout is dropped
            pending = self.learn(roll, games.obs)
            if tracker.clock.call_seconds - live_t >= 1.0:
                live_t = tracker.clock.call_seconds
                yield self._live_event(tracker, games)
        tracker.clock.tick()

    def _live_event(self, tracker: TrainTracker, games: TrainingGames) -> MetricEvent:
        """A live board for displays, at most once a second (episode events do not depend on timing).

        Without the update's statistics: they go with the first game that ends after it, once. Sent
        here as well, each loss was recorded twice, and two equal values read as a constant to the
        curves (folded into a line of text, back to a plot at the next update: the grid re-laid and
        every plot repainted twice in a run's first seconds, the window's longest stalls).
        """
        metrics = {"steps_per_s": tracker.steps_per_s()}
        return tracker.event("update", metrics, board=games.board(0))
