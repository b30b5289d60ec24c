"""The SB3 agents: ``sb3-ppo``, ``sb3-a2c``, ``sb3-dqn`` and ``sb3-maskppo``.

Each builds its SB3 model in ``__init__`` from the config (so that a checkpoint is rebuilt from its JSON
config and then given its weights), trains it by calling SB3's ``learn`` in chunks of ``chunk_steps``
moves, and plays by the policy's best **legal** move (masked argmax of the action probabilities or
Q-values): evaluation, the Arena and hints never make an illegal move, whatever the policy learnt.

Checkpoints hold the policy's parameters and buffers (DQN: online and target nets) and the optimiser's
state as arrays, SB3's counters and the agent's generator as JSON, and for DQN the replay buffer's
arrays: no pickle anywhere (SB3's ``model.save`` pickles parts of the model, so it is not used).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.dqn.policies import DQNPolicy
from torch import nn

from agents.base import Agent, Budget, Control, MetricEvent, TrainContext, legal_values
from agents.checkpoint import state_array, state_int
from agents.metrics import EPSILON, LR, MetricInfo
from agents.nn.device import resolve_device
from agents.nn.masking import masked_argmax, masked_softmax
from agents.nn.state import (
    draw_seed,
    load_networks_state,
    networks_state,
    numpy_rng_state,
    set_numpy_rng_state,
)
from agents.review import Calibration, fit_calibration
from agents.sb3.bridge import LoggedValues, StepSchedule, StudioCallback, game_of, make_vec_env, shape_reward
from agents.sb3.config import A2CConfig, DQNConfig, MaskablePPOConfig, PPOConfig, SB3Config
from agents.sb3.features import EXTRACTORS, MaskedDQNPolicy
from agents.td_afterstate import expand
from agents.training import TrainTracker
from engine import DIRECTIONS, Direction, Game, Rules
from engine.boards import afterstates, game_exponents

ACTIVATION: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh}

_LINEAR_LOSS = MetricInfo(
    "loss", "Loss", group="Loss", kind="loss", help="SB3's training loss of the last update"
)
EP_REWARD = MetricInfo(
    "ep_reward", "Episode reward", kind="score", help="mean shaped reward per game of SB3's last 100 games"
)
ON_POLICY_METRICS: tuple[MetricInfo, ...] = (
    MetricInfo("policy_loss", "Policy loss", kind="loss", help="policy-gradient loss of the last update"),
    MetricInfo("value_loss", "Value loss", kind="loss", scale="log", help="value-function loss"),
    MetricInfo("entropy", "Entropy", kind="other", help="mean entropy of the policy (nats)"),
    MetricInfo(
        "explained_variance",
        "Explained variance",
        kind="other",
        help="1 - Var(returns - values) / Var(returns): how well the value net predicts returns",
    ),
    EP_REWARD,
    LR,
)
PPO_METRICS: tuple[MetricInfo, ...] = (
    _LINEAR_LOSS,
    *ON_POLICY_METRICS,
    MetricInfo(
        "approx_kl", "Approx. KL", group="PPO step", kind="other", help="KL between old and new policy"
    ),
    MetricInfo(
        "clip_fraction", "Clip fraction", group="PPO step", kind="other", help="share of clipped ratios"
    ),
)


class SB3Agent(Agent):
    """An SB3 algorithm as a studio learner (subclasses name the algorithm, its policy and its knobs).

    A base to extend: subclass one of the four agents below and override :meth:`features_extractor`
    (a custom network reading the board) or :meth:`policy_kwargs` (more of SB3's policy options); a
    config subclass adds their knobs. docs/agents.md ("Extending SB3Agent") has a CNN example.
    """

    trainable = True
    value_kind = "share"
    algorithm: ClassVar[type[BaseAlgorithm]]
    policy_class: ClassVar[type[BasePolicy]]
    config: SB3Config

    def __init__(self, config: SB3Config | None = None, rules: Rules | None = None, seed: int | None = None):
        super().__init__(config, rules, seed)
        cfg = self.config
        self.device = resolve_device(cfg.device)
        self.vec_env = make_vec_env(self.rules, cfg.n_envs, cfg.reward, cfg.reward_scale)
        self.logged = LoggedValues()
        # SB3 seeds Python's, numpy's and torch's generators from this before it builds the networks:
        # one agent seed, the same initial weights.
        self.model = self.algorithm(
            self._policy(),
            self.vec_env,
            policy_kwargs=self.policy_kwargs(),
            seed=draw_seed(self.rng) % 2**32,
            device=self.device,
            verbose=0,
            **self._algorithm_kwargs(),
        )
        self.model.set_logger(Logger(folder=None, output_formats=[self.logged]))
        self._after_build()

    # ------------------------------------------------------------------ hooks
    # Public, for subclasses (docs/agents.md, "Extending SB3Agent"): both run in __init__, once
    # ``self.config``, ``self.rules``, ``self.device`` and ``self.vec_env`` are set and before the model
    # is built, so they may read the config (its knobs, a subclass's own included).

    def features_extractor(self) -> tuple[type[BaseFeaturesExtractor], dict[str, Any]]:
        """SB3's ``features_extractor_class`` and its keyword arguments: what turns the observations
        (``(B, rows, cols)`` exponents, as floats) into the features the policy's layers read.
        Default: the ``encoder`` knob's extractor (:data:`agents.sb3.features.EXTRACTORS`)."""
        return EXTRACTORS[self.config.encoder], {"planes": self.config.planes}

    def policy_kwargs(self) -> dict[str, Any]:
        """SB3's ``policy_kwargs`` (the network): :meth:`features_extractor`, the ``hidden`` widths as
        ``net_arch`` and the ``activation``. Override to add SB3 policy options; keep to options whose
        values checkpoints can rebuild from the config (the weights are loaded into a rebuilt model)."""
        cfg = self.config
        extractor, extractor_kwargs = self.features_extractor()
        return {
            "features_extractor_class": extractor,
            "features_extractor_kwargs": extractor_kwargs,
            "net_arch": list(cfg.hidden),
            "activation_fn": ACTIVATION[cfg.activation],
        }

    #: knobs passed to the SB3 algorithm under their own name (SB3's)
    passed: ClassVar[tuple[str, ...]] = ("gamma", "max_grad_norm")

    def _algorithm_kwargs(self) -> dict[str, Any]:
        cfg = self.config
        return {"learning_rate": cfg.lr, **{k: getattr(cfg, k) for k in self.passed}}

    def _policy(self) -> type[BasePolicy]:
        return self.policy_class

    def _after_build(self) -> None:
        """Adjust the built model (DQN: its step-counted exploration)."""

    def _epsilon(self) -> float | None:
        return None

    def _learn(self, steps: int, callback: StudioCallback) -> None:
        self.model.learn(total_timesteps=steps, callback=callback, reset_num_timesteps=False)

    @torch.no_grad()
    def action_values(self, exps_BRC: np.ndarray, mask_BA: np.ndarray) -> torch.Tensor:
        """One value per move ``(B, 4)`` (probabilities over the legal moves; DQN: Q-values)."""
        policy: Any = self.model.policy
        policy.set_training_mode(False)
        obs = torch.as_tensor(exps_BRC, device=self.device)
        logits = policy.get_distribution(obs).distribution.logits
        return masked_softmax(logits, torch.as_tensor(mask_BA, device=self.device))

    # ------------------------------------------------------------------ play
    def move_values(self, game: Game) -> dict[Direction, float]:
        mask = game.legal_mask()
        values = self.action_values(game_exponents(game)[None], mask[None])
        return legal_values(game, values[0].cpu().numpy())

    def act(self, game: Game) -> Direction:
        mask = game.legal_mask()
        if not mask.any():
            raise ValueError("no legal move: the game is over")
        values = self.action_values(game_exponents(game)[None], mask[None])
        return DIRECTIONS[int(masked_argmax(values, torch.as_tensor(mask[None], device=self.device))[0])]

    # ------------------------------------------------------------------ training
    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        tracker = TrainTracker(self.counters, budget, control)
        # Everything random in SB3 (torch sampling, numpy exploration, the action space, new games)
        # is seeded from the agent's generator per call, and that generator is in checkpoints.
        seed = draw_seed(self.rng) % 2**32
        set_random_seed(seed)
        self.model.action_space.seed(seed)
        if self.model._last_obs is None:  # first call since built or loaded: the games start now
            self.vec_env.seed(seed)
        callback = StudioCallback(self, tracker, self._epsilon)
        while tracker.proceed():
            callback.events = []
            self._learn(self.config.chunk_steps, callback)
            self.model.logger.dump(self.model.num_timesteps)
            self.counters.steps = int(self.model.num_timesteps)
            self.counters.updates = int(getattr(self.model, "_n_updates", 0))
            yield from callback.events
            logged = self.logged.take()
            if logged:
                logged["steps_per_s"] = tracker.steps_per_s()
                yield tracker.event("update", logged, board=game_of(self.vec_env).board)
        tracker.clock.tick()

    # ------------------------------------------------------------------ state
    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        policy = self.model.policy
        arrays, opt_metas = networks_state({"policy/": policy}, {"opt/": policy.optimizer})
        meta: dict[str, Any] = {
            "optimizer": opt_metas["opt/"],
            "num_timesteps": int(self.model.num_timesteps),
            "n_updates": int(getattr(self.model, "_n_updates", 0)),
            "numpy_rng": numpy_rng_state(self.rng),
        }
        extra_arrays, extra_meta = self._extra_state()
        arrays.update(extra_arrays)
        meta["extra"] = extra_meta
        return arrays, meta

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        policy = self.model.policy
        load_networks_state(
            {"policy/": policy}, {"opt/": policy.optimizer}, arrays, {"opt/": meta.get("optimizer")}
        )
        self.model.num_timesteps = state_int(meta, "num_timesteps", 0)
        if hasattr(self.model, "_n_updates"):
            self.model._n_updates = state_int(meta, "n_updates", 0)
        if "numpy_rng" in meta:
            set_numpy_rng_state(self.rng, meta["numpy_rng"])
        extra = meta.get("extra", {})
        if not isinstance(extra, Mapping):
            raise ValueError(f"extra is a {type(extra).__name__}, not an object")
        self._set_extra_state(arrays, extra)

    def _extra_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {}, {}

    def _set_extra_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        pass


class _OnPolicyAgent(SB3Agent):
    """An actor-critic (PPO, MaskablePPO, A2C): it plays by its policy and reviews by its critic.

    The critic values a board in the learner's shaped, discounted reward, not in points. To grade moves
    it looks one move ahead (:meth:`lookahead`: each move's shaped reward plus ``gamma`` times the
    critic's expected value of the board after the spawn, 0 where no move is left), and a monotone map
    fitted on :data:`REVIEW_GAMES` games the agent plays itself (seeds from :data:`REVIEW_SEED`) turns
    that into the score those games still made (:func:`agents.review.fit_calibration`, as heuristic
    expectimax's calibration). The map is fitted on the first review call and again after the weights
    change; the same weights give the same map."""

    config: Any
    passed = (*SB3Agent.passed, "n_steps", "gae_lambda", "ent_coef", "vf_coef", "normalize_advantage")
    reviews_in_points = True
    REVIEW_GAMES: ClassVar[int] = 12
    REVIEW_SEED: ClassVar[int] = 1000
    _review_map: Calibration | None = None

    @torch.no_grad()
    def critic_values(self, exps_BRC: np.ndarray) -> np.ndarray:
        """The critic's value of each board ``(B, R, C)`` (exponents), float64 ``(B,)``."""
        policy: Any = self.model.policy
        policy.set_training_mode(False)
        values = policy.predict_values(torch.as_tensor(exps_BRC, device=self.device))
        return values.reshape(-1).double().cpu().numpy()

    def lookahead(self, game: Game) -> dict[Direction, float]:
        """Each legal move's shaped reward + ``gamma`` x the critic's expected value of the board after
        the spawn (a board with no legal move is worth 0), in the learner's reward units."""
        if self.rules.spawn_per_move != 1:
            raise ValueError(f"{self.name} reviews one-spawn games only, not {self.rules.spawn_per_move}")
        after, gained, _ = afterstates(game_exponents(game)[None])
        legal = np.flatnonzero(game.legal_mask())
        ex = expand(after[0, legal], self.rules.p4)
        alive = ex.legal.any(axis=1)
        v = np.zeros(len(ex.children))
        if alive.any():
            v[alive] = self.critic_values(ex.children[alive])
        expected = np.zeros(len(legal))
        np.add.at(expected, ex.parent, ex.prob * v)
        cfg = self.config
        values = shape_reward(gained[0, legal], cfg.reward, cfg.reward_scale) + cfg.gamma * expected
        return {DIRECTIONS[int(a)]: float(x) for a, x in zip(legal, values, strict=True)}

    def review_map(self) -> Calibration:
        """The map from :meth:`lookahead` values to points (fitted once per set of weights)."""
        if self._review_map is None:
            raw: list[float] = []
            remaining: list[float] = []
            for k in range(self.REVIEW_GAMES):
                game = Game(rules=self.rules, seed=self.REVIEW_SEED + k)
                before: list[int] = []
                while not game.game_over:
                    move = self.act(game)
                    raw.append(self.lookahead(game)[move])
                    before.append(game.score)
                    game.step(move)
                remaining += [game.score - s for s in before]
            self._review_map = fit_calibration(raw, remaining, games=self.REVIEW_GAMES)
        return self._review_map

    def review_values(self, game: Game) -> dict[Direction, float]:
        values = self.lookahead(game)
        points = self.review_map().points(np.array(list(values.values())))
        return {d: float(p) for d, p in zip(values, points, strict=True)}

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        self._review_map = None  # the weights change
        yield from super().train(budget, control, context)

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        super().set_state(arrays, meta)
        self._review_map = None


class SB3PPOAgent(_OnPolicyAgent):
    name = "sb3-ppo"
    config_cls = PPOConfig
    description = (
        "Stable-Baselines3 PPO on the studio's Gymnasium environment (policy unaware of illegal moves)."
    )
    metrics = PPO_METRICS
    algorithm: ClassVar[type[BaseAlgorithm]] = PPO
    policy_class: ClassVar[type[BasePolicy]] = ActorCriticPolicy
    config: PPOConfig

    passed = (*_OnPolicyAgent.passed, "batch_size", "n_epochs", "clip_range")

    def _algorithm_kwargs(self) -> dict[str, Any]:
        return {**super()._algorithm_kwargs(), "target_kl": self.config.target_kl or None}


class SB3MaskablePPOAgent(SB3PPOAgent):
    name = "sb3-maskppo"
    config_cls = MaskablePPOConfig
    description = (
        "sb3-contrib MaskablePPO: PPO whose policy samples legal moves only (the engine's legal-move mask)."
    )
    algorithm: ClassVar[type[BaseAlgorithm]] = MaskablePPO
    policy_class: ClassVar[type[BasePolicy]] = MaskableActorCriticPolicy
    config: MaskablePPOConfig


class SB3A2CAgent(_OnPolicyAgent):
    name = "sb3-a2c"
    config_cls = A2CConfig
    description = "Stable-Baselines3 A2C (advantage actor-critic) on the studio's Gymnasium environment."
    metrics = ON_POLICY_METRICS
    algorithm = A2C
    policy_class = ActorCriticPolicy
    config: A2CConfig

    passed = (*_OnPolicyAgent.passed, "use_rms_prop")


class SB3DQNAgent(SB3Agent):
    name = "sb3-dqn"
    config_cls = DQNConfig
    description = "Stable-Baselines3 DQN (replay buffer, target net, epsilon-greedy); greedy moves masked to legal ones."
    metrics = (
        MetricInfo("loss", "Loss", group="Loss", kind="loss", scale="log", help="Huber TD loss"),
        EPSILON,
        EP_REWARD,
        LR,
    )
    value_kind = "rank"
    algorithm = DQN
    config: DQNConfig

    policy_class: ClassVar[type[BasePolicy]] = DQNPolicy

    def _policy(self) -> type[BasePolicy]:
        return MaskedDQNPolicy if self.config.mask_play else DQNPolicy

    passed = (
        *SB3Agent.passed,
        "buffer_size",
        "learning_starts",
        "batch_size",
        "tau",
        "train_freq",
        "gradient_steps",
        "target_update_interval",
    )

    def _algorithm_kwargs(self) -> dict[str, Any]:
        cfg = self.config
        return {
            **super()._algorithm_kwargs(),
            "exploration_initial_eps": cfg.eps_start,
            "exploration_final_eps": cfg.eps_end,
        }

    def _after_build(self) -> None:
        cfg = self.config
        model: Any = self.model
        model.exploration_schedule = StepSchedule(model, cfg.eps_start, cfg.eps_end, cfg.eps_steps)
        model.exploration_rate = model.exploration_schedule(1.0)

    def _epsilon(self) -> float | None:
        return float(getattr(self.model, "exploration_rate", 0.0))

    @torch.no_grad()
    def action_values(self, exps_BRC: np.ndarray, mask_BA: np.ndarray) -> torch.Tensor:
        policy: Any = self.model.policy
        policy.set_training_mode(False)
        return policy.q_net(torch.as_tensor(exps_BRC, device=self.device))

    # The replay buffer: SB3's arrays (observations, next observations, actions, rewards, dones, timeouts)
    _BUFFER_FIELDS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")

    def _extra_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        model: Any = self.model
        meta = {"n_calls": int(model._n_calls)}
        buf = model.replay_buffer
        if not self.config.checkpoint_buffer or buf is None or buf.size() == 0:
            return {}, meta
        n = buf.size()
        arrays = {f"buffer/{k}": np.ascontiguousarray(getattr(buf, k)[:n]) for k in self._BUFFER_FIELDS}
        meta.update({"buffer_pos": int(buf.pos), "buffer_full": bool(buf.full)})
        return arrays, meta

    def _set_extra_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        model: Any = self.model
        model._n_calls = state_int(meta, "n_calls", 0)
        model.exploration_rate = model.exploration_schedule(1.0)  # at the restored move count
        if "buffer/observations" not in arrays:
            return
        buf = model.replay_buffer
        shapes = {k: getattr(buf, k).shape[1:] for k in self._BUFFER_FIELDS}
        n = len(arrays["buffer/observations"])
        if n > buf.buffer_size:
            raise ValueError(
                f"the saved replay buffer holds {n} rows, more than buffer_size {buf.buffer_size}"
            )
        for k in self._BUFFER_FIELDS:
            arr = state_array(arrays, f"buffer/{k}", shape=(n, *shapes[k]))
            getattr(buf, k)[:n] = arr
        buf.pos = state_int(meta, "buffer_pos", n % buf.buffer_size, 0, buf.buffer_size - 1)
        full = meta.get("buffer_full", False)
        if not isinstance(full, bool) or (full and n != buf.buffer_size):
            raise ValueError("buffer_full does not match the saved buffer's rows")
        buf.full = full
