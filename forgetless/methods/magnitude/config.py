"""Options of iterative magnitude pruning (Du et al. 2023, §3.1; Zhu & Gupta 2017's cubic schedule).
Standard library only: see ``method.py`` for the method."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...config import MethodConfig, recovery_option
from ...options import option
from ...errors import ConfigError
from ...registry import METHODS


@METHODS.register("magnitude", implementation=".method:MagnitudePruning")
@dataclass
class MagnitudeConfig(MethodConfig):
    """Unstructured: weights are zeroed, not removed (no speedup expected)."""

    task_types: ClassVar[tuple[str, ...]] = ("classification", "generation")
    structured: ClassVar[bool] = False
    smoke: ClassVar[dict] = {"sparsity": 0.5, "prune_every": 1}

    sparsity: float = option(0.4, help="final share of zero weights among prunable ones", low=0, high=1)
    initial_sparsity: float = option(0.0, help="share of zero weights when pruning starts", low=0, high=1)
    start_fraction: float = option(0.0, help="share of training steps before pruning starts", low=0, high=1)
    end_fraction: float = option(0.7, help="share of training steps at which the target is reached", low=0,
                                 high=1)
    prune_every: int = option(10, help="steps between mask updates", low=1)
    scope: str = option("global", choices=("global", "layer"),
                        help="global: one threshold for all layers; layer: one per weight matrix")
    recovery: str = recovery_option("fine-tune: gradual pruning during training; none: one-shot to sparsity")

    def check(self) -> None:
        if self.sparsity >= 1.0:
            raise ConfigError(f"--sparsity {self.sparsity}: must be below 1 (some weights must stay)")
        if self.initial_sparsity > self.sparsity:
            raise ConfigError(f"--initial-sparsity {self.initial_sparsity}: must not exceed --sparsity {self.sparsity}")
        if self.start_fraction >= self.end_fraction:
            raise ConfigError(f"--start-fraction {self.start_fraction}: must be below --end-fraction "
                              f"{self.end_fraction}")
