"""The network zoo. Every network maps ``(B, C, rows, cols)`` planes (see :mod:`agents.nn.encoders`) to
``(B, n_actions)`` outputs: Q-values or policy logits (softmax is applied by the caller, after masking).

- ``simple``, ``dropout``, ``conv``: seed 000's ``QNetworkSimple`` (16-128-64-4), ``QNetworkDropout``
  (16-64-128-64-4, p=0.5) and ``QNetworkConv`` (a four-kernel ``ConvBlock`` of 32 channels, then
  512-128-4). The seed's ``QNetworkConv`` and ``ConvBlock`` defined ``init`` instead of ``__init__``
  (so they could never be built); fixed here. With the seed's 16-float input the layer sizes are the
  seed's exactly; other inputs change only the first layer.
- ``policy``: seed 001's MLP 16-200-100-4 (the seed ended it in ``Softmax``; here it returns logits so
  that illegal moves can be masked before the softmax).
- ``mlp``: an MLP with configurable hidden sizes. ``cnn``: a small 2048 conv net (parallel 1x2 / 2x1
  convolutions, which see a merge between neighbours, two layers deep) for one-hot planes.

Build by name with :func:`build_network`.

``ntuple`` (:class:`NTupleNetwork`, built by :func:`ntuple_network`) is not a planes network: it is
an n-tuple network written as one sparse neural layer, reading the table rows of
:class:`~agents.nn.encoders.NTupleEncoder` (:meth:`agents.nn.agent.TorchAgent.build_net` pairs them).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

NETWORKS: tuple[str, ...] = ("simple", "dropout", "conv", "policy", "mlp", "cnn")


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


class MLP(nn.Module):
    """Flatten, then Linear + ReLU per hidden size, then a linear head (optional dropout after each ReLU)."""

    def __init__(
        self, in_shape: Sequence[int], hidden: Sequence[int], n_actions: int = 4, dropout: float = 0.0
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = _numel(in_shape)
        for h in hidden:
            layers += [nn.Linear(width, int(h)), nn.ReLU()]
            if dropout > 0:
                layers.append(nn.Dropout(p=dropout))
            width = int(h)
        layers.append(nn.Linear(width, n_actions))
        self.net = nn.Sequential(*layers)

    def forward(self, x_BCRW: torch.Tensor) -> torch.Tensor:
        return self.net(x_BCRW)


class QNetworkSimple(nn.Module):
    """Seed 000's fully connected Q-network: in -> 128 -> 64 -> 4, ReLU between."""

    def __init__(self, in_shape: Sequence[int], n_actions: int = 4) -> None:
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(_numel(in_shape), 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, n_actions)

    def forward(self, x_BCRW: torch.Tensor) -> torch.Tensor:
        x_BF = self.flatten(x_BCRW)
        x_BF = torch.relu(self.fc1(x_BF))
        x_BF = torch.relu(self.fc2(x_BF))
        return self.fc3(x_BF)


class QNetworkDropout(nn.Module):
    """Seed 000's dropout Q-network: in -> 64 -> 128 -> 64 -> 4, dropout 0.5 after the first two ReLUs."""

    def __init__(self, in_shape: Sequence[int], n_actions: int = 4, p: float = 0.5) -> None:
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(_numel(in_shape), 64)
        self.fc2 = nn.Linear(64, 128)
        self.fc3 = nn.Linear(128, 64)
        self.fc4 = nn.Linear(64, n_actions)
        self.dropout = nn.Dropout(p=p)

    def forward(self, x_BCRW: torch.Tensor) -> torch.Tensor:
        x_BF = self.flatten(x_BCRW)
        x_BF = self.dropout(torch.relu(self.fc1(x_BF)))
        x_BF = self.dropout(torch.relu(self.fc2(x_BF)))
        x_BF = torch.relu(self.fc3(x_BF))
        return self.fc4(x_BF)


class ConvBlock(nn.Module):
    """Seed 000's block: four parallel convolutions (kernels 1, 2, 3, 4, 'same' padding), ReLU, concat.

    The 'same' padding is applied explicitly, exactly as torch's ``padding="same"`` does for these
    kernels (the odd pixel on the right / bottom), which avoids torch's padded-copy warning.
    """

    KERNELS = (1, 2, 3, 4)

    def __init__(self, input_dim: int, output_dim: int) -> None:
        super().__init__()
        d = output_dim // 4
        self.conv1 = nn.Conv2d(input_dim, d, kernel_size=1)
        self.conv2 = nn.Conv2d(input_dim, d, kernel_size=2)
        self.conv3 = nn.Conv2d(input_dim, d, kernel_size=3)
        self.conv4 = nn.Conv2d(input_dim, d, kernel_size=4)

    def forward(self, x_BCRW: torch.Tensor) -> torch.Tensor:
        outs = []
        for k, conv in zip(self.KERNELS, (self.conv1, self.conv2, self.conv3, self.conv4)):
            lo, hi = (k - 1) // 2, (k - 1) - (k - 1) // 2
            outs.append(torch.relu(conv(nn.functional.pad(x_BCRW, (lo, hi, lo, hi)))))
        return torch.cat(outs, dim=1)


