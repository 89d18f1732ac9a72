"""Distil baseline: task-specific knowledge distillation (Sanh et al. 2020), as used by Du et al.,
"What do Compressed Large Language Models Forget?", §5.2:

    L = (1 − λ)·CE(y, p_S) + λ·KL(p_T ‖ p_S),   λ = 0.9.

The teacher is the fine-tuned model of the compression context; its probabilities on the training
set are computed once and cached (``objectives/teacher.py``) and arrive in each batch as the
``teacher_probs`` column.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import ConfigError
from .base import OBJECTIVES, Objective
from .math import kd_loss
from .teacher import context_teacher_probabilities

TEACHER_COLUMN = "teacher_probs"


@dataclass
class DistilConfig:
    lam: float = 0.9          # weight of the KL term (paper: 0.9)
    temperature: float = 1.0  # softmax temperature of the student in the KL term (paper: 1)

    def __post_init__(self) -> None:
        if not 0.0 <= self.lam <= 1.0:
            raise ConfigError(f"lam must be in [0, 1], got {self.lam}")
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be > 0, got {self.temperature}")


def batch_column(batch: dict, name: str, objective: str) -> torch.Tensor:
    """A per-example column of the batch, or a ConfigError saying ``prepare`` was not run."""
    if name not in batch:
        raise ConfigError(f"objective {objective!r} needs the batch column {name!r}: run objective.prepare(ctx) "
                          f"and pass its result as training extras")
    return batch[name]


@OBJECTIVES.register("distil", DistilConfig)
class Distil(Objective):
    """``(1 − λ)·CE + λ·KL(p_T ‖ p_S)`` with the raw teacher probabilities."""

    name = "distil"

    def __init__(self, config: DistilConfig | None = None):
        super().__init__(config or DistilConfig())

    def teacher_targets(self, ctx, probs):
        """Targets distilled into the student; subclasses smooth them (Smooth, RMC)."""
        return probs

    def prepare(self, ctx) -> dict[str, list]:
        probs = context_teacher_probabilities(ctx)
        targets = self.teacher_targets(ctx, probs)
        return {TEACHER_COLUMN: [list(map(float, row)) for row in targets]}

    def __call__(self, logits, labels, batch):
        targets = batch_column(batch, TEACHER_COLUMN, self.name).to(logits.device)
        return kd_loss(logits, labels, targets, self.config.lam, self.config.temperature)
