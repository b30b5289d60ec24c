"""``Game``: a thin stateful wrapper over the rules, owning its spawn RNG.

Two paths, one behaviour:

* **fast** (4x4 boards while every tile fits a 4-bit cell, i.e. <= 32768): the board lives as a
  packed int (:mod:`engine.fast`), each move is one jitted call that returns the new board, the
  reward, the spawn and the next board's legal/overflow bits; the numpy ``board`` is built only when
  someone reads it.
* **general** (any shape, any tile): :mod:`engine.core`.

Both draw the same spawns from the same seed, so a seeded game is the same game on either path
(``tests/engine/test_fast.py`` plays them side by side). A fast game moves to the general path for
good, transparently, just before a move that merges two 32768s. ``Game(..., fast=False)`` forces the
general path from the start (tests, or to compare timings).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine import fast as _fast
from engine.core import (
    DIRECTIONS,
    MASK64,
    Board,
    Direction,
    Rules,
    Spawn,
    SpawnRng,
    StepResult,
    seed_to_state,
    slide_unchecked,
    spawn_tiles,
    validate_board,
)


class IllegalMoveError(ValueError):
    """A move that would not change the board. The game is left as it was."""


# Lookup tables indexed by a 4-bit legal mask (bit d = move d legal) or by a spawn, so the fast path
# builds no new objects for them (Spawn is frozen, so sharing instances is safe).
_MOVES_BY_BITS: tuple[tuple[Direction, ...], ...] = tuple(
    tuple(d for d in DIRECTIONS if bits >> d & 1) for bits in range(16)
)
_MASK_BY_BITS: tuple[np.ndarray, ...] = tuple(
    np.array([bool(bits >> d & 1) for d in DIRECTIONS], dtype=bool) for bits in range(16)
)
# _ONE_SPAWN[2 * cell + exponent - 1] = (Spawn(row, col, value),) for cell = 4 * row + col.
_ONE_SPAWN: tuple[tuple[Spawn, ...], ...] = tuple(
    (Spawn(cell // 4, cell % 4, 2 << k),) for cell in range(16) for k in range(2)
)


def _py_step(st: np.ndarray, d: int) -> int:
    """First fast-path move of the process: swap in the kernel's entry point, then make the move."""
    global _py_step
    _py_step = _fast.state_entry("step")
    return _py_step(st, d)


# Step results of the fast path, keyed by (kernel info << 2 | direction). StepResult is frozen, so
# equal results can be one shared object, and a dict hit costs a tenth of building one. Random play
# meets a few thousand distinct keys; the cap only bounds a pathological run.
_RESULTS: dict[int, StepResult] = {}
_RESULTS_CAP = 1 << 16


def _new_result(key: int) -> StepResult:
    info, di = key >> 2, key & 3
    bits = info & 255
    spawns = _ONE_SPAWN[info >> _fast.STEP_SPAWN_SHIFT & 31]
    result = StepResult(DIRECTIONS[di], info >> _fast.STEP_REWARD_SHIFT, spawns, not bits & 15)
    if len(_RESULTS) >= _RESULTS_CAP:
        _RESULTS.clear()
    _RESULTS[key] = result
    return result


_RULES_BY_SHAPE: dict[tuple[int, int], Rules] = {}


def _default_rules(rows: int, cols: int) -> Rules:
    """``Rules(rows=rows, cols=cols)``, built (and validated) once per shape: Rules is frozen."""
    key = (rows, cols)
    rules = _RULES_BY_SHAPE.get(key)
    if rules is None:
        rules = Rules(rows=rows, cols=cols)
        if len(_RULES_BY_SHAPE) < 256 and type(rows) is int and type(cols) is int:
            _RULES_BY_SHAPE[key] = rules
    return rules


