"""Legal-move masking where Q-values or logits become moves.

Masks are boolean ``(B, A)`` in action order (True = legal). Illegal entries are replaced by ``-inf``
before any argmax / max / softmax, and legal entries are made finite first (NaN or -inf in a legal
entry could otherwise tie with, or lose to, an illegal one): an illegal move can never be chosen while
a legal one exists.
"""

from __future__ import annotations

import numpy as np
import torch


def _legal_scores(values_BA: torch.Tensor, mask_BA: torch.Tensor) -> torch.Tensor:
    finfo = torch.finfo(values_BA.dtype)
    finite_BA = torch.nan_to_num(values_BA, nan=finfo.min, posinf=finfo.max, neginf=finfo.min)
    return finite_BA.masked_fill(~mask_BA, float("-inf"))


def masked_argmax(values_BA: torch.Tensor, mask_BA: torch.Tensor) -> torch.Tensor:
    """Index of the best legal entry per row (ties: the first in action order); -1 where none is legal."""
    best_B = _legal_scores(values_BA, mask_BA).argmax(dim=1)
    return torch.where(mask_BA.any(dim=1), best_B, torch.full_like(best_B, -1))


def masked_max(values_BA: torch.Tensor, mask_BA: torch.Tensor) -> torch.Tensor:
    """Largest legal value per row; 0 where no move is legal (a terminal state has no future)."""
    best_B = values_BA.masked_fill(~mask_BA, float("-inf")).max(dim=1).values
    return torch.where(mask_BA.any(dim=1), best_B, torch.zeros_like(best_B))


def masked_log_softmax(logits_BA: torch.Tensor, mask_BA: torch.Tensor) -> torch.Tensor:
    """log-probabilities over the legal moves only (-inf for illegal ones)."""
    return torch.log_softmax(_legal_scores(logits_BA, mask_BA), dim=1)


def masked_softmax(logits_BA: torch.Tensor, mask_BA: torch.Tensor) -> torch.Tensor:
    """Probabilities over the legal moves only (exactly 0 for illegal ones; a row with none is all 0)."""
    any_B1 = mask_BA.any(dim=1, keepdim=True)
    safe_mask_BA = mask_BA | ~any_B1  # a row with no legal move would be NaN: compute it unmasked ...
    probs_BA = torch.softmax(_legal_scores(logits_BA, safe_mask_BA), dim=1)
    return probs_BA * any_B1  # ... and zero it


def sample_from_probs(probs_BA: np.ndarray, mask_BA: np.ndarray, u_B: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling with given uniforms ``u_B`` in [0, 1); never returns an illegal move.

    Taking the uniforms from the caller keeps sampling on the agent's own numpy generator (seeded,
    saved in checkpoints) rather than torch's global one.
    """
    p_BA = np.where(mask_BA, np.asarray(probs_BA, dtype=np.float64), 0.0)
    total_B = p_BA.sum(axis=1)
    cdf_BA = np.cumsum(p_BA, axis=1)
    pick_B = (cdf_BA <= (u_B * total_B)[:, None]).sum(axis=1)
    pick_B = np.minimum(pick_B, mask_BA.shape[1] - 1)
    bad_B = ~mask_BA[np.arange(len(pick_B)), pick_B]
    if bad_B.any():
        # Only at rounding edges (u * total == total) or when all legal probabilities underflowed to 0:
        # fall back to the most probable legal move, else the first legal one.
        fallback_B = np.where(mask_BA, p_BA + 1e-300, -1.0).argmax(axis=1)
        pick_B = np.where(bad_B, fallback_B, pick_B)
    return pick_B.astype(np.int64)
