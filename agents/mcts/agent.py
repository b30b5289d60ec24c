"""AlphaZero-like MCTS agent (seed 004): PUCT search over a policy-value network, trained by self-play.

Play: every move runs ``simulations`` PUCT simulations (:mod:`agents.mcts.search`: decision nodes for the
player, chance nodes that take the exact expectation over the spawn, the network's value at the
leaves) and plays the most visited move. Self-play adds Dirichlet noise (alpha 0.3, epsilon 0.25) to
the root priors and samples moves from the visit counts at ``temperature`` for the first
``temperature_moves`` moves.

Training, one generation at a time: the current weights go to the workers as numpy arrays; the workers
play ``games_per_generation`` self-play games (in this process, in local processes, or as Ray actors:
:mod:`agents.mcts.selfplay`), each worker ``batch_games`` games at once whose search leaves share one
network call per simulation step (:func:`play_selfplay_games`: the same games as one at a time,
about twice the moves per CPU-second); their positions join a replay window; the learner (here, in
the driver) runs ``epochs`` passes over the window: policy cross-entropy against the root visit distribution plus value
MSE, SGD with momentum and weight decay, a StepLR schedule over epochs.

Value target. The network's value head predicts ``log(1 + G)``, where ``G`` is the score still to come
from the position (the sum of the rewards of the moves after it; 0 once the game is over). Why this:
in 2048 there is no win / loss to predict, and "score still to come" is what the search maximises
(``Q = reward + E[V(next)]``), so values and rewards add up in the same units; scores run from 0 to
tens of thousands, and the log keeps the regression target in ~[0, 11] so that its MSE does not swamp
the policy loss. ``value_target`` picks how ``G`` is estimated from a self-play game:

- ``n_step`` (default): the next ``td_steps`` rewards plus the search value ``td_steps`` moves later
  (MuZero's target);
- ``return``: the score the game actually made after the position (Monte Carlo; unbiased, noisy);
- ``search``: the root's search value (seed 004's ``z``: "the expected value of the root").

Why ``n_step``: on this machine (~100 self-play games an hour), the ``return`` target was too noisy to
learn: after 50 minutes the value head explained 5 % of its held-out variance (correlation 0.35, train
0.64: it memorised), and a search steered by that noise played worse than one with an untrained network
(100 games: 512 in 60 % against 87 %). The ``n_step`` target varies far less; it taught the value head
little beyond a level of a few hundred points for a live board, against 0 for a lost game, but that
already makes the search avoid positions that die within its horizon (20 games after 20 minutes: 1024
in 10 against 6 for an untrained network, same seeds).

A game cut at ``max_moves`` adds the network's value of its last board to every return (it was not over).
"""

from __future__ import annotations

import collections
import copy
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from agents.base import Budget, Control, MetricEvent, TrainContext
from agents.checkpoint import state_array, state_int
from agents.config import AgentConfig, ConfigError, knob
from agents.mcts.nets import build_network, inference_copy
from agents.mcts.search import NO_OUTPUT, Evaluator, FastOps, Leaf, Node, Search, board_ops
from agents.mcts.selfplay import WorkerSpec, make_pool
from agents.metrics import LR, MetricInfo, counter
from agents.nn.agent import TorchAgent
from agents.nn.device import device_knob, module_device
from agents.nn.encoders import Encoder, make_encoder
from agents.nn.masking import masked_log_softmax
from agents.nn.replay import RingArrays
from agents.nn.state import draw_seed, load_module_arrays, module_arrays
from agents.training import TrainTracker
from engine import DIRECTIONS, Direction, Game, Rules, to_exponents
from engine.boards import legal_masks, symmetries
from engine.records import GameTrace, play_recorded

# ------------------------------------------------------------------------------------------- config


