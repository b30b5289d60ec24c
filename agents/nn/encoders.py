"""Board encoders: exponent boards ``(B, rows, cols)`` -> float32 network input ``(B, C, rows, cols)``.

Every encoder returns planes, so one network definition serves any encoder: MLPs flatten them, conv
nets read them as channels. Seed 000's flat 16-vector is the 1 x 4 x 4 case, flattened row-major exactly
as the notebook's ``get_normalized_flattened_board`` did.

- ``log2``: one plane of exponents (seed 000: ``log2(value)``, 0 for empty; ``[[2, 0], [8, 1024]]`` ->
  ``[[1, 0], [3, 10]]``). The seed called it "normalised"; it is the raw exponent.
- ``log2_norm``: one plane ``exponent / 11 - 0.25`` (seed 001's ``transform``: 2048 -> 0.75, empty -> -0.25).
- ``onehot``: ``k`` planes, plane ``e`` is 1 where the exponent is ``e`` (plane 0 = empty, seed 002's
  18 x 4 x 4 and seed 004's k planes); exponents >= k land in the last plane.

:class:`NTupleEncoder` is the input of the ``ntuple`` network: not planes but, per board, the row of
an n-tuple network's weight table each tuple reads under each of the 8 board symmetries (integers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from agents.config import ConfigError
from agents.ntuple.agent import LAYOUTS, symmetry_cells

ENCODERS: tuple[str, ...] = ("log2", "log2_norm", "onehot")


@dataclass(frozen=True)
class Encoder:
    """A board encoder; build one with :func:`make_encoder`."""

    name: str
    planes: int = 1  # output channels (only ``onehot`` has more than one)
    scale: float = 1.0
    shift: float = 0.0
    #: where :meth:`tensor` puts its result (None: the CPU, sharing memory with the numpy array)
    device: torch.device | None = None

    def shape(self, rows: int, cols: int) -> tuple[int, int, int]:
        """The per-board output shape ``(C, rows, cols)``."""
        return (self.planes, rows, cols)

    def encode(self, exps_BRC: np.ndarray) -> np.ndarray:
        """Exponents ``(B, rows, cols)`` (or one board ``(rows, cols)``) -> float32 ``(B, C, rows, cols)``."""
        e = np.asarray(exps_BRC)
        if e.ndim == 2:
            e = e[None]
        if self.name == "onehot":
            idx_B1RC = np.minimum(e, self.planes - 1)[:, None]
            planes_1K11 = np.arange(self.planes, dtype=idx_B1RC.dtype)[None, :, None, None]
            # Channels first for conv nets; one broadcast comparison writes them in that order (a
            # third faster than gathering rows of an identity matrix and transposing the result).
            return (idx_B1RC == planes_1K11).astype(np.float32)
        x_BRC = e.astype(np.float32)
        if self.scale != 1.0 or self.shift != 0.0:
            x_BRC = x_BRC * np.float32(self.scale) + np.float32(self.shift)
        return x_BRC[:, None, :, :]

    def tensor(self, exps_BRC: np.ndarray) -> torch.Tensor:
        """:meth:`encode` as a torch tensor on :attr:`device` (on the CPU it shares the numpy result's memory)."""
        x = torch.from_numpy(self.encode(exps_BRC))
        return x if self.device is None else x.to(self.device)


def check_encoder_fits(network: str, encoder: str) -> None:
    """ConfigError (field ``network``) for a cnn network over an encoder other than one-hot planes:
    the one rule every torch learner's config checks about its input."""
    if network == "cnn" and encoder != "onehot":
        raise ConfigError("network", "the cnn network reads one-hot planes: set encoder to onehot")


def make_encoder(name: str, planes: int = 18) -> Encoder:
    """An encoder by name (``log2``, ``log2_norm`` or ``onehot`` with ``planes`` planes)."""
    if name == "log2":
        return Encoder("log2")
    if name == "log2_norm":
        return Encoder("log2_norm", scale=1.0 / 11.0, shift=-0.25)
    if name == "onehot":
        if planes < 2:
            raise ValueError(f"a one-hot encoder needs at least 2 planes, got {planes}")
        return Encoder("onehot", planes=int(planes))
    raise ValueError(f"unknown encoder {name!r}: choose one of {', '.join(ENCODERS)}")


def _tuple_weights(tuples: tuple[tuple[int, ...], ...]) -> tuple[torch.Tensor, np.ndarray]:
    """``(weights (16, K), offsets (K,))`` with ``K = 8 x tuples`` views: view ``k = 8 t + s`` reads
    tuple ``t`` under symmetry ``s``, and ``weights[c, k]`` is ``16^p`` when board cell ``c`` is the
    view's ``p``-th cell (element ``p`` is nibble ``p`` of the index, the agents.ntuple convention)."""
    sizes = [16 ** len(t) for t in tuples]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    weights = np.zeros((16, 8 * len(tuples)), np.float64)
    offsets = np.zeros(8 * len(tuples), np.int64)
    for t, tup in enumerate(tuples):
        for s in range(8):
            view = symmetry_cells(s)
            for p, c in enumerate(tup):
                weights[view[c], 8 * t + s] = 16.0**p
            offsets[8 * t + s] = starts[t]
    return torch.from_numpy(weights), offsets


@dataclass(frozen=True)
class NTupleEncoder:
    """4x4 exponent boards ``(B, 4, 4)`` -> ``(B, 8 x tuples)`` int64 rows of one weight table.

    Tuple ``t`` (cells numbered row-major, ``4 r + c``) read under symmetry ``s`` (see
    :func:`agents.ntuple.agent.symmetry_cells`) gives row ``offset_t + sum_p min(e_p, 15) 16^p`` where
    ``e_p`` is the exponent at its ``p``-th cell and ``offset_t`` the total size of the tuples before
    it: the 8 views of a tuple share its rows (weight sharing), so a net summing the rows is symmetric.
    Exponents past 15 (65536) read as 15.
    """

    layout: str = "4x6"
    device: torch.device | None = None
    name: str = "ntuple"
    _weights: tuple[torch.Tensor, np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"unknown tuple layout {self.layout!r}: choose one of {', '.join(LAYOUTS)}")
        if max(len(t) for t in self.tuples) > 8:
            raise ValueError("tuples of at most 8 cells (their indices must be exact in a float64 product)")
        object.__setattr__(self, "_weights", _tuple_weights(LAYOUTS[self.layout]))

    @property
    def tuples(self) -> tuple[tuple[int, ...], ...]:
        return LAYOUTS[self.layout]

    @property
    def size(self) -> int:
        """Rows of the weight table all the tuples index."""
        return int(sum(16 ** len(t) for t in self.tuples))

    @property
    def features(self) -> int:
        """Indices per board (8 per tuple)."""
        return 8 * len(self.tuples)

    def shape(self, rows: int, cols: int) -> tuple[int]:
        """Per-board output shape ``(8 x tuples,)``; the tuples are defined on a 4x4 board only."""
        if (rows, cols) != (4, 4):
            raise ValueError(f"the ntuple network reads 4x4 boards, not {rows} x {cols}")
        return (self.features,)

    def encode(self, exps_BRC: np.ndarray) -> np.ndarray:
        """Exponents ``(B, 4, 4)`` (or one board) -> int64 table rows ``(B, 8 x tuples)``."""
        e = np.asarray(exps_BRC)
        if e.ndim == 2:
            e = e[None]
        weights_FK, offsets_K = self._weights
        e_BF = torch.from_numpy(np.minimum(e.reshape(len(e), 16), 15).astype(np.float64))
        # One small matrix product reads every view's nibbles at once (a fancy-index gather of
        # B x K x 6 cells took longer than the whole forward pass); every partial sum is an integer
        # below 2^32, exact in float64. Torch's product, not numpy's: numpy's BLAS may start threads
        # of its own, which cost CPU-seconds without a setting that limits them (torch's does).
        return (e_BF @ weights_FK).long().numpy() + offsets_K

    def tensor(self, exps_BRC: np.ndarray) -> torch.Tensor:
        """:meth:`encode` as a torch tensor on :attr:`device`."""
        x = torch.from_numpy(self.encode(exps_BRC))
        return x if self.device is None else x.to(self.device)


#: what the torch learners' ``encoder`` is: planes for the planes networks, table rows for ``ntuple``
BoardEncoder = Encoder | NTupleEncoder
