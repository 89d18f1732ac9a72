"""Config of ``distil``: task-specific knowledge distillation (Sanh et al. 2020) as used by Du et al.,
§5.2, ``L = (1 − λ)·CE(y, p_S) + λ·T²·KL(p_T ‖ p_S)``."""
from __future__ import annotations

from dataclasses import dataclass

from ...config import ObjectiveConfig
from ...options import option
from ...registry import OBJECTIVES


@OBJECTIVES.register("distil", implementation=".objective:Distil")
@dataclass
class DistilConfig(ObjectiveConfig):
    lam: float = option(0.9, help="weight λ of the KL term (paper: 0.9)", low=0, high=1)
    temperature: float = option(1.0, help="softmax temperature T of the student in the KL term (paper: 1)",
                                low=0, low_open=True)
