"""RMC: robust distillation with instance-level smoothed teacher probabilities (Du et al.,
"What do Compressed Large Language Models Forget? Robustness Challenges in Model Compression", §5).

1. Difficulty (``rmc/difficulty.py``, §5.1): variance ``v_i`` of each training sample's loss
   under models pruned from the teacher at several sparsities, normalised by eq. 2 into
   ``d_i = α + (1 − α)(v_i − V_min)/(V_max − V_min)`` (α per task: MNLI 0.5, FEVER 0.3, QQP 0.2;
   ``rmc/config.py``).
2. Smoothing (eq. 3): ``s_ij = p_T,ij^{d_i} / Σ_k p_T,ik^{d_i}``; easy (low-variance) samples,
   where the teacher is most likely to be right for a shortcut reason, are flattened most.
3. Loss (eq. 4): ``(1 − λ)·CE(y, p_S) + λ·KL(s_i ‖ p_S)`` with λ = 0.9.

The smoothed targets are computed once in ``prepare``; the difficulty degrees also travel in the
batch (``difficulty`` column) for inspection. The difficulty split's agreement with the training
set's ground-truth easy/hard flags, when the task has them, goes into the report notes.
"""
from __future__ import annotations

import numpy as np

from ..distil.objective import Distil
from .config import RMCConfig, default_alpha
from .difficulty import context_difficulty

DIFFICULTY_COLUMN = "difficulty"


class RMC(Distil):
    def __init__(self, config: RMCConfig):
        super().__init__(config)
        self.difficulty = None
        self.degrees: np.ndarray | None = None
        self.alpha: float | None = None

    def prepare(self, ctx) -> dict[str, list]:
        self.difficulty = context_difficulty(ctx, self.config.difficulty_config())
        self.alpha = self.config.alpha if self.config.alpha is not None else default_alpha(ctx.task.name)
        self.degrees = self.difficulty.degrees(self.alpha)
        note = (f"RMC difficulty: {self.difficulty.schedule}; alpha {self.alpha:g}; degrees "
                f"{self.degrees.min():.3f}..{self.degrees.max():.3f}")
        if self.difficulty.agreement is not None:
            a = self.difficulty.agreement
            note += (f"; variance split vs ground-truth hard flags: agreement {100 * a['topk']:.1f}% (top-k; "
                     f"random split {100 * a['topk_chance']:.1f}%), "
                     f"{100 * a['median']:.1f}% (median), AUROC {a['auroc']:.3f}")
        ctx.notes.append(note)
        columns = super().prepare(ctx)
        columns[DIFFICULTY_COLUMN] = self.degrees.astype(float).tolist()
        return columns

    def smoothing_degree(self):
        return self.degrees

    def difficulty_summary(self, ctx) -> dict:
        """The variance-based difficulty from the context's teacher (cached), eq. 2's α and the split's
        agreement with the task's ground-truth hard flags on the training and dev sets."""
        result = context_difficulty(ctx, self.config.difficulty_config())
        alpha = self.config.alpha if self.config.alpha is not None else default_alpha(ctx.task.name)
        return {"alpha": alpha, **result.summary()}
