"""GPTQ (Frantar, Ashkboos, Hoefler & Alistarh 2022, "GPTQ: Accurate Post-Training Quantization
for Generative Pre-trained Transformers"), Algorithm 1.

The same column-by-column OBS sweep as SparseGPT, with rounding instead of pruning: column ``j``
is quantized, ``q_j = quant(w_j)``, and its error is spread over the columns not yet quantized,

    δ = (w_j − q_j) / [H_F⁻¹]_jj,     W[:, F] −= δ · [H_F⁻¹]_{j, F}          (eq. 2-3)

with ``H = 2XXᵀ/n`` damped by ``λ = damp · mean(diag H)``, the rows of ``H_F⁻¹`` read from the
upper Cholesky factor of ``H⁻¹`` (§"Step 3: Cholesky reformulation") and lazy updates in blocks of
``block_size`` columns (§"Step 2: lazy batch-updates").

How a column is quantized is the format's (``quantization.format.QuantFormat``): its codes' class gives
the column rule (``gptq_rule``): integer codes on the min-max grid per group (``quantization/ints.py``; where
``group_size`` does not divide the width the last group is smaller, as in the authors' code: SmolLM2's 576
= 4 · 128 + 64), or float8_e4m3fn codes with scales fixed from the original weights
(``quantization/fp8.py``). Scales are rounded to float32 when chosen, so the sweep's error feedback uses
exactly the stored grid.

Column order: natural, or with ``act_order`` decreasing ``H_jj`` (the paper's "act-order").

Two rules fix an integer group's grid (both legitimate, not the same; ``static_groups`` picks):

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

from ...quantization.format import QuantFormat
from .._shared.hessian import inverse_cholesky_upper, one_thread, prepare_hessian
from .._shared.obs_sweep import obs_sweep, row_segments


@one_thread()
def gptq_quantize_many(weights: list[torch.Tensor], hessian: torch.Tensor, fmt: QuantFormat, act_order: bool = False,
                       static_groups: bool = False, block_size: int = 128, damp: float = 0.01) -> list:
    """Quantize every weight of ``weights`` (``out_i × in``, all fed the inputs whose Hessian
    ``H = 2XXᵀ/n`` is ``hessian``, ``in × in``) in the format ``fmt`` with GPTQ in one sweep; computed in
    float64. ``static_groups``: the grid rule above (act-order always static). Returns each weight's codes."""
    h, w = prepare_hessian(hessian, torch.cat([w.detach() for w in weights]), damp)
    perm = torch.argsort(h.diagonal(), descending=True, stable=True) if act_order else torch.arange(w.shape[1])
    weight_t = w.T[perm].contiguous()
    rule = fmt.codes.gptq_rule(weights, weight_t, perm, fmt, static_groups or act_order)
    obs_sweep(weight_t, inverse_cholesky_upper(h[perm][:, perm] if act_order else h), block_size, rule)  # no copy in order
    return rule.results(perm, row_segments([len(wi) for wi in weights]))


def gptq_quantize(weight: torch.Tensor, hessian: torch.Tensor, bits: int = 4, group_size: int = 128,
                  symmetric: bool = False, act_order: bool = False, static_groups: bool = False,
                  block_size: int = 128, damp: float = 0.01):
    """Quantize ``weight`` (out × in) to ``bits``-bit integer codes with GPTQ given the calibration Hessian
    ``H = 2XXᵀ/n`` (in × in); computed in float64. ``group_size``: 1 up to ``in``, or -1 (one group per row)."""
    return gptq_quantize_many([weight], hessian, QuantFormat(bits, "int", group_size, symmetric), act_order,
                              static_groups, block_size, damp)[0]
