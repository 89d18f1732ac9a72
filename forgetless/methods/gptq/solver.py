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

Column order: natural, or with ``act_order`` decreasing ``H_jj`` (the paper's "act-order").

Two rules fix a group's grid (both legitimate, not the same; ``static_groups`` picks):

* dynamic (``static_groups=False``, the default; the GPTQ authors' code): a group's grid is taken
  when the sweep reaches its first column, from the weights as updated so far (every earlier
  column's error included; the authors' code reads them before the current block's own updates,
  which is the same when groups align with blocks, the default 128 / 128);
* static (``static_groups=True``; llm-compressor 0.14, and the authors' ``--static-groups``): every
  grid is taken from the original weights before the sweep starts.

Act-order always uses static grids (groups stay contiguous in storage). With ``H = I`` (no
correlation) every error update is zero and GPTQ is round-to-nearest on the same grid.

Weights that are exactly zero when GPTQ starts are fixed at code ``Z`` (``ŵ = 0``, exact since the
range includes 0) instead of being rounded from their updated value, and their error is fed back
like any other: after ``sparsegpt`` or ``wanda`` (``--then gptq``) the zeros, and so a 2:4 pattern,
survive quantization (as SparseGPT's joint sparsification + quantization, §3.5 of that paper).

The sweep is ``_shared/obs_sweep.py``; linears that share one Hessian (q / k / v, gate / up) are
quantized in one sweep (``gptq_quantize_many``): every row has its own grids, so the result equals
one sweep per linear.
"""
from __future__ import annotations

import torch

from ...models.compressed_tensors import GROUPED_BITS, GroupedInts
from .._shared.hessian import inverse_cholesky_upper, one_thread, prepare_hessian
from .._shared.obs_sweep import obs_sweep, row_segments


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


class _RoundRule:
    """GPTQ's rounding as a ``ColumnRule`` on the permuted, transposed weight (``in × out``): grids
    per group (``groups × out``), taken up front (static) or when the sweep reaches a group."""

    def __init__(self, weight_t: torch.Tensor, perm: torch.Tensor, size: int, bits: int, symmetric: bool,
                 pruned_t: torch.Tensor, static_from: torch.Tensor | None):
        self.size, self.bits, self.symmetric, self.pruned_t = size, bits, symmetric, pruned_t
        self.group_of = (perm // size).tolist()
        groups = -(-weight_t.shape[0] // size)
        self.scales = torch.zeros(groups, weight_t.shape[1], dtype=torch.float64)
        self.zeros = torch.zeros_like(self.scales)
        self.codes = torch.zeros_like(weight_t)
        self.ready = [static_from is not None] * groups
        if static_from is not None:  # every grid from the original weights (out × in, natural order)
            for g in range(groups):
                self.scales[g], self.zeros[g] = group_grid(static_from[:, g * size:(g + 1) * size], bits, symmetric)

    def start_block(self, start: int, end: int, weight_t: torch.Tensor) -> None:
        pass

    def fix(self, index: int, column: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
        g = self.group_of[index]
        if not self.ready[g]:  # natural order: the group starts here; its grid from the current weights
            self.scales[g], self.zeros[g] = group_grid(weight_t[index:index + self.size].T, self.bits, self.symmetric)
            self.ready[g] = True
        scale, zero = self.scales[g], self.zeros[g]
        code = torch.where(self.pruned_t[index], zero, round_codes(column, scale, zero, self.bits))
        self.codes[index] = code
        return scale * (code - zero)


@one_thread()
def gptq_quantize_many(weights: list[torch.Tensor], hessian: torch.Tensor, bits: int = 4, group_size: int = 128,
                       symmetric: bool = False, act_order: bool = False, static_groups: bool = False,
                       block_size: int = 128, damp: float = 0.01) -> list[GroupedInts]:
    """Quantize every weight of ``weights`` (``out_i × in``, all fed the inputs whose Hessian
    ``H = 2XXᵀ/n`` is ``hessian``, ``in × in``) with GPTQ in one sweep; computed in float64.
    ``group_size``: 1 up to ``in``, or -1 (one group per row); ``static_groups``: the grid rule above."""
    if bits not in GROUPED_BITS:
        raise ValueError(f"bits must be one of {GROUPED_BITS}, got {bits}")
    h, w = prepare_hessian(hessian, torch.cat([w.detach() for w in weights]), damp)
    cols = w.shape[1]
    size = cols if group_size == -1 else group_size
    if not 1 <= size <= cols:
        raise ValueError(f"group_size {group_size} does not fit the {cols} input columns (1..{cols} or -1)")
    perm = torch.argsort(h.diagonal(), descending=True, stable=True) if act_order else torch.arange(cols)
    weight_t = w.T[perm].contiguous()
    pruned_t = weight_t == 0  # exact zeros stay zero (a pruned model's pattern survives quantization)
    rule = _RoundRule(weight_t, perm, size, bits, symmetric, pruned_t, w if static_groups or act_order else None)
    obs_sweep(weight_t, inverse_cholesky_upper(h[perm][:, perm]), block_size, rule)
    codes = torch.empty_like(rule.codes)
    codes[perm] = rule.codes
    scales, zeros = rule.scales.T.to(torch.float32), rule.zeros.T.to(torch.uint8)
    return [GroupedInts(bits, size, codes[:, rows].T.to(torch.uint8).contiguous(), scales[rows].contiguous(),
                        zeros[rows].contiguous())
            for rows in row_segments([w.shape[0] for w in weights])]


def gptq_quantize(weight: torch.Tensor, hessian: torch.Tensor, bits: int = 4, group_size: int = 128,
                  symmetric: bool = False, act_order: bool = False, static_groups: bool = False,
                  block_size: int = 128, damp: float = 0.01) -> GroupedInts:
    """Quantize ``weight`` (out × in) with GPTQ given the calibration Hessian ``H = 2XXᵀ/n`` (in × in);
    computed in float64. ``group_size``: 1 up to ``in``, or -1 (one group per row)."""
    return gptq_quantize_many([weight], hessian, bits, group_size, symmetric, act_order, static_groups,
                              block_size, damp)[0]
