"""``td-afterstate`` (seed 002): TD(0) expectimax learning of an afterstate value network, in torch.

V rates afterstates (the board after the move, before the spawn); V(terminal) = 0. Training runs in
rounds (the seed's "episodes"): self-play games (epsilon-greedy on r + gamma V) collect about
``states_per_round`` afterstates, then the network is fitted to their expectimax targets in batches
(MSE, Adam)::

    EM(s) = sum over spawns i of p_i * max over legal moves j of (r_ij + gamma * V(s_ij))

where p_i is the spawn's probability (a 2 or a 4 on each empty cell) and the max over no legal move
is 0 (the game ends). The reward is ``log2(raw + 1) / 2`` as in the seed (``raw`` and ``merges``
selectable). The learning rate decays, gamma rises and epsilon decays from round to round (each one
reported as a metric); from round ``random_start_round`` on, a new game starts from a position of an
earlier game with probability ``random_start_prob`` (the seed's random non-initial positions).

Play: 1-ply (argmax of r + gamma V) or the seed's switching-ply expectimax: the search depth comes
from ``depths_policy[free cells]`` (default ``[3, 3, 2, 2] + [1] * 12``) and is looked up again at every
afterstate of the search, so it searches deeper exactly where the board is full (few spawns to
average over) and the game is decided.

Boards of any shape (one-hot planes ``k x rows x cols``); one spawn per move.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from agents.base import Agent, Budget, Control, MetricEvent, TrainContext
from agents.checkpoint import state_array, state_int, state_ints
from agents.config import AgentConfig, ConfigError, knob
from agents.guard import require_finite_values
from agents.metrics import EPSILON, GAMMA, LOSS, LR, MEAN_SCORE, counter
from agents.nn.agent import TorchAgent
from agents.nn.device import device_knob
from agents.nn.schedules import Schedule
from agents.training import TrainTracker
from engine import DIRECTIONS, Direction, Game, Rules, from_exponents
from engine.boards import afterstates, game_exponents
from engine.records import GameTrace, play_recorded

REWARDS = ("log2", "raw", "merges")


@dataclass
class TDAfterstateConfig(AgentConfig):
    """Seed 002's TD(0) expectimax learner (defaults follow the seed where it says, else the studio's)."""

    network: str = knob(
        "mlp", "value network (one output: V of the afterstate)", choices=("mlp", "cnn", "conv")
    )
    hidden: tuple[int, ...] = knob((256, 128), "hidden widths of the mlp (cnn: head width)", low=1, high=4096)
    planes: int = knob(18, "one-hot planes k (seed: 18; exponents >= k - 1 share the last)", low=2, high=32)
    reward: str = knob(
        "log2", "reward of a move: log2(raw + 1) / 2 (seed), raw score, or merges made", choices=REWARDS
    )
    states_per_round: int = knob(
        5000, "afterstates collected by self-play per round (the seed's episode)", low=16, high=10_000_000
    )
    epochs: int = knob(1, "passes over a round's afterstates", low=1, high=100)
    batch_size: int = knob(128, "afterstates per gradient step (seed: 128)", low=1, high=8192)
    envs: int = knob(
        8, "self-play games played side by side (one network call rates all their moves)", low=1, high=1024
    )
    lr: float = knob(1e-3, "Adam learning rate in round 0", low=1e-7, high=1.0, log=True)
    lr_decay: float = knob(0.995, "learning rate factor per round (exponential decay)", low=0.1, high=1.0)
    lr_end: float = knob(1e-5, "floor of the learning rate", low=0.0, high=1.0, log=True)
    gamma: float = knob(0.9, "discount in round 0", low=0.0, high=1.0)
    gamma_end: float = knob(0.99, "discount after gamma_rounds rounds (rises linearly)", low=0.0, high=1.0)
    gamma_rounds: int = knob(60, "rounds over which gamma rises", low=1, high=1_000_000)
    epsilon: float = knob(0.3, "exploration in round 0 (seed: 0.3)", low=0.0, high=1.0)
    epsilon_decay: float = knob(0.96, "epsilon factor per round", low=0.0, high=1.0)
    epsilon_end: float = knob(0.01, "floor of epsilon", low=0.0, high=1.0)
    random_start_round: int = knob(
        50, "round from which games may start from earlier positions (seed: 50)", low=0
    )
    random_start_prob: float = knob(0.7, "probability of such a start (seed: 0.7)", low=0.0, high=1.0)
    start_pool: int = knob(20000, "positions kept for those starts", low=1, high=10_000_000, advanced=True)
    play: str = knob(
        "1-ply",
        "how to play: 1-ply (argmax r + gamma V) or the seed's switching-ply expectimax",
        choices=("1-ply", "switching-ply"),
    )
    depths_policy: tuple[int, ...] = knob(
        (3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
        "switching-ply: search depth by free cells (index = free cells; seed: [3,3,2,2] + [1]*12)",
        low=1,
        high=6,
    )
    record_games: bool = knob(True, "attach each finished training game's moves to its metric event")
    threads: int = knob(
        1,
        "torch threads while training (0: leave torch's setting); small nets run fastest on one",
        low=0,
        high=256,
        advanced=True,
    )
    device: str = device_knob()

    def validate(self) -> None:
        if self.network == "cnn" and self.planes < 2:
            raise ConfigError("planes", "the cnn network reads one-hot planes")
        if not self.depths_policy:
            raise ConfigError("depths_policy", "needs at least one depth")


@dataclass
class Expansion:
    """Every spawn of every afterstate and every move after it (see :func:`expand`).

    ``children`` are the boards after each spawn; ``prob[c]`` the spawn's probability (given its
    parent); ``parent[c]`` the afterstate it came from; ``after[c, j]`` / ``raw[c, j]`` / ``merges[c, j]``
    / ``legal[c, j]`` move j of child c (the board, the merged value, the merges, whether it is legal).
    """

    children: np.ndarray  # (N, R, C) uint8 exponents
    prob: np.ndarray  # (N,) float64
    parent: np.ndarray  # (N,) int64
    after: np.ndarray  # (N, 4, R, C) uint8
    raw: np.ndarray  # (N, 4) int64
    merges: np.ndarray  # (N, 4) int64
    legal: np.ndarray  # (N, 4) bool


def expand(afters_BRC: np.ndarray, p4: float) -> Expansion:
    """All spawns of a batch of afterstates (a 2 or a 4 on each empty cell) and the four moves of each.

    ``[[2, 4], [0, 8]]`` (one empty cell) with p4 = 0.1 gives two children, ``[[2, 4], [2, 8]]`` (p 0.9)
    and ``[[2, 4], [4, 8]]`` (p 0.1). A spawn whose probability is 0 (p4 = 0 or 1) is left out.
    """
    a = np.asarray(afters_BRC, dtype=np.uint8)
    b, rows, cols = a.shape
    flat = a.reshape(b, rows * cols)
    parent, cell = np.nonzero(flat == 0)
    if parent.size == 0:  # no empty cell (never after a legal move): nothing spawns
        z = np.zeros(0, dtype=np.int64)
        return Expansion(
            np.zeros((0, rows, cols), np.uint8),
            np.zeros(0),
            z,
            np.zeros((0, 4, rows, cols), np.uint8),
            np.zeros((0, 4), np.int64),
            np.zeros((0, 4), np.int64),
            np.zeros((0, 4), bool),
        )
    n_empty = np.count_nonzero(flat == 0, axis=1)
    tiles = [(e, p) for e, p in ((1, 1.0 - p4), (2, p4)) if p > 0.0]
    children = (
        np.concatenate([flat[parent] for _ in tiles]) if tiles else np.zeros((0, rows * cols), np.uint8)
    )
    prob = np.concatenate([np.full(parent.size, p) for _, p in tiles]) / np.tile(n_empty[parent], len(tiles))
    rows_idx = np.arange(children.shape[0])
    cells = np.tile(cell, len(tiles))
    children[rows_idx, cells] = np.concatenate([np.full(parent.size, e, np.uint8) for e, _ in tiles])
    children = children.reshape(-1, rows, cols)
    after, raw, merges = afterstates(children)
    legal = (after != children[:, None]).reshape(children.shape[0], 4, -1).any(axis=2)
    return Expansion(children, prob, np.tile(parent, len(tiles)), after, raw, merges, legal)


def transform_reward(kind: str, raw: np.ndarray, merges: np.ndarray) -> np.ndarray:
    """The learning reward of moves: ``log2``: log2(raw + 1) / 2 (seed 002); ``raw``; ``merges``."""
    if kind == "log2":
        return np.log2(raw.astype(np.float64) + 1.0) / 2.0
    if kind == "raw":
        return raw.astype(np.float64)
    return merges.astype(np.float64)


def expectimax_targets(
    afters_BRC: np.ndarray, value: Callable[[np.ndarray], np.ndarray], gamma: float, p4: float, reward: str
) -> np.ndarray:
    """EM(s) of each afterstate: sum_i p_i max_j (r_ij + gamma V(s_ij)); a spawn with no legal move adds 0.

    ``value`` rates a batch of afterstates ``(N, R, C)`` -> ``(N,)`` (one call for the whole batch).
    """
    ex = expand(afters_BRC, p4)
    n = ex.children.shape[0]
    q = np.full((n, 4), -np.inf)
    if ex.legal.any():
        v = value(ex.after[ex.legal])
        q[ex.legal] = transform_reward(reward, ex.raw[ex.legal], ex.merges[ex.legal]) + gamma * v
    best = np.where(ex.legal.any(axis=1), q.max(axis=1), 0.0)
    out = np.zeros(afters_BRC.shape[0])
    np.add.at(out, ex.parent, ex.prob * best)
    return out


def _free(exps: np.ndarray) -> int:
    return int(np.count_nonzero(exps == 0))


class TDAfterstateAgent(TorchAgent):
    """Seed 002: an afterstate value network learnt from expectimax targets; 1-ply or switching-ply play."""

    name = "td-afterstate"
    review_policy_knob = "depths_policy"  # switching-ply: a depth by free cells, no single depth
    smoke_config: ClassVar[Mapping[str, Any]] = {
        "hidden": (16,),
        "states_per_round": 64,
        "batch_size": 16,
        "envs": 2,
        "gamma_rounds": 4,
    }
    config_cls = TDAfterstateConfig
    description = (
        "TD(0) expectimax learning of an afterstate value network (seed 002): one-hot planes, MSE + Adam, "
        "epsilon-greedy self-play; plays 1-ply or by switching-ply expectimax."
    )
    metrics = (
        LOSS,
        MEAN_SCORE,
        EPSILON,
        GAMMA,
        LR,
        counter("round", "learning rounds so far"),
        counter("random_start", "1 when the game began from a pooled position"),
    )
    config: TDAfterstateConfig

    def __init__(
        self, config: TDAfterstateConfig | None = None, rules: Rules | None = None, seed: int | None = None
    ):
        super().__init__(config, rules, seed)
        cfg = self.config
        self.build_net("onehot", cfg.planes, cfg.network, cfg.hidden, 1)
        self.place_on_device()
        self.lr_schedule = Schedule("exponential", start=cfg.lr, end=cfg.lr_end, rate=cfg.lr_decay)
        self.gamma_schedule = Schedule("linear", start=cfg.gamma, end=cfg.gamma_end, steps=cfg.gamma_rounds)
        self.epsilon_schedule = Schedule(
            "exponential", start=cfg.epsilon, end=cfg.epsilon_end, rate=cfg.epsilon_decay
        )
        self.round = 0  # rounds finished
        self._round_states: list[np.ndarray] = []  # afterstates collected in the current round
        self._round_positions: list[np.ndarray] = []  # the boards they were played from
        # a round being fitted: its afterstates, batch order (all epochs), next batch, losses so far
        self._fit: tuple[np.ndarray, np.ndarray, list[float]] | None = None
        self._fit_pos = 0
        self._envs: list[tuple[Game, GameTrace | None, bool]] = []  # self-play games in progress
        self._pool = np.zeros((0, self.rules.rows, self.rules.cols), dtype=np.uint8)  # earlier positions
        self._recent: list[int] = []  # scores of the last games started from the initial position

    def _build_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.net.parameters(), lr=self.config.lr)

    @classmethod
    def unsupported_reason(cls, rules: Rules) -> str | None:
        if rules.spawn_per_move != 1:
            return f"its expectimax targets assume one spawn per move, not {rules.spawn_per_move}"
        return None

    # ------------------------------------------------------------------ values
    @property
    def gamma(self) -> float:
        return self.gamma_schedule(self.round)

    @torch.no_grad()
    def values(self, afters_NRC: np.ndarray) -> np.ndarray:
        """V of afterstates ``(N, R, C)`` exponents -> ``(N,)`` float64 (play mode)."""
        if len(afters_NRC) == 0:
            return np.zeros(0)
        was = self.net.training
        self.net.eval()
        try:
            out = self.net(self.encoder.tensor(np.asarray(afters_NRC)))
        finally:
            self.net.train(was)
        return out.reshape(-1).double().cpu().numpy()

    def _rewards(self, raw: np.ndarray, merges: np.ndarray) -> np.ndarray:
        return transform_reward(self.config.reward, raw, merges)

    def one_ply(self, exps_NRC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """r + gamma V(afterstate) of the four moves of each board ``(N, 4)`` (-inf if illegal), and legality."""
        q, legal, _ = self._one_ply(exps_NRC)
        return q, legal

    def _one_ply(self, exps_NRC: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        after, raw, merges = afterstates(exps_NRC)
        n = exps_NRC.shape[0]
        legal = (after != exps_NRC[:, None]).reshape(n, 4, -1).any(axis=2)
        q = np.full((n, 4), -np.inf)
        if legal.any():
            q[legal] = self._rewards(raw[legal], merges[legal]) + self.gamma * self.values(after[legal])
        return q, legal, after

    def search(self, exps_RC: np.ndarray) -> np.ndarray:
        """Switching-ply expectimax values of the four moves (-inf if illegal), seed 002's expectiDepthMax.

        A max node at level L (the root is level 1) whose depth limit ``final`` is reached values each
        move by r + gamma V(afterstate); below it, by r + gamma times the mean over the spawns of the
        max nodes at level L + 1, whose own limit is ``depths_policy[free cells of the afterstate]``.
        The tree is walked twice: once to collect every afterstate V is needed for (one network call
        for all of them), then to combine the values.
        """
        policy = self.config.depths_policy
        gamma = self.gamma
        p4 = float(self.rules.p4)
        moves_memo: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        leaves: dict[bytes, int] = {}
        leaf_boards: list[np.ndarray] = []
        leaf_values = np.zeros(0)

        def limit(exps: np.ndarray) -> int:
            return int(policy[min(_free(exps), len(policy) - 1)])

        def moves(exps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            key = exps.tobytes()
            if key not in moves_memo:
                after, raw, merges = afterstates(exps[None])
                legal = (after[0] != exps[None]).reshape(4, -1).any(axis=1)
                moves_memo[key] = (after[0], self._rewards(raw[0], merges[0]), legal)
            return moves_memo[key]

        def leaf(exps: np.ndarray, collect: bool) -> float:
            key = exps.tobytes()
            if collect:
                if key not in leaves:
                    leaves[key] = len(leaf_boards)
                    leaf_boards.append(exps)
                return 0.0
            return float(leaf_values[leaves[key]])

        def max_node(exps: np.ndarray, level: int, final: int, collect: bool) -> np.ndarray:
            after, rew, legal = moves(exps)
            out = np.full(4, -np.inf)
            for j in range(4):
                if not legal[j]:
                    continue
                a = after[j]
                if level >= final:
                    out[j] = rew[j] + gamma * leaf(a, collect)
                    continue
                child_final = limit(a)
                empties = np.flatnonzero(a.reshape(-1) == 0)
                ev = 0.0
                for cell in empties:
                    for e, p in ((1, 1.0 - p4), (2, p4)):
                        if p == 0.0:
                            continue
                        child = a.copy()
                        child.reshape(-1)[cell] = e
                        sub = max_node(child, level + 1, child_final, collect)
                        best = sub.max()
                        ev += p * (best if np.isfinite(best) else 0.0)
                out[j] = rew[j] + gamma * (ev / len(empties))
            return out

        root = np.ascontiguousarray(exps_RC, dtype=np.uint8)
        final = limit(root)
        max_node(root, 1, final, True)
        leaf_values = self.values(np.stack(leaf_boards)) if leaf_boards else np.zeros(0)
        return max_node(root, 1, final, False)

    def move_values(self, game: Game) -> dict[Direction, float]:
        exps = game_exponents(game)
        if self.config.play == "switching-ply":
            vals = self.search(exps)
        else:
            vals = self.one_ply(exps[None])[0][0]
        # illegal moves are -inf; a legal one stays even when its value is not finite (a diverged
        # network), so that act() still has a legal move to pick
        mask = game.legal_mask()
        return {d: float(vals[d]) for d in DIRECTIONS if mask[d]}

    # TorchAgent.act reads one network output per move; here the network rates afterstates, so the
    # move is the best of move_values (ties by action order), as for any agent. Agent.act itself, not a
    # method calling it: agents.guard.play_move then checks these values (a NaN is the agent's fault).
    act = Agent.act

    # ------------------------------------------------------------------ training
    def _new_game(self) -> tuple[Game, GameTrace | None, bool]:
        """A game (and its trace): from the initial position, or from an earlier one once allowed."""
        cfg = self.config
        seed = int(self.rng.integers(0, 2**62))
        from_pool = (
            self.round >= cfg.random_start_round
            and len(self._pool) > 0
            and self.rng.random() < cfg.random_start_prob
        )
        if from_pool:
            game = Game(
                seed=seed,
                rules=self.rules,
                board=from_exponents(self._pool[self.rng.integers(len(self._pool))]),
            )
        else:
            game = Game(seed=seed, rules=self.rules)
        return game, (GameTrace.start(game) if cfg.record_games else None), from_pool

    def _remember_positions(self, boards: np.ndarray) -> None:
        """Keep positions for later random starts (a uniform subset of all of them once the pool is full)."""
        cap = self.config.start_pool
        pool = np.concatenate([self._pool, boards])
        if len(pool) > cap:
            keep = np.sort(self.rng.choice(len(pool), size=cap, replace=False))
            pool = pool[keep]
        self._pool = pool

    def _start_fit(self, states: np.ndarray) -> None:
        order = np.concatenate([self.rng.permutation(len(states)) for _ in range(self.config.epochs)])
        self._fit = (states, order, [])
        self._fit_pos = 0

    def _fit_step(self) -> bool:
        """One minibatch of regression onto the expectimax targets; True once the round's fit is done.

        The fit survives the end of a ``train`` call (a short budget, a stop): the next call carries on
        with the next batch instead of starting the round again.
        """
        assert self._fit is not None
        states, order, losses = self._fit
        cfg = self.config
        for g in self.optimizer.param_groups:
            g["lr"] = self.lr_schedule(self.round)
        batch = states[order[self._fit_pos : self._fit_pos + cfg.batch_size]]
        self._fit_pos += cfg.batch_size
        target = expectimax_targets(batch, self.values, self.gamma, float(self.rules.p4), cfg.reward)
        self.net.train()
        pred = self.net(self.encoder.tensor(batch)).reshape(-1)
        loss = F.mse_loss(pred, self.tensor(target).float())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.counters.updates += 1
        losses.append(float(loss.item()))
        return self._fit_pos >= len(order)

    def _schedules(self) -> dict[str, float]:
        return {
            "epsilon": self.epsilon_schedule(self.round),
            "gamma": self.gamma,
            "lr": self.lr_schedule(self.round),
            "round": float(self.round),
        }

    def recent_mean(self) -> float | None:
        return float(np.mean(self._recent)) if self._recent else None

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        """Rounds of self-play + fitting; an event per finished game and per fitted round."""
        threads = torch.get_num_threads()
        if self.config.threads:
            torch.set_num_threads(self.config.threads)
        try:
            yield from self._train(budget, control)
        finally:
            torch.set_num_threads(threads)

    def _train(self, budget: Budget, control: Control | None) -> Iterator[MetricEvent]:
        cfg = self.config
        tracker = self.start_training(budget, control)
        if len(self._envs) != cfg.envs:
            self._envs = [self._new_game() for _ in range(cfg.envs)]
        envs = self._envs
        while tracker.proceed():
            if self._fit is None and sum(len(x) for x in self._round_states) >= cfg.states_per_round:
                self._start_fit(np.concatenate(self._round_states))
                self._round_states = []
                if self._round_positions:
                    self._remember_positions(np.concatenate(self._round_positions))
                    self._round_positions = []
            if self._fit is not None:
                if self._fit_step():
                    losses = self._fit[2]
                    self._fit = None
                    self.round += 1
                    metrics = {"loss": float(np.mean(losses)), **self._schedules()}
                    yield tracker.event("update", metrics, board=envs[0][0].board)
                continue
            yield from self._self_play_step(envs, tracker)
        tracker.clock.tick()

    def _self_play_step(
        self, envs: list[tuple[Game, GameTrace | None, bool]], tracker: TrainTracker
    ) -> Iterator[MetricEvent]:
        """One move in every game (epsilon-greedy 1-ply); finished games are reported and replaced."""
        eps = self.epsilon_schedule(self.round)
        exps = np.stack([game_exponents(g) for g, _, _ in envs])
        q, legal, after = self._one_ply(exps)
        chosen = []
        for i, (game, trace, from_pool) in enumerate(envs):
            moves = np.flatnonzero(legal[i])
            if self.rng.random() < eps:
                d = int(moves[self.rng.integers(len(moves))])
            else:
                d = int(np.argmax(q[i]))
            chosen.append(after[i, d])
            if trace is not None:
                play_recorded(game, d, trace)
            else:
                game.step(d)
            self.counters.steps += 1
            if game.game_over:
                self.counters.episodes += 1
                if not from_pool:
                    self._recent = ([*self._recent, game.score])[-100:]
                metrics = {
                    "score": float(game.score),
                    "max_tile": float(game.max_tile),
                    "moves": float(game.moves),
                    "random_start": float(from_pool),
                    "steps_per_s": tracker.steps_per_s(),
                    **self._schedules(),
                }
                mean = self.recent_mean()
                if mean is not None:
                    metrics["mean_score"] = mean
                yield tracker.event("episode", metrics, game=trace)
                envs[i] = self._new_game()
        self._round_states.append(np.stack(chosen))
        self._round_positions.append(exps)

    # ------------------------------------------------------------------ state
    def _extra_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {"pool": self._pool}, {"round": self.round, "recent": list(self._recent)}

    def _set_extra_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        self.round = state_int(meta, "round", 0)
        self._recent = (state_ints(meta, "recent") or [])[-100:]
        if "pool" in arrays:
            pool = state_array(arrays, "pool", kinds="iu", shape=(None, *self.rules.shape), low=0, high=62)
            self._pool = pool.astype(np.uint8)
        self._round_states = []
        self._round_positions = []
        self._envs = []
        self._fit = None
        # Finite weights can still overflow (3e38): every move value NaN, the fallback order played.
        # Refused at load, as non-finite weights are: one line naming the file (agents.checkpoint).
        require_finite_values(self, arrays)
