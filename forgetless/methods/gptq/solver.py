"""GPTQ (Frantar, Ashkboos, Hoefler & Alistarh 2022, "GPTQ: Accurate Post-Training Quantization
for Generative Pre-trained Transformers"), Algorithm 1.

The same column-by-column OBS sweep as SparseGPT, with rounding instead of pruning: column ``j``
is quantized, ``q_j = quant(w_j)``, and its error is spread over the columns not yet quantized,

    δ = (w_j − q_j) / [H_F⁻¹]_jj,     W[:, F] −= δ · [H_F⁻¹]_{j, F}          (eq. 2-3)

with the rows of ``H_F⁻¹`` read from the upper Cholesky factor of ``H⁻¹`` (§"Step 3") and lazy
block updates (§"Step 2").

The quantization grid (per output row and per group of ``group_size`` consecutive input columns;
``group_size = 0``: one group per row) is the usual min-max affine grid with ``2^bits`` levels:

* asymmetric: ``scale = (max − min) / (2^b − 1)``, ``zero = round(−min / scale)``;
* symmetric: ``scale = 2·max|w| / (2^b − 1)``, ``zero = 2^(b−1)`` (the grid centred on 0);

``q = clamp(round(w / scale) + zero, 0, 2^b − 1)``, dequantized ``ŵ = scale · (q − zero)``. The
range of each group is always taken over the group's min and max *including 0* (so 0 is exact).

Column order (``order``): ``natural``, or ``activation`` — columns in decreasing ``H_jj`` (the
paper's "act-order"). With activation order the group grids are computed once from the
original weights before the sweep (the authors' "static groups"), so groups stay contiguous in
the stored layout; in natural order each group's grid is taken when the sweep reaches its first
column, from the weights as updated so far, as in the paper (with groups aligned to blocks, the
default 128 / 128, this is exactly the authors' code).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._shared.hessian import inverse_cholesky_upper, prepare_hessian

ORDERS = ("natural", "activation")


@dataclass
class QuantGrid:
    """Per-row, per-group affine grid: ``scales`` and ``zeros`` of shape ``out × groups``."""

    bits: int
    group_size: int  # columns per group (the whole row when the layer has fewer)
    scales: torch.Tensor
    zeros: torch.Tensor

    @property
    def levels(self) -> int:
        return 2 ** self.bits - 1

    def quantize(self, values: torch.Tensor, group: int) -> torch.Tensor:
        """Integer codes of one column (or ``out × k`` columns) in ``group``."""
        scale, zero = self.scales[:, group:group + 1], self.zeros[:, group:group + 1]
        if values.dim() == 1:
            scale, zero = scale[:, 0], zero[:, 0]
        return torch.clamp(torch.round(values / scale) + zero, 0, self.levels)

    def dequantize_codes(self, codes: torch.Tensor) -> torch.Tensor:
        """``scale · (q − zero)`` for a whole ``out × in`` code matrix."""
        index = torch.arange(codes.shape[1], device=codes.device) // self.group_size
        return self.scales.to(torch.float64)[:, index] * (codes.to(torch.float64) - self.zeros.to(torch.float64)[:, index])


def group_grid(values: torch.Tensor, bits: int, symmetric: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale and zero point per row of ``values`` (out × k), the min-max grid described above."""
    levels = 2 ** bits - 1
    low = values.min(dim=1).values.clamp(max=0)
    high = values.max(dim=1).values.clamp(min=0)
    if symmetric:
        high = torch.maximum(low.abs(), high)
        low = -high
    flat = high == low  # an all-zero group: any grid represents it exactly
    low, high = torch.where(flat, -torch.ones_like(low), low), torch.where(flat, torch.ones_like(high), high)
    scale = (high - low) / levels
    zero = torch.full_like(scale, float((levels + 1) // 2)) if symmetric else torch.round(-low / scale)
    return scale, zero


@dataclass
class GptqResult:
    codes: torch.Tensor  # out × in integer codes in [0, 2^bits − 1] (uint8)
    grid: QuantGrid

    def dequantized(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return self.grid.dequantize_codes(self.codes).to(dtype)


def gptq_quantize(weight: torch.Tensor, hessian: torch.Tensor, bits: int = 4, group_size: int = 128,
                  symmetric: bool = False, order: str = "natural", block_size: int = 128,
                  damp: float = 0.01) -> GptqResult:
    """Quantize ``weight`` (out × in) with GPTQ given the calibration Hessian ``H = 2XXᵀ/n``."""
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    h, w = prepare_hessian(hessian, weight, damp)
    rows, cols = w.shape
    size = group_size if 0 < group_size < cols else cols
    groups = -(-cols // size)
    grid = QuantGrid(bits, size, torch.zeros(rows, groups, dtype=torch.float64),
                     torch.zeros(rows, groups, dtype=torch.float64))
    perm = torch.argsort(h.diagonal(), descending=True, stable=True) if order == "activation" else torch.arange(cols)
    if order == "activation":
        for g in range(groups):
            grid.scales[:, g], grid.zeros[:, g] = group_grid(w[:, g * size:(g + 1) * size], bits, symmetric)
    ready = [order == "activation"] * groups
    w, h = w[:, perm], h[perm][:, perm]
    u = inverse_cholesky_upper(h)
    codes = torch.zeros_like(w)
    for start in range(0, cols, block_size):
        end = min(start + block_size, cols)
        block = w[:, start:end].clone()
        u_block = u[start:end, start:end]
        errors = torch.zeros_like(block)
        for j in range(end - start):
            column_index = int(perm[start + j])
            group = column_index // size
            if not ready[group]:  # natural order: the group starts here; its grid from the current weights
                width = min(size, cols - (start + j))
                current = torch.cat([block[:, j:], w[:, end:]], dim=1)[:, :width]
                grid.scales[:, group], grid.zeros[:, group] = group_grid(current, bits, symmetric)
                ready[group] = True
            column = block[:, j]
            code = grid.quantize(column, group)
            fixed = grid.scales[:, group] * (code - grid.zeros[:, group])
            error = (column - fixed) / u_block[j, j]
            block[:, j:] -= error.unsqueeze(1) * u_block[j, j:].unsqueeze(0)
            codes[:, start + j] = code
            errors[:, j] = error
        w[:, end:] -= errors @ u[start:end, end:]
    unpermuted = torch.empty_like(codes)
    unpermuted[:, perm] = codes
    grid.scales, grid.zeros = grid.scales.to(torch.float32), grid.zeros.to(torch.float32)
    return GptqResult(codes=unpermuted.to(torch.uint8), grid=grid)
