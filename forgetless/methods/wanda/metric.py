"""Wanda (Sun, Liu, Bair & Kolter 2023, "A Simple and Effective Pruning Approach for Large
Language Models"), eq. 1 and §3:

    S_ij = |W_ij| · ‖X_j‖₂

the weight magnitude scaled by the ℓ2 norm of input feature ``j`` over all calibration tokens.
Weights are compared *per output* (within each row ``i``: the paper's comparison group, its
Table 6 shows it beats per-layer comparison for LLMs), and the lowest ``s`` share of each row is
zeroed; for N:M the ``n`` highest of every ``m`` consecutive inputs are kept. No weight update.
"""
from __future__ import annotations

import torch

from .._shared.masks import nm_keep_mask, row_keep_mask


def wanda_scores(weight: torch.Tensor, input_norms: torch.Tensor) -> torch.Tensor:
    """``|W| · ‖X_j‖₂`` broadcast over rows (``weight``: out × in, ``input_norms``: in)."""
    if input_norms.shape != (weight.shape[1],):
        raise ValueError(f"input norms of shape {tuple(input_norms.shape)} do not match a weight with "
                         f"{weight.shape[1]} inputs")
    return weight.detach().abs().to(torch.float64) * input_norms.to(torch.float64).unsqueeze(0)


def wanda_mask(weight: torch.Tensor, input_norms: torch.Tensor, sparsity: float = 0.5,
               nm: tuple[int, int] | None = None) -> torch.Tensor:
    """Boolean keep-mask: per-row unstructured at ``sparsity``, or N:M when ``nm`` is given."""
    scores = wanda_scores(weight, input_norms)
    return nm_keep_mask(scores, *nm) if nm else row_keep_mask(scores, sparsity)
