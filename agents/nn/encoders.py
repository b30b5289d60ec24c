"""Board encoders: exponent boards ``(B, rows, cols)`` -> float32 network input ``(B, C, rows, cols)``.

Every encoder returns planes, so one network definition serves any encoder: MLPs flatten them, conv
nets read them as channels. Seed 000's flat 16-vector is the 1 x 4 x 4 case, flattened row-major exactly
as the notebook's ``get_normalized_flattened_board`` did.

- ``log2``: one plane of exponents (seed 000: ``log2(value)``, 0 for empty; ``[[2, 0], [8, 1024]]`` ->
  ``[[1, 0], [3, 10]]``). The seed called it "normalised"; it is the raw exponent.
- ``log2_norm``: one plane ``exponent / 11 - 0.25`` (seed 001's ``transform``: 2048 -> 0.75, empty -> -0.25).
- ``onehot``: ``k`` planes, plane ``e`` is 1 where the exponent is ``e`` (plane 0 = empty, seed 002's
  18 x 4 x 4 and seed 004's k planes); exponents >= k land in the last plane.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

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
            idx_BRC = np.minimum(e, self.planes - 1).astype(np.intp)
            eye_KK = np.eye(self.planes, dtype=np.float32)
            # eye[idx] is (B, R, C, K); channels go first for conv nets.
            return np.ascontiguousarray(eye_KK[idx_BRC].transpose(0, 3, 1, 2))
        x_BRC = e.astype(np.float32)
        if self.scale != 1.0 or self.shift != 0.0:
            x_BRC = x_BRC * np.float32(self.scale) + np.float32(self.shift)
        return x_BRC[:, None, :, :]

    def tensor(self, exps_BRC: np.ndarray) -> torch.Tensor:
        """:meth:`encode` as a torch tensor on :attr:`device` (on the CPU it shares the numpy result's memory)."""
        x = torch.from_numpy(self.encode(exps_BRC))
        return x if self.device is None else x.to(self.device)


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
