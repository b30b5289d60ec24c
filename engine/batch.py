"""``BatchEngine``: N classic 4x4 games stepped together in one jitted call, for learners.

Each game is a packed board (:mod:`engine.fast`) with its own splitmix64 spawn stream. One call of
:meth:`BatchEngine.step` moves every game once, spawns, auto-resets the games that ended, and writes
the next observations and legal masks; Python only allocates the result arrays.

Conventions (the same as everywhere in the studio, see :mod:`engine.core`):

* actions: ``0 = up, 1 = left, 2 = down, 3 = right``;
* observation: tile **exponents**, ``(N, 4, 4)`` uint8 (0 = empty, 11 = 2048);
* reward: the sum of the values of the tiles merged by the move, ``(N,)`` int64;
* mask: ``(N, 4)`` bool, the legal moves of the board in ``obs``.

Every step returns new arrays (safe to keep in a replay buffer).

Auto-reset (same step): when game ``i``'s move leaves no legal move, ``done[i]`` is True and
``obs[i]`` / ``mask[i]`` already show a fresh game, started from the same spawn stream. The ended
game's score, moves, max tile and board stay readable until the next step (``episode_scores``,
``episode_moves``, ``episode_max_tiles``, :meth:`final_observation`).

Illegal actions (a move that changes nothing): that game does not move, gets reward 0, no spawn, is
not done, and ``last_illegal[i]`` is True. Learners should pick from ``mask``; :meth:`sample_actions`
does for random play.

Tiles past 32768: a game whose next move would merge two 32768s leaves the packed representation and
continues on the general path (:class:`engine.Game`, any tile) until it ends; its observation holds
exponents >= 16 (uint8 has room). Nothing is clipped or dropped.

Determinism: ``BatchEngine(n, seed)`` draws per-game seeds ``seeds[i]`` from ``seed``; game ``i``'s
first episode is exactly ``Game(seed=int(seeds[i]))`` played with the same actions.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, typeof

from engine import fast as F
from engine.core import Rules, seed_to_state, to_exponents, validate_board
from engine.game import Game

#: What :meth:`BatchEngine.step` returns: ``(obs, reward, done, mask)``.
StepOutputs = tuple[
    npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.bool_]
]

# Status codes the kernel leaves per game.
_MOVED, _ILLEGAL, _OVERFLOW, _SKIPPED = 0, 1, 2, 3

# Rows of the engine's int64 state array (one column per game). Boards and spawn states are uint64
# bit patterns stored as int64: one array argument instead of ten, because the per-argument cost of
# calling a kernel is what dominates small batches.
_BOARD, _RNG, _BITS, _SCORE, _MOVES, _WIDE, _EP_SCORE, _EP_MOVES, _EP_MAX, _EP_BOARD = range(10)
_STATE_ROWS = 10

# The kernel writes observations and masks through integer views of the output arrays: a board's
# 16 nibbles spread to 16 bytes are two uint64 stores, a 4-bit mask spread to 4 bools one uint32
# store. Those views assume little-endian byte order; on a big-endian machine step() and
# observation() rebuild both with numpy afterwards (correct, slower).
_LITTLE = sys.byteorder == "little"


@njit(cache=True)
def _derive_seeds(base_state: np.uint64, n: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Per-game seeds (successive splitmix64 outputs of ``base_state``) and their spawn states
    (``seed_to_state(seed)``: one more splitmix64 output, as ``engine.core`` does)."""
    seeds = np.empty(n, np.uint64)
    states = np.empty(n, np.uint64)
    s = np.uint64(base_state)
    for i in range(n):
        s, out = F.splitmix64(s)
        seeds[i] = out
        _, states[i] = F.splitmix64(out)
    return seeds, states


@njit(cache=True)
def _write_obs(obs64: npt.NDArray[np.uint64], i: int, b: np.uint64) -> None:
    """``obs64``: the (n, 4, 4) uint8 observations viewed as (n, 2) uint64 (little-endian)."""
    obs64[i, 0] = F.spread_nibbles(b)
    obs64[i, 1] = F.spread_nibbles(b >> np.uint64(32))


@njit(cache=True)
def _write_mask(mask32: npt.NDArray[np.uint32], i: int, bits: int) -> None:
    """``mask32``: the (n, 4) bool mask viewed as (n, 1) uint32 (little-endian)."""
    mask32[i, 0] = np.uint32((bits & 1) | ((bits & 2) << 7) | ((bits & 4) << 14) | ((bits & 8) << 21))


