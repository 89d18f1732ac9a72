"""Smooth baseline: distillation from globally smoothed teacher probabilities (Du et al.,
"What do Compressed Large Language Models Forget?", §5.2): eq. 3 with one exponent ``d`` (0.9)
for every sample, ``s_ij = p_ij^d / Σ_k p_ik^d``, then the distillation loss of eq. 4 with λ = 0.9.
The smoothed targets are computed once in ``prepare`` from the cached teacher probabilities.
"""
from __future__ import annotations

import numpy as np
import torch

from ..distil.objective import Distil
from ..formulas import smooth_probs


class Smooth(Distil):
    """Distil with ``p_T`` replaced by ``p_T^d / Σ p_T^d`` for one global ``d``."""

    def teacher_targets(self, ctx, probs):
        smoothed = smooth_probs(torch.as_tensor(probs, dtype=torch.float64), self.config.degree)
        return smoothed.numpy().astype(np.float32)
