"""Wanda (Sun, Liu, Bair & Kolter 2023, "A Simple and Effective Pruning Approach for Large Language
Models"), eq. 1: ``S_ij = |W_ij| · ‖X_j‖₂``, the lowest share of each output row zeroed (or N:M),
no weight update. The score is ``metric.py``; calibration, layer order and the report are shared
with SparseGPT (``_shared/oneshot.py``). As in the paper's code the layers are pruned in sequence,
each calibrated on the outputs of its already pruned predecessors. Only the input norms are summed
over every calibration token; the reported reconstruction error ‖WX − ŴX‖ / ‖WX‖ is measured on
every 16th token (``hessian.HessianAccumulator``), which spares Wanda the full Hessian."""
from __future__ import annotations

import torch

from .._shared.hessian import HessianAccumulator
from .._shared.oneshot import OneShotPruning
from .config import WandaConfig
from .metric import wanda_mask


class Wanda(OneShotPruning):
    config: WandaConfig
    # the scores need only ‖X_j‖₂ (summed exactly over every token); the full XXᵀ, for the reported
    # reconstruction error alone, over every 16th token: 1/16 of the matrix products
    hessian_every = 16

    def prune_weights(self, weights: list[torch.Tensor], stats: HessianAccumulator) -> list[torch.Tensor]:
        norms = stats.column_norms()
        return [weight * wanda_mask(weight, norms, self.config.sparsity, self.config.nm) for weight in weights]
