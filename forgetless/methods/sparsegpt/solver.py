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

The sweep itself is ``_shared/obs_sweep.py``. Linears that share one Hessian (q / k / v, gate / up)
are pruned in one sweep (``sparsegpt_prune_many``): rows are independent, and each linear's
unstructured block mask is still chosen over its own rows, so the result equals one sweep per linear.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._shared.hessian import inverse_cholesky_upper, one_thread, prepare_hessian
from .._shared.obs_sweep import obs_sweep, row_segments


@dataclass
class SparseGptResult:
    weight: torch.Tensor  # the pruned, reconstructed weight (the input's dtype)
    keep: torch.Tensor  # boolean keep-mask


def _block_mask(block: torch.Tensor, diag: torch.Tensor, sparsity: float) -> torch.Tensor:
    """Keep-mask of one block (``out × width``): zero the ``round(s · numel)`` weights with the
    smallest OBS error (ties: the first in row-major order is pruned first)."""
    errors = (block ** 2 / diag.unsqueeze(0) ** 2).flatten()
    pruned = int(round(sparsity * errors.numel()))
    keep = torch.ones_like(errors, dtype=torch.bool)
    if pruned:
        keep[torch.sort(errors, stable=True).indices[:pruned]] = False
    return keep.reshape(block.shape)


class _PruneRule:
    """SparseGPT's adaptive mask selection as a ``ColumnRule`` (transposed: ``keep`` is ``in × out``)."""

    def __init__(self, weight_t: torch.Tensor, upper: torch.Tensor, sparsity: float, nm: tuple[int, int] | None,
                 segments: list[slice]):
        self.diag, self.sparsity, self.nm, self.segments = upper.diagonal(), sparsity, nm, segments
        self.keep = torch.ones_like(weight_t, dtype=torch.bool)

    def start_block(self, start: int, end: int, weight_t: torch.Tensor) -> None:
        if self.nm is None:  # unstructured: the block's mask, per linear, before its columns move
            block, diag = weight_t[start:end].T, self.diag[start:end]
            for rows in self.segments:
                self.keep[start:end, rows] = _block_mask(block[rows], diag, self.sparsity).T

    def fix(self, index: int, column: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
        if self.nm is not None and index % self.nm[1] == 0:  # N:M: a group of m columns starts here
            n, m = self.nm
            score = weight_t[index:index + m] ** 2 / self.diag[index:index + m].unsqueeze(1) ** 2
            drop = torch.sort(score, dim=0, stable=True).indices[: m - n]
            self.keep[index:index + m] = self.keep[index:index + m].scatter(0, drop, False)
        return torch.where(self.keep[index], column, torch.zeros_like(column))


@one_thread()
def sparsegpt_prune_many(weights: list[torch.Tensor], hessian: torch.Tensor, sparsity: float = 0.5,
                         nm: tuple[int, int] | None = None, block_size: int = 128,
                         damp: float = 0.01) -> list[SparseGptResult]:
    """Prune every weight of ``weights`` (``out_i × in``, all fed the inputs whose Hessian
    ``H = 2XXᵀ/n`` is ``hessian``, ``in × in``) to ``sparsity`` (or N:M when ``nm = (n, m)``) and
    reconstruct the kept weights; one sweep for all of them. Computed in float64."""
    if nm is not None and block_size % nm[1]:
        raise ValueError(f"block_size ({block_size}) must be a multiple of M = {nm[1]}")
    if nm is None and not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    h, w = prepare_hessian(hessian, torch.cat([w.detach() for w in weights]), damp)
    upper = inverse_cholesky_upper(h)
    weight_t = w.T.contiguous()
    segments = row_segments([w.shape[0] for w in weights])
    rule = _PruneRule(weight_t, upper, sparsity, nm, segments)
    obs_sweep(weight_t, upper, block_size, rule)
    return [SparseGptResult(weight=weight_t[:, rows].T.to(original.dtype), keep=rule.keep[:, rows].T)
            for rows, original in zip(segments, weights)]


def sparsegpt_prune(weight: torch.Tensor, hessian: torch.Tensor, sparsity: float = 0.5,
                    nm: tuple[int, int] | None = None, block_size: int = 128,
                    damp: float = 0.01) -> SparseGptResult:
    """Prune ``weight`` (out × in) to ``sparsity`` (or N:M when ``nm = (n, m)``) and reconstruct
    the kept weights from the calibration Hessian ``H = 2XXᵀ/n`` (in × in). Computed in float64."""
    return sparsegpt_prune_many([weight], hessian, sparsity, nm, block_size, damp)[0]
