"""``ntuple``: TD(0) afterstate learning with an n-tuple network (Szubert & Jaśkowski 2014; Wu et al. 2014).

V(afterstate) is a sum of table lookups: each tuple of cells (e.g. a 2x3 rectangle) indexes a table by
the exponents it sees, under all 8 symmetries of the board (the 8 views share the tuple's table).
Self-play is greedy on reward + V(afterstate) (or, with ``train_depth``, an expectimax from a given
tile on); at the end of each game every afterstate moves towards
the next reward plus the next afterstate's value (backwards, so the outcome reaches the start in one
pass). Optional: temporal-coherence learning rates (each weight slows down on its own when its errors
cancel out) and multi-stage weights (separate tables once a given tile is reached, each started as a
copy of the previous stage). The whole loop (moves, spawns, lookups, updates) runs in one numba call
per few hundred ms (:mod:`agents.ntuple.kernels`).

Play: 1-ply (argmax reward + V) or expectimax over V with a fixed depth or a depth per number of free
cells (``depths_policy``, seed 002's switching-ply), with a transposition table.

Tiles past 32768 (4-bit nibbles): training ends a game as a truncation when its move would merge two
32768s (reported as max tile 65536); when playing a ``Game`` that holds 65536+ or could merge two
32768s, the move is computed by the general engine and the value of each afterstate reads its tiles
capped at 32768 (the features saturate). Nothing crashes and no board is ever written wrongly.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

import agents.ntuple.kernels as K
from agents.base import Agent, Budget, Control, MetricEvent, TrainContext
from agents.checkpoint import first_nonfinite, state_array, state_int, state_uint64
from agents.config import AgentConfig, ConfigError, knob
from agents.metrics import GAMES, LR, MEAN_SCORE, MetricInfo, counter
from agents.ntuple.cpu import use_pext
from agents.training import TrainTracker
from engine import DIRECTIONS, Direction, Game, Rules
from engine.core import seed_to_state, slide_unchecked
from engine.fast import overflows, pack, pack_exponents, unpack

# ------------------------------------------------------------------------------------------ layouts

#: "row + 2" tuples: a row and the two cells below its first two (outer row, then inner row)
_ROWS_PLUS_2 = ((0, 1, 2, 3, 4, 5), (4, 5, 6, 7, 8, 9))
#: 2x3 rectangles: the outer two rows' first three columns, then the inner two rows'
_RECTANGLES = ((0, 1, 2, 4, 5, 6), (4, 5, 6, 8, 9, 10))

#: Named tuple layouts: cells numbered row-major (``4*r + c``), each tuple read under 8 symmetries.
LAYOUTS: dict[str, tuple[tuple[int, ...], ...]] = {
    # Wu, Yeh et al. 2014: two "row + 2" and two 2x3 rectangles; the usual strong default.
    "4x6": (*_ROWS_PLUS_2, *_RECTANGLES),
    # Szubert & Jaśkowski 2014: two 2x3 rectangles and two straight lines (outer and inner row).
    "2x6+2x4": (*_RECTANGLES, (0, 1, 2, 3), (4, 5, 6, 7)),
    # Jaśkowski 2016: the 4x6 network plus a third "row + 2" (after the first two, as listed there).
    "5x6": (*_ROWS_PLUS_2, (8, 9, 10, 11, 12, 13), *_RECTANGLES),
    # Matsuzaki 2016 (systematic selection), as listed by TDL2048+: stronger, twice as slow as 4x6.
    "8x6": (
        (0, 1, 2, 4, 5, 6),
        (4, 5, 6, 7, 8, 9),
        (0, 1, 2, 3, 4, 5),
        (2, 3, 4, 5, 6, 9),
        (0, 1, 2, 5, 9, 10),
        (3, 4, 5, 6, 7, 8),
        (1, 3, 4, 5, 6, 7),
        (0, 1, 4, 8, 9, 10),
    ),
    # Small and quick: outer and inner row plus two 2x2 squares (1 MB of weights; weak, for tests/demos).
    "4x4": ((0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (5, 6, 9, 10)),
}


def symmetry_cells(s: int) -> np.ndarray:
    """Board cell read as cell ``p`` of a tuple under symmetry ``s`` (0..7), as a 16-vector.

    Symmetry ``s = k + 4*f``: the board rotated by ``np.rot90(board, k)``, then mirrored left-right
    (``np.fliplr``) when ``f`` is 1. Reading cell ``p`` of the transformed board is reading board cell
    ``symmetry_cells(s)[p]`` of the original.
    """
    if not 0 <= s < 8:
        raise ValueError(f"symmetry must be 0..7, got {s}")
    cells = np.rot90(np.arange(16).reshape(4, 4), s % 4)
    if s >= 4:
        cells = np.fliplr(cells)
    return np.ascontiguousarray(cells).ravel()


@dataclass(frozen=True)
class TupleLayout:
    """A tuple layout compiled to the flat arrays the kernels read (see :mod:`agents.ntuple.kernels`)."""

    name: str
    tuples: tuple[tuple[int, ...], ...]
    stage_exponents: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for t in self.tuples:
            if not 1 <= len(t) <= 8 or len(set(t)) != len(t) or not all(0 <= c < 16 for c in t):
                raise ValueError(f"bad tuple {t}: 1..8 distinct cells in 0..15")
        if list(self.stage_exponents) != sorted(set(self.stage_exponents)):
            raise ValueError("stage tiles must be increasing")

    @property
    def n_stages(self) -> int:
        return len(self.stage_exponents) + 1

    @property
    def stage_size(self) -> int:
        return int(sum(16 ** len(t) for t in self.tuples))

    @property
    def size(self) -> int:
        """Weights in all stages."""
        return self.stage_size * self.n_stages

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(runs, tlen, toff, stage_thr)`` for the kernels.

        ``runs[t] = [n, d_0, m_0, ...]``: tuple ``t``'s elements grouped into ``n`` runs whose cells
        follow each other on the board (element ``i`` at cell ``c``, element ``i + 1`` at ``c + 1``);
        a run from element ``i`` at cell ``c`` is read off a symmetric view of the board as
        ``rotate_right(view, d) & m`` with ``d = 4 * (c - i) mod 64`` and ``m`` covering the run's
        nibbles of the index (unused runs: mask 0). Any order of cells works; sorted runs are just fewer steps.
        """
        n_t = len(self.tuples)
        groups: list[list[tuple[int, int, int]]] = []  # per tuple: (first element, first cell, length)
        for cells in self.tuples:
            runs: list[tuple[int, int, int]] = []
            for i, c in enumerate(cells):
                if runs and runs[-1][1] + runs[-1][2] == c:
                    first, cell, n = runs[-1]
                    runs[-1] = (first, cell, n + 1)
                else:
                    runs.append((i, c, 1))
            groups.append(runs)
        width = 1 + 2 * max(3, *(len(g) for g in groups))  # 3 runs at least: the kernels' fast path
        runs_arr = np.zeros((n_t, width), dtype=np.uint64)
        for t, g in enumerate(groups):
            runs_arr[t, 0] = len(g)
            for r, (i, c, n) in enumerate(g):
                runs_arr[t, 1 + 2 * r] = (4 * (c - i)) % 64  # a rotation: negative = to the left
                runs_arr[t, 2 + 2 * r] = ((1 << (4 * n)) - 1) << (4 * i)
        tlen = np.array([len(t) for t in self.tuples], dtype=np.int64)
        toff = np.concatenate([[0], np.cumsum([16 ** len(t) for t in self.tuples])[:-1]]).astype(np.int64)
        return runs_arr, tlen, toff, np.array(self.stage_exponents, dtype=np.int64)

    def pext_masks(self) -> np.ndarray | None:
        """The kernels' ``pext`` extraction: per tuple, the mask of its cells' nibbles (uint64), or
        None when some tuple lists its cells out of increasing order (``pext`` gathers them in board
        order, so only then are they the index :meth:`arrays` builds; such layouts use those runs)."""
        if any(list(t) != sorted(t) for t in self.tuples):
            return None
        return np.array([sum(0xF << (4 * c) for c in t) for t in self.tuples], dtype=np.uint64)

    def extraction(self, pext: bool | None = None) -> np.ndarray:
        """What the kernels read features with: :meth:`pext_masks` where ``pext`` (default: where
        :func:`agents.ntuple.cpu.use_pext` says this CPU has a fast one) and the layout allows it,
        else the rotate-and-mask ``runs`` of :meth:`arrays`. Either gives the same features."""
        if pext is None:
            pext = use_pext()
        masks = self.pext_masks() if pext else None
        return masks if masks is not None else self.arrays()[0]

    def describe(self) -> dict[str, Any]:
        return {
            "layout": self.name,
            "tuples": [list(t) for t in self.tuples],
            "stages": list(self.stage_exponents),
        }


