"""A plain-Python twin of the rules: lists of ints, no numpy, no tricks.

Two jobs, one module:

* the slow, obviously-correct reference that the tests check every fast path against
  (``tests/engine/test_fast.py`` and friends), and
* the baseline of ``python main.py bench engine`` (``(a) plain Python``), so the ratios the bench
  prints are against the very code the tests trust.

It re-implements everything it needs (slide, moves, splitmix64, spawns) instead of importing
:mod:`engine.core`, so a bug in the engine cannot hide behind the same bug here. Grids are lists of
rows of tile **values** (0 = empty), any shape, tiles unbounded. Directions use the studio's action
order: ``0 = up, 1 = left, 2 = down, 3 = right``.
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1
UP, LEFT, DOWN, RIGHT = 0, 1, 2, 3

Grid = list[list[int]]


def slide_line(line: list[int]) -> tuple[list[int], int]:
    """Slide one line towards index 0, merging equal neighbours once, nearest the wall first.

    ``[2, 2, 2, 2] -> ([4, 4, 0, 0], 8)``; ``[4, 4, 4, 0] -> ([8, 4, 0, 0], 8)``;
    ``[65536, 65536, 0] -> ([131072, 0, 0], 131072)``.
    """
    tiles = [v for v in line if v != 0]
    out: list[int] = []
    reward = 0
    i = 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            out.append(2 * tiles[i])
            reward += 2 * tiles[i]
            i += 2
        else:
            out.append(tiles[i])
            i += 1
    return out + [0] * (len(line) - len(out)), reward


def move(grid: Grid, direction: int) -> tuple[Grid, int]:
    """``(new_grid, reward)`` of a move, spelled out per direction (no transposes to get wrong).

    ``move([[2, 2], [0, 2]], 1) -> ([[4, 0], [2, 0]], 4)`` (left);
    ``move([[2, 2], [0, 2]], 2) -> ([[0, 0], [2, 4]], 4)`` (down).
    """
    rows, cols = len(grid), len(grid[0])
    out = [[0] * cols for _ in range(rows)]
    reward = 0
    if direction == LEFT:
        for r in range(rows):
            line, got = slide_line(grid[r])
            out[r] = line
            reward += got
    elif direction == RIGHT:
        for r in range(rows):
            line, got = slide_line(grid[r][::-1])
            out[r] = line[::-1]
            reward += got
    elif direction == UP:
        for c in range(cols):
            line, got = slide_line([grid[r][c] for r in range(rows)])
            for r in range(rows):
                out[r][c] = line[r]
            reward += got
    elif direction == DOWN:
        for c in range(cols):
            line, got = slide_line([grid[r][c] for r in range(rows - 1, -1, -1)])
            for i, r in enumerate(range(rows - 1, -1, -1)):
                out[r][c] = line[i]
            reward += got
    else:
        raise ValueError(f"direction must be 0 (up), 1 (left), 2 (down) or 3 (right), got {direction!r}")
    return out, reward


def legal_moves(grid: Grid) -> list[int]:
    """The directions (action order) whose move changes the grid: ``[[2, 0], [0, 0]] -> [2, 3]``."""
    return [d for d in (UP, LEFT, DOWN, RIGHT) if move(grid, d)[0] != grid]


def splitmix64(state: int) -> tuple[int, int]:
    """``state -> (new_state, output)``: the published splitmix64 step, 64-bit wrap-around."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def seed_state(seed: int) -> int:
    """The generator state a game seeded with ``seed`` starts from (one splitmix64 output)."""
    return splitmix64(seed & MASK64)[1]


def spawn(grid: Grid, state: int, p4: float) -> tuple[int, tuple[int, int, int] | None]:
    """Put one tile on an empty cell, in place: ``-> (new_state, (row, col, value))``.

    Two draws, in this order: the cell (``(u >> 32) % n_empty`` over the empty cells in row-major
    order), then the value (a 4 when ``(u >> 11) / 2**53 < p4``, else a 2). A full grid takes no
    draw and returns ``(state, None)``.
    """
    empty = [(r, c) for r in range(len(grid)) for c in range(len(grid[0])) if grid[r][c] == 0]
    if not empty:
        return state, None
    state, u = splitmix64(state)
    r, c = empty[(u >> 32) % len(empty)]
    state, u = splitmix64(state)
    value = 4 if (u >> 11) * (1.0 / 9007199254740992.0) < p4 else 2
    grid[r][c] = value
    return state, (r, c, value)


class RefGame:
    """A whole game in plain Python: ``RefGame(4, 4, seed=1)`` spawns two tiles, ``step(d)`` plays.

    Same seed -> same spawns as :class:`engine.Game` (both use splitmix64 the same way).
    """

    def __init__(
        self,
        rows: int = 4,
        cols: int = 4,
        seed: int = 0,
        p4: float = 0.1,
        start_tiles: int = 2,
        spawn_per_move: int = 1,
    ) -> None:
        self.grid: Grid = [[0] * cols for _ in range(rows)]
        self.state = seed_state(seed)
        self.p4 = p4
        self.spawn_per_move = spawn_per_move
        self.score = 0
        self.moves = 0
        self.last_spawns: list[tuple[int, int, int]] = []
        for _ in range(start_tiles):
            self.state, s = spawn(self.grid, self.state, p4)
            if s is not None:
                self.last_spawns.append(s)

    def legal_moves(self) -> list[int]:
        return legal_moves(self.grid)

    def step(self, direction: int) -> int:
        """Play a legal move (ValueError for an illegal one); returns its reward."""
        new, reward = move(self.grid, direction)
        if new == self.grid:
            raise ValueError(f"move {direction} changes nothing")
        self.grid = new
        self.score += reward
        self.moves += 1
        self.last_spawns = []
        for _ in range(self.spawn_per_move):
            self.state, s = spawn(self.grid, self.state, self.p4)
            if s is not None:
                self.last_spawns.append(s)
        return reward


def random_game(rows: int = 4, cols: int = 4, seed: int = 0, move_seed: int = 1) -> RefGame:
    """Play random legal moves to the end (moves drawn from their own splitmix64 stream)."""
    g = RefGame(rows, cols, seed)
    mstate = seed_state(move_seed)
    legal = g.legal_moves()
    while legal:
        mstate, u = splitmix64(mstate)
        g.step(legal[(u >> 32) % len(legal)])
        legal = g.legal_moves()
    return g


def random_play_from(
    grid: Grid, spawn_state: int, move_state: int, p4: float = 0.1, spawn_per_move: int = 1
) -> tuple[Grid, int, int]:
    """Random legal moves from ``grid`` to the end, with explicit generator states (a copy is played).

    Each move takes one draw of the move stream (the ``(u >> 32) % n_legal``-th legal direction in
    action order), then the spawns take theirs from the spawn stream. ``-> (final_grid, score, moves)``.
    """
    g = [row[:] for row in grid]
    score = moves = 0
    legal = legal_moves(g)
    while legal:
        move_state, u = splitmix64(move_state)
        g, reward = move(g, legal[(u >> 32) % len(legal)])
        score += reward
        moves += 1
        for _ in range(spawn_per_move):
            spawn_state, _ = spawn(g, spawn_state, p4)
        legal = legal_moves(g)
    return g, score, moves