class QNetworkConv(nn.Module):
    """Seed 000's conv Q-network: ConvBlock(C -> 32) -> flatten (32 x rows x cols) -> 128 -> 4."""

    def __init__(self, in_shape: Sequence[int], n_actions: int = 4) -> None:
        super().__init__()
        channels, rows, cols = (int(s) for s in in_shape)
        self.conv_block = ConvBlock(input_dim=channels, output_dim=32)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(32 * rows * cols, 128)
        self.fc2 = nn.Linear(128, n_actions)

    def forward(self, x_BCRW: torch.Tensor) -> torch.Tensor:
        x_BF = self.flatten(self.conv_block(x_BCRW))
        return self.fc2(torch.relu(self.fc1(x_BF)))


class PolicyMLP(MLP):
    """Seed 001's policy network: in -> 200 -> 100 -> 4 (logits)."""

    def __init__(
        self, in_shape: Sequence[int], n_actions: int = 4, hidden: Sequence[int] = (200, 100)
    ) -> None:
        super().__init__(in_shape, hidden, n_actions)


class Conv2048(nn.Module):
    """Two layers of parallel 1x2 and 2x1 convolutions (each output pair expanded again), then an MLP head.

    Built for one-hot planes: a 1x2 / 2x1 kernel sees exactly the neighbour pairs a move can merge,
    and two layers see pairs of pairs. Works for any rows x cols >= 2 x 2.
    """

    def __init__(
        self, in_shape: Sequence[int], n_actions: int = 4, filters: int = 128, hidden: int = 256
    ) -> None:
        super().__init__()
        c, rows, cols = (int(s) for s in in_shape)
        if rows < 2 or cols < 2:
            raise ValueError(f"the cnn network needs a board of at least 2 x 2, got {rows} x {cols}")
        self.conv_a = nn.Conv2d(c, filters, kernel_size=(1, 2))
        self.conv_b = nn.Conv2d(c, filters, kernel_size=(2, 1))
        self.conv_aa = nn.Conv2d(filters, filters, kernel_size=(1, 2))
        self.conv_ab = nn.Conv2d(filters, filters, kernel_size=(2, 1))
        self.conv_ba = nn.Conv2d(filters, filters, kernel_size=(1, 2))
        self.conv_bb = nn.Conv2d(filters, filters, kernel_size=(2, 1))
        n_a, n_b = rows * (cols - 1), (rows - 1) * cols
        n_aa, n_ab = rows * (cols - 2), (rows - 1) * (cols - 1)
        n_ba, n_bb = (rows - 1) * (cols - 1), (rows - 2) * cols
        width = filters * (n_a + n_b + n_aa + n_ab + n_ba + n_bb)
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, n_actions)

    def forward(self, x_BCRW: torch.Tensor) -> torch.Tensor:
        a = torch.relu(self.conv_a(x_BCRW))
        b = torch.relu(self.conv_b(x_BCRW))
        parts = [a, b]
        if a.shape[-1] >= 2:
            parts.append(torch.relu(self.conv_aa(a)))
        parts.append(torch.relu(self.conv_ab(a)))
        parts.append(torch.relu(self.conv_ba(b)))
        if b.shape[-2] >= 2:
            parts.append(torch.relu(self.conv_bb(b)))
        flat_BF = torch.cat([p.flatten(1) for p in parts], dim=1)
        return self.fc2(torch.relu(self.fc1(flat_BF)))


def build_network(
    name: str, in_shape: Sequence[int], n_actions: int = 4, hidden: Sequence[int] = (256, 256)
) -> nn.Module:
    """A network of the zoo by name; ``hidden`` is used by ``mlp`` (layer widths) and ``cnn`` (filters per
    convolution, then the head's width; missing entries default to 128 and 256)."""
    if len(in_shape) != 3:
        raise ValueError(f"networks take (channels, rows, cols) input, got shape {tuple(in_shape)}")
    if name == "simple":
        return QNetworkSimple(in_shape, n_actions)
    if name == "dropout":
        return QNetworkDropout(in_shape, n_actions)
    if name == "conv":
        return QNetworkConv(in_shape, n_actions)
    if name == "policy":
        return PolicyMLP(in_shape, n_actions)
    if name == "mlp":
        return MLP(in_shape, hidden, n_actions)
    if name == "cnn":
        sizes = [int(h) for h in hidden] + [128, 256][len(hidden) :]
        return Conv2048(in_shape, n_actions, filters=sizes[0], hidden=sizes[1])
    raise ValueError(f"unknown network {name!r}: choose one of {', '.join(NETWORKS)}")


class NTupleNetwork(nn.Module):
    """An n-tuple network as a neural layer: the output is the sum of the table rows a board's tuples
    index (an ``EmbeddingBag`` in sum mode over ``(B, 8 x tuples)`` indices), i.e. a linear function of
    a huge one-hot feature vector of which only ``8 x tuples`` entries are 1.

    One layer, no hidden units: what makes it strong on 2048 is the features (every 6-cell pattern
    under every symmetry has its own weight). The table starts at zero and its gradients are sparse
    (only the rows used in a batch): train it with a sparse-capable optimiser (SGD, SparseAdam).
    """

    def __init__(self, size: int, n_out: int = 1) -> None:
        super().__init__()
        self.table = nn.EmbeddingBag(int(size), int(n_out), mode="sum", sparse=True)
        nn.init.zeros_(self.table.weight)

    def forward(self, idx_BK: torch.Tensor) -> torch.Tensor:
        return self.table(idx_BK)


def has_dropout(module: nn.Module) -> bool:
    return any(isinstance(m, nn.Dropout) for m in module.modules())
