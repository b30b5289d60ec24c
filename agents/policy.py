"""Seed 001's good/bad-game policy learner.

A softmax policy (16 -> 200 -> 100 -> 4) plays a batch of games, sampling its moves. Every epoch the
games of the last ``forget_interval`` batches are ranked by a game metric against their median:
"good" games (above the median) teach ``Y = M`` (do that move again), "bad" games (at or below)
``Y = (1 - M) / 3`` (anything but that move). The loss is the seed's weighted L1,
``mean(|j k Y - j k Yhat|)`` over moves x 4, where ``j`` in [0, 1] says how far the game is from the
median (1 at the window's best / worst game) and ``k`` in [0, 1] how much the move matters. One Adam
step per epoch on the whole window, as in the seed's code (``minibatch`` splits it).

Sampling from the masked softmax is the seed's "weighted shuffle, play the first legal move" (the first
legal move of a weighted shuffle has probability p_m / sum of legal p). The loss uses the network's
full (unmasked) softmax, as the seed did. Playing outside training takes the most probable legal move
(the seed's ``baseline``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from agents.base import Budget, Control, MetricEvent, TrainContext
from agents.checkpoint import state_int
from agents.config import AgentConfig, knob
from agents.metrics import LOSS, LR, MetricInfo, counter
from agents.nn.agent import PolicyNetAgent
from agents.nn.device import device_knob
from agents.nn.encoders import ENCODERS, check_encoder_fits
from agents.nn.masking import masked_softmax, sample_from_probs
from agents.nn.state import draw_seed
from agents.training import TrainTracker
from engine import Game, Rules
from engine.boards import N_ACTIONS, game_exponents
from engine.records import GameTrace, play_recorded

GAME_METRICS = ("scores", "max", "log2_max", "tile_sums")
MOVE_WEIGHTS = ("none", "nonzero", "linear_move_num", "exponential_move_num")


@dataclass
class PolicyConfig(AgentConfig):
    """Seed 001's settings (names as in its ``train(...)``)."""

    network: str = knob(
        "policy",
        "policy network (policy: seed 001's 16-200-100-4 MLP)",
        choices=("policy", "mlp", "conv", "cnn"),
    )
    hidden: tuple[int, ...] = knob(
        (200, 100), "hidden widths of the mlp network (cnn: filters, head width)", low=1, high=4096
    )
    encoder: str = knob(
        "log2_norm", "board encoding (log2_norm: seed 001's log2(v)/11 - 0.25)", choices=ENCODERS
    )
    planes: int = knob(16, "one-hot planes", low=2, high=32)
    lr: float = knob(1e-3, "Adam learning rate", low=1e-7, high=1.0, log=True)
    batch_size: int = knob(10, "games played per epoch", low=1, high=100_000)
    forget_interval: int = knob(
        30, "epochs each batch of games stays in the training window", low=1, high=100_000
    )
    random_games: bool = knob(False, "also play batch_size uniformly random games per epoch")
    random_frac: float = knob(
        0.0, "share of the network's moves replaced by uniformly random ones", low=0.0, high=1.0
    )
    game_metric: str = knob("scores", "what ranks games (good / bad and weight j)", choices=GAME_METRICS)
    move_weight: str = knob("none", "move-level weight k", choices=MOVE_WEIGHTS)
    max_moves: int = knob(
        0,
        "end every game after this many moves; 0 = play to the end (seed 001's proof of concept: 20)",
        low=0,
        high=1_000_000,
    )
    minibatch: int = knob(
        0,
        "moves per gradient step; 0 = one step on the whole window per epoch (the seed)",
        low=0,
        high=10_000_000,
    )
    log_every_game: bool = knob(
        False, "an episode event for every game (default: the first game of each epoch)", advanced=True
    )
    device: str = device_knob()

    def validate(self) -> None:
        check_encoder_fits(self.network, self.encoder)


@dataclass
class PlayedGame:
    """One training game: what the learner needs of it."""

    exps_NRC: np.ndarray  # boards before each move (exponents)
    moves_N: np.ndarray  # int64
    score: int
    max_tile: int
    tile_sum: int
    trace: GameTrace | None

    @property
    def n_moves(self) -> int:
        return len(self.moves_N)


def game_rank_values(games: list[PlayedGame], metric: str) -> np.ndarray:
    """Seed 001's game ranking metric per game."""
    if metric == "max":
        return np.array([g.max_tile for g in games], dtype=np.float64)
    if metric == "log2_max":
        return np.log2(np.maximum(1, np.array([g.max_tile for g in games], dtype=np.float64)))
    if metric == "tile_sums":
        return np.array([g.tile_sum for g in games], dtype=np.float64)
    if metric == "scores":
        return np.array([g.score for g in games], dtype=np.float64)
    raise ValueError(f"unknown game metric {metric!r}")