@njit(cache=True)
def _new_games(st: npt.NDArray[np.int64], rngs: npt.NDArray[np.uint64], p4: float, start_tiles: int) -> None:
    """Fresh games in every column of ``st`` from the spawn states ``rngs``."""
    for i in range(st.shape[1]):
        b, r = F.new_board(rngs[i], p4, start_tiles)
        st[_BOARD, i] = np.int64(b)
        st[_RNG, i] = np.int64(r)
        st[_BITS, i] = F.step_bits(b)
        st[_SCORE, i] = 0
        st[_MOVES, i] = 0
        st[_WIDE, i] = 0


@njit(cache=True)
def _step_kernel(
    st: npt.NDArray[np.int64],
    actions: npt.NDArray[np.int64],
    p4: float,
    start_tiles: int,
    spawn_per_move: int,
    obs: npt.NDArray[np.uint8],
    reward: npt.NDArray[np.int64],
    done: npt.NDArray[np.bool_],
    mask: npt.NDArray[np.bool_],
    status: npt.NDArray[np.int8],
) -> int:
    """Step every packed game once (in place) and fill the outputs.

    Returns ``-1 - i`` when action ``i`` is not in 0..3 (checked before any game moves), else
    ``left * 2**32 + n_done``: ``left`` games for Python (about to overflow, or already on the
    general path: status _OVERFLOW / _SKIPPED) and ``n_done`` games that ended.
    """
    n = st.shape[1]
    for i in range(n):
        if actions[i] < 0 or actions[i] > 3:
            return -1 - i
    obs64 = obs.reshape(n, 16).view(np.uint64)
    mask32 = mask.view(np.uint32)
    left = 0
    n_done = 0
    for i in range(n):
        done[i] = False
        reward[i] = 0
        if st[_WIDE, i]:
            status[i] = _SKIPPED
            left += 1
            continue
        a = actions[i]
        b = np.uint64(st[_BOARD, i])
        gb = st[_BITS, i]
        if (gb >> a) & 1 == 0:
            status[i] = _ILLEGAL
        elif (gb >> (F.OVERFLOW_SHIFT + a)) & 1:
            status[i] = _OVERFLOW
            left += 1
            continue
        else:
            status[i] = _MOVED
            b, r = F.move(b, a)
            rs = np.uint64(st[_RNG, i])
            for _ in range(spawn_per_move):
                b, rs = F.spawn(b, rs, p4)
            gb = F.step_bits(b)
            reward[i] = r
            score = st[_SCORE, i] + r
            moves = st[_MOVES, i] + 1
            if gb & 0xF == 0:  # game over: keep the episode's figures, start the next game
                done[i] = True
                n_done += 1
                st[_EP_SCORE, i] = score
                st[_EP_MOVES, i] = moves
                st[_EP_BOARD, i] = np.int64(b)
                e = F.max_exponent(b)
                st[_EP_MAX, i] = (1 << e) if e else 0
                b, rs = F.new_board(rs, p4, start_tiles)
                gb = F.step_bits(b)
                score = 0
                moves = 0
            st[_BOARD, i] = np.int64(b)
            st[_RNG, i] = np.int64(rs)
            st[_BITS, i] = gb
            st[_SCORE, i] = score
            st[_MOVES, i] = moves
        _write_obs(obs64, i, b)
        _write_mask(mask32, i, gb)
    return (left << 32) | n_done


