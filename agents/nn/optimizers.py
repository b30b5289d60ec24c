"""Optimisers for sparse tables (the ``ntuple`` network's :class:`torch.nn.EmbeddingBag`).

:class:`RowMeanSGD` is plain SGD with one change: a table row used by several samples of a batch moves
by ``lr`` x the **mean** of their gradients, not the sum. A sparse linear network's common rows (an
empty corner, a low row) appear in most of a 512-board batch: summing their gradients makes them
overshoot (32 rows per board, each moved by the batch's whole error) and training diverges, while
online TD learning, one sample at a time, corrects itself between samples. With the mean, a batch
moves every row as one online update of the average error would: a board whose rows are all common
moves by 32 x lr x its mean error, a board of rare rows by 32 x lr x its own.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class RowMeanSGD(torch.optim.Optimizer):
    """SGD on sparse gradients (one row per index occurrence, as ``EmbeddingBag(sparse=True)`` gives
    them) averaging the occurrences of each row; dense gradients are plain SGD."""

    def __init__(self, params: Iterable[torch.Tensor], lr: float) -> None:
        if lr <= 0:
            raise ValueError(f"lr must be positive, got {lr}")
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure: None = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            lr = group["lr"]
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if not g.is_sparse:
                    p.add_(g, alpha=-lr)
                    continue
                rows, inverse, counts = torch.unique(g._indices()[0], return_inverse=True, return_counts=True)
                summed = torch.zeros((len(rows), *p.shape[1:]), dtype=p.dtype, device=p.device)
                summed.index_add_(0, inverse, g._values())
                mean = summed / counts.to(p.dtype).view(-1, *([1] * (p.dim() - 1)))
                p.index_add_(0, rows, mean, alpha=-lr)
