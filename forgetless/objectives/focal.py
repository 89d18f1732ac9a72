"""Focal baseline (Du et al., "What do Compressed Large Language Models Forget?", appendix B):
per-sample re-weighted cross-entropy

    L = mean_i( −(1 − p_i)^γ / mean_batch((1 − p_k)^γ) · log p_i ),   γ = 2,

where ``p_i`` is the student's own probability of the gold class; the weights have mean 1 in each
batch. Needs no teacher and no per-example columns.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .base import OBJECTIVES, Objective
from .math import focal_loss


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
