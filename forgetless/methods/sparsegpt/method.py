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
from .solver import sparsegpt_prune


class SparseGpt(OneShotPruning):
    config: SparseGptConfig

    def prune_weight(self, weight: torch.Tensor, stats: HessianAccumulator) -> torch.Tensor:
        c = self.config
        return sparsegpt_prune(weight, stats.hessian, c.sparsity, nm=c.nm, block_size=c.block_size,
                               damp=c.damp).weight