@dataclass
class MCTSConfig(AgentConfig):
    """Settings of the MCTS agent. Defaults are sized for a 2-core CPU; preset ``mcts-seed004`` has the seed's."""

    # network
    network: str = knob(
        "mini",
        "network: seed 004's ZeroNetworkMini or the LC0-style SE residual tower",
        choices=("mini", "lc0"),
    )
    planes: int = knob(
        16,
        "k one-hot input planes (plane 0 empty, plane i tile 2**i; larger tiles share the last)",
        low=2,
        high=32,
    )
    filters: int = knob(16, "conv filters per layer", low=1, high=512)
    dense: int = knob(64, "width of each tower's dense layer (mini)", low=1, high=4096)
    blocks: int = knob(2, "residual blocks (lc0)", low=0, high=40)
    se_channels: int = knob(32, "squeeze-excitation width (lc0)", low=1, high=512, advanced=True)
    # search
    simulations: int = knob(16, "MCTS simulations per self-play move", low=1, high=100_000)
    eval_simulations: int = knob(
        32, "simulations per move when playing / evaluating (0: same as simulations)", low=0, high=100_000
    )
    c_puct: float = knob(1.25, "PUCT exploration constant (on min-max normalised Q)", low=0.0, high=100.0)
    dirichlet_alpha: float = knob(
        0.3, "Dirichlet noise concentration at the root (self-play)", low=0.001, high=100.0
    )
    dirichlet_epsilon: float = knob(
        0.25, "weight of the Dirichlet noise in the root priors (self-play)", low=0.0, high=1.0
    )
    temperature: float = knob(
        1.0, "self-play move sampling temperature over visit counts (0: most visited)", low=0.0, high=10.0
    )
    temperature_moves: int = knob(
        30,
        "self-play moves sampled at that temperature; later moves take the most visited",
        low=0,
        high=1_000_000,
    )
    max_moves: int = knob(2000, "self-play games are cut after this many moves", low=1, high=1_000_000)
    chance_outcomes: int = knob(
        32,
        "spawn outcomes a chance node enumerates exactly; more are sampled (this many)",
        low=1,
        high=4096,
        advanced=True,
    )
    # self-play and learning
    games_per_generation: int = knob(4, "self-play games between two learning phases", low=1, high=100_000)
    # 8: on a 2-core AMD EPYC, self-play moves per CPU-second with 1 / 4 / 8 / 16 games at once were
    # 114 / 198 / 220 / 208 (the default network; 16 games of 40 moves each, in one run). Beyond ~8
    # games a pass holds over 100 boards and costs per board what a batch of 1,000 does.
    batch_games: int = knob(
        8,
        "games each self-play worker plays at once; their leaves share one network pass "
        "(at most games_per_generation / workers)",
        low=1,
        high=4096,
    )
    replay_size: int = knob(40_000, "positions kept for learning (newest first)", low=64, high=10_000_000)
    epochs: int = knob(2, "passes over the replay window per generation", low=1, high=1000)
    batch_size: int = knob(64, "minibatch size", low=1, high=65_536)
    lr: float = knob(0.01, "SGD learning rate", low=1e-6, high=10.0, log=True)
    momentum: float = knob(0.9, "SGD momentum", low=0.0, high=0.999)
    weight_decay: float = knob(1e-4, "SGD weight decay", low=0.0, high=1.0, log=True)
    lr_step_epochs: int = knob(
        200, "StepLR: multiply the learning rate by lr_gamma every this many epochs", low=1, high=1_000_000
    )
    lr_gamma: float = knob(0.5, "StepLR factor", low=0.0, high=1.0)
    value_target: str = knob(
        "n_step", "what the value head learns (see the module doc)", choices=("n_step", "return", "search")
    )
    td_steps: int = knob(10, "n of the n_step value target", low=1, high=100_000)
    value_loss_weight: float = knob(
        1.0, "weight of the value MSE next to the policy cross-entropy", low=0.0, high=100.0
    )
    validation_split: float = knob(
        0.1, "fraction of self-play games held out for the validation losses", low=0.0, high=0.9
    )
    augment: bool = knob(
        True, "train on a random board symmetry of each position (8 on square boards, 4 otherwise)"
    )
    device: str = device_knob()

    def validate(self) -> None:
        if self.eval_simulations == 0 and self.simulations < 1:
            raise ConfigError("simulations", "must be >= 1")

    @property
    def play_simulations(self) -> int:
        return self.eval_simulations or self.simulations


# ------------------------------------------------------------------------------------------ helpers


#: ``G`` is clipped to ``exp(30)`` before use: any finite network output stays a finite score.
_LOG_VALUE_CAP = 30.0


def make_evaluator(net: nn.Module, encoder: Encoder, rows: int, cols: int) -> Evaluator:
    """The search's view of ``net`` (a snapshot of its weights now): exponents -> (logits, score units).

    Plays through :func:`~agents.mcts.nets.inference_copy`, whose small convs are single matrix
    products: the search evaluates a few states at a time, where CPU conv kernels are mostly overhead.
    """
    if module_device(net).type != "cpu":
        # play stays on the CPU (see MCTSAgent.__init__): snapshot the weights there
        net = copy.deepcopy(net).cpu()
    net = inference_copy(net, rows, cols)

    def evaluate(exps_NRC: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float64]]:
        with torch.inference_mode():
            logits_N4, value_N = net(encoder.tensor(exps_NRC))
        log_value_N = np.clip(value_N.numpy().astype(np.float64), 0.0, _LOG_VALUE_CAP)
        return logits_N4.numpy(), np.expm1(log_value_N)

    return evaluate


