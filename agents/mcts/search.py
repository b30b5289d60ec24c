"""The search of the MCTS agent: decision nodes (the player moves), chance nodes (a tile spawns), PUCT.

Tree shape. A decision node holds a board after its spawn; each legal move leads to a chance node
(the "afterstate": the board after the slide, before the spawn, with the move's reward); each spawn
outcome of a chance node leads to a decision node.

Chance nodes take the **expectation over spawns**, not a sample: when a chance node is first reached,
every outcome (each empty cell x {2, 4}, with probability (1 - p4) / e and p4 / e) is evaluated by the
network in *one* batch, and the chance node's value is ``sum_i p_i * V_i`` over the current estimates
of its children, kept up to date as the search deepens. Why: on 4x4 a chance node has at most 30
outcomes, a batch of 30 costs about what a batch of 1 costs on a CPU (per-call overhead dominates),
and the exact expectation removes the sampling noise that a sampled chance node would need many
simulations to average away — with the few dozen simulations a move that a CPU affords, that noise
would swamp the differences between moves. Descending through a chance node picks the outcome whose
visit share lags its probability most (``argmax p_i / (1 + n_i)``), which is deterministic and
visits likely spawns first. When a chance node has more than ``chance_outcomes`` outcomes (large
boards) or several tiles spawn per move, it falls back to that many sampled outcomes, equally weighted.

Values are in score units: ``V(s)`` = expected future score from ``s`` (the sum of the rewards of the
moves still to come), ``Q(s, a) = r(s, a) + E_spawn[V(s')]``; a finished game has ``V = 0``. A decision
node's ``V`` is the visit-weighted mean of its network value and its moves' current ``Q`` (AlphaZero's
mean backup). Because scores are unbounded, ``Q`` is min-max normalised over the tree before PUCT
(MuZero's rule), so ``c_puct`` means the same on a fresh board and at 20,000 points.

Selection (PUCT): ``argmax_a Q_norm(s, a) + c * P(s, a) * sqrt(N(s)) / (1 + N(s, a))`` with
``sqrt(max(N(s), 1))`` so that the priors break the tie on a node's first visit, and an unvisited
move's ``Q`` taken as the node's own value (first-play urgency). Dirichlet noise is mixed into the
root's priors only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from engine import DIRECTIONS, Rules, slide, to_exponents
from engine import fast as _fast

#: (exponents (n, rows, cols) uint8) -> (move logits (n, 4), values in score units (n,))
Evaluator = Callable[[npt.NDArray[np.uint8]], tuple[npt.NDArray[np.float32], npt.NDArray[np.float64]]]


# ---------------------------------------------------------------------------------------- board ops


class GeneralOps:
    """Board operations on value arrays of any shape, through :func:`engine.slide` (the reference rules)."""

    def __init__(self, rules: Rules, chance_outcomes: int) -> None:
        self.rules = rules
        self.chance_outcomes = chance_outcomes

    def from_board(self, board: npt.NDArray[np.int64]) -> Any:
        return np.asarray(board, dtype=np.int64).copy()

    def key(self, state: Any) -> Any:
        return state.tobytes()

    def successors(self, state: Any) -> list[tuple[int, Any, int]]:
        """``[(action, afterstate, reward)]`` of the legal moves, in action order."""
        out = []
        for d in DIRECTIONS:
            after, reward = slide(state, d)
            if not np.array_equal(after, state):
                out.append((int(d), after, int(reward)))
        return out

    def is_over(self, state: Any) -> bool:
        """No legal move (only a full board can be over: a board with an empty cell always has one)."""
        return not (state == 0).any() and not self.successors(state)

    def outcomes(self, after: Any, rng: np.random.Generator) -> tuple[list[float], list[Any], bool]:
        """Spawn outcomes of an afterstate: ``(probabilities, boards, some may be over)``; exact when they
        are few, else sampled."""
        rules = self.rules
        empty = np.flatnonzero(after.ravel() == 0)
        if rules.spawn_per_move == 0 or empty.size == 0:
            return [1.0], [after], empty.size == 0
        # Spawning fills cells: the results can only be full (and so maybe over) if few were empty.
        maybe_over = bool(empty.size <= rules.spawn_per_move)
        values = [(2, 1.0 - rules.p4), (4, rules.p4)]
        values = [(v, p) for v, p in values if p > 0.0]
        if rules.spawn_per_move == 1 and empty.size * len(values) <= self.chance_outcomes:
            probs, boards = [], []
            for cell in empty:
                for v, p in values:
                    b = after.copy()
                    b.flat[cell] = v
                    probs.append(p / empty.size)
                    boards.append(b)
            return probs, boards, maybe_over
        probs, boards = self._sampled(after, rng)
        return probs, boards, maybe_over

    def _sampled(self, after: Any, rng: np.random.Generator) -> tuple[list[float], list[Any]]:
        found: dict[bytes, int] = {}
        probs: list[float] = []
        boards: list[Any] = []
        weight = 1.0 / self.chance_outcomes
        for _ in range(self.chance_outcomes):
            b = after.copy()
            for _ in range(self.rules.spawn_per_move):
                empty = np.flatnonzero(b.ravel() == 0)
                if empty.size == 0:
                    break
                b.flat[empty[rng.integers(empty.size)]] = 4 if rng.random() < self.rules.p4 else 2
            k = b.tobytes()
            if k in found:
                probs[found[k]] += weight
            else:
                found[k] = len(boards)
                probs.append(weight)
                boards.append(b)
        return probs, boards

    def exponents(self, states: Sequence[Any]) -> npt.NDArray[np.uint8]:
        return np.stack([to_exponents(s) for s in states])

    def board(self, state: Any) -> npt.NDArray[np.int64]:
        return np.asarray(state, dtype=np.int64).copy()


@njit(cache=True)
def _successors_4x4(b: np.uint64) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], int]:
    """All four slides of a packed board at once: (afterstates, rewards, legal bits)."""
    afters = np.zeros(4, dtype=np.uint64)
    rewards = np.zeros(4, dtype=np.int64)
    bits = 0
    for d in range(4):
        # A 32768 + 32768 merge does not fit a nibble: the search treats that move as unavailable
        # (callers switch to GeneralOps before a board can hold two 32768s).
        if _fast.overflows(b, d):
            continue
        moved, reward = _fast.move(b, d)
        if moved != b:
            afters[d] = moved
            rewards[d] = reward
            bits |= 1 << d
    return afters, rewards, bits


@njit(cache=True)
def _spawns_4x4(b: np.uint64) -> npt.NDArray[np.uint64]:
    """Every single-tile spawn on a packed board: for each empty cell (row-major), a 2 then a 4."""
    out = np.zeros(32, dtype=np.uint64)
    n = 0
    for i in range(16):
        shift = np.uint64(4 * i)
        if (b >> shift) & np.uint64(0xF) == np.uint64(0):
            out[n] = b | (np.uint64(1) << shift)
            out[n + 1] = b | (np.uint64(2) << shift)
            n += 2
    return out[:n]


class FastOps:
    """The same operations on 4x4 packed boards (python ints) through :mod:`engine.fast` kernels."""

    _SHIFTS = np.arange(0, 64, 4, dtype=np.uint64)

    def __init__(self, rules: Rules, chance_outcomes: int) -> None:
        if rules.shape != (4, 4):
            raise ValueError("FastOps needs a 4x4 board")
        self.rules = rules
        self.chance_outcomes = chance_outcomes
        self._general = GeneralOps(rules, chance_outcomes)

    @staticmethod
    def fits(board: npt.NDArray[np.int64]) -> bool:
        """True when the search from ``board`` can stay packed: every tile below 32768."""
        return board.shape == (4, 4) and int(board.max()) < 32768

    def from_board(self, board: npt.NDArray[np.int64]) -> Any:
        return _fast.pack(board)

    def key(self, state: Any) -> Any:
        return state

    def successors(self, state: Any) -> list[tuple[int, Any, int]]:
        afters, rewards, bits = _successors_4x4(np.uint64(state))
        return [(d, int(afters[d]), int(rewards[d])) for d in range(4) if bits >> d & 1]

    def is_over(self, state: Any) -> bool:
        return bool(_fast.legal_mask_bits(np.uint64(state)) == 0)

    def outcomes(self, after: Any, rng: np.random.Generator) -> tuple[list[float], list[Any], bool]:
        rules = self.rules
        if rules.spawn_per_move == 1:
            boards = _spawns_4x4(np.uint64(after))
            empty = len(boards) // 2
            if empty == 0:
                return [1.0], [after], True
            if len(boards) <= self.chance_outcomes:
                p2, p4 = (1.0 - rules.p4) / empty, rules.p4 / empty
                probs, states = [], []
                for i, b in enumerate(boards.tolist()):
                    p = p4 if i & 1 else p2
                    if p > 0.0:
                        probs.append(p)
                        states.append(int(b))
                return probs, states, empty == 1
        probs, boards_v, maybe_over = self._general.outcomes(_fast.unpack(after), rng)
        return probs, [_fast.pack(b) for b in boards_v], maybe_over

    def exponents(self, states: Sequence[Any]) -> npt.NDArray[np.uint8]:
        packed = np.array(states, dtype=np.uint64)
        return ((packed[:, None] >> self._SHIFTS) & np.uint64(0xF)).astype(np.uint8).reshape(-1, 4, 4)

    def board(self, state: Any) -> npt.NDArray[np.int64]:
        return _fast.unpack(state)


def board_ops(rules: Rules, board: npt.NDArray[np.int64], chance_outcomes: int) -> GeneralOps | FastOps:
    """The fastest ops that can search from ``board``."""
    if FastOps.fits(board) and rules.shape == (4, 4):
        return FastOps(rules, chance_outcomes)
    return GeneralOps(rules, chance_outcomes)


# --------------------------------------------------------------------------------------------- tree


class Chance:
    """An afterstate: the move's reward and its spawn outcomes, all evaluated when the chance node is built.

    Outcome ``j`` has probability ``probs[j]``, board ``states[j]``, current value estimate ``values[j]``
    (the network's, 0 for a finished game, then its decision node's as the search deepens) and a
    decision node ``children[j]``, created only when the search first descends there.
    """

    __slots__ = ("children", "expect", "logits", "over", "probs", "reward", "states", "values", "visits")

    def __init__(
        self,
        reward: int,
        probs: list[float],
        states: list[Any],
        logits_N4: npt.NDArray[np.float32],
        values: list[float],
        over: list[bool],
    ) -> None:
        self.reward = reward
        self.probs = probs
        self.states = states
        self.logits = logits_N4
        self.values = values
        self.over = over
        self.children: list[Node | None] = [None] * len(states)
        self.visits = [0] * len(states)
        self.expect = sum(p * v for p, v in zip(probs, values))

    def child(self, j: int) -> Node:
        node = self.children[j]
        if node is None:
            node = Node(self.states[j], self.logits[j], self.values[j], self.over[j])
            self.children[j] = node
        return node

    def pick(self) -> int:
        """The outcome whose visit count lags its probability most (likely spawns first, deterministic)."""
        best, best_score = 0, -1.0
        for i, (p, n) in enumerate(zip(self.probs, self.visits)):
            s = p / (1 + n)
            if s > best_score:
                best, best_score = i, s
        return best


class Node:
    """A decision node: a board after its spawn, the network's opinion of it, and its moves' statistics.

    Per legal move (index ``i`` into ``actions``): ``prior[i]``, visits ``n[i]``, ``q[i]`` (score units),
    the afterstate / reward to build its chance node, and the chance node once built.
    """

    __slots__ = (
        "actions", "afters", "chances", "logits", "n", "prior", "q", "ready", "rewards", "state",
        "terminal", "total", "v_net", "value",
    )  # fmt: skip

    def __init__(
        self, state: Any, logits: npt.NDArray[np.float32] | None, v_net: float, terminal: bool
    ) -> None:
        self.state = state
        self.logits = logits
        self.v_net = 0.0 if terminal else v_net
        self.value = self.v_net
        self.terminal = terminal
        self.ready = False
        self.actions: list[int] = []
        self.afters: list[Any] = []
        self.rewards: list[int] = []
        self.chances: list[Chance | None] = []
        self.prior: list[float] = []
        self.n: list[int] = []
        self.q: list[float] = []
        self.total = 0

    def visits_by_action(self) -> npt.NDArray[np.float64]:
        """Visit counts in action order (0 for illegal moves)."""
        out = np.zeros(4)
        for a, n in zip(self.actions, self.n):
            out[a] = n
        return out


#: what :meth:`Search.finish` takes for a leaf without states (a descent that ended at a finished game)
NO_OUTPUT = (np.zeros((0, 4), dtype=np.float32), np.zeros(0, dtype=np.float64))


class Leaf:
    """States a search waits on the network for: a new root's board, or the spawn outcomes of the chance
    node a simulation is about to build (with the path it descended, to back up once they are valued).

    ``over[k]``: state ``k`` is a finished game, worth 0 whatever the network says.
    """

    __slots__ = ("ops", "over", "path", "probs", "states")

    def __init__(
        self,
        ops: GeneralOps | FastOps,
        states: list[Any],
        over: list[bool],
        path: list[tuple[Node, int, int]] | None = None,
        probs: list[float] | None = None,
    ) -> None:
        self.ops = ops
        self.states = states
        self.over = over
        self.path = path if path is not None else []
        self.probs = probs if probs is not None else []

    def exponents(self) -> npt.NDArray[np.uint8]:
        """The network's input: the states' exponent boards ``(n, rows, cols)``."""
        return self.ops.exponents(self.states)

    def values(self, values_N: npt.NDArray[np.float64]) -> list[float]:
        """The network's values with finished games set to 0."""
        return [0.0 if o else v for o, v in zip(self.over, values_N.tolist())]


