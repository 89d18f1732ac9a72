"""The training-objective contract.

An objective is a class registered by name (``@OBJECTIVES.register``). ``prepare(ctx)`` computes,
once, the per-example columns its loss needs (teacher probabilities, difficulty degrees, sample
weights) and returns them as ``{column: list per training example}``; they arrive in every batch.
``__call__(logits, labels, batch)`` returns the scalar loss: pure tensor math.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..registry import Registry

OBJECTIVES: Registry = Registry("objective")


class Objective:
    name = "base"

    def __init__(self, config: Any = None):
        self.config = config

    def prepare(self, ctx) -> dict[str, list]:
        return {}

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor, batch: dict) -> torch.Tensor:
        return nn.functional.cross_entropy(logits, labels)


@OBJECTIVES.register("ce")
class CrossEntropy(Objective):
    """Vanilla fine-tuning: cross-entropy with the gold labels."""

    name = "ce"
