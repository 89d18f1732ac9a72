"""Focal baseline (Du et al., "What do Compressed Large Language Models Forget?", appendix B):

    L = mean_i( −(1 − p_i)^γ / mean_batch((1 − p_k)^γ) · log p_i ),   γ = 2,

where ``p_i`` is the student's own probability of the gold class (the weights have mean 1 in each
batch). ``focal`` is this loss differentiated as written — the gradient also flows through
``(1 − p_i)^γ`` (Lin et al. 2017). ``focal-reweighted`` keeps the same value with the weights
detached: cross-entropy re-weighted per sample, whose gradient differs (forgetless' ``focal``
before the paper-fidelity fix). Neither needs a teacher or per-example columns.
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