@njit(cache=True)
def _sample_kernel(st: npt.NDArray[np.int64], state: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """A uniformly random legal action per game (``(u >> 32) % n_legal``-th legal direction);
    ``state[0]`` is the sampler's splitmix64 state, advanced in place."""
    n = st.shape[1]
    out = np.empty(n, np.int64)
    s = state[0]
    for i in range(n):
        s, u = F.splitmix64(s)
        out[i] = F._pick_legal(st[_BITS, i] & 0xF, u)
    state[0] = s
    return out


@njit(cache=True)
def _observe(st: npt.NDArray[np.int64], obs: npt.NDArray[np.uint8]) -> None:
    obs64 = obs.reshape(st.shape[1], 16).view(np.uint64)
    for i in range(st.shape[1]):
        _write_obs(obs64, i, np.uint64(st[_BOARD, i]))


def _signed(x: int) -> int:
    """A uint64 bit pattern as the int64 the state array stores: ``2**64 - 1 -> -1``."""
    x &= F.MASK64
    return x - (1 << 64) if x >> 63 else x


def _observe_numpy(boards: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    shifts = np.arange(0, 64, 4, dtype=np.uint64)
    return ((boards[:, None] >> shifts) & np.uint64(0xF)).astype(np.uint8).reshape(len(boards), 4, 4)


def _entry(dispatcher: object, *example: object) -> Any:
    """``engine.fast._entry_point`` for the types of ``example`` arguments (skips numba's typing)."""
    return F._entry_point(dispatcher, tuple(typeof(x) for x in example))


@functools.cache
def _kernels() -> tuple[Any, Any]:
    """Entry points of the step and sample kernels, loaded by the first BatchEngine."""
    i64 = np.zeros(1, np.int64)
    state = np.zeros((_STATE_ROWS, 1), np.int64)
    outputs = (
        np.zeros((1, 4, 4), np.uint8),
        i64,
        np.zeros(1, bool),
        np.zeros((1, 4), bool),
        np.zeros(1, np.int8),
    )
    step = _entry(_step_kernel, state, i64, 0.1, 1, 1, *outputs)
    return step, _entry(_sample_kernel, state, np.zeros(1, np.uint64))


class BatchEngine:
    """``n`` independent 4x4 games stepped at once.

    ``eng = BatchEngine(1024, seed=0); obs, mask = eng.reset()`` then
    ``obs, reward, done, mask = eng.step(eng.sample_actions())``: obs ``(1024, 4, 4)`` uint8
    exponents, reward ``(1024,)`` int64, done ``(1024,)`` bool, mask ``(1024, 4)`` bool.
    See the module docstring for auto-reset, illegal actions and tiles past 32768.
    """

    def __init__(self, n: int, seed: int | None = None, rules: Rules | None = None) -> None:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n (number of games) must be a whole number >= 1, got {n!r}")
        rules = rules or Rules()
        if not rules.is_classic_shape:
            raise ValueError(
                f"BatchEngine runs 4x4 boards only, got rules {rules.rows}x{rules.cols}: "
                "use engine.Game or engine.Game2048Env for other shapes"
            )
        if rules.start_tiles < 1:
            raise ValueError("BatchEngine needs Rules.start_tiles >= 1: an empty board has no legal move")
        self.n = int(n)
        self.rules = rules
        self._p4 = float(rules.p4)
        self._start = int(rules.start_tiles)
        self._spawns = int(rules.spawn_per_move)
        # Only ever replaced by arrays of these exact types: the kernels' entry points do not check.
        self._st = np.zeros((_STATE_ROWS, self.n), np.int64)
        self._status = np.zeros(self.n, np.int8)
        self._step_k, self._sample_k = _kernels()
        self._sample_state = np.zeros(1, np.uint64)
        self.seeds = np.zeros(self.n, np.uint64)
        self._wide: dict[int, Game] = {}  # games past 32768, on the general path
        self._ep_wide: dict[int, np.ndarray] = {}  # terminal boards (values) of general-path episodes
        self.episodes = 0  # games finished since reset()
        self.reset(seed)

    # ---------------------------------------------------------------- life cycle
    def reset(self, seed: int | None = None) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.bool_]]:
        """Start ``n`` new games (per-game seeds drawn from ``seed``): ``-> (obs, mask)``."""
        base = seed_to_state(seed)
        self.seeds, rngs = _derive_seeds(np.uint64(base), self.n)
        # The sampler's stream is separate from every spawn stream, so sampling never shifts spawns.
        self._sample_state[0] = F.splitmix64(np.uint64(base ^ 0xA5A5A5A5A5A5A5A5))[1]
        self._st[:] = 0
        _new_games(self._st, rngs, self._p4, self._start)
        self._status[:] = _MOVED
        self._wide.clear()
        self._ep_wide.clear()
        self.episodes = 0
        return self.observation(), self.legal_mask()

    def step(self, actions: npt.ArrayLike) -> StepOutputs:
        """Move every game once: ``actions`` (n,) ints in 0..3 -> ``(obs, reward, done, mask)``."""
        a = actions
        if a.__class__ is not np.ndarray or a.dtype != np.int64 or not a.flags.c_contiguous:
            a = np.asarray(actions)
            if a.dtype.kind not in "iu":
                raise ValueError(
                    f"actions must be integers 0..3 (up, left, down, right), got dtype {a.dtype}"
                )
            a = np.ascontiguousarray(a, dtype=np.int64)
        if a.shape != (self.n,):
            raise ValueError(f"actions must have shape ({self.n},), got {a.shape}")
        n = self.n
        obs = np.empty((n, 4, 4), np.uint8)
        reward = np.empty(n, np.int64)
        done = np.empty(n, bool)
        mask = np.empty((n, 4), bool)
        if self._ep_wide:
            self._ep_wide.clear()  # terminal boards stay readable for one step only
        out = self._step_k(
            self._st, a, self._p4, self._start, self._spawns, obs, reward, done, mask, self._status
        )
        if out < 0:
            bad = int(a[-1 - out])
            raise ValueError(f"actions must be 0 (up), 1 (left), 2 (down) or 3 (right), got {bad}")
        left, n_done = out >> 32, out & 0xFFFFFFFF
        if not _LITTLE:
            obs[:] = _observe_numpy(self._st[_BOARD].view(np.uint64))
            mask[:] = ((self._st[_BITS, :, None] >> np.arange(4)) & 1).astype(bool)
        outputs = (obs, reward, done, mask)
        if left:
            n_done += self._step_general(a, outputs)
        self.episodes += n_done
        return outputs

    def _step_general(self, actions: npt.NDArray[np.int64], outputs: StepOutputs) -> int:
        """The games the kernel left: those about to make a 65536 join the general path, then every
        general-path game moves here, one at a time (rare: it takes two 32768s), writing their part of
        the step's ``outputs``. Returns how many ended."""
        obs, reward, done, mask = outputs
        st, status = self._st, self._status
        n_done = 0
        for k in np.flatnonzero((status == _OVERFLOW) | (status == _SKIPPED)):
            i = int(k)
            if status[i] == _OVERFLOW:
                board = F.unpack(int(st[_BOARD, i]) & F.MASK64)
                g = Game(board=board, rules=self.rules, score=int(st[_SCORE, i]), fast=False)
                g.moves = int(st[_MOVES, i])
                g.rng_state = int(st[_RNG, i]) & F.MASK64
                self._wide[i] = g
                st[_WIDE, i] = 1
            g = self._wide[i]
            if not g.legal_mask()[actions[i]]:
                status[i] = _ILLEGAL
                obs[i] = to_exponents(g.board)
                mask[i] = g.legal_mask()
                continue
            status[i] = _MOVED
            res = g.step(int(actions[i]))
            reward[i] = res.reward
            if not res.game_over:
                obs[i] = to_exponents(g.board)
                mask[i] = g.legal_mask()
                continue
            done[i] = True
            n_done += 1
            st[_EP_SCORE, i], st[_EP_MOVES, i], st[_EP_MAX, i] = g.score, g.moves, g.max_tile
            self._ep_wide[i] = g.board
            # The next game fits the packed path again, on the same spawn stream.
            del self._wide[i]
            one = np.zeros((_STATE_ROWS, 1), np.int64)
            _new_games(one, np.array([g.rng_state], np.uint64), self._p4, self._start)
            st[:_EP_SCORE, i] = one[:_EP_SCORE, 0]
            obs[i] = F.unpack_exponents(int(st[_BOARD, i]) & F.MASK64)
            mask[i] = [bool(st[_BITS, i] >> d & 1) for d in range(4)]
        return n_done

    def set_game(self, i: int, board: npt.ArrayLike, *, score: int = 0, rng_state: int | None = None) -> None:
        """Put game ``i`` on ``board`` (4x4 tile values, any tile) with ``score`` and 0 moves.

        ``rng_state`` sets its spawn stream (default: keep it). A board past 32768 puts the game on
        the general path. ``eng.set_game(0, [[2, 2, 0, 0], [0] * 4, [0] * 4, [0] * 4])``.
        """
        if not isinstance(i, (int, np.integer)) or not 0 <= int(i) < self.n:
            raise ValueError(f"game index must be in 0..{self.n - 1}, got {i!r}")
        i = int(i)
        values = validate_board(board)
        if values.shape != (4, 4):
            raise ValueError(f"board must be 4x4, got shape {values.shape}")
        st = self._st
        if rng_state is not None:
            st[_RNG, i] = _signed(int(rng_state))
        self._wide.pop(i, None)
        if int(values.max()) > 32768:
            g = Game(board=values, rules=self.rules, score=int(score), fast=False)
            g.rng_state = int(st[_RNG, i]) & F.MASK64
            self._wide[i] = g
            st[_WIDE, i] = 1
            return
        packed = F.pack(values)
        st[_BOARD, i] = _signed(packed)
        st[_BITS, i] = F.step_bits(np.uint64(packed))
        st[_SCORE, i] = int(score)
        st[_MOVES, i] = 0
        st[_WIDE, i] = 0

    # ---------------------------------------------------------------- reading
    def sample_actions(self) -> npt.NDArray[np.int64]:
        """A uniformly random legal action per game, from the engine's own stream (seeded by reset)."""
        out: npt.NDArray[np.int64] = self._sample_k(self._st, self._sample_state)
        for i, g in self._wide.items():
            legal = np.flatnonzero(g.legal_mask())
            out[i] = legal[int(out[i]) % len(legal)] if len(legal) else 0
        return out

    def observation(self) -> npt.NDArray[np.uint8]:
        """Current boards as exponents, ``(n, 4, 4)`` uint8."""
        if _LITTLE:
            obs = np.empty((self.n, 4, 4), np.uint8)
            _observe(self._st, obs)
        else:
            obs = _observe_numpy(self._st[_BOARD].view(np.uint64))
        for i, g in self._wide.items():
            obs[i] = to_exponents(g.board)
        return obs

    def legal_mask(self) -> npt.NDArray[np.bool_]:
        """Current legal moves, ``(n, 4)`` bool in action order."""
        mask = ((self._st[_BITS, :, None] >> np.arange(4)) & 1).astype(bool)
        for i, g in self._wide.items():
            mask[i] = g.legal_mask()
        return mask

    @property
    def last_illegal(self) -> npt.NDArray[np.bool_]:
        """``(n,)`` bool: which games' actions were illegal (ignored) on the last step."""
        return self._status == _ILLEGAL

    @property
    def boards(self) -> npt.NDArray[np.int64]:
        """Current boards as tile values, ``(n, 4, 4)`` int64."""
        e = self.observation().astype(np.int64)
        return np.where(e == 0, 0, np.left_shift(np.int64(1), e))

    @property
    def packed(self) -> npt.NDArray[np.uint64]:
        """Current packed boards (a copy; meaningless for the games in ``general_path_games``)."""
        return self._st[_BOARD].view(np.uint64).copy()

    def _row(self, row: int, attr: str) -> npt.NDArray[np.int64]:
        out = self._st[row].copy()
        for i, g in self._wide.items():
            out[i] = getattr(g, attr)
        return out

    @property
    def rng_states(self) -> npt.NDArray[np.uint64]:
        """Each game's spawn-stream state (``Game.rng_state`` for the same board continues it)."""
        out = self._st[_RNG].view(np.uint64).copy()
        for i, g in self._wide.items():
            out[i] = g.rng_state
        return out

    @property
    def scores(self) -> npt.NDArray[np.int64]:
        """Score of each game in progress."""
        return self._row(_SCORE, "score")

    @property
    def moves(self) -> npt.NDArray[np.int64]:
        """Moves made in each game in progress."""
        return self._row(_MOVES, "moves")

    @property
    def episode_scores(self) -> npt.NDArray[np.int64]:
        """Final score of each game's last finished episode (read where ``done`` was True)."""
        return self._st[_EP_SCORE].copy()

    @property
    def episode_moves(self) -> npt.NDArray[np.int64]:
        """Moves of each game's last finished episode."""
        return self._st[_EP_MOVES].copy()

    @property
    def episode_max_tiles(self) -> npt.NDArray[np.int64]:
        """Max tile of each game's last finished episode."""
        return self._st[_EP_MAX].copy()

    @property
    def general_path_games(self) -> list[int]:
        """Indices of the games now past 32768 (stepped on the general path)."""
        return sorted(self._wide)

    def final_observation(self, i: int) -> npt.NDArray[np.uint8]:
        """Exponents of game ``i``'s last finished board (valid for a game whose ``done`` was True on
        the last step)."""
        if i in self._ep_wide:
            return to_exponents(self._ep_wide[i])
        return F.unpack_exponents(int(self._st[_EP_BOARD, i]) & F.MASK64)
