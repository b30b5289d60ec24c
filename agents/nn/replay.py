"""A replay buffer of preallocated numpy arrays (numpy only).

Seed 000 kept transitions as Python tuples of float lists (~1 KB each); here a transition is two
exponent boards (uint8), the move, the reward, the done flag and the next board's legal mask:
16 + 16 + 1 + 4 + 1 + 4 = 42 bytes on 4x4, so one million transitions take 42 MB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, NamedTuple

import numpy as np

N_ACTIONS = 4


class Batch(NamedTuple):
    """A sampled batch; B = batch size, R x C = board shape."""

    states_BRC: np.ndarray  # uint8 exponents
    actions_B: np.ndarray  # int64
    rewards_B: np.ndarray  # float32
    next_states_BRC: np.ndarray  # uint8 exponents
    dones_B: np.ndarray  # bool
    next_masks_BA: np.ndarray  # bool, legal moves of the next state


class RingArrays:
    """Row arrays of one fixed capacity, one per name in ``_FIELDS``, written as a ring: once full, the
    oldest rows are overwritten. ``position``: where the next row goes; ``size``: the rows held."""

    _FIELDS: ClassVar[tuple[str, ...]]
    #: the array names' prefix in checkpoints
    _PREFIX: ClassVar[str]
    capacity: int
    position: int
    size: int

    def __len__(self) -> int:
        return self.size

    def _append(self, *columns: np.ndarray) -> None:
        """Rows ``columns[k][i]`` (one array per field, in ``_FIELDS`` order) from :attr:`position` on; of
        more than ``capacity`` rows only the last ``capacity`` are written."""
        n = len(columns[0])
        start = max(0, n - self.capacity)
        idx = (self.position + np.arange(n - start)) % self.capacity
        for name, column in zip(self._FIELDS, columns, strict=True):
            getattr(self, name)[idx] = column[start:]
        self.position = int((self.position + n - start) % self.capacity)
        self.size = min(self.size + n - start, self.capacity)

    def get_arrays(self, prefix: str | None = None) -> dict[str, np.ndarray]:
        """The filled part, oldest first (so a restored ring overwrites in the same order)."""
        prefix = self._PREFIX if prefix is None else prefix
        if self.size < self.capacity:
            order = np.arange(self.size)
        else:
            order = (self.position + np.arange(self.capacity)) % self.capacity
        return {prefix + f: getattr(self, f)[order] for f in self._FIELDS}


class ReplayBuffer(RingArrays):
    """Fixed-capacity ring buffer of transitions; the oldest is overwritten once full."""

    _FIELDS = ("states", "actions", "rewards", "next_states", "dones", "next_masks")
    _PREFIX = "buffer/"

    def __init__(self, capacity: int, board_shape: tuple[int, int], n_actions: int = N_ACTIONS) -> None:
        if capacity < 1:
            raise ValueError(f"replay capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.board_shape = (int(board_shape[0]), int(board_shape[1]))
        self.n_actions = int(n_actions)
        self.states = np.zeros((self.capacity, *self.board_shape), dtype=np.uint8)
        self.actions = np.zeros(self.capacity, dtype=np.int8)
        self.rewards = np.zeros(self.capacity, dtype=np.float32)
        self.next_states = np.zeros((self.capacity, *self.board_shape), dtype=np.uint8)
        self.dones = np.zeros(self.capacity, dtype=bool)
        self.next_masks = np.zeros((self.capacity, self.n_actions), dtype=bool)
        self.position = 0  # where the next transition goes
        self.size = 0

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        return sum(getattr(self, f).nbytes for f in self._FIELDS)

    def push(
        self,
        state_RC: np.ndarray,
        action: int,
        reward: float,
        next_state_RC: np.ndarray,
        done: bool,
        next_mask_A: np.ndarray | None = None,
    ) -> None:
        """Store one transition (exponent boards)."""
        i = self.position
        self.states[i] = state_RC
        self.actions[i] = action
        self.rewards[i] = reward
        self.next_states[i] = next_state_RC
        self.dones[i] = done
        self.next_masks[i] = True if next_mask_A is None else next_mask_A
        self.position = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def push_batch(
        self,
        states_BRC: np.ndarray,
        actions_B: np.ndarray,
        rewards_B: np.ndarray,
        next_states_BRC: np.ndarray,
        dones_B: np.ndarray,
        next_masks_BA: np.ndarray | None = None,
    ) -> None:
        """Store B transitions in order (as B calls of :meth:`push`, wrapping around)."""
        n = len(actions_B)
        if n == 0:
            return
        if next_masks_BA is None:
            next_masks_BA = np.ones((n, self.n_actions), dtype=bool)
        if n > self.capacity:  # only the last `capacity` survive: they go where B pushes would put them
            self.position = (self.position + n - self.capacity) % self.capacity
        self._append(states_BRC, actions_B, rewards_B, next_states_BRC, dones_B, next_masks_BA)

    def sample(self, batch_size: int, rng: np.random.Generator, *, replace: bool = False) -> Batch:
        """A uniform random batch. Without replacement by default (seed 000's ``random.sample``)."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if not replace and batch_size > self.size:
            raise ValueError(f"cannot sample {batch_size} distinct transitions from {self.size}")
        if replace:
            idx = rng.integers(self.size, size=batch_size)
        else:
            idx = rng.choice(self.size, size=batch_size, replace=False)
        return Batch(
            self.states[idx],
            self.actions[idx].astype(np.int64),
            self.rewards[idx],
            self.next_states[idx],
            self.dones[idx],
            self.next_masks[idx],
        )

    # ------------------------------------------------------------------ checkpoints
    def set_arrays(self, arrays: Mapping[str, np.ndarray], prefix: str = "buffer/") -> None:
        """Restore from :meth:`get_arrays` output (keeps the newest ``capacity`` if it held more)."""
        self.position = 0
        self.size = 0
        self.push_batch(*(np.asarray(arrays[prefix + f]) for f in self._FIELDS))
