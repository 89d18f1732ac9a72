"""Distil baseline: task-specific knowledge distillation (Sanh et al. 2020), as used by Du et al.,
"What do Compressed Large Language Models Forget?", §5.2:

    L = (1 − λ)·CE(y, p_S) + λ·KL(p_T ‖ p_S),   λ = 0.9.

The teacher is the fine-tuned model of the compression context; its probabilities on the training
set are computed once and cached (``distil/teacher.py``) and arrive in each batch as the
``teacher_probs`` column.
"""
from __future__ import annotations

from ...training.objective import Objective, batch_column
from ..formulas import kd_loss
from .teacher import context_teacher_probabilities

TEACHER_COLUMN = "teacher_probs"


class Distil(Objective):
    """``(1 − λ)·CE + λ·KL(p_T ‖ p_S)`` with the raw teacher probabilities."""

    def teacher_targets(self, ctx, probs):
        """Targets distilled into the student; subclasses smooth them (Smooth, RMC)."""
        return probs

    def prepare(self, ctx) -> dict[str, list]:
        probs = context_teacher_probabilities(ctx)
        targets = self.teacher_targets(ctx, probs)
        return {TEACHER_COLUMN: [list(map(float, row)) for row in targets]}

    def __call__(self, logits, labels, batch):
        targets = batch_column(batch, TEACHER_COLUMN, self.config.name).to(logits.device)
        return kd_loss(logits, labels, targets, self.config.lam, self.config.temperature)
