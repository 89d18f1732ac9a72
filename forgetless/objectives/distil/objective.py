"""Distil baseline: task-specific knowledge distillation (Sanh et al. 2020), as used by Du et al.,
"What do Compressed Large Language Models Forget?", §5.2:

    L = (1 − λ)·CE(y, p_S) + λ·KL(p_T ‖ p_S),   λ = 0.9.

The teacher is the fine-tuned model of the compression context; its probabilities on the training
set are computed once and cached (``distil/teacher.py``) and arrive in each batch as the
``teacher_probs`` column.
"""
from __future__ import annotations

import numpy as np
import torch

from ...training.objective import Objective, batch_column
from ..formulas import kd_loss, smooth_probs
from .teacher import context_teacher_probabilities

TEACHER_COLUMN = "teacher_probs"


class Distil(Objective):
    """``(1 − λ)·CE + λ·KL(p_T ‖ p_S)`` with the raw teacher probabilities."""

    def smoothing_degree(self):
        """Exponent ``d`` of eq. 3 applied to the teacher probabilities before they are distilled: None
        (raw), one for every sample (Smooth) or one per sample (RMC)."""
        return None

    def prepare(self, ctx) -> dict[str, list]:
        targets = context_teacher_probabilities(ctx)
        if self.smoothing_degree() is not None:
            targets = smooth_probs(torch.as_tensor(targets, dtype=torch.float64), self.smoothing_degree())
            targets = targets.numpy().astype(np.float32)
        return {TEACHER_COLUMN: [list(map(float, row)) for row in targets]}

    def __call__(self, logits, labels, batch):
        targets = batch_column(batch, TEACHER_COLUMN, self.config.name).to(logits.device)
        return kd_loss(logits, labels, targets, self.config.lam, self.config.temperature)
