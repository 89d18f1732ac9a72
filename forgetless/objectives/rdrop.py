"""R-Drop (Wu et al. 2021, "R-Drop: Regularized Dropout for Neural Networks", eq. 3): every batch
goes through the model twice, so two different dropout masks give two predictions P1, P2; the
loss is the cross-entropy of both plus ``α/2 · (KL(P1‖P2) + KL(P2‖P1))``.

Choices the paper leaves open, as made here: the two passes are two forward calls (the paper's code
concatenates the batch with itself: same distribution of masks, same cost); the equation's sum of
the two cross-entropies is kept (its code averages them); KL and CE are averaged over the batch;
α defaults to 1.0 (the paper tunes α ∈ {0.1, 0.5, 1.0} per GLUE task). Outside training (no
dropout) the loss is plain cross-entropy of one pass.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .base import OBJECTIVES, Objective, cross_entropy
from .robust_glue import classification_only
from .robust_math import rdrop_loss


@dataclass
class RDropConfig:
    kl_weight: float = 1.0  # α of eq. 3 (weight of the symmetric KL between the two dropout passes)

    def __post_init__(self) -> None:
        if self.kl_weight < 0:
            raise ConfigError(f"kl_weight must be >= 0, got {self.kl_weight}")


@OBJECTIVES.register("rdrop", RDropConfig)
class RDrop(Objective):
    name = "rdrop"

    def __init__(self, config: RDropConfig | None = None):
        super().__init__(config or RDropConfig())

    def compute_loss(self, model, inputs, extras):
        first = model(**inputs)
        if not model.training:
            return cross_entropy(first.logits, inputs["labels"]), first
        classification_only(self.name, first.logits)
        second = model(**inputs)
        return rdrop_loss(first.logits, second.logits, inputs["labels"], self.config.kl_weight), first
