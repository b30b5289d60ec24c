"""Policy-value networks of the MCTS agent (seed 004), for boards of any ``rows x cols``.

Both take one-hot exponent planes ``x_BKRC`` (batch, k planes, rows, cols: plane 0 = empty cell,
plane i = tile 2**i, larger tiles share the last plane) and return ``(logits_B4, value_B)``:
move logits in action order (up, left, down, right; softmax / masking happen in the caller) and a
scalar value in the units the agent trains it on (see :mod:`agents.mcts`, "value target").

- :class:`ZeroNetworkMini`: the network seed 004 actually trained: two independent conv towers whose
  dense features are multiplied, then a linear policy head and a linear value head.
- :class:`LeelaNetwork`: the LC0-style tower seed 004 describes: a two-conv stem, ``blocks`` residual
  blocks with squeeze-excitation (SE gives a per-channel scale W and bias B: ``x + sigmoid(W) * y + B``),
  a conv policy head and a conv value head. No batch norm (seed 004 lists none, and the search evaluates
  small batches, where batch statistics would be noise).
"""

from __future__ import annotations

import torch
from torch import nn


class ZeroNetworkMini(nn.Module):
    """Seed 004's ``ZeroNetworkMini``: two conv towers, multiplicative merge, policy + value heads.

    ``(B, k, R, C) -> (B, 4) logits, (B,) value``. The merge ``a * b`` lets one tower gate the other's
    features (seed 004's design); both are ReLU'd first, so the product is a soft AND of two detectors.
    """

    def __init__(self, rows: int, cols: int, planes: int, filters: int = 128, dense: int = 64) -> None:
        super().__init__()
        flat = filters * rows * cols
        self.conv_a1 = nn.Conv2d(planes, filters, 3, padding=1)
        self.conv_a2 = nn.Conv2d(filters, filters, 3, padding=1)
        self.dense_a = nn.Linear(flat, dense)
        self.conv_b1 = nn.Conv2d(planes, filters, 3, padding=1)
        self.conv_b2 = nn.Conv2d(filters, filters, 3, padding=1)
        self.dense_b = nn.Linear(flat, dense)
        self.policy = nn.Linear(dense, 4)
        self.value = nn.Linear(dense, 1)

    def forward(self, x_BKRC: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a_BFRC = torch.relu(self.conv_a2(torch.relu(self.conv_a1(x_BKRC))))
        b_BFRC = torch.relu(self.conv_b2(torch.relu(self.conv_b1(x_BKRC))))
        merged_BD = torch.relu(self.dense_a(a_BFRC.flatten(1))) * torch.relu(self.dense_b(b_BFRC.flatten(1)))
        return self.policy(merged_BD), self.value(merged_BD).squeeze(1)


class SEResidualBlock(nn.Module):
    """LC0's residual block: two 3x3 convs, then squeeze-excitation giving a scale and a bias per channel.

    ``out = relu(x + sigmoid(W) * y + B)`` with ``[W, B] = fc2(relu(fc1(mean_RC(y))))``.
    """

    def __init__(self, filters: int, se_channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(filters, filters, 3, padding=1)
        self.conv2 = nn.Conv2d(filters, filters, 3, padding=1)
        self.fc1 = nn.Linear(filters, se_channels)
        self.fc2 = nn.Linear(se_channels, 2 * filters)

    def forward(self, x_BFRC: torch.Tensor) -> torch.Tensor:
        y_BFRC = self.conv2(torch.relu(self.conv1(x_BFRC)))
        squeezed_BF = y_BFRC.mean(dim=(2, 3))
        w_BF, b_BF = self.fc2(torch.relu(self.fc1(squeezed_BF))).chunk(2, dim=1)
        return torch.relu(x_BFRC + torch.sigmoid(w_BF)[:, :, None, None] * y_BFRC + b_BF[:, :, None, None])


class LeelaNetwork(nn.Module):
    """The LC0-style tower of seed 004: stem, ``blocks`` SE residual blocks, conv policy and value heads.

    Head widths follow seed 004 (policy: F then ``policy_channels`` = 40 planes; value: 16 then 8 planes,
    "reduced from LC0"); they are fixed parts of the architecture, not tuning knobs.
    """

    def __init__(
        self,
        rows: int,
        cols: int,
        planes: int,
        filters: int = 128,
        blocks: int = 10,
        se_channels: int = 32,
        policy_channels: int = 40,
    ) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(planes, filters, 3, padding=1), nn.ReLU(),
            nn.Conv2d(filters, filters, 3, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.blocks = nn.Sequential(*(SEResidualBlock(filters, se_channels) for _ in range(blocks)))
        self.policy = nn.Sequential(
            nn.Conv2d(filters, filters, 3, padding=1), nn.ReLU(),
            nn.Conv2d(filters, policy_channels, 3, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(policy_channels * rows * cols, 4),
        )  # fmt: skip
        self.value = nn.Sequential(
            nn.Conv2d(filters, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 8, 3, padding=1),
            nn.Flatten(), nn.ReLU(), nn.Linear(8 * rows * cols, 1),
        )  # fmt: skip

    def forward(self, x_BKRC: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h_BFRC = self.blocks(self.stem(x_BKRC))
        return self.policy(h_BFRC), self.value(h_BFRC).squeeze(1)


def build_network(
    kind: str,
    rows: int,
    cols: int,
    *,
    planes: int,
    filters: int,
    dense: int,
    blocks: int,
    se_channels: int,
) -> nn.Module:
    """The network named ``kind`` (``"mini"`` or ``"lc0"``) for a ``rows x cols`` board."""
    if kind == "mini":
        return ZeroNetworkMini(rows, cols, planes, filters=filters, dense=dense)
    if kind == "lc0":
        return LeelaNetwork(rows, cols, planes, filters=filters, blocks=blocks, se_channels=se_channels)
    raise ValueError(f"unknown MCTS network {kind!r}: use 'mini' or 'lc0'")


def dense_conv_matrix(conv: nn.Conv2d, rows: int, cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A stride-1 'same' conv on a ``rows x cols`` board as a matrix: ``(W_FN, b_F)`` with
    ``conv(x).flatten(1) == x.flatten(1) @ W_FN.T + b_F`` (N = C_in * rows * cols, F = C_out * rows * cols).

    Why: on a 4x4 board a 3x3 conv is a small linear map, and one GEMM costs a fraction of what PyTorch's
    CPU conv kernels spend setting up for a batch of a dozen boards.
    """
    with torch.no_grad():
        # The image of every basis input is one column of the matrix.
        basis_NCRC = torch.eye(conv.in_channels * rows * cols).reshape(-1, conv.in_channels, rows, cols)
        bias_C = conv.bias if conv.bias is not None else torch.zeros(conv.out_channels)
        cols_NF = (conv(basis_NCRC) - bias_C[None, :, None, None]).flatten(1)
        return cols_NF.T.contiguous(), bias_C.repeat_interleave(rows * cols).contiguous()


class _DenseConv2d(nn.Module):
    """A conv replaced by its :func:`dense_conv_matrix` (same function, exact up to float rounding)."""

    weight_FN: torch.Tensor
    bias_F: torch.Tensor

    def __init__(self, conv: nn.Conv2d, rows: int, cols: int) -> None:
        super().__init__()
        weight_FN, bias_F = dense_conv_matrix(conv, rows, cols)
        self.register_buffer("weight_FN", weight_FN)
        self.register_buffer("bias_F", bias_F)
        self.out_shape = (conv.out_channels, rows, cols)

    def forward(self, x_BCRC: torch.Tensor) -> torch.Tensor:
        out_BF = nn.functional.linear(x_BCRC.flatten(1), self.weight_FN, self.bias_F)
        return out_BF.view(x_BCRC.shape[0], *self.out_shape)


class _MiniInference(nn.Module):
    """:class:`ZeroNetworkMini` fused for play: both towers' first layers as one GEMM, their second and
    dense layers as batched GEMMs, both heads as one. Same function; a handful of torch calls per
    forward instead of ~20 module calls (whose Python overhead is most of the cost at this size)."""

    w1_FN: torch.Tensor
    b1_F: torch.Tensor
    w2_2NF: torch.Tensor
    b2_21F: torch.Tensor
    w3_2FD: torch.Tensor
    b3_21D: torch.Tensor
    wh_5D: torch.Tensor
    bh_5: torch.Tensor

    def __init__(self, net: ZeroNetworkMini, rows: int, cols: int) -> None:
        super().__init__()
        with torch.no_grad():
            wa1, ba1 = dense_conv_matrix(net.conv_a1, rows, cols)
            wb1, bb1 = dense_conv_matrix(net.conv_b1, rows, cols)
            wa2, ba2 = dense_conv_matrix(net.conv_a2, rows, cols)
            wb2, bb2 = dense_conv_matrix(net.conv_b2, rows, cols)
            self.register_buffer("w1_FN", torch.cat([wa1, wb1]))
            self.register_buffer("b1_F", torch.cat([ba1, bb1]))
            self.register_buffer("w2_2NF", torch.stack([wa2.T, wb2.T]).contiguous())
            self.register_buffer("b2_21F", torch.stack([ba2, bb2])[:, None, :].contiguous())
            self.register_buffer(
                "w3_2FD", torch.stack([net.dense_a.weight.T, net.dense_b.weight.T]).contiguous()
            )
            self.register_buffer(
                "b3_21D", torch.stack([net.dense_a.bias, net.dense_b.bias])[:, None, :].contiguous()
            )
            self.register_buffer("wh_5D", torch.cat([net.policy.weight, net.value.weight]))
            self.register_buffer("bh_5", torch.cat([net.policy.bias, net.value.bias]))

    def forward(self, x_BKRC: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = x_BKRC.shape[0]
        h_BF = torch.relu(nn.functional.linear(x_BKRC.flatten(1), self.w1_FN, self.b1_F))
        h_2BN = h_BF.view(n, 2, -1).transpose(0, 1)  # tower a, tower b
        h_2BN = torch.relu(torch.baddbmm(self.b2_21F, h_2BN, self.w2_2NF))
        d_2BD = torch.relu(torch.baddbmm(self.b3_21D, h_2BN, self.w3_2FD))
        out_B5 = nn.functional.linear(d_2BD[0] * d_2BD[1], self.wh_5D, self.bh_5)
        return out_B5[:, :4], out_B5[:, 4]


def inference_copy(net: nn.Module, rows: int, cols: int, max_entries: int = 1 << 22) -> nn.Module:
    """A snapshot of ``net`` for play (eval mode, no gradients) with its small 'same' convs as matrices.

    :class:`ZeroNetworkMini` gets a fused forward; other networks keep their modules with each conv
    swapped for its matrix. A conv is converted only when its matrix has at most ``max_entries``
    entries (4M floats = 16 MB): the matrix grows with (rows x cols)^2, so large boards keep convs.
    """
    import copy

    def small(conv: nn.Conv2d) -> bool:
        return (
            conv.stride == (1, 1)
            and conv.groups == 1
            and conv.dilation == (1, 1)
            and all(k % 2 == 1 and p == k // 2 for k, p in zip(conv.kernel_size, conv.padding))
            and conv.in_channels * conv.out_channels * (rows * cols) ** 2 <= max_entries
        )

    if isinstance(net, ZeroNetworkMini) and all(small(m) for m in net.modules() if isinstance(m, nn.Conv2d)):
        return _MiniInference(net, rows, cols).eval()
    out = copy.deepcopy(net).eval()
    for p in out.parameters():
        p.requires_grad_(False)

    def convert(module: nn.Module) -> None:
        for name, child in module.named_children():
            if isinstance(child, nn.Conv2d) and small(child):
                setattr(module, name, _DenseConv2d(child, rows, cols))
            else:
                convert(child)

    convert(out)
    return out