def _spawns_from(cells: np.ndarray, exps: np.ndarray) -> tuple[Spawn, ...]:
    return tuple(Spawn(int(c) // 4, int(c) % 4, 1 << int(e)) for c, e in zip(cells, exps) if c >= 0)


class Game:
    """One game of 2048 on a ``rows x cols`` board.

    ``Game(seed=1)`` twice gives the same game for the same moves. The game does not stop at 2048:
    it is over only when no move is legal.

    Attributes read by callers: ``board`` (a copy, values), ``score``, ``moves``, ``max_tile``,
    ``game_over``, ``rules``, ``seed``, ``last_spawns``, ``rng_state``; ``packed`` (the packed 4x4
    board as an unsigned int while on the fast path, else None) and ``fast_path``.

    ``fast=False`` keeps the game on the general path (same results, ~30x slower on 4x4).
    """

    def __init__(
        self,
        rows: int = 4,
        cols: int = 4,
        seed: int | None = None,
        rules: Rules | None = None,
        *,
        board: Any = None,
        score: int = 0,
        fast: bool = True,
    ) -> None:
        if rules is None:
            rules = _default_rules(rows, cols)
        elif (rows, cols) != (4, 4) and (rows, cols) != rules.shape:
            raise ValueError(f"rows x cols {rows}x{cols} disagree with rules {rules.rows}x{rules.cols}")
        self.rules = rules
        self.seed = seed
        self.score = int(score)
        self.moves = 0
        self.last_spawns: tuple[Spawn, ...] = ()
        self._legal_cache: list[tuple[Board, int]] | None = None
        state = seed_to_state(seed)
        self._rng = SpawnRng(state)  # the general path's stream (its state is stale on the fast path)
        # Fast-path state: [packed board, rng state] (engine.fast.new_state), None on the general path.
        self._st: np.ndarray | None = None
        self._bits = 0  # engine.fast.step_bits of the packed board
        # Forced into _bits' overflow nibble when moves spawn more than one tile, so that step() sends
        # them to _step_other (the one-call kernel reports one spawn).
        self._gate = 0 if rules.spawn_per_move == 1 else 0xF0
        self._board: Board | None  # general path: the board; fast path: the materialised cache
        if board is None:
            if fast and rules.is_classic_shape:
                self._start_fast(0, state, spawn_count=rules.start_tiles)
                self._board = None
            else:
                self._board = np.zeros(rules.shape, dtype=np.int64)
                self.last_spawns = spawn_tiles(self._board, self._rng, rules, rules.start_tiles)
        else:
            b = validate_board(board)
            if b.shape != rules.shape:
                raise ValueError(f"board shape {b.shape} does not match the rules' {rules.rows}x{rules.cols}")
            if fast and rules.is_classic_shape and int(b.max()) <= 32768:
                self._start_fast(_fast.pack(b), state, spawn_count=0)
            self._board = b.copy()

    def _start_fast(self, packed: int, state: int, spawn_count: int) -> None:
        self._st = st = _fast.new_state(packed, state, self.rules.p4)
        if spawn_count <= _fast.SPAWN_CODES_MAX:
            info = _fast.state_entry("spawns")(st, spawn_count)
            codes = [info >> (8 + 6 * i) & 63 for i in range(spawn_count)]
            self.last_spawns = tuple(_ONE_SPAWN[c - 1][0] for c in codes if c)
            bits = info & 255
        else:
            _, cells, exps, bits = _fast._py_move_spawn(st, -1, spawn_count)
            self.last_spawns = _spawns_from(cells, exps)
        self._bits = bits | self._gate

    def _to_general(self) -> None:
        """Leave the fast path for good (a 65536 is about to appear)."""
        assert self._st is not None
        self._board = self._values()
        self._rng = SpawnRng(int(self._st[1]) & MASK64)
        self._st = None
        self._bits = 0  # step() sends every move to the general path from now on
        self._legal_cache = None

    # ---------------------------------------------------------------- state
    def _values(self) -> Board:
        """The board without copying (callers must not modify it)."""
        if self._board is None:
            assert self._st is not None
            self._board = _fast.unpack(int(self._st[0]) & MASK64)
        return self._board

    @property
    def board(self) -> Board:
        """The board as tile values (a copy: changing it does not change the game)."""
        return self._values().copy()

    @property
    def rows(self) -> int:
        """Rows of the board (its rules')."""
        return self.rules.rows

    @property
    def cols(self) -> int:
        """Columns of the board (its rules')."""
        return self.rules.cols

    @property
    def fast_path(self) -> bool:
        """True while the game runs on packed 4x4 boards."""
        return self._st is not None

    @property
    def packed(self) -> int | None:
        """The packed board (``engine.fast`` layout, unsigned) on the fast path, else None."""
        return None if self._st is None else int(self._st[0]) & MASK64

    @property
    def max_tile(self) -> int:
        """The largest tile on the board (a value: 2048, not 11); 0 on an empty board."""
        if self._st is not None:
            e = _fast._py_max_exponent(self._st)
            return 1 << e if e else 0
        return int(self._values().max())

    @property
    def rng_state(self) -> int:
        """The spawn generator's state: with the board and score, everything needed to resume."""
        return int(self._st[1]) & MASK64 if self._st is not None else self._rng.state

    @rng_state.setter
    def rng_state(self, value: int) -> None:
        if self._st is not None:
            self._st[1] = _fast.new_state(0, int(value), 0.0)[1]
        else:
            self._rng.state = int(value) & MASK64

    def _results(self) -> list[tuple[Board, int]]:
        if self._legal_cache is None:
            board = self._values()
            self._legal_cache = [slide_unchecked(board, d) for d in DIRECTIONS]
        return self._legal_cache

    def legal_mask(self) -> np.ndarray:
        """Legal moves as a bool array in action order (up, left, down, right)."""
        if self._st is not None:
            return _MASK_BY_BITS[self._bits & 15].copy()
        board = self._values()
        return np.array([not np.array_equal(b, board) for b, _ in self._results()], dtype=bool)

    def legal_moves(self) -> list[Direction]:
        """Legal moves in action order (up, left, down, right)."""
        if self._st is not None:
            return list(_MOVES_BY_BITS[self._bits & 15])
        board = self._values()
        return [d for d, (b, _) in zip(DIRECTIONS, self._results()) if not np.array_equal(b, board)]

    @property
    def game_over(self) -> bool:
        """True when no move changes the board (:meth:`legal_moves` is empty)."""
        if self._st is not None:
            return not self._bits & 15
        return not self.legal_moves()

    # ---------------------------------------------------------------- moves
    def _illegal(self, d: Direction) -> IllegalMoveError:
        legal = ", ".join(m.label for m in self.legal_moves()) or "none: the game is over"
        return IllegalMoveError(f"move {d.label} changes nothing on this board (legal: {legal})")

    def step(self, direction: Direction | int | str) -> StepResult:
        """Play one move: slide, add the reward to the score, spawn. Illegal moves raise IllegalMoveError."""
        # The fast path's whole budget is about a microsecond, so the common case (a Direction or a
        # plain int, a legal move that makes no 65536, one spawn per move) is a straight line.
        cls = direction.__class__
        if cls is Direction:
            di = direction._value_  # type: ignore[union-attr]
        elif cls is int and 0 <= direction <= 3:  # type: ignore[operator]
            di = direction
        else:
            di = Direction.parse(direction)._value_
        # _bits: bit d = move d legal, bit 4 + d = it would overflow (or: not the one-spawn fast path).
        if self._bits >> di & 0x11 == 1:
            info = _py_step(self._st, di)  # type: ignore[arg-type]  # _bits is 0 while _st is None
            self._bits = info & 255
            self._board = None
            self.score += info >> _fast.STEP_REWARD_SHIFT
            self.moves += 1
            result = _RESULTS.get(info << 2 | di)
            if result is None:
                result = _new_result(info << 2 | di)
            self.last_spawns = result.spawns
            return result
        return self._step_other(DIRECTIONS[di])

    def _step_other(self, d: Direction) -> StepResult:
        """Illegal moves, several spawns per move, the switch to the general path, the general path."""
        st = self._st
        if st is not None:
            if not self._bits >> d & 1:
                raise self._illegal(d)
            if _fast.overflows(np.uint64(int(st[0]) & MASK64), int(d)):
                self._to_general()  # this move makes a 65536: the general path holds it
            else:  # several spawns per move
                reward_i64, cells, exps, bits = _fast._py_move_spawn(st, int(d), self.rules.spawn_per_move)
                reward = int(reward_i64)
                spawns = _spawns_from(cells, exps)
                self._bits = bits | self._gate
                self._board = None
                self.score += reward
                self.moves += 1
                self.last_spawns = spawns
                return StepResult(d, reward, spawns, not bits & 15)
        return self._step_general(d)

    def _step_general(self, d: Direction) -> StepResult:
        board = self._values()
        new_board, reward = self._results()[d]
        if np.array_equal(new_board, board):
            raise self._illegal(d)
        new_board = new_board.copy()
        spawns = spawn_tiles(new_board, self._rng, self.rules, self.rules.spawn_per_move)
        self._board = new_board
        self._legal_cache = None
        self.score += reward
        self.moves += 1
        self.last_spawns = spawns
        return StepResult(d, reward, spawns, self.game_over)

    def copy(self) -> Game:
        """An independent copy (same board, score, moves and spawn stream)."""
        g = Game.__new__(Game)
        g.rules = self.rules
        g.seed = self.seed
        g._rng = SpawnRng(self._rng.state)
        g.score = self.score
        g.moves = self.moves
        g.last_spawns = self.last_spawns
        g._board = None if self._board is None else self._board.copy()
        g._legal_cache = self._legal_cache  # its arrays are never modified in place
        g._st = None if self._st is None else self._st.copy()
        g._bits = self._bits
        g._gate = self._gate
        return g

    def __repr__(self) -> str:
        return (
            f"Game({self.rows}x{self.cols}, score={self.score}, moves={self.moves}, max_tile={self.max_tile})"
        )

    def render_text(self) -> str:
        """A plain-text picture of the board (no printing here: callers decide where text goes)."""
        width = max(4, len(str(self.max_tile)))
        lines = []
        for row in self._values():
            lines.append(" ".join(("." if v == 0 else str(int(v))).rjust(width) for v in row))
        return "\n".join(lines)
