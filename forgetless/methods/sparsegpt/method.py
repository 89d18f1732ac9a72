"""SparseGPT (Frantar & Alistarh 2023, "SparseGPT: Massive Language Models Can Be Accurately Pruned
in One-Shot"), Algorithm 1: per linear layer, the OBS update (eq. 3) column by column with the upper
Cholesky factor of the damped inverse Hessian ``H = 2XXᵀ/n``, lazy blocked updates and adaptive
mask selection (``solver.py``). Calibration, layer order (each layer fitted to its pruned
predecessors' outputs) and the report are shared with Wanda (``_shared/oneshot.py``)."""
from __future__ import annotations

import torch

from .._shared.hessian import HessianAccumulator
from .._shared.oneshot import OneShotPruning
from .config import SparseGptConfig
from .solver import sparsegpt_prune_many


class SparseGpt(OneShotPruning):
    config: SparseGptConfig

    def prune_weights(self, weights: list[torch.Tensor], stats: HessianAccumulator) -> list[torch.Tensor]:
        c = self.config
        results = sparsegpt_prune_many(weights, stats.hessian, c.sparsity, nm=c.nm, block_size=c.block_size,
                                       damp=c.damp)
        return [result.weight for result in results]
