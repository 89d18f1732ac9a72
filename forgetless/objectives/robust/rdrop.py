"""R-Drop (Wu et al. 2021, "R-Drop: Regularized Dropout for Neural Networks", eq. 3): every batch
goes through the model twice, so two different dropout masks give two predictions P1, P2; the
loss is the cross-entropy of both plus ``α/2 · (KL(P1‖P2) + KL(P2‖P1))``.

The batch reduction decides what α means (``formulas.rdrop_loss``, option ``kl_reduction``):
``sum`` (default) is the authors' GLUE code — batch-mean cross-entropies plus α/2 · the
symmetric KL *summed* over the batch, with their value α = 0.5 — so the paper's tuned α (0.1-1.0)
applies as published; ``mean`` averages eq. 3 per example, which makes the KL term B times weaker
for the same α (B = batch size). The authors' README snippet, ½(CE1 + CE2) + α′/2 · Σ symKL, is
half the ``sum`` loss with α′ = α/2.

Other choices, as made here: the two passes are two forward calls (the code concatenates the batch
with itself: same distribution of masks, same cost). Outside training (no dropout) the loss is plain
cross-entropy of one pass.
"""
from __future__ import annotations

from ...training.objective import Objective, cross_entropy
from .formulas import rdrop_loss
from .glue import classification_only


class RDrop(Objective):
    def compute_loss(self, model, inputs, extras):
        first = model(**inputs)
        if not model.training:
            return cross_entropy(first.logits, inputs["labels"]), first
        classification_only(self.config.name, first.logits)
        second = model(**inputs)
        return rdrop_loss(first.logits, second.logits, inputs["labels"], self.config.kl_weight,
                          self.config.kl_reduction), first
