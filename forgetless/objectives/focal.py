"""Focal baseline (Du et al., "What do Compressed Large Language Models Forget?", appendix B):

    L = mean_i( −(1 − p_i)^γ / mean_batch((1 − p_k)^γ) · log p_i ),   γ = 2,

where ``p_i`` is the student's own probability of the gold class (the weights have mean 1 in each
batch). ``focal`` is this loss differentiated as written — the gradient also flows through
``(1 − p_i)^γ`` (Lin et al. 2017). ``focal-reweighted`` keeps the same value with the weights
detached: cross-entropy re-weighted per sample, whose gradient differs (forgetless' ``focal``
before the paper-fidelity fix). Neither needs a teacher or per-example columns.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .base import OBJECTIVES, Objective
from .math import focal_loss, reweighted_ce_loss


@dataclass
class FocalConfig:
    gamma: float = 2.0  # focusing exponent (paper: 2)

    def __post_init__(self) -> None:
        if self.gamma < 0:
            raise ConfigError(f"gamma must be >= 0, got {self.gamma}")


@OBJECTIVES.register("focal", FocalConfig)
class Focal(Objective):
    name = "focal"

    def __init__(self, config: FocalConfig | None = None):
        super().__init__(config or FocalConfig())

    def __call__(self, logits, labels, batch):
        return focal_loss(logits, labels, self.config.gamma)


@OBJECTIVES.register("focal-reweighted", FocalConfig)
class FocalReweighted(Focal):
    name = "focal-reweighted"

    def __call__(self, logits, labels, batch):
        return reweighted_ce_loss(logits, labels, self.config.gamma)