# ------------------------------------------------------------------------------------------- config


def _td_rate_knob(default: float, help: str, advanced: bool = False) -> Any:
    """A TD learning rate: the main one and the OTD phase's share one range."""
    return knob(default, help, low=1e-4, high=2.0, log=True, advanced=advanced)


@dataclass
class NTupleConfig(AgentConfig):
    """Settings of the n-tuple TD learner."""

    layout: str = knob(
        "4x6",
        "tuple layout: 4x6 (Wu et al., default), 2x6+2x4 (Szubert & Jaśkowski), 5x6, 8x6 (Matsuzaki), 4x4 (tiny)",
        choices=tuple(LAYOUTS),
    )
    lr: float = _td_rate_knob(
        1.0, "learning rate α of one TD update, shared by the 8 x tuples features (1.0 with TC; ~0.1 without)"
    )
    lam: float = knob(
        0.5, "TD(λ): 0 = TD(0); >0 mixes in the later rewards (backward λ-returns)", low=0.0, high=1.0
    )
    restart: float = knob(
        0.5,
        "probability that a finished game of 20 moves or more is followed by a replay from its middle "
        "(late-game practice); 1 = always, halving each game until its replays are short (the C++ "
        "trainer's rule)",
        low=0.0,
        high=1.0,
    )
    tc: bool = knob(True, "temporal coherence: per-weight rates |Σ errors| / Σ |errors| (Jaśkowski)")
    init_value: float = knob(
        0.0,
        "optimistic initialisation (Guei et al. 2022): a fresh network values every afterstate at this, "
        "spread over its 8 x tuples features (the paper: 320000), so boards never seen look good and "
        "get tried; 0 = off",
        low=0.0,
        high=1e7,
        advanced=True,
    )
    otd_moves: int = knob(
        0,
        "OTD+TC (Guei et al. 2022): the first N moves learn by plain TD at the OTD learning rate (no "
        "temporal coherence; with optimistic initial values, optimistic TD), then on with TC at lr; "
        "0 = off",
        low=0,
        high=10**13,
        advanced=True,
    )
    otd_lr: float = _td_rate_knob(
        0.1, "learning rate of the OTD phase (otd_moves), plain TD's usual 0.1", advanced=True
    )
    stage_tiles: tuple[int, ...] = knob(
        (),
        "multi-stage weights: a new set of tables once the max tile reaches each of these (e.g. 16384)",
        low=8,
        high=32768,
    )
    search_depth: int = knob(
        1, "player moves searched when playing: 1 = greedy (1-ply), 2 = expectimax 2-ply", low=1, high=5
    )
    depths_policy: tuple[int, ...] = knob(
        (),
        "search depth by free cells (index = free cells; overrides search depth), e.g. 3,3,2,2,1",
        low=1,
        high=5,
    )
    downgrade_from: int = knob(
        0,
        "play: tile downgrading (TDL2048+) once the max tile reaches this tile, e.g. 16384: tiles above "
        "the largest missing one are read one step lower, so the well-trained lower stage judges boards "
        "past it; 0 = off",
        low=0,
        high=32768,
    )
    train_depth: int = knob(
        1,
        "self-play chooses its moves by expectimax of this depth: 1 = greedy on afterstate values; the "
        "TD update is the same either way (the chosen move's afterstate); a 2-ply move costs ~17x a "
        "greedy one, and at equal CPU time 2-ply from 8192 lost (docs/ntuple-studies.md)",
        low=1,
        high=3,
        advanced=True,
    )
    train_search_from: int = knob(
        0,
        "with train depth > 1, self-play searches only once the board holds this tile (e.g. 8192; "
        "greedy before, where search costs most and changes least); 0 = from the first move",
        low=0,
        high=32768,
        advanced=True,
    )
    threads: int = knob(
        1,
        "self-play workers, each on its own core, learning into the same weights without locks "
        "(about N times the moves per second; with more than 1 the thread timing makes runs differ "
        "even with the same seed)",
        low=1,
        high=64,
    )
    save_tc: bool = knob(
        True,
        "checkpoints keep the temporal-coherence sums (about 2x the file) so a resumed run goes on "
        "where it stopped; off: weights only (a resumed run restarts every rate at full speed)",
        advanced=True,
    )
    window: int = knob(
        1000, "games in the rolling statistics (mean score, tile rates)", low=10, high=1_000_000
    )
    tt_bits: int = knob(20, "expectimax transposition table: 2^bits entries", low=10, high=26, advanced=True)

    def validate(self) -> None:
        for name in ("downgrade_from", "train_search_from"):
            v = getattr(self, name)
            if v and (v < 4 or v & (v - 1)):
                raise ConfigError(name, f"must be 0 (off) or a tile value (a power of two), got {v}")
        for v in self.stage_tiles:
            if v & (v - 1):
                raise ConfigError("stage_tiles", f"must be tile values (powers of two), got {v}")
        if list(self.stage_tiles) != sorted(set(self.stage_tiles)):
            raise ConfigError("stage_tiles", "must be increasing")

    def tuple_layout(self) -> TupleLayout:
        exps = tuple(int(v).bit_length() - 1 for v in self.stage_tiles)
        return TupleLayout(self.layout, LAYOUTS[self.layout], exps)

    def downgrade_exponent(self) -> int:
        """The exponent tile downgrading starts at (0 = off), as the kernels take it."""
        return int(self.downgrade_from).bit_length() - 1 if self.downgrade_from else 0

    def train_search_exponent(self) -> int:
        """The exponent from which self-play searches, as the kernels take it (0 = every board)."""
        return int(self.train_search_from).bit_length() - 1 if self.train_search_from else 0

    def policy(self) -> np.ndarray:
        """Depth per free-cell count (one entry = the same depth everywhere)."""
        if self.depths_policy:
            return np.array(self.depths_policy, dtype=np.int64)
        return np.array([self.search_depth], dtype=np.int64)