def value_targets(
    rewards_N: npt.NDArray[np.int64],
    root_values_N: npt.NDArray[np.float64],
    tail_value: float,
    kind: str,
    td_steps: int,
) -> npt.NDArray[np.float32]:
    """``log(1 + G_t)`` for every position of one game (see the module doc for ``kind``).

    ``rewards_N[t]`` is the reward of the move played at position ``t``; ``tail_value`` is the value of the
    board after the last move (0 when the game is over). Rewards [4, 0, 8], tail 0, ``return`` ->
    ``log1p([12, 8, 8])``.
    """
    n = len(rewards_N)
    r = rewards_N.astype(np.float64)
    if kind == "search":
        g = root_values_N.astype(np.float64)
    else:
        # after[t] = sum of rewards from t to the end, plus the tail.
        after = np.concatenate([np.cumsum(r[::-1])[::-1], [0.0]]) + tail_value
        if kind == "return":
            g = after[:n]
        elif kind == "n_step":
            idx = np.arange(n)
            end = np.minimum(idx + td_steps, n)
            boot = np.append(root_values_N.astype(np.float64), tail_value)[end]
            g = after[idx] - after[end] + boot
        else:
            raise ValueError(f"unknown value target {kind!r}")
    return np.log1p(np.maximum(g, 0.0)).astype(np.float32)


@dataclass(frozen=True)
class SelfPlayTask:
    """One self-play game to play: its seed fixes the spawns, the noise and the sampled moves."""

    seed: int


@dataclass
class SelfPlayGame:
    """A finished self-play game, as it travels back from a worker (N positions)."""

    seed: int
    exps_NRC: npt.NDArray[np.uint8]  # boards before each move, exponents
    policy_N4: npt.NDArray[np.float32]  # root visit distributions
    rewards_N: npt.NDArray[np.int64]  # reward of the move played
    root_values_N: npt.NDArray[np.float64]  # root search values (score units)
    tail_value: float  # value of the final board: 0 when over, the network's when cut at max_moves
    score: int
    max_tile: int
    moves: int
    truncated: bool
    seconds: float
    trace: GameTrace


def play_selfplay_game(
    evaluate: Evaluator,
    rules: Rules,
    config: MCTSConfig,
    seed: int,
    should_stop: Callable[[], bool] | None = None,
) -> SelfPlayGame | None:
    """Play one self-play game with search + root noise, reusing the subtree of the move played.

    ``should_stop`` is asked before every move; the game is abandoned (None) once it says True.
    """
    t0 = time.perf_counter()
    game = Game(rules=rules, seed=seed)
    rng = np.random.default_rng(seed)  # noise and move sampling; the spawns use the game's own stream
    trace = GameTrace.start(game)
    exps: list[npt.NDArray[np.uint8]] = []
    policies: list[npt.NDArray[np.float32]] = []
    root_values: list[float] = []
    search: Search | None = None
    root: Node | None = None
    while not game.game_over and game.moves < config.max_moves:
        if should_stop is not None and should_stop():
            return None
        board = game.board
        if search is None or (isinstance(search.ops, FastOps) and not FastOps.fits(board)):
            search = _new_search(rules, board, evaluate, rng, config)
            root = None
        root = search.root(board, reuse=root)
        search.add_noise(root)
        search.run(root, config.simulations)
        exps.append(to_exponents(board))
        policies.append(search.policy(root))
        root_values.append(root.value)
        temperature = config.temperature if game.moves < config.temperature_moves else 0.0
        action = search.choose(root, temperature)
        play_recorded(game, action, trace)
        root = search.child(root, action, game.board)
    return _finished_game(evaluate, rules, seed, game, trace, exps, policies, root_values, t0)


def _finished_game(
    evaluate: Evaluator,
    rules: Rules,
    seed: int,
    game: Game,
    trace: GameTrace,
    exps: list[npt.NDArray[np.uint8]],
    policies: list[npt.NDArray[np.float32]],
    root_values: list[float],
    t0: float,
) -> SelfPlayGame:
    """The record of a game that ended (or was cut at ``max_moves``: its tail is the network's value of
    the last board, evaluated alone)."""
    truncated = not game.game_over
    tail = 0.0
    if truncated:
        tail = float(evaluate(to_exponents(game.board)[None])[1][0])
    shape = rules.shape
    return SelfPlayGame(
        seed=seed,
        exps_NRC=np.array(exps, dtype=np.uint8).reshape(-1, *shape),
        policy_N4=np.array(policies, dtype=np.float32).reshape(-1, 4),
        rewards_N=np.array(trace.rewards, dtype=np.int64),
        root_values_N=np.array(root_values, dtype=np.float64),
        tail_value=tail,
        score=game.score,
        max_tile=game.max_tile,
        moves=game.moves,
        truncated=truncated,
        seconds=time.perf_counter() - t0,
        trace=trace,
    )


