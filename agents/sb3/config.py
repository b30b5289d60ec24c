"""The knobs of the SB3 agents: SB3's own hyper-parameters (their defaults tuned for 2048 where SB3's are
Atari's), plus how the board and the reward reach the learner."""

from __future__ import annotations

from dataclasses import dataclass

from agents.config import AgentConfig, ConfigError, knob, same_knob
from agents.nn.device import device_knob

REWARDS = ("score", "log2_score")
ACTIVATIONS = ("relu", "tanh")


@dataclass
class SB3Config(AgentConfig):
    """What every SB3 agent shares: board encoding, network, reward, parallel games, optimiser rate."""

    encoder: str = knob(
        "onehot",
        "board encoding: onehot planes per exponent, or raw exponents / planes",
        choices=("onehot", "raw"),
    )
    planes: int = knob(16, "one-hot planes (exponents >= planes share the last plane)", low=2, high=32)
    hidden: tuple[int, ...] = knob((256, 256), "hidden layer widths of the networks", low=1, high=4096)
    activation: str = knob("relu", "activation between hidden layers", choices=ACTIVATIONS)
    reward: str = knob(
        "log2_score", "reward of a move: score gained, or log2(1 + score gained)", choices=REWARDS
    )
    reward_scale: float = knob(0.1, "rewards are multiplied by this", low=1e-6, high=1e6)
    n_envs: int = knob(
        8, "games played side by side (SB3's vectorised environment)", low=1, high=256, label="Parallel games"
    )
    gamma: float = knob(0.99, "discount factor", low=0.0, high=1.0)
    lr: float = knob(3e-4, "Adam learning rate", low=1e-7, high=1.0, log=True)
    max_grad_norm: float = knob(0.5, "gradient norm clip", low=0.0, high=1e6)
    chunk_steps: int = knob(
        2048,
        "moves per call of SB3's learn(): events reach the curves, and pause takes effect, between calls",
        low=1,
        high=10_000_000,
        advanced=True,
        label="Moves per learn() call",
    )
    device: str = device_knob()


@dataclass
class OnPolicyConfig(SB3Config):
    """PPO / A2C settings shared by both."""

    n_steps: int = knob(
        256,
        "moves per game between updates (a rollout is n_steps x n_envs moves)",
        low=1,
        high=100_000,
        label="Rollout moves per game",
    )
    gae_lambda: float = knob(
        0.95, "GAE lambda (1 = Monte-Carlo advantages)", low=0.0, high=1.0, label="GAE λ"
    )
    ent_coef: float = knob(0.01, "entropy bonus weight", low=0.0, high=10.0, label="Entropy bonus")
    vf_coef: float = knob(0.5, "value loss weight", low=0.0, high=10.0, label="Value loss weight")
    normalize_advantage: bool = knob(True, "normalise advantages per batch")


@dataclass
class PPOConfig(OnPolicyConfig):
    """Proximal Policy Optimisation (Stable-Baselines3)."""

    batch_size: int = knob(256, "minibatch size of the PPO epochs", low=2, high=1_000_000)
    n_epochs: int = knob(4, "passes over each rollout", low=1, high=100)
    clip_range: float = knob(0.2, "PPO clipping of the policy ratio", low=0.0, high=10.0)
    target_kl: float = knob(
        0.0,
        "stop a rollout's epochs early past this KL divergence; 0 = never",
        low=0.0,
        high=10.0,
        label="Target KL",
    )

    def validate(self) -> None:
        if self.batch_size > self.n_steps * self.n_envs:
            raise ConfigError(
                "batch_size", f"must be at most n_steps x n_envs ({self.n_steps * self.n_envs}), one rollout"
            )


@dataclass
class MaskablePPOConfig(PPOConfig):
    """MaskablePPO (sb3-contrib): PPO whose policy only ever picks legal moves (the engine's mask)."""


@dataclass
class A2CConfig(OnPolicyConfig):
    """Advantage Actor-Critic (Stable-Baselines3)."""

    n_steps: int = same_knob(OnPolicyConfig, "n_steps", 8)
    gae_lambda: float = same_knob(OnPolicyConfig, "gae_lambda", 1.0)
    lr: float = knob(7e-4, "learning rate", low=1e-7, high=1.0, log=True)
    use_rms_prop: bool = knob(True, "RMSprop as in the A2C paper (else Adam)", label="RMSprop")


@dataclass
class DQNConfig(SB3Config):
    """Deep Q-learning (Stable-Baselines3)."""

    lr: float = same_knob(SB3Config, "lr", 1e-4)
    n_envs: int = same_knob(SB3Config, "n_envs", 4)
    max_grad_norm: float = same_knob(SB3Config, "max_grad_norm", 10.0)
    buffer_size: int = knob(100_000, "replay buffer capacity (moves)", low=100, high=10_000_000)
    learning_starts: int = knob(5_000, "moves played before the first update", low=0, high=10_000_000)
    batch_size: int = knob(128, "transitions per gradient update", low=1, high=8192)
    tau: float = knob(
        1.0, "target net soft-update factor (1 = hard copy)", low=0.0, high=1.0, label="Target update τ"
    )
    train_freq: int = knob(4, "moves (per game) between updates", low=1, high=10_000)
    gradient_steps: int = knob(1, "gradient steps per update", low=1, high=1000)
    target_update_interval: int = knob(5_000, "moves between target-net updates", low=1, high=10_000_000)
    eps_start: float = knob(
        1.0, "exploration rate at the start", low=0.0, high=1.0, label="Exploration ε start"
    )
    eps_end: float = knob(
        0.01, "exploration rate after eps_steps", low=0.0, high=1.0, label="Exploration ε end"
    )
    eps_steps: int = knob(
        100_000,
        "moves over which exploration falls linearly",
        low=1,
        high=1_000_000_000,
        label="Exploration ε moves",
    )
    mask_play: bool = knob(
        True,
        "greedy moves are the best legal ones (illegal moves are no-ops: unmasked, one can repeat forever)",
        label="Greedy moves legal only",
    )
    checkpoint_buffer: bool = knob(
        True, "save the replay buffer in checkpoints (exact resume; about 50 bytes a move)", advanced=True
    )

    def validate(self) -> None:
        if self.batch_size > self.buffer_size:
            raise ConfigError("batch_size", "cannot exceed buffer_size")