#: Max-tile thresholds of the rate metrics (exponents): every tile from 2048 to 65536. 2048's rate is
#: reported from the start; a larger tile's once a training game has reached it (a run of a few
#: minutes draws no "Reached 32768" line stuck at 0).
RATE_TILES = (11, 12, 13, 14, 15, 16)


# -------------------------------------------------------------------------------------------- agent


class NTupleAgent(Agent):
    """TD(0) afterstate learner on an n-tuple network; plays 1-ply or by expectimax over its values."""

    name = "ntuple"
    config_cls = NTupleConfig
    description = (
        "n-tuple network learnt by TD(0) on afterstates (Szubert & Jaśkowski; Wu et al.), numba-jitted; "
        "plays 1-ply or by expectimax. 4x4 only."
    )
    trainable = True
    metrics: ClassVar[tuple[MetricInfo, ...]] = (
        MetricInfo(
            "td_error", "TD error", group="TD error", kind="loss", scale="log", help="mean |TD error|"
        ),
        MEAN_SCORE,
        *(
            # of the recent training games, as the mean score: a statistic of play, not an evaluation
            MetricInfo(f"rate_{1 << e}", f"Reached {1 << e}", group="Tile rates", kind="score")
            for e in RATE_TILES
        ),
        LR,
        GAMES,
        counter("truncated_games", "games cut at the move limit, so far"),
        counter("restarted_games", "games begun from a mid-game position in this slice"),
    )
    value_kind = "points"  # reward + afterstate value: expected future score
    review_depth_knob = "search_depth"  # what the game review sets to review at a depth
    review_policy_knob = "depths_policy"
    #: what only resuming the training needs (agents.run.retention strips them from every checkpoint
    #: of a run but the newest): the temporal-coherence sums, as large as the weights
    resume_only_arrays: ClassVar[tuple[str, ...]] = ("tc_errors", "tc_abs_errors")

    config: NTupleConfig

    def __init__(
        self, config: NTupleConfig | None = None, rules: Rules | None = None, seed: int | None = None
    ):
        super().__init__(config, rules, seed)
        self.layout = self.config.tuple_layout()
        _, self._tlen, self._toff, self._stage_thr = self.layout.arrays()
        self._ext = self.layout.extraction()  # pext masks or rotate-and-mask runs, by CPU
        # np.zeros maps untouched pages lazily: a fresh 4x6 network costs nothing until it learns.
        self.weights = np.zeros(self.layout.size, dtype=np.float32)
        if self.config.init_value:  # optimistic: every board's 8 x tuples features sum to init_value
            self.weights[:] = np.float32(self.config.init_value / (8 * len(self.layout.tuples)))
        self.n_live = 1  # stages reached in training so far
        self.truncated_games = 0
        # temporal-coherence sums, [weight, 2] = (error sum, |error| sum): one cache line for both
        self._tc: np.ndarray | None = None
        # one row per self-play worker, each with the game in progress: board, spawn rng state, restart
        # rng state (see kernels.train_steps); worker 0 has the agent's seed, so one worker
        # plays exactly the games a single-threaded run would
        workers = self.config.threads
        self._game_u = np.zeros((workers, K.U_COLS), dtype=np.uint64)
        for k in range(workers):
            self._game_u[k, K.U_SPAWN_RNG :] = _worker_rng_states(seed, k)
        self._game_i = np.zeros((workers, K.I_COLS), dtype=np.int64)  # columns K.I_*
        self._buf_board = np.zeros((workers, 0), dtype=np.uint64)
        self._buf_after = np.zeros((workers, 0), dtype=np.uint64)
        self._buf_reward = np.zeros((workers, 0), dtype=np.float32)
        self._recent = np.zeros((0, 2), dtype=np.int64)  # (score, max exponent) of the last `window` games
        self._top_exp = 0  # the largest tile (exponent) a training game reached so far: which rates to report
        self._tt: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._tt_gen = 0
        # the weights array is also another agent's (shared_copy): read it, never write it in place
        self._weights_shared = False

    def shared_copy(self) -> NTupleAgent:
        """Another player of this network: the same weights array, read only (a window's hint, watch
        and coach share one network of 268 MB), with its own settings, search table and counters.
        Training either one first gives it weights of its own; the learning state (TC sums) stays here."""
        other = copy.copy(self)
        other.counters = dataclasses.replace(self.counters)
        other._game_u, other._game_i = self._game_u.copy(), self._game_i.copy()
        other._buf_board, other._buf_after = self._buf_board.copy(), self._buf_after.copy()
        other._buf_reward, other._recent = self._buf_reward.copy(), self._recent.copy()
        other._tc = None
        other._tt, other._tt_gen = None, 0
        self._weights_shared = other._weights_shared = True
        return other

    @classmethod
    def unsupported_reason(cls, rules: Rules) -> str | None:
        if not rules.is_classic_shape:
            return f"n-tuple networks here are built for 4x4 boards, not {rules.rows}x{rules.cols}"
        if rules.spawn_per_move != 1:
            return f"its afterstate learning and search assume one spawn per move, not {rules.spawn_per_move}"
        return None

    # ------------------------------------------------------------------ values
    def _net(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray, int]:
        return self._ext, self._tlen, self._toff, self.layout.stage_size, self._stage_thr, self.n_live

    def value(self, afterstate: Any) -> float:
        """V of a 4x4 afterstate (tile values); tiles past 32768 read as 32768."""
        return float(K.evaluate(self.weights, np.uint64(_pack_capped(afterstate)), *self._net()))

    def play_value(self, afterstate: Any) -> float:
        """The value play uses: :meth:`value` of the afterstate after tile downgrading, if that is on."""
        b = K.downgrade(np.uint64(_pack_capped(afterstate)), self.config.downgrade_exponent())
        return float(K.evaluate(self.weights, b, *self._net()))

    def _table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._tt is None:
            self._tt = transposition_table(1 << self.config.tt_bits)
        return self._tt

    def move_values(self, game: Game) -> dict[Direction, float]:
        """reward + value of each legal move (afterstate value, or its expectimax with search depth > 1)."""
        board = game.board
        mask = game.legal_mask()
        fast = int(board.max()) <= 32768
        if fast:
            b = np.uint64(pack(board))
            fast = not any(mask[d] and overflows(b, int(d)) for d in DIRECTIONS)
        if not fast:
            # 65536+ on the board or a 32768 merge: the general engine moves, capped features value.
            out = {}
            for d in DIRECTIONS:
                if mask[d]:
                    after, reward = slide_unchecked(board, d)
                    out[d] = float(reward) + self.play_value(after)
            return out
        self._tt_gen += 1
        vals = K.search_values(
            self.weights,
            b,
            self.config.policy(),
            float(self.rules.p4),
            *self._net(),
            self.config.downgrade_exponent(),
            *self._table(),
            self._tt_gen,
        )
        return {d: float(vals[d]) for d in DIRECTIONS if mask[d]}

    def add_stages(self, stage_tiles: tuple[int, ...], promote_now: bool = False) -> None:
        """Go on with more weight stages than this network was trained with (the continuation studies
        of docs/ntuple-studies.md): ``stage_tiles`` begins with the network's own stage tiles; each
        stage it adds starts empty and is promoted from the one before it (its weights copied, its
        temporal-coherence sums from zero: a rate of its own) when a training game first reaches its
        tile, as a run with those stages from the start promotes them. ``promote_now``: every stage it
        adds is a copy of the network's last stage at once, weights and TC sums both, so it goes on at
        the rates the network had reached."""
        stage_tiles = tuple(int(t) for t in stage_tiles)
        old = tuple(self.config.stage_tiles)
        if stage_tiles[: len(old)] != old or len(stage_tiles) == len(old):
            raise ConfigError(
                "stage_tiles", f"must add stages after the network's own {list(old)}, got {list(stage_tiles)}"
            )
        config = dataclasses.replace(self.config, stage_tiles=stage_tiles)
        config.validate()
        layout = config.tuple_layout()
        weights = np.zeros(layout.size, dtype=np.float32)
        weights[: self.weights.shape[0]] = self.weights
        if self._tc is not None:
            tc = np.zeros((layout.size, 2), dtype=np.float32)
            tc[: self._tc.shape[0]] = self._tc
            self._tc = tc
        if promote_now:
            last = slice((self.layout.n_stages - 1) * layout.stage_size, self.layout.size)
            for k in range(self.layout.n_stages, layout.n_stages):
                new = slice(k * layout.stage_size, (k + 1) * layout.stage_size)
                weights[new] = weights[last]
                if self._tc is not None:
                    self._tc[new] = self._tc[last]
            self.n_live = layout.n_stages
        self.config, self.layout, self.weights = config, layout, weights
        _, self._tlen, self._toff, self._stage_thr = layout.arrays()
        self._weights_shared = False

    # ------------------------------------------------------------------ training
    def _training_arrays(self) -> np.ndarray:
        """The TC sums as the kernels take them: flat, error sum and |error| sum of weight i at 2i, 2i+1."""
        if not self.config.tc:
            return np.zeros(2, dtype=np.float32)
        if self._tc is None or self._tc.shape[0] != self.weights.shape[0]:
            # np.zeros, not zeros_like: the pages are mapped lazily, as the weights' are
            self._tc = np.zeros((self.weights.shape[0], 2), dtype=np.float32)
        return self._tc.reshape(-1)

    def _ensure_buffer(self, needed: int) -> None:
        old = self._buf_after.shape[1]
        if old < needed:
            size = max(needed, 2 * old, 1 << 14)
            workers = self._game_u.shape[0]
            board = np.zeros((workers, size), dtype=np.uint64)
            after = np.zeros((workers, size), dtype=np.uint64)
            reward = np.zeros((workers, size), dtype=np.float32)
            board[:, :old] = self._buf_board
            after[:, :old] = self._buf_after
            reward[:, :old] = self._buf_reward
            self._buf_board, self._buf_after, self._buf_reward = board, after, reward

    def _match_workers(self) -> None:
        """One row of game state and buffers per ``config.threads`` worker: the setting may change
        after the agent was made (a checkpoint goes on with other threads), and the rows were sized
        then. Workers kept keep their games in progress; a dropped worker's unfinished game goes with
        it, unlearnt (a game is learnt backwards at its end); an added one gets streams of its own,
        seeded from the moves made so far, so that it does not replay an earlier worker's games."""
        n, have = int(self.config.threads), self._game_u.shape[0]
        if n == have:
            return
        keep = min(n, have)

        def rows(old: np.ndarray) -> np.ndarray:
            new = np.zeros((n, *old.shape[1:]), dtype=old.dtype)
            new[:keep] = old[:keep]
            return new

        self._game_u, self._game_i = rows(self._game_u), rows(self._game_i)
        self._buf_board, self._buf_after = rows(self._buf_board), rows(self._buf_after)
        self._buf_reward = rows(self._buf_reward)
        base = None if self.seed is None else self.seed + self.counters.steps
        for k in range(have, n):
            self._game_u[k, K.U_SPAWN_RNG :] = _worker_rng_states(base, k)

    def _record(self, scores: np.ndarray, maxexp: np.ndarray) -> None:
        new = np.stack([scores, maxexp.astype(np.int64)], axis=1)
        self._recent = np.concatenate([self._recent, new])[-self.config.window :]
        if len(maxexp):
            self._top_exp = max(self._top_exp, int(maxexp.max()))

    def recent_stats(self) -> dict[str, float]:
        """Mean score and max-tile rates over the last ``window`` training games (restarts left out):
        the rate of 2048, and of each larger tile once a training game has reached it."""
        if self._recent.shape[0] == 0:
            return {}
        out = {"mean_score": float(self._recent[:, 0].mean())}
        top = max(self._top_exp, int(self._recent[:, 1].max()), RATE_TILES[0])
        for e in RATE_TILES:
            if e <= top:
                out[f"rate_{1 << e}"] = float((self._recent[:, 1] >= e).mean())
        return out

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        """Self-play TD(0) in jitted slices of ~0.25 s (pause / stop are seen between slices); one
        metric event per slice, carrying the games that slice finished."""
        tracker = TrainTracker(self.counters, budget, control)
        if self._weights_shared:  # other agents read these weights: learn into a copy of them
            self.weights = self.weights.copy()
            self._weights_shared = False
        tc = self._training_arrays()
        self._match_workers()
        workers = self._game_u.shape[0]
        if workers > 1:
            K.launch_workers_passive()  # idle workers sleep, not spin: see the function
        live = np.array([self.n_live], dtype=np.int64)
        self._game_i[:, K.I_TRUNCATED] = 0
        self._game_i[0, K.I_TRUNCATED] = self.truncated_games
        slice_steps = (
            2000  # per worker; grown to ~0.25 s per call once the speed is known (first call compiles)
        )
        target_s = 0.25
        while tracker.proceed():
            max_steps, room, otd = self._slice_limits(budget, tracker, slice_steps, workers)
            lr = float(self.config.otd_lr if otd else self.config.lr)
            self._ensure_buffer(int((self._game_i[:, K.I_MOVES] + max_steps).max()) + 1)
            cols = int(room.max())
            out_score = np.zeros((workers, cols), dtype=np.int64)
            out_maxexp = np.zeros((workers, cols), dtype=np.int8)
            out_moves = np.zeros((workers, cols), dtype=np.int64)
            out_restart = np.zeros((workers, cols), dtype=np.int8)
            acc = np.zeros((workers, 2))
            args = (
                self.weights, tc, self.config.tc and not otd, self._ext, self._tlen, self._toff,
                self.layout.stage_size, self._stage_thr, lr, float(self.config.lam),
                float(self.config.restart), float(self.rules.p4), int(self.rules.start_tiles), live,
            )  # fmt: skip
            search = (int(self.config.train_depth), self.config.train_search_exponent())
            t0 = time.perf_counter()
            if workers == 1:
                # the single-threaded kernel: no thread pool, and exactly reproducible
                result = np.array([K.train_steps(
                    *args, self._game_u[0], self._game_i[0], self._buf_board[0], self._buf_after[0],
                    self._buf_reward[0], int(max_steps[0]), out_score[0, : room[0]], out_maxexp[0, : room[0]],
                    out_moves[0, : room[0]], out_restart[0, : room[0]], acc[0], *search,
                )])  # fmt: skip
            else:
                result = np.zeros((workers, 2), dtype=np.int64)
                K.train_steps_parallel(
                    *args, self._game_u, self._game_i, self._buf_board, self._buf_after, self._buf_reward,
                    max_steps, room, out_score, out_maxexp, out_moves, out_restart, acc, result, *search,
                )  # fmt: skip
            dt = time.perf_counter() - t0
            # the games each worker finished, worker by worker
            finished = [slice(None, int(result[k, 0])) for k in range(workers)]
            out_score = np.concatenate([out_score[k, f] for k, f in enumerate(finished)])
            out_maxexp = np.concatenate([out_maxexp[k, f] for k, f in enumerate(finished)])
            out_moves = np.concatenate([out_moves[k, f] for k, f in enumerate(finished)])
            out_restart = np.concatenate([out_restart[k, f] for k, f in enumerate(finished)])
            acc = acc.sum(axis=0)
            done, n_steps = int(result[:, 0].sum()), int(result[:, 1].sum())
            self.n_live = int(live[0])
            self.truncated_games = int(self._game_i[:, K.I_TRUNCATED].sum())
            self.counters.episodes += done
            self.counters.steps += n_steps
            self.counters.updates += int(out_moves[:done].sum())
            if dt > 0 and n_steps > 0:
                slice_steps = int(min(max(n_steps / workers * target_s / dt, 1000), 2_000_000))
            metrics: dict[str, float] = {
                "lr": lr,
                "steps_per_s": n_steps / dt if dt > 0 else 0.0,
                "games": float(done),
                "truncated_games": float(self.truncated_games),
            }
            if acc[1]:
                metrics["td_error"] = float(acc[0] / acc[1])
            metrics.update(
                self._games_metrics(out_score[:done], out_maxexp[:done], out_moves[:done], out_restart[:done])
            )
            yield tracker.event(
                "episode" if done else "update", metrics, board=unpack(int(self._game_u[0, K.U_BOARD]))
            )
        tracker.clock.tick()

    def _slice_limits(
        self, budget: Budget, tracker: TrainTracker, slice_steps: int, workers: int
    ) -> tuple[np.ndarray, np.ndarray, bool]:
        """Each worker's moves and finished-game room for the next slice, and whether it is still in
        the optimistic (OTD) phase: a slice ends on the budget's moves or episodes exactly and never
        crosses the switch from OTD to TC learning."""
        max_steps = np.full(workers, slice_steps, dtype=np.int64)
        if budget.steps is not None:  # what is left, shared out so that the workers end on it exactly
            max_steps = np.minimum(max_steps, _share(budget.steps - tracker.steps, workers))
        # OTD+TC: plain TD at otd_lr until otd_moves, a slice never crossing the switch
        otd = self.counters.steps < self.config.otd_moves
        if otd:
            max_steps = np.minimum(max_steps, _share(self.config.otd_moves - self.counters.steps, workers))
        room = 1 + max_steps // 4 + 64  # a game lasts at least a few moves
        if budget.episodes is not None:
            room = np.minimum(room, _share(budget.episodes - tracker.episodes, workers))
        return max_steps, room, otd

    def _games_metrics(
        self, score: np.ndarray, maxexp: np.ndarray, moves: np.ndarray, restart: np.ndarray
    ) -> dict[str, float]:
        """The metrics of a slice's finished games (recorded for the recent rates): restarted games
        carry their first half's score, so they are counted apart and left out of the figures."""
        metrics: dict[str, float] = {}
        fresh = restart == 0
        if self.config.restart > 0:
            metrics["restarted_games"] = float(len(restart) - int(fresh.sum()))
        if fresh.any():
            sc, me = score[fresh], maxexp[fresh]
            self._record(sc, me)
            metrics.update(
                score=float(sc.mean()), max_tile=float(1 << int(me.max())), moves=float(moves[fresh].mean())
            )
            metrics.update(self.recent_stats())
        return metrics

    # ------------------------------------------------------------------ evaluation
    def play_fast(self, games: int, seed: int | None = None, threads: int = 1) -> dict[str, np.ndarray]:
        """Play ``games`` games in one jitted call with this agent's search settings (no learning).

        Game ``i`` has the spawns of ``Game(seed=seed + i)``; ``threads`` > 1 shares the games out over
        that many threads (the same games, each thread with its own transposition table). Returns score,
        max tile (65536 marks a game ended by a 32768 merge), moves and the seconds it took.
        """
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        base = 0 if seed is None else int(seed)
        states = np.array([seed_to_state(base + i) for i in range(games)], dtype=np.uint64)
        score = np.zeros(games, dtype=np.int64)
        maxexp = np.zeros(games, dtype=np.int8)
        moves = np.zeros(games, dtype=np.int64)
        head = (self.weights, self.config.policy(), float(self.rules.p4), int(self.rules.start_tiles), states,
                *self._net(), self.config.downgrade_exponent())  # fmt: skip
        t0 = time.perf_counter()
        if threads == 1:
            self._tt_gen = K.play_games(*head, *self._table(), score, maxexp, moves, self._tt_gen)
        else:
            n = 1 << self.config.tt_bits
            tables = transposition_table(n, threads)
            K.play_games_parallel(*head, *tables, score, maxexp, moves, np.zeros(threads, dtype=np.int64))
        seconds = time.perf_counter() - t0
        return {
            "score": score,
            "max_tile": np.left_shift(np.int64(1), maxexp.astype(np.int64)),
            "moves": moves,
            "seconds": np.array(seconds),
        }

    # ------------------------------------------------------------------ state
    def search_positions(self, boards: np.ndarray) -> np.ndarray:
        """The afterstate this agent's search chooses from each packed board (uint64, the board itself
        where no move is legal), searched one after another as a game's moves are: for timing the
        search on boards given from outside (``bench ntuple -o vs_cpp``)."""
        boards = np.ascontiguousarray(boards, dtype=np.uint64)
        out = np.empty_like(boards)
        self._tt_gen = K.search_positions(
            self.weights, boards, self.config.policy(), float(self.rules.p4), *self._net(),
            self.config.downgrade_exponent(), *self._table(), self._tt_gen, out,
        )  # fmt: skip
        return out

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The weights (float32) and the layout; with ``save_tc``, the temporal-coherence sums too.

        Entries never touched by training are zero, so the arrays are stored sparse (uint32 index +
        values) while that is smaller than dense. Without the TC sums a resumed run would restart
        every weight at its full rate, which knocks a trained network back for a long while.
        """
        span = self.n_live * self.layout.stage_size
        live = self.weights[:span]
        tc = self.config.save_tc and self.config.tc and self._tc is not None
        tables = {"weights": live}
        if tc:
            assert self._tc is not None
            # the file keeps the two sums as separate tables (the format of every earlier checkpoint)
            tables.update(tc_errors=self._tc[:span, 0], tc_abs_errors=self._tc[:span, 1])
        used = live != 0
        if tc:
            used |= tables["tc_abs_errors"] != 0
        nz = np.flatnonzero(used)
        arrays: dict[str, np.ndarray]
        if nz.size * 2 < live.size:
            arrays = {"index": nz.astype(np.uint32), **{k: v[nz] for k, v in tables.items()}}
            storage = "sparse"
        else:
            arrays = dict(tables)
            storage = "dense"
        meta = {
            **self.layout.describe(),
            "storage": storage,
            "size": int(self.layout.size),
            "live_stages": self.n_live,
            "truncated_games": self.truncated_games,
            "rng_state": str(int(self._game_u[0, K.U_SPAWN_RNG])),
            "restart_rng_state": str(int(self._game_u[0, K.U_RESTART_RNG])),
            # the other workers' streams (JSON has no uint64: decimal strings)
            "worker_rng_states": [[str(int(x)) for x in row] for row in self._game_u[1:, K.U_SPAWN_RNG :]],
        }
        return arrays, meta

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        """Inverse of :meth:`get_state`; ValueError / KeyError saying what does not fit (the layout,
        the live stages, an array's shape or type, a generator state), with the agent left unchanged."""
        self._check_layout(meta)
        n_live = state_int(meta, "live_stages", 1, 1, self.layout.n_stages)
        span = n_live * self.layout.stage_size
        storage = meta.get("storage", "dense")
        if storage not in ("sparse", "dense"):
            raise ValueError(f"storage is {storage!r}, not 'sparse' or 'dense'")
        idx = None
        if storage == "sparse":
            # kept uint32: converting it to int64 whole would be a copy twice its size
            idx = state_array(arrays, "index", kinds="iu", shape=(None,), low=0, high=span - 1)
        reader = _TableReader(arrays, self.layout.size, span, idx)
        truncated = state_int(meta, "truncated_games", 0)
        rng, restart_rng, workers = self._read_generators(meta)
        weights = reader.table("weights")
        tc = None
        if "tc_errors" in arrays and "tc_abs_errors" in arrays:
            # written straight into the kernels' layout (np.stack of two tables made three copies)
            tc = np.zeros((self.layout.size, 2), dtype=np.float32)
            reader.fill("tc_errors", reader.checked("tc_errors"), tc[:, 0])
            reader.fill("tc_abs_errors", reader.checked("tc_abs_errors"), tc[:, 1])
        # everything read and checked: now the agent changes
        self.weights = weights
        self._weights_shared = False
        self._tc = tc
        self.n_live = n_live
        self.truncated_games = truncated
        self._game_i[:] = 0
        self._game_u[0, K.U_SPAWN_RNG] = rng
        self._game_u[0, K.U_RESTART_RNG] = restart_rng
        # a run resumed with more workers than it saved gives the new ones fresh streams
        for k, row in enumerate(workers, start=1):
            self._game_u[k, K.U_SPAWN_RNG :] = row
        self._recent = np.zeros((0, 2), dtype=np.int64)

    def _check_layout(self, meta: Mapping[str, Any]) -> None:
        """ValueError unless the saved weights are for this agent's tuples and weight stages."""
        mine = self.layout.describe()
        theirs = {
            "layout": meta.get("layout"),
            "tuples": meta.get("tuples"),
            "stages": meta.get("stages", []),
        }
        if theirs["tuples"] != mine["tuples"] or (theirs["stages"] or []) != mine["stages"]:
            raise ValueError(
                f"the weights are for tuple layout {theirs['layout']!r} (tuples {theirs['tuples']}, stage "
                f"exponents {theirs['stages']}), but this agent uses {mine['layout']!r} (tuples {mine['tuples']}, "
                f"stage exponents {mine['stages']}): a different layout cannot reuse them"
            )

    def _read_generators(self, meta: Mapping[str, Any]) -> tuple[np.uint64, np.uint64, list[list[np.uint64]]]:
        """The saved spawn and restart generator states: the first worker's two, and the other
        workers' [spawn, restart] pairs (as many as this agent has workers beyond the first)."""
        rng = state_uint64(meta.get("rng_state", str(seed_to_state(self.seed))), "rng_state")
        restart_rng = state_uint64(
            meta.get("restart_rng_state", str(int(self._game_u[0, K.U_RESTART_RNG]))), "restart_rng_state"
        )
        rows = meta.get("worker_rng_states", [])
        if not isinstance(rows, list) or any(not isinstance(r, list) or len(r) != 2 for r in rows):
            raise ValueError("worker_rng_states is not a list of [spawn, restart] generator states")
        workers = [
            [state_uint64(x, f"worker_rng_states[{k}]") for x in row]
            for k, row in enumerate(rows[: self._game_u.shape[0] - 1], start=1)
        ]
        return rng, restart_rng, workers


class _TableReader:
    """Reads a checkpoint's weight tables (dense, or sparse with ``idx``) into float32 arrays of
    ``size`` entries, checking shapes and the float32 range on the way."""

    def __init__(
        self, arrays: Mapping[str, np.ndarray], size: int, span: int, idx: np.ndarray | None
    ) -> None:
        self.arrays, self.size, self.span, self.idx = arrays, size, span, idx

    def checked(self, name: str) -> np.ndarray:
        raw = state_array(self.arrays, name, kinds="f")  # weights: float32 / float64 only
        want = self.idx.shape if self.idx is not None else (self.span,)
        if raw.shape != want:
            if self.idx is not None:
                raise ValueError(f"{name} has {raw.size} entries for {self.idx.size} indices")
            raise ValueError(f"{name} has shape {raw.shape}, the layout needs ({self.span},)")
        return raw

    def fill(self, name: str, raw: np.ndarray, out: np.ndarray) -> None:
        # Chunk by chunk into the final array (a view of it for a TC sum): a float64 table or a
        # sparse one never has a whole second copy on the way (a 4x6 table is 268 MB).
        idx = self.idx
        for lo in range(0, raw.shape[0], _CHUNK):
            part = raw[lo : lo + _CHUNK]
            with np.errstate(over="ignore"):
                values = np.asarray(part, dtype=np.float32)
            if part.dtype.itemsize > 4 and first_nonfinite({name: values}) != first_nonfinite({name: part}):
                raise ValueError(f"{name} holds values past the float32 range")
            if idx is not None:
                out[idx[lo : lo + _CHUNK]] = values
            else:
                out[lo : lo + part.shape[0]] = values

    def table(self, name: str) -> np.ndarray:
        raw = self.checked(name)
        if self.idx is None and raw.shape == (self.size,) and _adoptable(raw):
            return raw  # a freshly read dense table is the weights as they are: no copy
        out = np.zeros(self.size, dtype=np.float32)  # pages mapped as they are written
        self.fill(name, raw, out)
        return out


#: Entries converted or scattered at a time when a checkpoint's table is read into the network.
_CHUNK = 1 << 20


def _adoptable(raw: np.ndarray) -> bool:
    """Whether ``raw`` can become the weights as it is: float32, contiguous and writable, a view of
    an array that nothing else references (numpy reads a file's table into one and returns a
    view of it). A view of another agent's weights (:meth:`NTupleAgent.get_state`'s dense tables),
    or an array handed in whole and perhaps still the caller's, is copied instead."""
    owner = raw.base
    return (
        raw.dtype == np.float32
        and raw.dtype.isnative
        and raw.flags.c_contiguous
        and raw.flags.writeable
        and raw.flags.aligned
        and isinstance(owner, np.ndarray)
        and owner.base is None
        and owner.flags.owndata
        and owner.nbytes == raw.nbytes
        # references: raw's base, this name, getrefcount's argument; a fourth is someone else's
        and sys.getrefcount(owner) <= 3
    )


def transposition_table(
    n: int, threads: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The search's table of ``n`` entries (one per thread with ``threads``, as rows) as the kernels
    take it: keys (uint64), levels, stamps (int64) and values (float64), as four views of one
    buffer whose entry is 32 bytes, so a probe touches one cache line, not four."""
    shape = (n, 4) if threads is None else (threads, n, 4)
    buf = np.zeros(shape, dtype=np.uint64)
    return buf[..., 0], buf.view(np.int64)[..., 1], buf.view(np.int64)[..., 2], buf.view(np.float64)[..., 3]


def _share(total: int, workers: int) -> np.ndarray:
    """``total`` split over ``workers`` as evenly as whole numbers go (the first ones get the rest)."""
    return total // workers + (np.arange(workers) < total % workers).astype(np.int64)


def _worker_rng_states(seed: int | None, worker: int) -> list[np.uint64]:
    """Spawn and restart random streams of self-play worker ``worker`` (worker 0: the agent's seed)."""
    if seed is None:
        return [np.uint64(seed_to_state(None)), np.uint64(seed_to_state(None))]
    base = seed + 1_000_003 * worker  # far apart, so worker k never replays another's seed
    return [np.uint64(seed_to_state(base)), np.uint64(seed_to_state(base + 1))]


def _pack_capped(values: Any) -> int:
    """Pack a 4x4 board of tile values with exponents capped at 15 (65536+ reads as 32768)."""
    v = np.asarray(values, dtype=np.int64)
    e = np.where(v > 0, np.log2(np.maximum(v, 1)).round(), 0).astype(np.int64)
    return pack_exponents(np.minimum(e, 15))


# ------------------------------------------------------------------------------------------- bench


def bench_training(
    agent: NTupleAgent, seconds: float, clock: Callable[[], float] = time.process_time
) -> dict[str, float]:
    """Train ``agent`` for ``seconds`` of ``clock`` (CPU time by default: on a shared machine wall time
    mostly measures the neighbours) and report moves per second of that clock and of the wall."""
    steps0, games0 = agent.counters.steps, agent.counters.episodes
    c0, w0 = clock(), time.perf_counter()
    while clock() - c0 < seconds:
        for _ in agent.train(Budget(seconds=min(1.0, seconds))):
            pass
    used, wall = clock() - c0, time.perf_counter() - w0
    steps = agent.counters.steps - steps0
    return {
        "moves_per_s": steps / used,
        "moves_per_wall_s": steps / wall,
        "moves": float(steps),
        "games": float(agent.counters.episodes - games0),
        "seconds": used,
        "wall_seconds": wall,
    }