class _GameInPlay:
    """One game of :func:`play_selfplay_games`, advanced one network evaluation at a time.

    The same steps, in the same order and on the same random streams, as :func:`play_selfplay_game`:
    a root (reused subtree or a new one, valued by the network), its noise, ``simulations`` times
    :meth:`Search.select_leaf` / :meth:`Search.finish`, then a move. Only who calls the network differs.
    """

    def __init__(self, index: int, seed: int, rules: Rules, config: MCTSConfig) -> None:
        self.t0 = time.perf_counter()
        self.index = index
        self.seed = seed
        self.rules = rules
        self.config = config
        self.game = Game(rules=rules, seed=seed)
        self.rng = np.random.default_rng(seed)
        self.trace = GameTrace.start(self.game)
        self.exps: list[npt.NDArray[np.uint8]] = []
        self.policies: list[npt.NDArray[np.float32]] = []
        self.root_values: list[float] = []
        self.search: Search | None = None
        self.root: Node | None = None  # None: the next move needs a root
        self.reuse: Node | None = None  # the subtree kept from the last move
        self.simulations = 0  # run from the current root so far
        self.leaf: Leaf | None = None  # waiting for the network
        self.leaf_is_root = False

    def next_leaf(self, evaluate: Evaluator) -> Leaf | None:
        """Play on until the network must value something: that leaf, or None once the game has ended."""
        cfg = self.config
        while True:
            if self.root is None:
                game = self.game
                if game.game_over or game.moves >= cfg.max_moves:
                    return None
                board = game.board
                search = self.search
                if search is None or (isinstance(search.ops, FastOps) and not FastOps.fits(board)):
                    search = self.search = _new_search(self.rules, board, evaluate, self.rng, cfg)
                    self.reuse = None
                if self.reuse is not None and search.is_at(self.reuse, board):
                    self._set_root(self.reuse)
                else:
                    self.leaf, self.leaf_is_root = search.root_leaf(board), True
                    return self.leaf
            elif self.simulations < cfg.simulations:
                assert self.search is not None
                leaf = self.search.select_leaf(self.root)
                self.simulations += 1
                if leaf.states:
                    self.leaf, self.leaf_is_root = leaf, False
                    return leaf
                self.search.finish(leaf, *NO_OUTPUT)
            else:
                self._move()

    def give(self, logits_N4: npt.NDArray[np.float32], values_N: npt.NDArray[np.float64]) -> None:
        """The network's output for the states of the leaf :meth:`next_leaf` returned."""
        leaf, search = self.leaf, self.search
        assert leaf is not None and search is not None
        self.leaf = None
        if self.leaf_is_root:
            self._set_root(search.finish_root(leaf, logits_N4, values_N))
        else:
            search.finish(leaf, logits_N4, values_N)

    def _set_root(self, root: Node) -> None:
        assert self.search is not None
        self.root = root
        self.search.add_noise(root)
        # Search.run on a root with nothing to search runs no simulation.
        self.simulations = 0 if self.search.start(root) else self.config.simulations

    def _move(self) -> None:
        search, root, game = self.search, self.root, self.game
        assert search is not None and root is not None
        self.exps.append(to_exponents(game.board))
        self.policies.append(search.policy(root))
        self.root_values.append(root.value)
        temperature = self.config.temperature if game.moves < self.config.temperature_moves else 0.0
        action = search.choose(root, temperature)
        play_recorded(game, action, self.trace)
        self.reuse = search.child(root, action, game.board)
        self.root = None

    def result(self, evaluate: Evaluator) -> SelfPlayGame:
        return _finished_game(
            evaluate,
            self.rules,
            self.seed,
            self.game,
            self.trace,
            self.exps,
            self.policies,
            self.root_values,
            self.t0,
        )


