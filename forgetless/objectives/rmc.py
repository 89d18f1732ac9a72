"""RMC: robust distillation with instance-level smoothed teacher probabilities (Du et al.,
"What do Compressed Large Language Models Forget? Robustness Challenges in Model Compression", §5).

1. Difficulty (``forgetless.difficulty``, §5.1): variance ``v_i`` of each training sample's loss
   under models pruned from the teacher at several sparsities, normalised by eq. 2 into
   ``d_i = α + (1 − α)(v_i − V_min)/(V_max − V_min)`` (α per task: MNLI 0.5, FEVER 0.3, QQP 0.2).
2. Smoothing (eq. 3): ``s_ij = p_T,ij^{d_i} / Σ_k p_T,ik^{d_i}``; easy (low-variance) samples,
   where the teacher is most likely to be right for a shortcut reason, are flattened most.
3. Loss (eq. 4): ``(1 − λ)·CE(y, p_S) + λ·KL(s_i ‖ p_S)`` with λ = 0.9.

The smoothed targets are computed once in ``prepare``; the difficulty degrees also travel in the
batch (``difficulty`` column) for inspection. The difficulty split's agreement with the training
set's ground-truth easy/hard flags, when the task has them, goes into the report notes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..difficulty import DEFAULT_SPARSITIES, DifficultyConfig, context_difficulty, default_alpha
from ..errors import ConfigError
from .base import OBJECTIVES
from .distill import Distil, DistilConfig
from .math import smooth_probs

DIFFICULTY_COLUMN = "difficulty"


@dataclass
class RMCConfig(DistilConfig):
    alpha: float | None = None                   # eq. 2's α; None = per-task default (difficulty.TASK_ALPHA)
    sparsities: tuple[float, ...] = DEFAULT_SPARSITIES
    difficulty_schedule: str = "chain"           # see difficulty.DifficultyConfig
    recovery_epochs: float = 0.5
    difficulty_learning_rate: float = 5e-5

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.sparsities, str):  # "0.2,0.5,0.8" from a command line
            self.sparsities = tuple(float(s) for s in self.sparsities.split(",") if s.strip())
        if self.alpha is not None and not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"alpha must be in [0, 1], got {self.alpha}")

    def difficulty_config(self) -> DifficultyConfig:
        return DifficultyConfig(tuple(self.sparsities), self.difficulty_schedule, self.recovery_epochs,
                                self.difficulty_learning_rate)


@OBJECTIVES.register("rmc", RMCConfig)
class RMC(Distil):
    name = "rmc"

    def __init__(self, config: RMCConfig | None = None):
        super().__init__(config or RMCConfig())
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

    def teacher_targets(self, ctx, probs):
        smoothed = smooth_probs(torch.as_tensor(probs, dtype=torch.float64), torch.as_tensor(self.degrees))
        return smoothed.numpy().astype(np.float32)

    def report(self) -> dict:
        """Difficulty summary for a report card (after ``prepare``)."""
        if self.difficulty is None:
            return {}
        return {"alpha": self.alpha, **self.difficulty.summary(),
                "degree_min": float(self.degrees.min()), "degree_max": float(self.degrees.max())}