def game_weights(values_G: np.ndarray) -> np.ndarray:
    """Signed j per game: (v - median) / |extreme - median|, the extreme being the max for games above
    the median and the min for the others; in [-1, 1], 0 at the median (and where the extreme is the
    median). Negative = a "bad" game. ``[1, 2, 3, 4, 5]`` -> ``[-1, -0.5, 0, 0.5, 1]``."""
    med = float(np.median(values_G))
    extreme_G = np.where(values_G > med, values_G.max(), values_G.min())
    span_G = np.abs(extreme_G - med)
    with np.errstate(divide="ignore", invalid="ignore"):
        j_G = np.where(span_G > 0, (values_G - med) / np.where(span_G > 0, span_G, 1.0), 0.0)
    return j_G


def move_weights(games: list[PlayedGame], kind: str, cells: int) -> np.ndarray:
    """Seed 001's k per move, concatenated over games (each game's moves in order)."""
    if kind == "none":
        return np.ones(sum(g.n_moves for g in games))
    if kind == "nonzero":
        return np.concatenate([(g.exps_NRC.reshape(g.n_moves, -1) != 0).sum(axis=1) / cells for g in games])
    if kind == "linear_move_num":
        return np.concatenate([np.linspace(0.0, 1.0, g.n_moves) for g in games])
    if kind == "exponential_move_num":
        return np.concatenate([1.0 - np.exp(-3.0 * np.linspace(0.0, 1.0, g.n_moves)) for g in games])
    raise ValueError(f"unknown move weight {kind!r}")