def play_selfplay_games(
    evaluate: Evaluator,
    rules: Rules,
    config: MCTSConfig,
    seeds: Sequence[int],
    should_stop: Callable[[], bool] | None = None,
    batch: int | None = None,
) -> Iterator[tuple[int, SelfPlayGame]]:
    """Play a self-play game per seed, ``batch`` (default ``config.batch_games``) at once; yield
    ``(position in seeds, game)`` in seed order as they finish.

    Each round advances every game in flight to its next leaf, values all those leaves in ONE call of
    ``evaluate``, and hands each game its rows; a finished game's place goes to the next seed. Why: a
    chance node's outcomes are a dozen boards, where a CPU network call costs mostly its fixed
    overhead; a batch of several games' leaves shares it. Each game is the one
    :func:`play_selfplay_game` plays for its seed, up to float rounding in ``evaluate`` (torch's
    small-batch products may differ from a larger batch's in the last bit).

    ``should_stop`` is asked before every network call; once it says True the games in flight are
    abandoned (the generator ends).
    """
    k = max(1, batch if batch is not None else config.batch_games)
    todo = collections.deque(enumerate(seeds))
    playing: list[_GameInPlay] = []
    done: dict[int, SelfPlayGame] = {}
    next_out = 0
    while todo or playing:
        if should_stop is not None and should_stop():
            return
        while len(playing) < k and todo:
            playing.append(_GameInPlay(*todo.popleft(), rules, config))
        waiting: list[_GameInPlay] = []
        leaves: list[Leaf] = []
        for g in playing:
            leaf = g.next_leaf(evaluate)
            if leaf is None:
                done[g.index] = g.result(evaluate)
            else:
                waiting.append(g)
                leaves.append(leaf)
        playing = waiting
        if leaves:
            exps_NRC = np.concatenate([leaf.exponents() for leaf in leaves])
            logits_N4, values_N = evaluate(exps_NRC)
            start = 0
            for g, leaf in zip(waiting, leaves):
                end = start + len(leaf.states)
                g.give(logits_N4[start:end], values_N[start:end])
                start = end
        while next_out in done:
            yield next_out, done.pop(next_out)
            next_out += 1


def _new_search(
    rules: Rules,
    board: npt.NDArray[np.int64],
    evaluate: Evaluator,
    rng: np.random.Generator,
    config: MCTSConfig,
) -> Search:
    return Search(
        board_ops(rules, board, config.chance_outcomes),
        evaluate,
        rng,
        c_puct=config.c_puct,
        dirichlet_alpha=config.dirichlet_alpha,
        dirichlet_epsilon=config.dirichlet_epsilon,
    )


def _build_net(config: MCTSConfig, rules: Rules) -> nn.Module:
    return build_network(
        config.network,
        rules.rows,
        rules.cols,
        planes=config.planes,
        filters=config.filters,
        dense=config.dense,
        blocks=config.blocks,
        se_channels=config.se_channels,
    )


class MCTSWorker:
    """A self-play worker (in this process, a local process or a Ray actor): network copy + games."""

    def __init__(
        self, config: Mapping[str, Any], rules: Mapping[str, Any], threads: int | None = None
    ) -> None:
        if threads is not None:
            torch.set_num_threads(threads)
        self.config = MCTSConfig.from_dict(dict(config))
        self.rules = Rules.from_dict(dict(rules))
        self.net = _build_net(self.config, self.rules).eval()
        self.encoder = make_encoder("onehot", planes=self.config.planes)
        self.evaluate = make_evaluator(self.net, self.encoder, *self.rules.shape)

    def set_weights(self, arrays: Mapping[str, np.ndarray]) -> None:
        load_module_arrays(self.net, arrays, "net/")
        self.evaluate = make_evaluator(self.net, self.encoder, *self.rules.shape)

    def play(self, task: SelfPlayTask, should_stop: Callable[[], bool] | None = None) -> SelfPlayGame | None:
        return play_selfplay_game(self.evaluate, self.rules, self.config, task.seed, should_stop)

    def play_many(
        self, tasks: Sequence[SelfPlayTask], should_stop: Callable[[], bool] | None = None
    ) -> Iterator[tuple[int, SelfPlayGame]]:
        """``tasks``' games, ``batch_games`` at once (:func:`play_selfplay_games`): ``(position, game)``
        in task order."""
        seeds = [t.seed for t in tasks]
        return play_selfplay_games(self.evaluate, self.rules, self.config, seeds, should_stop)


# ------------------------------------------------------------------------------------ replay window