@dataclass(eq=False)
class Search:
    """PUCT search with expectation chance nodes over one kind of board ops and one evaluator.

    ``rng`` draws the root's Dirichlet noise and, on large boards, sampled spawn outcomes.
    """

    ops: GeneralOps | FastOps
    evaluate: Evaluator
    rng: np.random.Generator
    _: KW_ONLY
    c_puct: float
    dirichlet_alpha: float = 0.3
    dirichlet_epsilon: float = 0.25
    #: min-max bounds of every Q seen in this tree
    lo: float = field(default=math.inf, init=False)
    hi: float = field(default=-math.inf, init=False)

    # ------------------------------------------------------------------ nodes
    def root(self, board: npt.NDArray[np.int64], reuse: Node | None = None) -> Node:
        """A root for ``board``: ``reuse`` when it is that board (a subtree kept from the last move), else new."""
        state = self.ops.from_board(board)
        if reuse is not None and self.ops.key(reuse.state) == self.ops.key(state):
            return reuse
        leaf = self.root_leaf(board)
        return self.finish_root(leaf, *self.evaluate(leaf.exponents()))

    def root_leaf(self, board: npt.NDArray[np.int64]) -> Leaf:
        """The evaluation a new root for ``board`` waits on (the tree's Q bounds start afresh); pass the
        network's answer to :meth:`finish_root`."""
        self.lo, self.hi = math.inf, -math.inf
        state = self.ops.from_board(board)
        return Leaf(self.ops, [state], [self.ops.is_over(state)])

    def finish_root(
        self, leaf: Leaf, logits_N4: npt.NDArray[np.float32], values_N: npt.NDArray[np.float64]
    ) -> Node:
        """The root of :meth:`root_leaf` given the network's output for its one state."""
        values = leaf.values(values_N)
        return Node(leaf.states[0], logits_N4[0], values[0], leaf.over[0])

    def is_at(self, node: Node, board: npt.NDArray[np.int64]) -> bool:
        """True when ``node`` is the position ``board``."""
        return bool(self.ops.key(node.state) == self.ops.key(self.ops.from_board(board)))

    def child(self, node: Node, action: int, board: npt.NDArray[np.int64]) -> Node | None:
        """The subtree for ``board`` after ``action`` from ``node``, if the search built it."""
        if not node.ready or action not in node.actions:
            return None
        chance = node.chances[node.actions.index(action)]
        if chance is None:
            return None
        key = self.ops.key(self.ops.from_board(board))
        for j, state in enumerate(chance.states):
            if self.ops.key(state) == key:
                return chance.child(j)
        return None

    def _make_ready(self, node: Node) -> None:
        """List a node's legal moves and turn its logits into priors (done on the first visit only)."""
        succ = self.ops.successors(node.state)
        node.actions = [a for a, _, _ in succ]
        node.afters = [s for _, s, _ in succ]
        node.rewards = [r for _, _, r in succ]
        node.chances = [None] * len(succ)
        node.n = [0] * len(succ)
        node.q = [0.0] * len(succ)
        if node.logits is not None and succ:
            z = node.logits[node.actions].astype(np.float64)
            e = np.exp(z - z.max())
            node.prior = (e / e.sum()).tolist()
        else:
            node.prior = [1.0 / max(1, len(succ))] * len(succ)
        node.terminal = node.terminal or not succ
        node.ready = True

    def add_noise(self, node: Node) -> None:
        """Mix Dirichlet(alpha) noise into ``node``'s priors: ``(1 - eps) P + eps * noise`` (the root only)."""
        if not node.ready:
            self._make_ready(node)
        k = len(node.actions)
        if k < 2 or self.dirichlet_epsilon <= 0.0:
            return
        noise = self.rng.dirichlet([self.dirichlet_alpha] * k)
        eps = self.dirichlet_epsilon
        node.prior = [(1.0 - eps) * p + eps * float(x) for p, x in zip(node.prior, noise)]

    # ------------------------------------------------------------------ search
    def run(self, root: Node, simulations: int) -> Node:
        """Run ``simulations`` simulations from ``root`` (statistics accumulate on the tree).

        The one-search loop over :meth:`select_leaf` / :meth:`finish`: each simulation's leaf is
        evaluated alone, before the next simulation starts. Batched self-play
        (:func:`agents.mcts.agent.play_selfplay_games`) drives the same two steps for several games
        and evaluates their leaves together.
        """
        if not self.start(root):
            return root
        for _ in range(simulations):
            leaf = self.select_leaf(root)
            if leaf.states:
                self.finish(leaf, *self.evaluate(leaf.exponents()))
            else:
                self.finish(leaf, *NO_OUTPUT)
        return root

    def start(self, root: Node) -> bool:
        """Get ``root`` ready to search; False when there is nothing to search (the game is over)."""
        if not root.ready:
            self._make_ready(root)
        return not root.terminal

    def _select(self, node: Node) -> int:
        lo, hi = self.lo, self.hi
        span = hi - lo if hi > lo else 0.0
        fpu = (node.value - lo) / span if span else 0.0
        explore = self.c_puct * math.sqrt(max(node.total, 1))
        best, best_score = 0, -math.inf
        for i in range(len(node.actions)):
            n = node.n[i]
            if n:
                q = (node.q[i] - lo) / span if span else 0.0
            else:
                q = fpu
            s = q + explore * node.prior[i] / (1 + n)
            if s > best_score:
                best, best_score = i, s
        return best

    def select_leaf(self, root: Node) -> Leaf:
        """The first half of a simulation: descend from ``root`` (ready, not terminal) by PUCT to the
        next move whose chance node is not built yet, and list its spawn outcomes to evaluate.

        No visit count or value changes until :meth:`finish` gets the network's output for
        ``leaf.states`` (the descent only lists the legal moves of nodes it reaches first, and on
        large boards draws sampled spawns from ``rng``); a descent that ends at a finished game has no
        states (finish it with :data:`NO_OUTPUT`). One leaf per search at a time: the next descent must
        see this one's backup, which keeps the batched games exactly the one-game loop's.
        """
        path: list[tuple[Node, int, int]] = []  # (decision node, move index, outcome index or -1)
        node = root
        while True:
            if not node.ready:
                self._make_ready(node)
            if node.terminal:
                return Leaf(self.ops, [], [], path)
            i = self._select(node)
            chance = node.chances[i]
            if chance is None:
                probs, states, maybe_over = self.ops.outcomes(node.afters[i], self.rng)
                over = [self.ops.is_over(s) for s in states] if maybe_over else [False] * len(states)
                path.append((node, i, -1))
                return Leaf(self.ops, states, over, path, probs)
            j = chance.pick()
            path.append((node, i, j))
            node = chance.child(j)

    def finish(
        self, leaf: Leaf, logits_N4: npt.NDArray[np.float32], values_N: npt.NDArray[np.float64]
    ) -> None:
        """The second half: build the leaf's chance node from the network's output for
        ``leaf.states`` (logits ``(n, 4)``, values ``(n,)`` in score units), then back up the path."""
        if leaf.states:
            node, i, _ = leaf.path[-1]
            node.chances[i] = Chance(
                node.rewards[i], leaf.probs, leaf.states, logits_N4, leaf.values(values_N), leaf.over
            )
        self._backup(leaf.path)

    def _backup(self, path: list[tuple[Node, int, int]]) -> None:
        for node, i, j in reversed(path):
            chance = node.chances[i]
            assert chance is not None
            if j >= 0:
                child = chance.child(j)
                # Incremental expectation: only this outcome's estimate changed.
                chance.expect += chance.probs[j] * (child.value - chance.values[j])
                chance.values[j] = child.value
                chance.visits[j] += 1
            q = chance.reward + chance.expect
            node.n[i] += 1
            node.q[i] = q
            node.total += 1
            node.value = (node.v_net + sum(n * qq for n, qq in zip(node.n, node.q))) / (1 + node.total)
            if q < self.lo:
                self.lo = q
            if q > self.hi:
                self.hi = q

    # ------------------------------------------------------------------ results
    @staticmethod
    def policy(root: Node) -> npt.NDArray[np.float32]:
        """The visit distribution over the 4 moves (the policy target), zeros where illegal."""
        visits = root.visits_by_action()
        total = visits.sum()
        if total <= 0:
            return np.zeros(4, dtype=np.float32)
        return (visits / total).astype(np.float32)

    @staticmethod
    def q_by_action(root: Node) -> dict[int, float]:
        return {a: (q if n else math.nan) for a, n, q in zip(root.actions, root.n, root.q)}

    def choose(self, root: Node, temperature: float) -> int:
        """A move from the root's visits: sampled from ``N^(1/T)`` when ``T > 0``, else the most visited
        (ties: higher Q, then action order)."""
        if not root.actions:
            raise ValueError("no legal move: the game is over")
        n = np.array(root.n, dtype=np.float64)
        if temperature > 0.0 and n.sum() > 0:
            w = n ** (1.0 / temperature)
            return root.actions[int(self.rng.choice(len(n), p=w / w.sum()))]
        best = max(range(len(n)), key=lambda i: (n[i], root.q[i] if n[i] else -math.inf, -i))
        return root.actions[best]
