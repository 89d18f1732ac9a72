"""Keep-masks from per-weight scores: per output row (unstructured) or N:M semi-structured.

N:M sparsity (Mishra et al. 2021, "Accelerating Sparse Deep Neural Networks"; NVIDIA's 2:4) keeps
exactly ``n`` of every ``m`` consecutive weights along the input dimension of each output row;
Wanda (Sun et al. 2023, §3) and SparseGPT (Frantar & Alistarh 2023, §3.4) select them by their own
score. Ties are broken by position (the lower index is kept), so a mask is a function of the
scores alone.
"""
from __future__ import annotations

import torch


def row_keep_mask(scores: torch.Tensor, sparsity: float) -> torch.Tensor:
    """Zero the ``round(sparsity · in_features)`` lowest-scoring weights of every output row."""
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    rows, cols = scores.shape
    kept = cols - int(round(sparsity * cols))
    order = torch.sort(-scores, dim=1, stable=True).indices  # descending; equal scores: lower index first
    mask = torch.zeros_like(scores, dtype=torch.bool)
    mask.scatter_(1, order[:, :kept], True)
    return mask


def nm_keep_mask(scores: torch.Tensor, n: int, m: int) -> torch.Tensor:
    """Keep the ``n`` highest-scoring of every ``m`` consecutive weights along dim 1."""
    if not 0 < n < m:
        raise ValueError(f"N:M sparsity needs 0 < N < M, got {n}:{m}")
    rows, cols = scores.shape
    if cols % m:
        raise ValueError(f"N:M sparsity needs the input width ({cols}) to be a multiple of M = {m}")
    groups = scores.reshape(rows, cols // m, m)
    # sort descending, stable on the position so that equal scores keep the lower index
    order = torch.sort(-groups, dim=2, stable=True).indices
    mask = torch.zeros_like(groups, dtype=torch.bool)
    mask.scatter_(2, order[..., :n], True)
    return mask.reshape(rows, cols)


def nm_pattern_holds(weight: torch.Tensor, n: int, m: int) -> bool:
    """Whether every group of ``m`` consecutive weights of every row has at most ``n`` non-zeros."""
    rows, cols = weight.shape
    if cols % m:
        return False
    nonzero = (weight.reshape(rows, cols // m, m) != 0).sum(dim=2)
    return bool((nonzero <= n).all())
