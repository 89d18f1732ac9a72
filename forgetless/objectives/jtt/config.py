"""Config of ``jtt``: Just Train Twice (Liu et al. 2021) as used by Du et al. §5.2 / appendix B."""
from __future__ import annotations

from dataclasses import dataclass

from ...config import ObjectiveConfig
from ...options import option
from ...registry import OBJECTIVES


@OBJECTIVES.register("jtt", implementation=".objective:JTT")
@dataclass
class JTTConfig(ObjectiveConfig):
    lambda_up: float = option(2.0, help="up-weighting λ_up of the first model's errors (paper: 2)",
                              low=0, low_open=True)
    first_epochs: float = option(1.0, help="epochs of the first (identification) model", low=0, low_open=True)
    first_learning_rate: float = option(5e-5, help="learning rate of the first (identification) model",
                                        low=0, high=1, low_open=True)
    first_model: str | None = option(None, help="model name or folder of the identification model (default: the "
                                                "run's pre-trained model)")
