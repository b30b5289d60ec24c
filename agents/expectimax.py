"""Heuristic expectimax: max nodes over moves, chance nodes over every empty cell x {2, 4}.

Search shape (``depth`` = moves looked at, the one to play included; seed 002's "plies")::

    value(move m from board s)  = chance(after(s, m), depth - 1, 1.0)
    chance(a, k, p)             = H(a)                                   if k == 0 or p < prob_cutoff
                                = sum over empty cells c, tiles t in {2: 1-p4, 4: p4} of
                                  P(t) / n_empty * max_node(a + t at c, k, p * P(t) / n_empty)
    max_node(s, k, p)           = max over legal moves m of chance(after(s, m), k - 1, p)
                                = -loss_penalty                          if no move is legal

The heuristic ``H`` (:mod:`agents.heuristics`) scores *afterstates* (the board after a move, before its
tile appears), as nneonneo/2048-ai does, so leaves cut by depth and leaves cut by probability are on
the same footing. ``depth 1`` plays the move with the best-scoring afterstate; nneonneo's
``depth_limit`` L is our depth L + 1.

Transposition table: chance-node values keyed by (board, remaining depth), kept for one decision (all
root moves share it) and forgotten before the next, so a move never depends on earlier moves. Without
a probability cut-off it changes no value; with one, a position reached along two paths keeps the
value of the first (as in nneonneo), a small approximation that buys most of its speed.

Two paths, same values (tested side by side): numba kernels on packed 4x4 boards (:mod:`engine.fast`
moves, row-table heuristics), and a Python path for any board shape and any tile (also used on 4x4
when a root move would merge two 32768s, which a 4-bit cell cannot hold). Inside the packed search a
move that would merge two 32768s is valued at the heuristic of the board before it (it cannot be
played out in 4 bits); the root decision for such a board is made on the general path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from agents.base import Agent
from agents.config import AgentConfig, ConfigError, knob
from agents.heuristics import HEURISTICS, Heuristic, NneonneoWeights, Seed004Weights, line_tables
from engine import DIRECTIONS, Direction, Game, Rules, to_exponents
from engine.core import seed_to_state, slide_unchecked
from engine.fast import (
    best_move,
    count_empty,
    max_exponent,
    move,
    new_board,
    pack,
    spawn,
    step_bits,
    transpose,
)

# TUNING: with nneonneo's constants (empty 270, merges 700, monotonicity 47 at power 4, sum 11 at power
# 3.5) depth 2 reached 2048 in 64 % of 200 games. A short search over the six weights at depth 2 (a few
# dozen candidates, 100-200 games each, on tuning games of its own, not the arena's game seeds) found a
# plateau around empty 1000, merges 875, monotonicity power 3, sum 8.4: 2048 in ~90 % of games at
# depth 2; at depth 3, 8192 in 15 of 40 games against 4 of 40 with the original constants.

# nneonneo adds 200,000 per line (8 lines) to every live board and values a lost one at 0; we leave the
# constant out of H and value a lost position at -1.6e6 instead: the same gap, the same decisions.
DEFAULT_LOSS_PENALTY = 8 * 200_000.0


@dataclass
class ExpectimaxConfig(AgentConfig):
    """Search depth and cut-offs, the heuristic, and its weights."""

    depth: int = knob(
        3,
        "moves searched ahead, the move to play included (1 = best heuristic after one move)",
        low=1,
        high=8,
    )
    depths_policy: tuple[int, ...] = knob(
        (),
        "depth by free cells (seed 002's depthsPolicy): entry i is the depth with i empty cells, the last "
        "entry for any more; empty = always use depth",
        low=1,
        high=8,
    )
    heuristic: str = knob(
        "nneonneo", "leaf evaluation: nneonneo's row heuristic or seed 004's", choices=HEURISTICS
    )
    prob_cutoff: float = knob(
        1e-4,
        "stop expanding a branch whose probability falls below this (0 = never)",
        low=0.0,
        high=1.0,
        log=True,
    )
    transposition: bool = knob(True, "reuse values of positions reached twice within one decision")
    tt_bits: int = knob(
        20, "transposition table size on 4x4: 2**bits entries (24 bytes each)", low=10, high=26, advanced=True
    )
    loss_penalty: float = knob(
        DEFAULT_LOSS_PENALTY,
        "value of a position with no legal move is minus this",
        low=0.0,
        high=1e12,
        advanced=True,
    )
    # nneonneo heuristic (per line; empty cells and merges count in rows and columns). Defaults: nneonneo's
    # features re-weighted for shallow search (see TUNING below); his own constants are the preset
    # expectimax-nneonneo.
    nn_empty_weight: float = knob(
        1000.0, "nneonneo: reward per empty cell", low=-1e6, high=1e6, advanced=True
    )
    nn_merges_weight: float = knob(
        875.0, "nneonneo: reward per mergeable neighbour", low=-1e6, high=1e6, advanced=True
    )
    nn_monotonicity_weight: float = knob(
        47.0, "nneonneo: penalty per unit of non-monotonicity", low=-1e6, high=1e6, advanced=True
    )
    nn_monotonicity_power: float = knob(
        3.0, "nneonneo: exponent power in the monotonicity term", low=0.0, high=10.0, advanced=True
    )
    nn_sum_weight: float = knob(
        8.4, "nneonneo: penalty on the sum of exponent powers", low=-1e6, high=1e6, advanced=True
    )
    nn_sum_power: float = knob(
        3.5, "nneonneo: exponent power in the sum term", low=0.0, high=10.0, advanced=True
    )
    # seed 004 heuristic
    s4_smoothness_weight: float = knob(
        -0.1, "seed004: weight of roughness (|exponent steps|)", low=-1e6, high=1e6, advanced=True
    )
    s4_monotonicity_weight: float = knob(
        1.0, "seed004: weight of monotonicity (<= 0, a penalty)", low=-1e6, high=1e6, advanced=True
    )
    s4_empty_weight: float = knob(2.7, "seed004: weight of empty cells", low=-1e6, high=1e6, advanced=True)
    s4_merge_weight: float = knob(
        3.5, "seed004: weight of mergeable neighbours", low=-1e6, high=1e6, advanced=True
    )

    def heuristic_spec(self) -> Heuristic:
        if self.heuristic == "seed004":
            return Heuristic(
                "seed004",
                Seed004Weights(
                    self.s4_smoothness_weight,
                    self.s4_monotonicity_weight,
                    self.s4_empty_weight,
                    self.s4_merge_weight,
                ),
            )
        return Heuristic(
            "nneonneo",
            NneonneoWeights(
                self.nn_empty_weight,
                self.nn_merges_weight,
                self.nn_monotonicity_weight,
                self.nn_monotonicity_power,
                self.nn_sum_weight,
                self.nn_sum_power,
            ),
        )

    def validate(self) -> None:
        if self.prob_cutoff >= 1.0:
            raise ConfigError("prob_cutoff", "must be below 1 (1 would cut every branch); got 1")

    def depth_for(self, empty_cells: int) -> int:
        """The search depth for a board with ``empty_cells`` empty cells."""
        if self.depths_policy:
            return self.depths_policy[min(empty_cells, len(self.depths_policy) - 1)]
        return self.depth


# ------------------------------------------------------------------------------------- numba kernels

_ROW = np.uint64(0xFFFF)
_NIB = np.uint64(0xF)
_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)
_DEPTH_MUL = np.uint64(0xBF58476D1CE4E5B9)
_PROBES = 4
_NEG_INF = -np.inf


@njit(cache=True)
def heuristic_packed(b: np.uint64, row_t: npt.NDArray[np.float64], col_t: npt.NDArray[np.float64]) -> float:
    """H of a packed board: rows 0..3 then columns 0..3, summed in that order (as the general path)."""
    t = transpose(b)
    total = 0.0
    total += row_t[np.intp(b & _ROW)]
    total += row_t[np.intp((b >> np.uint64(16)) & _ROW)]
    total += row_t[np.intp((b >> np.uint64(32)) & _ROW)]
    total += row_t[np.intp(b >> np.uint64(48))]
    total += col_t[np.intp(t & _ROW)]
    total += col_t[np.intp((t >> np.uint64(16)) & _ROW)]
    total += col_t[np.intp((t >> np.uint64(32)) & _ROW)]
    total += col_t[np.intp(t >> np.uint64(48))]
    return total


# The kernels take their tables and settings as separate arguments: bundling them in one tuple reads
# better but made the recursion ~50 % slower (numba copies the tuple into every call).


@njit(cache=True)
def _chance(
    a: np.uint64,
    depth_left: int,
    cprob: float,
    row_t: npt.NDArray[np.float64],
    col_t: npt.NDArray[np.float64],
    p4: float,
    cutoff: float,
    loss: float,
    tt_keys: npt.NDArray[np.uint64],
    tt_tags: npt.NDArray[np.int64],
    tt_vals: npt.NDArray[np.float64],
    gen: int,
    use_tt: bool,
    stats: npt.NDArray[np.int64],
) -> float:
    """Chance node over afterstate ``a`` with ``depth_left`` moves still to search (the max nodes inline).

    Table entries are tagged ``gen * 16 + depth_left``: ``gen`` numbers the decision, so entries of
    earlier decisions are free slots, never hits. ``stats`` counts [chance nodes expanded, table hits].
    """
    if depth_left <= 0 or cprob < cutoff:
        return heuristic_packed(a, row_t, col_t)
    tag = gen * 16 + depth_left
    slot = np.intp(-1)
    if use_tt:
        mask = np.uint64(tt_keys.shape[0] - 1)
        # High bits of a multiplicative hash (tables hold at most 2**26 entries < 2**32).
        home = (((a ^ (np.uint64(depth_left) * _DEPTH_MUL)) * _HASH_MUL) >> np.uint64(32)) & mask
        for j in range(_PROBES):
            k = np.intp((home + np.uint64(j)) & mask)
            if tt_tags[k] == tag and tt_keys[k] == a:
                stats[1] += 1
                return tt_vals[k]
            if slot < 0 and tt_tags[k] // 16 != gen:  # a free (or stale) slot to store into
                slot = k
        if slot < 0:
            slot = np.intp(home)
    stats[0] += 1
    n_empty = count_empty(a)
    cp = cprob / n_empty
    total = 0.0
    for i in range(16):
        shift = np.uint64(4 * i)
        if (a >> shift) & _NIB != np.uint64(0):
            continue
        for tile in range(1, 3):
            p = 1.0 - p4 if tile == 1 else p4
            if p <= 0.0:
                continue
            s = a | (np.uint64(tile) << shift)
            bits = step_bits(s)
            best = _NEG_INF
            for d in range(4):
                if (bits >> d) & 1 == 0:
                    continue
                if (bits >> (4 + d)) & 1:  # would merge two 32768s: value it as standing still
                    v = heuristic_packed(s, row_t, col_t)
                else:
                    nb, _ = move(s, d)
                    # fmt: off
                    v = _chance(nb, depth_left - 1, cp * p, row_t, col_t, p4, cutoff, loss,
                                tt_keys, tt_tags, tt_vals, gen, use_tt, stats)
                    # fmt: on
                if v > best:
                    best = v
            if best == _NEG_INF:
                best = -loss
            total += p * best
    res = total / n_empty
    if use_tt:
        tt_keys[slot] = a
        tt_tags[slot] = tag
        tt_vals[slot] = res
    return res


@njit(cache=True)
def search_packed(
    b: np.uint64,
    depth: int,
    row_t: npt.NDArray[np.float64],
    col_t: npt.NDArray[np.float64],
    p4: float,
    cutoff: float,
    loss: float,
    tt_keys: npt.NDArray[np.uint64],
    tt_tags: npt.NDArray[np.int64],
    tt_vals: npt.NDArray[np.float64],
    gen: int,
    use_tt: bool,
    stats: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """Value of each root move in action order (NaN for an illegal one). The caller has checked that no
    legal root move overflows."""
    out = np.full(4, np.nan)
    bits = step_bits(b)
    for d in range(4):
        if (bits >> d) & 1:
            nb, _ = move(b, d)
            # fmt: off
            out[d] = _chance(nb, depth - 1, 1.0, row_t, col_t, p4, cutoff, loss,
                             tt_keys, tt_tags, tt_vals, gen, use_tt, stats)
            # fmt: on
    return out


@njit(cache=True)
def play_games_packed(
    rng_states: npt.NDArray[np.uint64],
    start_tiles: int,
    p4: float,
    policy: npt.NDArray[np.int64],
    row_t: npt.NDArray[np.float64],
    col_t: npt.NDArray[np.float64],
    cutoff: float,
    loss: float,
    tt_keys: npt.NDArray[np.uint64],
    tt_tags: npt.NDArray[np.int64],
    tt_vals: npt.NDArray[np.float64],
    gen: int,
    use_tt: bool,
    out_score: npt.NDArray[np.int64],
    out_maxexp: npt.NDArray[np.int8],
    out_moves: npt.NDArray[np.int64],
) -> int:
    """Whole games in one jitted loop: game ``g`` has the spawns of ``Game(seed)`` for
    ``rng_states[g] = seed_to_state(seed)`` and the moves :meth:`ExpectimaxAgent.act` picks (depth
    ``policy[empty cells]``, the best finite value, ties by action order). For weight searches and
    evaluations over many games, without the per-move Python of :meth:`Agent.act`.

    A game stops where some legal move would merge two 32768s (the packed board cannot hold the
    65536; the agent itself would go on through the general path): its max exponent reads 16 there.
    Returns the last table stamp used (the table never needs clearing).
    """
    stats = np.zeros(2, np.int64)
    for g in range(rng_states.shape[0]):
        b, rng = new_board(np.uint64(rng_states[g]), p4, start_tiles)
        score = 0
        moves = 0
        capped = False
        while True:
            bits = step_bits(b)
            if bits & 15 == 0:
                break
            if bits >> 4:
                capped = True
                break
            gen += 1
            depth = policy[min(np.int64(count_empty(b)), policy.shape[0] - 1)]
            # fmt: off
            vals = search_packed(b, depth, row_t, col_t, p4, cutoff, loss,
                                 tt_keys, tt_tags, tt_vals, gen, use_tt, stats)
            # fmt: on
            d = best_move(vals, bits)
            after, r = move(b, d)
            score += int(r)
            moves += 1
            b, rng = spawn(after, rng, p4)
        out_score[g] = score
        out_maxexp[g] = 16 if capped else max_exponent(b)
        out_moves[g] = moves
    return gen


# ---------------------------------------------------------------------------------------- general path


class GeneralSearch:
    """The same search in Python on boards of tile values: any shape, any tile (slow; exact twin)."""

    def __init__(self, heuristic: Heuristic, p4: float, cutoff: float, loss: float, use_tt: bool) -> None:
        self.heuristic = heuristic
        self.p4 = p4
        self.cutoff = cutoff
        self.loss = loss
        self.tt: dict[tuple[bytes, int], float] | None = {} if use_tt else None
        self.nodes = 0
        self.tt_hits = 0

    def root(self, board: npt.NDArray[np.int64], depth: int) -> npt.NDArray[np.float64]:
        out = np.full(4, np.nan)
        for d in DIRECTIONS:
            after, _ = slide_unchecked(board, d)
            if not np.array_equal(after, board):
                out[d] = self.chance(after, depth - 1, 1.0)
        return out

    def chance(self, a: npt.NDArray[np.int64], depth_left: int, cprob: float) -> float:
        if depth_left <= 0 or cprob < self.cutoff:
            return self.heuristic(to_exponents(a))
        key = (a.tobytes(), depth_left)
        if self.tt is not None and key in self.tt:
            self.tt_hits += 1
            return self.tt[key]
        self.nodes += 1
        empty = np.flatnonzero(a.ravel() == 0)
        n_empty = int(empty.size)
        cp = cprob / n_empty
        total = 0.0
        for flat in empty:
            for value, p in ((2, 1.0 - self.p4), (4, self.p4)):
                if p <= 0.0:
                    continue
                s = a.copy()
                s.flat[flat] = value
                best = -np.inf
                for d in DIRECTIONS:
                    nb, _ = slide_unchecked(s, d)
                    if not np.array_equal(nb, s):
                        best = max(best, self.chance(nb, depth_left - 1, cp * p))
                if best == -np.inf:
                    best = -self.loss
                total += p * best
        res = total / n_empty
        if self.tt is not None:
            self.tt[key] = res
        return res


# ----------------------------------------------------------------------------------------------- agent


@dataclass(frozen=True)
class SearchStats:
    """What the last decision cost: chance nodes expanded, table hits, depth, seconds, which path."""

    nodes: int
    tt_hits: int
    depth: int
    seconds: float
    packed: bool


class ExpectimaxAgent(Agent):
    """Expectimax over spawns with a row-table heuristic (nneonneo's by default, or seed 004's)."""

    name = "expectimax"
    config_cls = ExpectimaxConfig
    description = "Heuristic expectimax search (no learning): strong, and slower the deeper it looks."
    config: ExpectimaxConfig
    review_depth_knob = "depth"  # what the game review sets to review at a depth (agents.base.Agent)
    review_policy_knob = "depths_policy"
    review_fit_knobs = ("heuristic", "prob_cutoff")  # the shipped calibration is for their defaults

    def __init__(
        self, config: AgentConfig | None = None, rules: Rules | None = None, seed: int | None = None
    ):
        super().__init__(config, rules, seed)
        self._heuristic = self.config.heuristic_spec()
        self._tables: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None
        self._tt: tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None
        self._gen = 0
        self.last_stats: SearchStats | None = None

    @classmethod
    def unsupported_reason(cls, rules: Rules) -> str | None:
        if rules.spawn_per_move != 1:
            return f"its chance nodes model one new tile per move, these rules spawn {rules.spawn_per_move}"
        return None

    def _packed_parts(self) -> tuple[Any, ...]:
        if self._tables is None:
            self._tables = line_tables(self._heuristic)
        if self._tt is None:
            n = 1 << self.config.tt_bits if self.config.transposition else 1
            self._tt = (np.zeros(n, np.uint64), np.full(n, -1, np.int64), np.zeros(n, np.float64))
        return (*self._tables, *self._tt)

    def search(self, game: Game) -> npt.NDArray[np.float64]:
        """Root values in action order (NaN = illegal move), on the fastest path that holds the board."""
        cfg = self.config
        t0 = time.perf_counter()
        board = game.board
        depth = cfg.depth_for(int(np.count_nonzero(board == 0)))
        p4 = float(game.rules.p4)
        packed = getattr(game, "packed", None)
        if packed is None and board.shape == (4, 4) and int(board.max()) <= 32768:
            packed = pack(board)
        if packed is not None and not (step_bits(np.uint64(packed)) >> 4):
            row_t, col_t, keys, tags, vals = self._packed_parts()
            self._gen += 1
            stats = np.zeros(2, np.int64)
            # fmt: off
            values = search_packed(np.uint64(packed), depth, row_t, col_t, p4, cfg.prob_cutoff, cfg.loss_penalty,
                                   keys, tags, vals, self._gen, cfg.transposition, stats)
            # fmt: on
            self.last_stats = SearchStats(int(stats[0]), int(stats[1]), depth, time.perf_counter() - t0, True)
            return values
        general = GeneralSearch(self._heuristic, p4, cfg.prob_cutoff, cfg.loss_penalty, cfg.transposition)
        values = general.root(board, depth)
        self.last_stats = SearchStats(general.nodes, general.tt_hits, depth, time.perf_counter() - t0, False)
        return values

    def play_fast(self, games: int, seed: int = 0) -> dict[str, npt.NDArray[np.int64]]:
        """Play ``games`` games on 4x4 in one jitted loop (:func:`play_games_packed`): game ``i`` is the
        one ``act`` plays on ``Game(seed=seed + i)``. Score, max tile and moves per game."""
        if self.rules.shape != (4, 4) or self.rules.spawn_per_move != 1:
            raise ValueError("the fast game loop plays the standard 4x4 game only")
        cfg = self.config
        states = np.array([seed_to_state(seed + i) for i in range(games)], dtype=np.uint64)
        policy = np.array([cfg.depth_for(e) for e in range(17)], dtype=np.int64)
        score = np.zeros(games, np.int64)
        maxexp = np.zeros(games, np.int8)
        moves = np.zeros(games, np.int64)
        row_t, col_t, keys, tags, vals = self._packed_parts()
        # fmt: off
        self._gen = play_games_packed(states, int(self.rules.start_tiles), float(self.rules.p4), policy,
                                      row_t, col_t, cfg.prob_cutoff, cfg.loss_penalty, keys, tags, vals,
                                      self._gen, cfg.transposition, score, maxexp, moves)
        # fmt: on
        return {
            "score": score,
            "max_tile": np.left_shift(np.int64(1), maxexp.astype(np.int64)),
            "moves": moves,
        }

    def move_values(self, game: Game) -> dict[Direction, float]:
        values = self.search(game)
        return {d: float(values[d]) for d in DIRECTIONS if not np.isnan(values[d])}
