"""SmoothQuant (Xiao et al. 2023, "SmoothQuant: Accurate and Efficient Post-Training Quantization for
Large Language Models"), §4: for the linears that read one tensor ``X`` (q / k / v, gate / up), with
weights ``W`` stacked (out × in), per input channel ``j``

    s_j = max_t |X_tj|^α / max_i |W_ij|^(1−α)                                   (eq. 4)

from the calibration tokens' absolute maxima (real tokens only, ``hessian.HessianAccumulator.absmax``);
``X → X diag(s)⁻¹`` is folded into the module producing ``X`` and ``W → diag(s) W`` (eq. 3), so the
model computes the same function (``_shared/folding.py`` finds the producer). A channel with
``max|X_j| = 0`` or ``max|W_j| = 0`` keeps ``s_j = 1``; factors are held at ≥ 1e-5. Layer by layer:
each layer's statistics are taken from the outputs of the layers already smoothed.

llm-compressor's ``SmoothQuantModifier`` uses the range ``max X_j − min X_j`` and ``2·max|W_j|`` in
place of the two absolute maxima (the same factor up to ``(range / 2max)^α · 2^(α−1)``).
"""
from __future__ import annotations

import statistics

import torch

from ...models.sites import weight_matrix
from .._shared.folding import FoldingMethod, Group, fold
from .config import SmoothQuantConfig

MIN_FACTOR = 1e-5


def smoothing_factors(x_absmax: torch.Tensor, weights: list[torch.Tensor], alpha: float) -> torch.Tensor:
    """Eq. 4 for one group: ``x_absmax`` (in), ``weights`` (each out_k × in); float32."""
    w_absmax = torch.stack([w.detach().abs().amax(dim=0).float() for w in weights]).amax(dim=0)
    x = x_absmax.float()
    factors = x.pow(alpha) / w_absmax.pow(1 - alpha)
    factors = torch.where((x > 0) & (w_absmax > 0), factors, torch.ones_like(factors))
    return factors.clamp_min(MIN_FACTOR)


class SmoothQuant(FoldingMethod):
    config: SmoothQuantConfig
    hessian_every = 64  # only the absolute maxima are used: the input Hessian is sampled, not summed
    streams = True  # every producer is a norm or linear of the layer it scales: written with that layer

    @property
    def producers_of_linears(self) -> bool:
        return self.config.producers == "norms-and-linears"

    def transform_layer(self, where: str, groups: list[Group], producers: list) -> list[dict]:
        entries = []
        for (names, modules, stats), producer in zip(groups, producers):
            if producer is None:
                continue
            factors = smoothing_factors(stats.absmax, [weight_matrix(m) for m in modules], self.config.alpha)
            before = float(stats.absmax.max() / stats.absmax.median().clamp_min(1e-12))
            fold(producer[1], modules, factors)
            after_x = stats.absmax.float() / factors
            entries.append({"producer": producer[0], "linears": names, "outlier_ratio_before": before,
                            "outlier_ratio_after": float(after_x.max() / after_x.median().clamp_min(1e-12)),
                            "factor_max": float(factors.max()), "factor_min": float(factors.min())})
        return entries

    def note(self, texts: int) -> str:
        c = self.config
        return (f"smoothquant: α = {c.alpha}, factors max|X|^α / max|W|^(1−α) folded into "
                f"{'the producing norms and linears' if self.producers_of_linears else 'the preceding norms'} of "
                f"{len(self.layers)} linear groups, calibrated on {texts} texts; nothing quantized here")

    def artifacts(self) -> dict:
        return {"alpha": self.config.alpha, "groups": getattr(self, "layers", [])}

    def report_section(self) -> dict | None:
        if not getattr(self, "layers", None):
            return None
        before = [e["outlier_ratio_before"] for e in self.layers]
        after = [e["outlier_ratio_after"] for e in self.layers]
        return {"smoothing": {"alpha": self.config.alpha, "groups": len(self.layers),
                              "outlier_ratio": {"before_mean": statistics.fmean(before), "before_max": max(before),
                                                "after_mean": statistics.fmean(after), "after_max": max(after)}}}
