"""Focal baseline (Du et al., "What do Compressed Large Language Models Forget?", appendix B):
``focal`` differentiates the batch-normalised focal loss as written (``formulas.focal_loss``, Lin et
al. 2017), ``focal-reweighted`` keeps its value with the weights detached (``formulas.reweighted_ce_loss``:
cross-entropy re-weighted per sample, forgetless' ``focal`` before the paper-fidelity fix). Neither
needs a teacher or per-example columns.
"""
from __future__ import annotations

from ...training.objective import Objective
from ..formulas import focal_loss, reweighted_ce_loss


class Focal(Objective):
    def __call__(self, logits, labels, batch):
        return focal_loss(logits, labels, self.config.gamma)


class FocalReweighted(Focal):
    def __call__(self, logits, labels, batch):
        return reweighted_ce_loss(logits, labels, self.config.gamma)