class PolicyAgent(PolicyNetAgent):
    """Seed 001's policy learner: reinforce moves of above-median games, discourage those of the others."""

    name = "policy"
    smoke_config: ClassVar[Mapping[str, Any]] = {"batch_size": 4, "forget_interval": 3, "max_moves": 8}
    config_cls = PolicyConfig
    description = "Good/bad-game policy learner (seed 001): a softmax policy trained towards moves of above-median games."
    metrics = (
        LOSS,
        MetricInfo("batch_mean_score", "Batch mean score", group="Score", kind="score"),
        MetricInfo("window_mean_score", "Window mean score", group="Score", kind="score"),
        MetricInfo("batch_mean_max_tile", "Batch mean max tile", group="Max tile", kind="score"),
        MetricInfo("good_share", "Good-move share", group="Good-move share", kind="evaluation"),
        LR,
        counter("epoch", "epochs so far"),
    )
    config: PolicyConfig

    def __init__(
        self, config: PolicyConfig | None = None, rules: Rules | None = None, seed: int | None = None
    ):
        super().__init__(config, rules, seed)
        cfg = self.config
        self.build_net(cfg.encoder, cfg.planes, cfg.network, cfg.hidden, N_ACTIONS)
        self.place_on_device()
        self.window: deque[list[PlayedGame]] = deque()
        self.epochs = 0

    def _build_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.net.parameters(), lr=self.config.lr)

    # ------------------------------------------------------------------ playing a batch
    def play_batch(
        self, n: int, uniform: bool, tracker: TrainTracker, keep_traces: bool
    ) -> list[PlayedGame] | None:
        """Play ``n`` games side by side (one forward pass per move for all); None when stopped."""
        cfg = self.config
        games = [Game(seed=draw_seed(self.rng), rules=self.rules) for _ in range(n)]
        traces = [GameTrace.start(g) if keep_traces else None for g in games]
        boards: list[list[np.ndarray]] = [[] for _ in range(n)]
        moves: list[list[int]] = [[] for _ in range(n)]
        active = [i for i, g in enumerate(games) if not g.game_over]
        while active:
            if not tracker.proceed() and tracker.stopped:
                return None
            exps_ARC = np.stack([game_exponents(games[i]) for i in active])
            masks_AA = np.stack([games[i].legal_mask() for i in active])
            if uniform:
                probs_AA = masks_AA.astype(np.float64)
            else:
                probs_AA = masked_softmax(self.network_output(exps_ARC), self.tensor(masks_AA)).cpu().numpy()
                if cfg.random_frac > 0:
                    rand_A = self.rng.random(len(active)) < cfg.random_frac
                    probs_AA[rand_A] = masks_AA[rand_A]
            picks_A = sample_from_probs(probs_AA, masks_AA, self.rng.random(len(active)))
            still = []
            for k, i in enumerate(active):
                boards[i].append(exps_ARC[k])
                moves[i].append(int(picks_A[k]))
                trace = traces[i]
                if trace is not None:
                    play_recorded(games[i], int(picks_A[k]), trace)
                else:
                    games[i].step(int(picks_A[k]))
                self.counters.steps += 1
                if not games[i].game_over and (cfg.max_moves == 0 or games[i].moves < cfg.max_moves):
                    still.append(i)
            active = still
        out = []
        for i, g in enumerate(games):
            b = g.board
            exps = np.stack(boards[i]) if boards[i] else np.zeros((0, *self.rules.shape), np.uint8)
            out.append(
                PlayedGame(
                    exps, np.asarray(moves[i], np.int64), g.score, int(b.max()), int(b.sum()), traces[i]
                )
            )
        return out

    # ------------------------------------------------------------------ learning
    def targets(self, games: list[PlayedGame]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
        """The window's training set: boards, targets Y, weights |j| k per move, and the good-game share.

        None when the window holds no move.
        """
        cfg = self.config
        games = [g for g in games if g.n_moves > 0]
        if not games:
            return None
        j_G = game_weights(game_rank_values(games, cfg.game_metric))
        j_N = np.repeat(j_G, [g.n_moves for g in games])
        k_N = move_weights(games, cfg.move_weight, self.rules.rows * self.rules.cols)
        exps_NRC = np.concatenate([g.exps_NRC for g in games])
        m_NA = np.eye(N_ACTIONS, dtype=np.float32)[np.concatenate([g.moves_N for g in games])]
        # Y = M for good games (j >= 0: a game at the median has weight 0 anyway), (1 - M) / 3 for bad.
        y_NA = np.where((j_N < 0)[:, None], (1.0 - m_NA) / 3.0, m_NA).astype(np.float32)
        w_N = (np.abs(j_N) * k_N).astype(np.float32)
        return exps_NRC, y_NA, w_N, float((j_G > 0).mean())

    def _step(self, exps_NRC: np.ndarray, y_NA: np.ndarray, w_N: np.ndarray) -> float:
        self.net.train()
        yhat_NA = torch.softmax(self.net(self.encoder.tensor(exps_NRC)), dim=1)
        w_N1 = self.tensor(w_N)[:, None]
        loss = nn.functional.l1_loss(w_N1 * yhat_NA, w_N1 * self.tensor(y_NA))
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.counters.updates += 1
        return float(loss.item())

    def learn(self, games: list[PlayedGame]) -> tuple[float, float]:
        """One epoch of learning on ``games`` (the window): (mean loss, share of good games)."""
        data = self.targets(games)
        if data is None:
            return float("nan"), 0.0
        exps_NRC, y_NA, w_N, good_share = data
        n, mb = len(exps_NRC), self.config.minibatch
        if mb == 0 or mb >= n:
            return self._step(exps_NRC, y_NA, w_N), good_share
        order = self.rng.permutation(n)
        losses = [
            self._step(exps_NRC[idx], y_NA[idx], w_N[idx]) for idx in np.array_split(order, -(-n // mb))
        ]
        return float(np.mean(losses)), good_share

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        cfg = self.config
        tracker = self.start_training(budget, control)
        while tracker.proceed():
            played = self.play_batch(cfg.batch_size, False, tracker, keep_traces=True)
            if played is None:
                break
            batch = list(played)
            if cfg.random_games:
                randoms = self.play_batch(cfg.batch_size, True, tracker, keep_traces=False)
                if randoms is None:
                    break
                batch += randoms
            self.window.append(batch)
            while len(self.window) > cfg.forget_interval:
                self.window.popleft()
            loss, good_share = self.learn([g for b in self.window for g in b])
            self.epochs += 1
            for k, g in enumerate(played):
                self.counters.episodes += 1
                if cfg.log_every_game or k == 0:
                    metrics = {"score": g.score, "max_tile": g.max_tile, "moves": g.n_moves}
                    yield tracker.event("episode", metrics, game=g.trace)
            window_scores = [g.score for b in self.window for g in b[: cfg.batch_size]]
            yield tracker.event(
                "update",
                {
                    # An epoch without targets has no loss: say nothing rather than NaN, which
                    # the run takes for divergence.
                    **({"loss": loss} if np.isfinite(loss) else {}),
                    "batch_mean_score": float(np.mean([g.score for g in played])),
                    "batch_mean_max_tile": float(np.mean([g.max_tile for g in played])),
                    "window_mean_score": float(np.mean(window_scores)),
                    "good_share": good_share,
                    "epoch": self.epochs,
                    "lr": cfg.lr,
                    "steps_per_s": tracker.steps_per_s(),
                },
            )
        tracker.clock.tick()

    # ------------------------------------------------------------------ state
    def _extra_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        # The window is training data a resumed run would rebuild within forget_interval epochs: only
        # the epoch count is kept.
        return {}, {"epochs": self.epochs}

    def _set_extra_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        self.epochs = state_int(meta, "epochs", 0)
