"""R-Drop (Wu et al. 2021, "R-Drop: Regularized Dropout for Neural Networks", eq. 3): every batch
goes through the model twice, so two different dropout masks give two predictions P1, P2; the
loss is the cross-entropy of both plus ``α/2 · (KL(P1‖P2) + KL(P2‖P1))``.

The batch reduction (option ``kl_reduction``: ``sum``, the authors' GLUE code, the default; ``mean``,
eq. 3 per example) decides what α means: see ``formulas.rdrop_loss``.

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
