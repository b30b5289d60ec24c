"""DQN (seed 000): a Q-network over the board, epsilon-greedy play, a replay buffer, one-step targets.

The ``dqn-seed000*`` presets reproduce the notebook: the seed's networks on its 16-float log2 input,
reward = merges in the move, epsilon 0.9 x 0.998^episode, gamma 0.9, Adam 5e-5, MSE, batch 100,
capacity 10,000, learning once the buffer holds more than 10 batches, one update per move, no target
network. Two details of the notebook are kept as switches because they change results:

- its target ``r + gamma * max Q(s')`` was not detached, so the gradient also flowed through the next
  state's Q-values (``semi_gradient = false``) and the max ran over all four moves, legal or not
  (``mask_targets = false``);
- it never called ``.eval()``, so its dropout network played (and was evaluated) with dropout on
  (``dropout_when_playing = true``).

The studio defaults learn far faster on 2048 (measured in the closing note of the learners issue):

- ``head = afterstate``: Q(s, a) = r(s, a) + gamma V(after(s, a)). Which board a move leads to, and
  what it merges, are known exactly (only the spawn is random), so the net learns one value per
  board instead of four action values, and its TD target is max over the next board's moves of
  r + gamma V(after) (Szubert & Jaśkowski's "afterstate" Q-learning, with a net, replay and a
  target net);
- one-hot exponent planes into an MLP, board-symmetry augmentation of every sampled transition,
  and ``symmetric_play``: moves chosen by the net averaged over the 8 board symmetries (an ensemble
  for free, which also makes the training games better data);
- a target network, Huber loss, rewards log2(1 + score gained) scaled to keep values near 10,
  epsilon from 0.1 to 0.001 (2048's spawns explore enough), 64 games side by side on the batched
  engine (classic rules; others: one engine.Game after another), one update of 512 transitions every
  16 moves (the 32 sampled transitions per move of the tuned 8 games / 128 every 4, in a quarter of
  the optimiser steps: fewer, larger batches keep the update side from dominating; the target net
  is refreshed every 250 of them, every 4,000 moves as before). Double DQN is a switch, off by
  default: it costs another forward pass over the four next afterstates per update, and two runs
  with and without it were within noise of each other over their first 500 games.

``network = ntuple`` (the ``dqn-ntuple`` preset) makes the afterstate value net an n-tuple network:
one sparse layer summing the weight-table rows that the tuples of the board select under its 8
symmetries (:class:`agents.nn.networks.NTupleNetwork`), trained by :class:`agents.nn.optimizers.
RowMeanSGD` on the summed half-squared TD error, so ``lr`` is each row's rate. The same replay and
batched collection serve it; it is symmetric by construction (no augmentation or symmetric play
needed) and by far the strongest network here for its CPU time (docs/results.md, issue #48).
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from agents.base import Budget, Control, MetricEvent, TrainContext
from agents.checkpoint import state_array, state_int
from agents.config import AgentConfig, ConfigError, knob
from agents.guard import require_finite_values
from agents.metrics import EPSILON, LOSS, LR, MetricInfo
from agents.nn.agent import TorchAgent, afterstate_values
from agents.nn.batch_games import StepOut, training_games
from agents.nn.device import device_knob, threads_knob, torch_threads
from agents.nn.encoders import ENCODERS, check_encoder_fits
from agents.nn.masking import masked_argmax, masked_max
from agents.nn.networks import has_dropout
from agents.nn.optimizers import RowMeanSGD
from agents.nn.replay import Batch, ReplayBuffer
from agents.nn.schedules import SCHEDULE_KINDS, Schedule
from agents.ntuple.agent import LAYOUTS
from engine import Rules
from engine.boards import N_ACTIONS, afterstates, count_tiles, symmetries

REWARDS = ("merges", "score", "log2_score")


@dataclass
class DQNConfig(AgentConfig):
    """Deep Q-learning settings (defaults: the studio's; presets ``dqn-seed000-*``: the notebook's)."""

    head: str = knob(
        "afterstate",
        "q: one output per move (seed 000); afterstate: Q(s, a) = r + gamma V(board after the move), one value net rating the boards the four moves lead to",
        choices=("q", "afterstate"),
    )
    network: str = knob(
        "mlp",
        "Q-network (simple / dropout / conv: seed 000's three; ntuple: an n-tuple network, one sparse "
        "layer over the table rows of the layout's tuples, 4x4 boards; it learns by SGD on the squared "
        "TD error, each row by lr x its samples' mean error: loss and grad_clip do not apply)",
        choices=("simple", "dropout", "conv", "mlp", "cnn", "ntuple"),
    )
    layout: str = knob(
        "4x6",
        "tuples of the ntuple network (4x6: Wu et al.'s four 6-cell tuples, 268 MB of weights; 4x4: a tiny one)",
        choices=tuple(LAYOUTS),
        advanced=True,
    )
    hidden: tuple[int, ...] = knob(
        (128, 128), "hidden layer widths of the mlp network (cnn: filters, head width)", low=1, high=4096
    )
    encoder: str = knob("onehot", "board encoding (log2: seed 000's 16 floats)", choices=ENCODERS)
    planes: int = knob(16, "one-hot planes (exponents >= planes share the last plane)", low=2, high=32)
    replay_capacity: int = knob(100_000, "replay buffer capacity (transitions)", low=100, high=10_000_000)
    batch_size: int = knob(512, "transitions per gradient update", low=1, high=8192)
    learning_starts: int = knob(
        1000,
        "learn once the buffer holds more than this many transitions (seed: 10 batches)",
        low=0,
        high=10_000_000,
    )
    train_every: int = knob(16, "moves between gradient updates (seed: 1)", low=1, high=1000)
    envs: int = knob(
        64, "games played side by side (one forward pass picks all their moves)", low=1, high=4096
    )
    gamma: float = knob(0.99, "discount factor", low=0.0, high=1.0)
    n_step: int = knob(
        1,
        "n-step returns: rewards of n moves, then gamma^n x the value n moves later (seed: 1)",
        low=1,
        high=100,
    )
    lr: float = knob(5e-4, "Adam learning rate", low=1e-7, high=1.0, log=True)
    loss: str = knob("huber", "TD loss", choices=("mse", "huber"))
    # score and a target refreshed every 1,000 updates: the best of a 16-trial sweep (lr x target update
    # x reward, 2 seeds, 400 episodes: 9,904 against 6,552 for log2_score / 250), and 10,664 against
    # 7,071 at 1,000 episodes on 1,000 evaluation games (docs/results.md, the dqn row). That sweep ran
    # 8 games with an update every 4 moves; the target now refreshes every 250 updates of 4x the
    # batch every 16 moves: the same 4,000 moves between refreshes.
    reward: str = knob(
        "score",
        "reward of a move: merges made, score gained, or log2(1 + score gained)",
        choices=REWARDS,
    )
    reward_scale: float = knob(
        0.1, "rewards are multiplied by this (keeps Q-values near 1 for the loss)", low=1e-6, high=1e6
    )
    double: bool = knob(False, "double DQN: the online net picks the next move, the target net rates it")
    target_update: int = knob(
        250,
        "gradient updates between target-net refreshes; 0 = no target net (seed 000)",
        low=0,
        high=10_000_000,
    )
    semi_gradient: bool = knob(
        True, "treat the TD target as a constant (seed 000 let the gradient flow through it)"
    )
    mask_targets: bool = knob(True, "max over the next board's legal moves only (seed 000 took all four)")
    augment: bool = knob(True, "apply a random board symmetry to every sampled transition")
    symmetric_play: bool = knob(
        True,
        "choose moves by the net's outputs averaged over the 8 board symmetries (slower play, much stronger)",
    )
    grad_clip: float = knob(10.0, "gradient norm clip; 0 = off", low=0.0, high=1e6)
    eps_schedule: str = knob("linear", "exploration schedule", choices=SCHEDULE_KINDS)
    eps_start: float = knob(0.1, "epsilon at the start", low=0.0, high=1.0)
    eps_end: float = knob(0.001, "epsilon at the end (floor of an exponential decay)", low=0.0, high=1.0)
    eps_rate: float = knob(
        0.998, "per-unit factor of an exponential schedule (seed: 0.998 per episode)", low=1e-6, high=1.0
    )
    eps_steps: int = knob(
        50_000, "length of a linear / polynomial schedule, in eps_unit", low=1, high=1_000_000_000
    )
    eps_unit: str = knob("step", "what the schedule counts", choices=("episode", "step"))
    dropout_when_playing: bool = knob(
        False, "keep dropout on when choosing moves (seed 000 never called .eval())", advanced=True
    )
    checkpoint_buffer: bool = knob(
        True, "save the replay buffer in checkpoints (exact resume; capacity x 42 bytes)", advanced=True
    )
    threads: int = threads_knob()
    device: str = device_knob()

    def validate(self) -> None:
        if self.head == "afterstate" and self.n_step != 1:
            raise ConfigError("n_step", "the afterstate head learns one-step targets: set n_step to 1")
        check_encoder_fits(self.network, self.encoder)
        if self.learning_starts < self.batch_size - 1:
            raise ConfigError(
                "learning_starts", f"must be at least batch_size - 1 ({self.batch_size - 1}) to fill a batch"
            )
        if self.batch_size > self.replay_capacity:
            raise ConfigError("batch_size", "cannot exceed replay_capacity")


@dataclass
class _Pending:
    """Statistics gathered between two events."""

    losses: list[float]
    qs: list[float]

    def take(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.losses:
            out["loss"] = float(np.mean(self.losses))
            out["mean_q"] = float(np.mean(self.qs))
        self.losses.clear()
        self.qs.clear()
        return out


class DQNAgent(TorchAgent):
    """Deep Q-network learner (seed 000), with the studio's improvements as switches."""

    name = "dqn"
    smoke_config: ClassVar[Mapping[str, Any]] = {
        "hidden": (32, 32),
        "replay_capacity": 2000,
        "batch_size": 16,
        "learning_starts": 50,
        "envs": 2,
        "train_every": 2,
        "target_update": 20,
        "eps_steps": 500,
    }
    config_cls = DQNConfig
    description = (
        "Deep Q-learning (seed 000): epsilon-greedy, replay buffer, target net; by default the net rates the "
        "board each move leads to (afterstate values) and plays by its average over the board's symmetries."
    )
    metrics = (
        LOSS,
        MetricInfo("mean_q", "Mean Q", group="Mean Q", help="mean max Q of the update batches"),
        EPSILON,
        LR,
    )
    config: DQNConfig

    def __init__(self, config: DQNConfig | None = None, rules: Rules | None = None, seed: int | None = None):
        super().__init__(config, rules, seed)
        cfg = self.config
        # The afterstate head rates one board (the one a move leads to) per output.
        n_out = 1 if cfg.head == "afterstate" else N_ACTIONS
        self.build_net(cfg.encoder, cfg.planes, cfg.network, cfg.hidden, n_out, cfg.layout)
        self.target_net: nn.Module | None = None
        if cfg.target_update > 0:
            self.target_net = copy.deepcopy(self.net)
            self.target_net.requires_grad_(False)
            self.target_net.eval()
        self.place_on_device()
        self.epsilon_schedule = Schedule(
            cfg.eps_schedule, start=cfg.eps_start, end=cfg.eps_end, steps=cfg.eps_steps, rate=cfg.eps_rate
        )
        self._buffer: ReplayBuffer | None = None
        self._since_update = 0  # moves since the last gradient update
        self._nstep: list[deque[tuple[np.ndarray, int, float]]] = []
        self._syms = symmetries(self.rules.rows, self.rules.cols)
        self.afterstate_head = cfg.head == "afterstate"
        # The ntuple network reads every board under all 8 symmetries already: averaging its views, or
        # training on a random one, would give the very same numbers, 8x slower or for nothing.
        self._symmetric_net = cfg.network == "ntuple"
        self.symmetric_play = cfg.symmetric_play and not self._symmetric_net

    # ------------------------------------------------------------------ pieces
    @property
    def buffer(self) -> ReplayBuffer:
        """Allocated on first use, so that an agent loaded only to play does not hold one."""
        if self._buffer is None:
            self._buffer = ReplayBuffer(self.config.replay_capacity, self.rules.shape, N_ACTIONS)
        return self._buffer

    def _build_optimizer(self) -> torch.optim.Optimizer:
        if self.config.network == "ntuple":
            # The table's gradients are sparse (the rows a batch used): Adam cannot take them, and
            # plain SGD is the n-tuple networks' usual TD update (each used row moves by lr x error).
            return RowMeanSGD(self.net.parameters(), lr=self.config.lr)
        return torch.optim.Adam(self.net.parameters(), lr=self.config.lr)

    def play_in_train_mode(self) -> bool:
        return self.config.dropout_when_playing and has_dropout(self.net)

    def epsilon(self) -> float:
        t = self.counters.episodes if self.config.eps_unit == "episode" else self.counters.steps
        return self.epsilon_schedule(t)

    def _reward(self, merged: int, merges: int) -> float:
        """The configured reward of a move that merged tiles worth ``merged`` in ``merges`` merges."""
        if self.config.reward == "merges":
            r = float(merges)
        elif self.config.reward == "score":
            r = float(merged)
        else:
            r = float(np.log2(1.0 + merged))
        return r * self.config.reward_scale

    def _rewards(self, value: np.ndarray, merges: np.ndarray) -> np.ndarray:
        """:meth:`_reward` over arrays (float32)."""
        if self.config.reward == "merges":
            r = merges.astype(np.float32)
        elif self.config.reward == "score":
            r = value.astype(np.float32)
        else:
            r = np.log2(1.0 + value).astype(np.float32)
        return r * np.float32(self.config.reward_scale)

    def combine_afterstate(
        self, v_BA: torch.Tensor, value_BA: np.ndarray, merges_BA: np.ndarray
    ) -> torch.Tensor:
        # Q(s, a) = r(s, a) + gamma V(after(s, a))
        return self.tensor(self._rewards(value_BA, merges_BA)) + self.config.gamma * v_BA

    def _afterstate_q(
        self, exps_BRC: np.ndarray, net: nn.Module, moves: tuple[np.ndarray, np.ndarray, np.ndarray]
    ) -> torch.Tensor:
        """Q-values ``(B, 4)`` of the afterstate head from already computed afterstates."""
        return self.combine_afterstate(*afterstate_values(net, self.encoder, exps_BRC, moves))

    def _store(
        self,
        i: int,
        state: np.ndarray,
        move: int,
        reward: float,
        next_state: np.ndarray,
        done: bool,
        next_mask: np.ndarray,
    ) -> None:
        """Queue env ``i``'s move; push n-step transitions once n moves (or the game's end) are known."""
        queue = self._nstep[i]
        queue.append((state.copy(), move, reward))
        n, gamma = self.config.n_step, self.config.gamma
        while queue and (done or len(queue) == n):
            ret = sum(r * gamma**k for k, (_, _, r) in enumerate(queue))
            s0, a0, _ = queue.popleft()
            self.buffer.push(s0, a0, ret, next_state, done, next_mask)

    def _select_moves(self, exps_NRC: np.ndarray, masks_NA: np.ndarray, eps: float) -> np.ndarray:
        """Epsilon-greedy over legal moves: greedy when a uniform draw exceeds epsilon (the seed's test)."""
        n = len(masks_NA)
        greedy_N = self.rng.random(n) > eps
        moves_N = np.empty(n, dtype=np.int64)
        if greedy_N.any():
            out_GA = self.network_output(exps_NRC[greedy_N])
            moves_N[greedy_N] = masked_argmax(out_GA, self.tensor(masks_NA[greedy_N])).cpu().numpy()
        for i in np.flatnonzero(~greedy_N):
            legal = np.flatnonzero(masks_NA[i])
            moves_N[i] = legal[self.rng.integers(len(legal))]
        return moves_N

    def _augment(self, b: Batch) -> Batch:
        """The same random symmetry on both boards of a transition, with its move and next mask mapped."""
        pick_B = self.rng.integers(len(self._syms), size=len(b.actions_B))
        states, next_states = b.states_BRC.copy(), b.next_states_BRC.copy()
        actions, next_masks = b.actions_B.copy(), b.next_masks_BA.copy()
        for i, sym in enumerate(self._syms[1:], start=1):
            sel = pick_B == i
            if sel.any():
                states[sel] = sym.apply(b.states_BRC[sel])
                next_states[sel] = sym.apply(b.next_states_BRC[sel])
                actions[sel] = sym.apply_actions(b.actions_B[sel])
                next_masks[sel] = sym.apply_masks(b.next_masks_BA[sel])
        return Batch(states, actions, b.rewards_B, next_states, b.dones_B, next_masks)

    def _next_values(self, next_x: torch.Tensor, next_mask_BA: torch.Tensor) -> torch.Tensor:
        """max_a' Q(s', a') under the configured variant (target net, double, masking)."""
        cfg = self.config
        if self.target_net is None:
            # Without a separate target net, double DQN would pick and rate with the same net: plain max.
            return masked_max(self.net(next_x), next_mask_BA)
        q_target_BA = self.target_net(next_x)
        if not cfg.double:
            return masked_max(q_target_BA, next_mask_BA)
        with torch.no_grad():
            pick_B = masked_argmax(self.net(next_x), next_mask_BA).clamp(min=0)
        q_B = q_target_BA.gather(1, pick_B[:, None]).squeeze(1)
        return torch.where(next_mask_BA.any(dim=1), q_B, torch.zeros_like(q_B))

    def _update(self) -> tuple[float, float]:
        """One gradient step on a sampled batch; returns (loss, mean Q of the moves taken)."""
        cfg = self.config
        batch = self.buffer.sample(cfg.batch_size, self.rng)
        if cfg.augment and len(self._syms) > 1 and not self._symmetric_net:
            batch = self._augment(batch)
        actions_B = self.tensor(batch.actions_B)
        rewards_B = self.tensor(batch.rewards_B)
        dones_B = self.tensor(batch.dones_B)
        next_mask_BA = self.tensor(batch.next_masks_BA)
        if not cfg.mask_targets:
            next_mask_BA = torch.ones_like(next_mask_BA)
        # Terminal boards have no legal move: their future value is 0 whatever the mask says.
        next_mask_BA = next_mask_BA & ~dones_B[:, None]

        self.net.train()
        if cfg.head == "afterstate":
            return self._update_afterstate(batch, next_mask_BA)
        x = self.encoder.tensor(batch.states_BRC)
        next_x = self.encoder.tensor(batch.next_states_BRC)
        q_B = self.net(x).gather(1, actions_B[:, None]).squeeze(1)
        if cfg.semi_gradient:
            with torch.no_grad():
                next_v_B = self._next_values(next_x, next_mask_BA)
        else:
            next_v_B = self._next_values(next_x, next_mask_BA)
        # n-step transitions bootstrap n moves later (a game that ended sooner is marked done).
        target_B = rewards_B + cfg.gamma**cfg.n_step * next_v_B
        return self._descend(q_B, target_B)

    def _update_afterstate(self, batch: Batch, next_mask_BA: torch.Tensor) -> tuple[float, float]:
        """V(after(s, a)) towards max_a' [r(s', a') + gamma V(after(s', a'))] (0 when s' is terminal)."""
        cfg = self.config
        b = len(batch.actions_B)
        after_BARC, _, _ = afterstates(batch.states_BRC)
        after_BRC = after_BARC[np.arange(b), batch.actions_B]
        v_B = self.net(self.encoder.tensor(after_BRC)).squeeze(1)
        with torch.no_grad():
            moves = afterstates(batch.next_states_BRC)
            rater = self.target_net if self.target_net is not None else self.net
            q_next_BA = self._afterstate_q(batch.next_states_BRC, rater, moves)
            if cfg.double and self.target_net is not None:
                q_online_BA = self._afterstate_q(batch.next_states_BRC, self.net, moves)
                pick_B = masked_argmax(q_online_BA, next_mask_BA).clamp(min=0)
                best_B = q_next_BA.gather(1, pick_B[:, None]).squeeze(1)
                target_B = torch.where(next_mask_BA.any(dim=1), best_B, torch.zeros_like(best_B))
            else:
                target_B = masked_max(q_next_BA, next_mask_BA)
        return self._descend(v_B, target_B)

    def _descend(self, pred_B: torch.Tensor, target_B: torch.Tensor) -> tuple[float, float]:
        """One optimiser step on the TD loss; returns (loss, mean prediction)."""
        cfg = self.config
        if cfg.network == "ntuple":
            # Half the summed squared error: each sample's gradient is its own TD error, and RowMeanSGD
            # moves each table row by lr x the mean error of the samples that used it (lr is the
            # classic per-weight rate, alpha / features). Sparse gradients take no norm clipping.
            self.descend(0.5 * (pred_B - target_B).pow(2).sum())
            loss = F.mse_loss(pred_B.detach(), target_B)  # what the curves show, as for the others
        else:
            if cfg.loss == "mse":
                loss = F.mse_loss(pred_B, target_B)
            else:
                loss = F.smooth_l1_loss(pred_B, target_B)
            self.descend(loss, cfg.grad_clip)
        if self.target_net is not None and self.counters.updates % cfg.target_update == 0:
            self.target_net.load_state_dict(self.net.state_dict())
        return float(loss.item()), float(pred_B.detach().mean().item())

    # ------------------------------------------------------------------ training
    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        with torch_threads(self.config.threads):
            yield from self._train(budget, control)

    def _push(self, exps_NRC: np.ndarray, moves_N: np.ndarray, rewards_N: np.ndarray, out: StepOut) -> None:
        """Store one move of every game (one-step transitions in one call; n-step ones per game)."""
        if self.config.n_step == 1:
            self.buffer.push_batch(exps_NRC, moves_N, rewards_N, out.next_NRC, out.done_N, out.next_mask_NA)
            return
        for i in range(len(moves_N)):
            self._store(
                i,
                exps_NRC[i],
                int(moves_N[i]),
                float(rewards_N[i]),
                out.next_NRC[i],
                bool(out.done_N[i]),
                out.next_mask_NA[i],
            )

    def _move_rewards(self, exps_NRC: np.ndarray, moves_N: np.ndarray, out: StepOut) -> np.ndarray:
        """The configured rewards of the moves just made (merges: tiles before - tiles after the slide)."""
        merges_N = np.zeros(len(moves_N), np.int64)
        if self.config.reward == "merges":
            after_NRC = afterstates(exps_NRC)[0][np.arange(len(moves_N)), moves_N]
            merges_N = count_tiles(exps_NRC) - count_tiles(after_NRC)
        return self._rewards(out.reward_N, merges_N)

    def _train(self, budget: Budget, control: Control | None) -> Iterator[MetricEvent]:
        cfg = self.config
        tracker = self.start_training(budget, control)
        pending = _Pending([], [])
        # Classic 4x4 rules: every game moves in one BatchEngine call; others: engine.Game one by one.
        games = training_games(cfg.envs, self.rules, self.rng)
        # Moves whose n-step return is not known yet belong to games that end with this call.
        self._nstep = [deque() for _ in range(cfg.envs)]
        live_t = tracker.clock.call_seconds
        last_loss = float("nan")
        while tracker.proceed():
            eps = self.epsilon()
            exps_NRC = games.obs
            moves_N = self._select_moves(exps_NRC, games.mask, eps)
            out = games.step(moves_N)
            self._push(exps_NRC, moves_N, self._move_rewards(exps_NRC, moves_N, out), out)
            self.counters.steps += cfg.envs
            if len(self.buffer) > cfg.learning_starts:
                self._since_update += cfg.envs
                while self._since_update >= cfg.train_every:
                    self._since_update -= cfg.train_every
                    loss, mean_q = self._update()
                    pending.losses.append(loss)
                    pending.qs.append(mean_q)
                    last_loss = loss
            for f in out.finished:
                self.counters.episodes += 1
                metrics = {
                    **f.metrics(),
                    "epsilon": eps,
                    "lr": cfg.lr,
                    "steps_per_s": tracker.steps_per_s(),
                    **pending.take(),
                }
                yield tracker.event("episode", metrics, game=f.trace)
            if tracker.clock.call_seconds - live_t >= 1.0:
                # A live board for displays, at most once a second. It leaves the per-episode averages
                # alone, so episode events do not depend on timing (determinism).
                live_t = tracker.clock.call_seconds
                metrics = {"epsilon": eps, "steps_per_s": tracker.steps_per_s()}
                if pending.losses:
                    metrics["loss"] = last_loss
                yield tracker.event("update", metrics, board=games.board(0))
        tracker.clock.tick()

    # ------------------------------------------------------------------ state
    def _state_modules(self) -> dict[str, nn.Module]:
        out: dict[str, nn.Module] = {"net/": self.net}
        if self.target_net is not None:
            out["target/"] = self.target_net
        return out

    def _extra_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays: dict[str, np.ndarray] = {}
        if self.config.checkpoint_buffer and self._buffer is not None and len(self._buffer) > 0:
            arrays = self._buffer.get_arrays("buffer/")
        return arrays, {"since_update": self._since_update}

    def _set_extra_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        self._since_update = state_int(meta, "since_update", 0)
        if "buffer/states" in arrays:
            board = (None, *self.rules.shape)
            states = state_array(arrays, "buffer/states", kinds="iu", shape=board, low=0, high=62)
            n = len(states)
            fields = {
                "states": states,
                "actions": state_array(
                    arrays, "buffer/actions", kinds="iu", shape=(n,), low=0, high=N_ACTIONS - 1
                ),
                "rewards": state_array(arrays, "buffer/rewards", kinds="iuf", shape=(n,)),
                "next_states": state_array(
                    arrays, "buffer/next_states", kinds="iu", shape=(n, *self.rules.shape), low=0, high=62
                ),
                "dones": state_array(arrays, "buffer/dones", kinds="biu", shape=(n,), low=0, high=1),
                "next_masks": state_array(
                    arrays, "buffer/next_masks", kinds="biu", shape=(n, N_ACTIONS), low=0, high=1
                ),
            }
            self.buffer.set_arrays({f"buffer/{k}": v for k, v in fields.items()}, "buffer/")
        # Finite weights can still overflow (3e38): every move value NaN, the fallback order played.
        # Refused at load, as non-finite weights are: one line naming the file (agents.checkpoint).
        require_finite_values(self, arrays)
