"""Smooth baseline: distillation from globally smoothed teacher probabilities (Du et al.,
"What do Compressed Large Language Models Forget?", §5.2): eq. 3 with one exponent ``d`` (0.9)
for every sample, ``s_ij = p_ij^d / Σ_k p_ik^d``, then the distillation loss of eq. 4 with λ = 0.9.
The smoothed targets are computed once (``Distil.prepare``) from the cached teacher probabilities.
"""
from __future__ import annotations

from ..distil.objective import Distil


class Smooth(Distil):
    """Distil with ``p_T`` replaced by ``p_T^d / Σ p_T^d`` for one global ``d``."""

    def smoothing_degree(self):
        return self.config.degree
