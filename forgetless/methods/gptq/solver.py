"""GPTQ (Frantar, Ashkboos, Hoefler & Alistarh 2022, "GPTQ: Accurate Post-Training Quantization
for Generative Pre-trained Transformers"), Algorithm 1.

The same column-by-column OBS sweep as SparseGPT, with rounding instead of pruning: column ``j``
is quantized, ``q_j = quant(w_j)``, and its error is spread over the columns not yet quantized,

    δ = (w_j − q_j) / [H_F⁻¹]_jj,     W[:, F] −= δ · [H_F⁻¹]_{j, F}          (eq. 2-3)

with ``H = 2XXᵀ/n`` damped by ``λ = damp · mean(diag H)``, the rows of ``H_F⁻¹`` read from the
upper Cholesky factor of ``H⁻¹`` (§"Step 3: Cholesky reformulation") and lazy updates in blocks of
``block_size`` columns (§"Step 2: lazy batch-updates").

The grid, per output row and per group of ``group_size`` consecutive input columns (``-1``: one
group per row; where ``group_size`` does not divide the width the last group is smaller, as in the
authors' code: SmolLM2's 576 = 4 · 128 + 64), is the min-max affine grid with ``2^b`` levels, the range always including 0:

* asymmetric: ``S = (max − min) / (2^b − 1)``, ``Z = round(−min / S)``;
* symmetric: ``S = 2·max|w| / (2^b − 1)``, ``Z = 2^(b−1)``;

``q = clamp(round(w / S) + Z, 0, 2^b − 1)``, ``ŵ = S · (q − Z)``. Scales are rounded to float32
when chosen, so the sweep's error feedback uses exactly the stored grid.

Column order: natural, or with ``act_order`` decreasing ``H_jj`` (the paper's "act-order"). With
act-order the group grids come from the original weights before the sweep (the authors' "static
groups"), so groups stay contiguous in storage; in natural order each group's grid is taken when
the sweep reaches its first column, from the weights as updated so far (the authors' code; with
groups aligned to blocks, the default 128 / 128, exactly the same). With ``H = I`` (no correlation)
every error update is zero and GPTQ is round-to-nearest on the same grid.

Weights that are exactly zero when GPTQ starts are fixed at code ``Z`` (``ŵ = 0``, exact since the
range includes 0) instead of being rounded from their updated value, and their error is fed back
like any other: after ``sparsegpt`` or ``wanda`` (``--then gptq``) the zeros, and so a 2:4 pattern,
survive quantization (as SparseGPT's joint sparsification + quantization, §3.5 of that paper).
"""
from __future__ import annotations

import torch

from ...models.quantized_io import GROUPED_BITS, GroupedInts
from .._shared.hessian import inverse_cholesky_upper, one_thread, prepare_hessian


def group_grid(values: torch.Tensor, bits: int, symmetric: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale and zero point (float64) of each row of ``values`` (out × k): the grid above."""
    levels = 2 ** bits - 1
    values = values.to(torch.float64)
    low = values.min(dim=1).values.clamp(max=0)
    high = values.max(dim=1).values.clamp(min=0)
    if symmetric:
        high = torch.maximum(low.abs(), high)
        low = -high
    flat = high == low  # an all-zero group: any grid represents it exactly
    low, high = torch.where(flat, -torch.ones_like(low), low), torch.where(flat, torch.ones_like(high), high)
    scale = ((high - low) / levels).to(torch.float32).to(torch.float64)
    zero = torch.full_like(scale, float((levels + 1) // 2)) if symmetric else torch.round(-low / scale).clamp(0, levels)
    return scale, zero


def round_codes(values: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, bits: int) -> torch.Tensor:
    """``clamp(round(w / S) + Z, 0, 2^b − 1)`` (``scale``, ``zero`` broadcast against ``values``)."""
    return torch.clamp(torch.round(values / scale) + zero, 0, 2 ** bits - 1)


def round_to_nearest(weight: torch.Tensor, bits: int = 4, group_size: int = 128, symmetric: bool = False) -> GroupedInts:
    """The baseline GPTQ improves on: every group's grid from its weights, each weight rounded alone."""
    w = weight.detach().to(torch.float64)
    cols = w.shape[1]
    size = cols if group_size == -1 else min(group_size, cols)
    scales, zeros, codes = [], [], []
    for start in range(0, cols, size):
        scale, zero = group_grid(w[:, start:start + size], bits, symmetric)
        codes.append(round_codes(w[:, start:start + size], scale.unsqueeze(1), zero.unsqueeze(1), bits))
        scales.append(scale)
        zeros.append(zero)
    return GroupedInts(bits, size, torch.cat(codes, dim=1).to(torch.uint8), torch.stack(scales, 1).float(),
                       torch.stack(zeros, 1).to(torch.uint8))


@one_thread()
def gptq_quantize(weight: torch.Tensor, hessian: torch.Tensor, bits: int = 4, group_size: int = 128,
                  symmetric: bool = False, act_order: bool = False, block_size: int = 128,
                  damp: float = 0.01) -> GroupedInts:
    """Quantize ``weight`` (out × in) with GPTQ given the calibration Hessian ``H = 2XXᵀ/n`` (in × in);
    computed in float64. ``group_size``: 1 up to ``in``, or -1 (one group per row)."""
    if bits not in GROUPED_BITS:
        raise ValueError(f"bits must be one of {GROUPED_BITS}, got {bits}")
    h, w = prepare_hessian(hessian, weight, damp)
    rows, cols = w.shape
    size = cols if group_size == -1 else group_size
    if not 1 <= size <= cols:
        raise ValueError(f"group_size {group_size} does not fit the {cols} input columns (1..{cols} or -1)")
    groups = -(-cols // size)
    scales = torch.zeros(rows, groups, dtype=torch.float64)
    zeros = torch.zeros(rows, groups, dtype=torch.float64)
    pruned = w == 0  # exact zeros stay zero (a pruned model's pattern survives quantization)
    perm = torch.argsort(h.diagonal(), descending=True, stable=True) if act_order else torch.arange(cols)
    if act_order:
        for g in range(groups):
            scales[:, g], zeros[:, g] = group_grid(w[:, g * size:(g + 1) * size], bits, symmetric)
    ready = [act_order] * groups
    w, h, pruned = w[:, perm], h[perm][:, perm], pruned[:, perm]
    u = inverse_cholesky_upper(h)
    codes = torch.zeros_like(w)
    for start in range(0, cols, block_size):
        end = min(start + block_size, cols)
        block = w[:, start:end].clone()
        u_block = u[start:end, start:end]
        errors = torch.zeros_like(block)
        for j in range(end - start):
            group = int(perm[start + j]) // size
            if not ready[group]:  # natural order: the group starts here; its grid from the current weights
                current = torch.cat([block[:, j:], w[:, end:]], dim=1)[:, :size]
                scales[:, group], zeros[:, group] = group_grid(current, bits, symmetric)
                ready[group] = True
            column = block[:, j]
            code = torch.where(pruned[:, start + j], zeros[:, group], round_codes(column, scales[:, group],
                                                                                  zeros[:, group], bits))
            error = (column - scales[:, group] * (code - zeros[:, group])) / u_block[j, j]
            block[:, j:] -= error.unsqueeze(1) * u_block[j, j:].unsqueeze(0)
            codes[:, start + j] = code
            errors[:, j] = error
        w[:, end:] -= errors @ u[start:end, end:]
    unpermuted = torch.empty_like(codes)
    unpermuted[:, perm] = codes
    return GroupedInts(bits, size, unpermuted.to(torch.uint8), scales.to(torch.float32), zeros.to(torch.uint8))
