"""SparseGPT (Frantar & Alistarh 2023, "SparseGPT: Massive Language Models Can Be Accurately
Pruned in One-Shot"), Algorithm 1.

Row-wise, the layer-wise problem ``min ‖W X − Ŵ X‖²`` with a sparsity mask is solved
approximately by the Optimal Brain Surgeon update applied column by column, left to right: when
column ``j`` is fixed (pruned weights set to 0, kept ones left), the error ``δ = (w_j − ŵ_j) /
[H_F⁻¹]_jj`` is spread over the columns not yet processed,

    W[:, F] −= δ · [H_F⁻¹]_{j, F}                                   (eq. 3, OBS update)

where ``F`` = the columns from ``j`` on and ``H_F⁻¹`` the inverse Hessian restricted to them. All
the needed rows come from one upper Cholesky factor ``U`` of ``H⁻¹`` (``[H_F⁻¹]_{j,F} = U_jj ·
U_{j,F}``; §3.2). Updates are lazy: within a block of ``block_size`` columns they are applied at
once, and the block's accumulated errors update the later columns with one matrix product (§3.3).

Mask selection is adaptive (§3.3): for unstructured sparsity the mask of each block is chosen
when the sweep reaches it, zeroing the ``s`` share of the block's weights with the smallest OBS
error ``w² / [H_F⁻¹]²_jj`` (as the authors' code does, over the whole block, so rows may differ);
for N:M the ``m − n`` smallest of every ``m`` consecutive columns of each row (§3.4).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._shared.hessian import inverse_cholesky_upper, one_thread, prepare_hessian


@dataclass
class SparseGptResult:
    weight: torch.Tensor  # the pruned, reconstructed weight (the input's dtype)
    keep: torch.Tensor  # boolean keep-mask


def _block_mask(block: torch.Tensor, diag: torch.Tensor, sparsity: float) -> torch.Tensor:
    """Keep-mask of one block: zero the ``round(s · numel)`` weights with the smallest OBS error."""
    errors = (block ** 2 / diag.unsqueeze(0) ** 2).flatten()
    pruned = int(round(sparsity * errors.numel()))
    keep = torch.ones_like(errors, dtype=torch.bool)
    if pruned:
        keep[torch.sort(errors, stable=True).indices[:pruned]] = False
    return keep.reshape(block.shape)


@one_thread()
def sparsegpt_prune(weight: torch.Tensor, hessian: torch.Tensor, sparsity: float = 0.5,
                    nm: tuple[int, int] | None = None, block_size: int = 128,
                    damp: float = 0.01) -> SparseGptResult:
    """Prune ``weight`` (out × in) to ``sparsity`` (or N:M when ``nm = (n, m)``) and reconstruct
    the kept weights from the calibration Hessian ``H = 2XXᵀ/n`` (in × in). Computed in float64."""
    if nm is not None and block_size % nm[1]:
        raise ValueError(f"block_size ({block_size}) must be a multiple of M = {nm[1]}")
    if nm is None and not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    h, w = prepare_hessian(hessian, weight, damp)
    u = inverse_cholesky_upper(h)
    rows, cols = w.shape
    keep = torch.ones_like(w, dtype=torch.bool)
    for start in range(0, cols, block_size):
        end = min(start + block_size, cols)
        block = w[:, start:end].clone()
        u_block = u[start:end, start:end]
        diag = u_block.diagonal()
        errors = torch.zeros_like(block)
        block_keep = _block_mask(block, diag, sparsity) if nm is None else torch.ones_like(block, dtype=torch.bool)
        for j in range(end - start):
            if nm is not None and j % nm[1] == 0:
                group = slice(j, j + nm[1])
                score = block[:, group] ** 2 / diag[group].unsqueeze(0) ** 2
                drop = torch.sort(score, dim=1, stable=True).indices[:, : nm[1] - nm[0]]
                block_keep[:, group] = block_keep[:, group].scatter(1, drop, False)
            column = block[:, j]
            fixed = torch.where(block_keep[:, j], column, torch.zeros_like(column))
            error = (column - fixed) / diag[j]
            block[:, j:] -= error.unsqueeze(1) * u_block[j, j:].unsqueeze(0)
            block[:, j] = fixed
            errors[:, j] = error
        w[:, start:end] = block
        keep[:, start:end] = block_keep
        w[:, end:] -= errors @ u[start:end, end:]
    return SparseGptResult(weight=w.to(weight.dtype), keep=keep)