class PositionWindow(RingArrays):
    """The newest ``capacity`` self-play positions: board, visit policy, legal mask, value target, held-out flag."""

    _FIELDS = ("exps", "policy", "masks", "targets", "held_out")
    _PREFIX = "window/"

    def __init__(self, capacity: int, shape: tuple[int, int]) -> None:
        self.capacity = capacity
        self.exps = np.zeros((capacity, *shape), dtype=np.uint8)
        self.policy = np.zeros((capacity, 4), dtype=np.float32)
        self.masks = np.zeros((capacity, 4), dtype=bool)
        self.targets = np.zeros(capacity, dtype=np.float32)
        self.held_out = np.zeros(capacity, dtype=bool)
        self.position = 0
        self.size = 0

    def add(
        self,
        exps_NRC: np.ndarray,
        policy_N4: np.ndarray,
        masks_N4: np.ndarray,
        targets_N: np.ndarray,
        held_out: bool | np.ndarray,
    ) -> None:
        """Append N positions; ``held_out`` is one flag for all of them or one per position."""
        held_N = np.broadcast_to(np.asarray(held_out, dtype=bool), (len(targets_N),))
        self._append(exps_NRC, policy_N4, masks_N4, targets_N, held_N)

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the training and the held-out positions."""
        flags = self.held_out[: self.size]
        return np.flatnonzero(~flags), np.flatnonzero(flags)

    def set_arrays(self, arrays: Mapping[str, np.ndarray], prefix: str) -> None:
        self.position = self.size = 0
        if prefix + "exps" not in arrays:
            return
        self.add(*(np.asarray(arrays[prefix + f]) for f in self._FIELDS))


# -------------------------------------------------------------------------------------------- agent


class MCTSAgent(TorchAgent):
    """AlphaZero-like MCTS over a policy-value network (seed 004), trained by self-play."""

    name = "mcts"
    encoder: Encoder  # always one-hot planes (never the n-tuple rows a dqn network may read)
    #: a generation of two 25-move games with a 4-filter network takes a second or two on one core
    smoke_config: ClassVar[Mapping[str, Any]] = {
        "filters": 4,
        "dense": 8,
        "planes": 12,
        "simulations": 4,
        "eval_simulations": 0,
        "max_moves": 25,
        "games_per_generation": 2,
        "epochs": 1,
        "batch_size": 16,
        "replay_size": 512,
    }
    config_cls = MCTSConfig
    description = (
        "AlphaZero-like: PUCT tree search with spawn expectations over a policy-value network, "
        "trained from self-play (seed 004); self-play scales over local processes or a Ray cluster."
    )
    metrics = (
        MetricInfo("policy_loss", "Policy loss", group="Policy loss", kind="loss", scale="log"),
        MetricInfo(
            "val_policy_loss", "Validation policy loss", group="Policy loss", kind="loss", scale="log"
        ),
        MetricInfo("value_loss", "Value loss", group="Value loss", kind="loss", scale="log"),
        MetricInfo("val_value_loss", "Validation value loss", group="Value loss", kind="loss", scale="log"),
        MetricInfo(
            "loss", "Loss", group="", kind="loss", help="policy + weight x value loss (drawn as its parts)"
        ),
        MetricInfo("selfplay_mean_score", "Self-play mean score", group="Score", kind="score"),
        MetricInfo("selfplay_max_tile", "Self-play max tile", group="Max tile", kind="score"),
        MetricInfo("games_per_s", "Games/s", unit="games/s", group="Games/s", kind="speed"),
        LR,
        counter("generation", "self-play generations so far"),
        counter("window_positions", "positions in the training window"),
    )
    parallel_play = True
    value_kind = "share"  # visit shares
    config: MCTSConfig

    def __init__(self, config: MCTSConfig | None = None, rules: Rules | None = None, seed: int | None = None):
        super().__init__(config, rules, seed)
        cfg = self.config
        self.encoder = make_encoder("onehot", planes=cfg.planes)
        self.net = _build_net(cfg, self.rules).eval()
        self._scheduler: torch.optim.lr_scheduler.StepLR | None = None  # built with the optimiser
        self._scheduler_epoch = 0  # its epoch, kept here until then
        # Only the gradient steps run on the device: the search evaluates a few boards at a time, where a
        # GPU's per-call latency loses to the CPU, so make_evaluator plays from a CPU copy of the weights.
        self.net.to(self.device)
        self.window = PositionWindow(cfg.replay_size, self.rules.shape)
        self.generation = 0
        self._evaluator: Evaluator | None = None  # built on first play after the weights changed
        self._symmetries = symmetries(self.rules.rows, self.rules.cols)
        # The last play search, kept so that the next act() on the following board reuses its subtree.
        self._play: tuple[Search, Node, int] | None = None

    # ------------------------------------------------------------------ play
    @property
    def evaluate(self) -> Evaluator:
        """The network as the search sees it (rebuilt after the weights change)."""
        if self._evaluator is None:
            self._evaluator = make_evaluator(self.net, self.encoder, *self.rules.shape)
        return self._evaluator

    def _build_optimizer(self) -> torch.optim.Optimizer:
        cfg = self.config
        opt = torch.optim.SGD(
            self.net.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
        )
        self._scheduler = torch.optim.lr_scheduler.StepLR(opt, cfg.lr_step_epochs, cfg.lr_gamma)
        self._scheduler.last_epoch = self._scheduler_epoch
        return opt

    @property
    def scheduler(self) -> torch.optim.lr_scheduler.StepLR:
        """The learning-rate schedule, built with the optimiser (on first use)."""
        self.optimizer  # noqa: B018 - builds both
        assert self._scheduler is not None
        return self._scheduler

    def _weights_changed(self) -> None:
        self._evaluator = None
        self._play = None  # a kept subtree holds the old network's opinions

    def search(self, game: Game, simulations: int | None = None) -> tuple[Search, Node]:
        """Search from ``game``'s board (no noise), reusing the last search's subtree when it leads here."""
        board = game.board
        reuse: Node | None = None
        search: Search | None = None
        if self._play is not None:
            search, last_root, last_action = self._play
            if isinstance(search.ops, FastOps) and not FastOps.fits(board):
                search = None
            elif search.is_at(last_root, board):
                reuse = last_root
            else:
                reuse = search.child(last_root, last_action, board)
        if search is None:
            search = _new_search(self.rules, board, self.evaluate, np.random.default_rng(0), self.config)
        root = search.root(board, reuse=reuse)
        search.run(root, simulations if simulations is not None else self.config.play_simulations)
        return search, root

    def move_values(self, game: Game) -> dict[Direction, float]:
        """The search's visit share of each legal move (what :meth:`act` chooses by)."""
        search, root = self.search(game)
        if not root.actions:
            return {}
        self._play = (search, root, root.actions[0])
        policy = search.policy(root)
        return {DIRECTIONS[a]: float(policy[a]) for a in root.actions}

    def act(self, game: Game) -> Direction:
        """The most visited move (ties: the higher Q, then action order); always legal."""
        search, root = self.search(game)
        action = search.choose(root, 0.0)
        self._play = (search, root, action)
        return DIRECTIONS[action]

    # ------------------------------------------------------------------ training
    def _worker_spec(self) -> WorkerSpec:
        return WorkerSpec(
            "agents.mcts:MCTSWorker", {"config": self.config.to_dict(), "rules": self.rules.to_dict()}
        )

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        context = context if context is not None else TrainContext()
        tracker = self.start_training(budget, control)
        self._weights_changed()
        pool = make_pool(
            self._worker_spec(),
            context.workers,
            context.backend,
            context.ray_address,
            batch=self.config.batch_games,
        )
        try:
            yield tracker.event("info", {}, message=f"self-play on {pool.describe()}")
            while tracker.proceed():
                n_games = self.config.games_per_generation
                if budget.episodes is not None:
                    n_games = min(n_games, budget.episodes - tracker.episodes)
                tasks = [SelfPlayTask(draw_seed(self.rng)) for _ in range(n_games)]
                pool.set_weights(module_arrays(self.net, "net/"))
                finished: dict[int, SelfPlayGame] = {}
                t0 = time.perf_counter()
                # Asked while games are in flight too: a stop, a pause or the end of a time budget
                # does not wait for a long game to finish (the unfinished games are dropped).
                for index, result in pool.run(tasks, keep_going=tracker.proceed):
                    finished[index] = result
                    self.counters.episodes += 1
                    self.counters.steps += result.moves
                    yield self._game_event(tracker, result, len(finished) / (time.perf_counter() - t0))
                    if not tracker.proceed():
                        break
                gen_seconds = time.perf_counter() - t0
                # Task order, not finishing order: the same seed gives the same window for any worker count.
                for index in sorted(finished):
                    self._add_game(finished[index])
                if tracker.stopped or not finished:
                    return
                # Budget used up mid-generation: its finished games still get their learning phase.
                yield from self._learn(tracker)
                self._weights_changed()
                self.generation += 1
                games = [finished[i] for i in sorted(finished)]
                yield tracker.event(
                    "update",
                    {
                        "generation": self.generation,
                        "selfplay_mean_score": float(np.mean([g.score for g in games])),
                        "selfplay_max_tile": float(max(g.max_tile for g in games)),
                        "games_per_s": len(games) / gen_seconds,
                        "window_positions": len(self.window),
                    },
                    message=f"generation {self.generation}: {len(games)} games",
                )
        finally:
            pool.close()

    def _game_event(self, tracker: TrainTracker, g: SelfPlayGame, games_per_s: float) -> MetricEvent:
        return tracker.event(
            "episode",
            {
                "score": g.score,
                "max_tile": g.max_tile,
                "moves": g.moves,
                "games_per_s": games_per_s,
                "steps_per_s": tracker.steps_per_s(),
                "generation": self.generation,
            },
            game=g.trace,
            board=g.trace.final_board,
        )

    def _add_game(self, g: SelfPlayGame) -> None:
        if g.moves == 0:
            return
        targets = value_targets(
            g.rewards_N, g.root_values_N, g.tail_value, self.config.value_target, self.config.td_steps
        )
        held_out = bool(self.rng.random() < self.config.validation_split)
        self.window.add(g.exps_NRC, g.policy_N4, legal_masks(g.exps_NRC), targets, held_out)

    def _batch(self, idx: np.ndarray, augment: bool) -> tuple[torch.Tensor, ...]:
        w = self.window
        exps_BRC, policy_B4, masks_B4 = w.exps[idx], w.policy[idx], w.masks[idx]
        if augment:
            pick_B = self.rng.integers(len(self._symmetries), size=len(idx))
            exps_BRC, policy_B4, masks_B4 = exps_BRC.copy(), policy_B4.copy(), masks_B4.copy()
            for s, sym in enumerate(self._symmetries[1:], start=1):
                sel = pick_B == s
                if sel.any():
                    exps_BRC[sel] = sym.apply(w.exps[idx[sel]])
                    policy_B4[sel] = sym.apply_masks(w.policy[idx[sel]])  # moves follow the board
                    masks_B4[sel] = sym.apply_masks(w.masks[idx[sel]])
        return (
            self.tensor(self.encoder.encode(exps_BRC)),
            self.tensor(policy_B4),
            self.tensor(masks_B4),
            self.tensor(w.targets[idx]),
        )

    def _losses(
        self, x_BKRC: torch.Tensor, pi_B4: torch.Tensor, mask_B4: torch.Tensor, z_B: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logits_B4, v_B = self.net(x_BKRC)
        logp_B4 = masked_log_softmax(logits_B4, mask_B4).masked_fill(~mask_B4, 0.0)  # 0 * -inf would be NaN
        policy_loss = -(pi_B4 * logp_B4).sum(dim=1).mean()
        value_loss = torch.mean((v_B - z_B) ** 2)
        return policy_loss, value_loss

    def _learn(self, tracker: TrainTracker) -> Iterator[MetricEvent]:
        cfg = self.config
        train_idx, val_idx = self.window.split()
        if len(train_idx) == 0:
            return
        for _ in range(cfg.epochs):
            if not tracker.control.checkpoint():
                return
            self.net.train()
            order = self.rng.permutation(train_idx)
            sums = np.zeros(2)
            for start in range(0, len(order), cfg.batch_size):
                idx = order[start : start + cfg.batch_size]
                policy_loss, value_loss = self._losses(*self._batch(idx, cfg.augment))
                loss = policy_loss + cfg.value_loss_weight * value_loss
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.counters.updates += 1
                sums += np.array([policy_loss.item(), value_loss.item()]) * len(idx)
            self.net.eval()
            lr = self.optimizer.param_groups[0]["lr"]
            self.scheduler.step()
            metrics = {
                "policy_loss": sums[0] / len(order),
                "value_loss": sums[1] / len(order),
                "loss": (sums[0] + cfg.value_loss_weight * sums[1]) / len(order),
                "lr": lr,
            }
            if len(val_idx):
                metrics.update(self._validation(val_idx))
            yield tracker.event("update", metrics)

    def _validation(self, val_idx: np.ndarray) -> dict[str, float]:
        sums = np.zeros(2)
        with torch.inference_mode():
            for start in range(0, len(val_idx), 1024):
                idx = val_idx[start : start + 1024]
                p, v = self._losses(*self._batch(idx, augment=False))
                sums += np.array([p.item(), v.item()]) * len(idx)
        return {"val_policy_loss": sums[0] / len(val_idx), "val_value_loss": sums[1] / len(val_idx)}

    # ------------------------------------------------------------------ state
    def _extra_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return self.window.get_arrays("window/"), {
            "generation": self.generation,
            "scheduler_epoch": self.scheduler.last_epoch,
        }

    def _set_extra_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        window: dict[str, np.ndarray] = {}
        if "window/exps" in arrays:
            exps = state_array(
                arrays, "window/exps", kinds="iu", shape=(None, *self.rules.shape), low=0, high=62
            )
            n = len(exps)
            window = {
                "window/exps": exps,
                "window/policy": state_array(
                    arrays, "window/policy", kinds="iuf", shape=(n, 4), low=0, high=1
                ),
                "window/masks": state_array(arrays, "window/masks", kinds="biu", shape=(n, 4), low=0, high=1),
                "window/targets": state_array(arrays, "window/targets", kinds="iuf", shape=(n,)),
                "window/held_out": state_array(
                    arrays, "window/held_out", kinds="biu", shape=(n,), low=0, high=1
                ),
            }
        generation = state_int(meta, "generation", 0)
        scheduler_epoch = state_int(meta, "scheduler_epoch", 0)
        self.window.set_arrays(window, "window/")
        self.generation = generation
        self._scheduler_epoch = scheduler_epoch
        if self._scheduler is not None:
            self._scheduler.last_epoch = scheduler_epoch
        self._weights_changed()
