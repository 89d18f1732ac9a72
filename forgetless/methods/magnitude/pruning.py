"""Iterative magnitude pruning, the maths and the masks (Du et al. 2023, §3.1 and appendix A;
schedule of Zhu & Gupta 2017):

    s_t = s_f + (s_i − s_f) · (1 − (t − t_0) / (t_1 − t_0))³      for t_0 ≤ t ≤ t_1

and s_f after t_1; the ``s_t`` share of smallest-|w| weights is zeroed (one threshold over all
prunable weights for ``global`` scope, one per matrix for ``layer``). Only the linear weights inside
the transformer layers are pruned (the adapter's ``prunable_linears``).
"""
from __future__ import annotations

import torch
from torch import nn

from ...models.adapters import get_adapter


def cubic_sparsity(step: int, total_steps: int, final: float, initial: float = 0.0,
                   start_fraction: float = 0.0, end_fraction: float = 0.7) -> float:
    """Zhu & Gupta (2017) cubic schedule, in training-step units."""
    t0, t1 = start_fraction * total_steps, end_fraction * total_steps
    if step <= t0:
        return initial
    if step >= t1 or t1 <= t0:
        return final
    progress = (step - t0) / (t1 - t0)
    return final + (initial - final) * (1.0 - progress) ** 3


def magnitude_masks(weights: list[torch.Tensor], sparsity: float, scope: str = "global") -> list[torch.Tensor]:
    """Boolean keep-masks that zero the ``sparsity`` share of smallest-|w| entries
    (over all weights at once for ``global``, per tensor for ``layer``)."""
    if sparsity <= 0:
        return [torch.ones_like(w, dtype=torch.bool) for w in weights]
    if scope == "layer":
        return [magnitude_masks([w], sparsity, "global")[0] for w in weights]
    magnitudes = torch.cat([w.detach().abs().flatten() for w in weights])
    k = int(round(sparsity * magnitudes.numel()))
    if k == 0:
        return [torch.ones_like(w, dtype=torch.bool) for w in weights]
    threshold = torch.kthvalue(magnitudes.float().cpu(), k).values.item()
    return [w.detach().abs() > threshold for w in weights]


class MagnitudePruner:
    """Holds keep-masks for a model's prunable linear weights and applies them."""

    def __init__(self, model: nn.Module, scope: str = "global"):
        self.linears = [lin for _, lin in get_adapter(model).prunable_linears(model)]
        self.scope = scope
        self.masks: list[torch.Tensor] | None = None

    def prune_to(self, sparsity: float) -> None:
        self.masks = magnitude_masks([lin.weight for lin in self.linears], sparsity, self.scope)
        self.apply()

    @torch.no_grad()
    def apply(self) -> None:
        if self.masks is not None:
            for lin, mask in zip(self.linears, self.masks):
                lin.weight.mul_(mask.to(lin.weight.dtype))

    def sparsity(self) -> float:
        total = sum(lin.weight.numel() for lin in self.linears)
        zeros = sum(int((lin.weight == 0).sum()) for lin in self.linears)
        return zeros / total

