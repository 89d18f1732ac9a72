"""AWQ's two searches (Lin et al. 2024, "AWQ: Activation-aware Weight Quantization for On-Device LLM
Compression and Acceleration", §3.2), on tensors only.

**Scales** (eq. 4-5). For the linears that read one input ``X`` (weights stacked, ``W``: out × in) and
per input channel the mean magnitude ``s_X = mean_t |X_tj|``:

    s = s_X^α                       (eq. 5; ``duo``: s = s_X^α / (s_W^(1−α) + 1e-4), AutoAWQ's default)
    L(s) = ‖Q(W · diag(s)) · diag(s)⁻¹ X − W X‖²                                           (eq. 4)

for α on ``grid`` evenly spaced values in [0, 1], plus ``s = 1`` (plain round-to-nearest, so the
result is never worse on the objective); ``s`` is held at ≥ 1e-4 and divided by ``√(max s · min s)``.
``s_W``: ``|W|`` divided by the largest ``|w|`` of its quantization group, averaged over the rows.
The error is computed exactly from the calibration Hessian ``H = 2XXᵀ/n`` (``hessian.py``):
``‖ΔW X‖² ∝ tr(ΔW H ΔWᵀ)`` with ``ΔW = Q(W s) s⁻¹ − W``, so every calibration token counts at the cost
of one ``out × in × in`` product per α. (AutoAWQ and llm-compressor run the enclosing attention / MLP
block on the calibration tokens for each α; eq. 4 is the linears' own output.)

**Clipping** (§3.2 / AutoAWQ's ``auto_clip``). For each row and quantization group, the weights are
clamped to ``±r · max|w|`` for ``r = 1, 0.95, …, 0.55`` and the ``r`` giving the smallest error of the
group's output contribution ``Δ_g H_gg Δ_gᵀ`` is kept (``Δ_g``: quantized clamped minus unclamped weights).

Both searches run in one torch thread (``hessian.one_thread``: many small operations, as GPTQ's sweep).
"""
from __future__ import annotations

import torch

from ...quantization.options import WeightFormat
from .._shared.hessian import one_thread

SHRINK_STEPS, SHRINK_GRID = 10, 20  # r = 1 − i / 20 for i < 10 (AutoAWQ: max_shrink 0.5, n_grid 20)


def group_width(columns: int, fmt: WeightFormat) -> int:
    return columns if fmt.group_size == -1 else fmt.group_size


def weight_magnitude(weight: torch.Tensor, fmt: WeightFormat) -> torch.Tensor:
    """``s_W``: ``|w|`` over its group's largest ``|w|``, averaged over the rows (in)."""
    rows, columns = weight.shape
    size = group_width(columns, fmt)
    grouped = weight.detach().float().abs().reshape(rows, columns // size, size)
    return (grouped / (grouped.amax(dim=-1, keepdim=True) + 1e-6)).reshape(rows, columns).mean(dim=0)


def output_error(delta: torch.Tensor, hessian: torch.Tensor) -> float:
    """``tr(Δ H Δᵀ)`` (``Δ``: out × in, ``H``: in × in)."""
    return float(((delta @ hessian) * delta).sum())


def quantization_delta(weight: torch.Tensor, scales: torch.Tensor, fmt: WeightFormat) -> torch.Tensor:
    """``Q(W · diag(s)) · diag(s)⁻¹ − W`` in float32."""
    scaled = weight.float() * scales.reshape(1, -1)
    return fmt.format.round(scaled).dequantize() / scales.reshape(1, -1) - weight.float()


def candidates(x_mean: torch.Tensor, w_mean: torch.Tensor | None, grid: int) -> list[tuple[float | None, torch.Tensor]]:
    """``(α, s)`` for ``s = 1`` (α None) and each α of the grid (module docstring)."""
    out: list[tuple[float | None, torch.Tensor]] = [(None, torch.ones_like(x_mean))]
    for step in range(grid):
        alpha = step / (grid - 1)
        scales = x_mean.pow(alpha)
        if w_mean is not None:
            scales = scales / (w_mean.pow(1 - alpha) + 1e-4)
        scales = scales.clamp_min(1e-4)
        scales = scales / (scales.max() * scales.min()).sqrt()
        out.append((alpha, torch.where(torch.isfinite(scales), scales, torch.ones_like(scales))))
    return out


@one_thread()
def search_scales(weights: list[torch.Tensor], hessian: torch.Tensor, x_mean: torch.Tensor, fmt: WeightFormat,
                  grid: int = 20, duo: bool = True) -> tuple[torch.Tensor, float | None, dict]:
    """The scales minimising eq. 4 for linears fed one input; returns ``(s, α or None for s = 1, errors)``
    with ``errors``: the plain round-to-nearest error (``initial``) and the best one (``best``)."""
    stacked = torch.cat([w.detach().float() for w in weights])
    h = hessian.float()
    w_mean = torch.cat([weight_magnitude(w, fmt).unsqueeze(0) * len(w) for w in weights]).sum(0) / len(stacked) \
        if duo else None
    best = (float("inf"), None, None)
    initial = None
    for alpha, scales in candidates(x_mean.float(), w_mean, grid):
        error = output_error(quantization_delta(stacked, scales, fmt), h)
        initial = error if initial is None else initial
        if error < best[0]:
            best = (error, alpha, scales)
    return best[2], best[1], {"initial": initial, "best": best[0]}


@one_thread()
def clip_search(weight: torch.Tensor, hessian: torch.Tensor, fmt: WeightFormat) -> torch.Tensor:
    """The clamped weight (out × in): per row and group the clipping ratio with the smallest error."""
    rows, columns = weight.shape
    size = group_width(columns, fmt)
    groups = columns // size
    w = weight.detach().float().reshape(rows, groups, size)
    blocks = torch.stack([hessian[g * size:(g + 1) * size, g * size:(g + 1) * size] for g in range(groups)]).float()
    absmax = w.abs().amax(dim=-1, keepdim=True)
    best_error = torch.full((rows, groups), float("inf"))
    best = w
    for step in range(SHRINK_STEPS):
        limit = absmax * (1 - step / SHRINK_GRID)
        clamped = torch.maximum(torch.minimum(w, limit), -limit)
        delta = fmt.format.round(clamped.reshape(rows, columns)).dequantize().reshape(rows, groups, size) - w
        error = torch.einsum("rgs,gst,rgt->rg", delta, blocks, delta)
        better = error < best_error
        best_error = torch.where(better, error, best_error)
        best = torch.where(better.unsqueeze(-1), clamped, best)
    return best.reshape(rows, columns)
