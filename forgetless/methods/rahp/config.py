"""Options of RAHP — Robustness-Aware Head Pruning ("Robustness-Aware Head Pruning for certified
Transformer models", Algorithm 1: ρ, α, β, γ of eq. 5). Standard library only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...errors import ConfigError
from ...options import option
from ...registry import METHODS
from .._shared.head_config import HeadPruningConfig

DELTA_C_MODES = ("exact", "first-order", "hybrid")


@METHODS.register("rahp", implementation=".method:RobustnessAwareHeadPruning")
@dataclass
class RahpConfig(HeadPruningConfig):
    needs_clever: ClassVar[bool] = True  # the card's certified-robustness estimates are RAHP's measure

    ratio: float = option(0.6, help="ρ: share of all heads pruned", low=0, high=1, high_open=True)
    alpha: float = option(0.5, help="α: weight of the Fisher term I'", low=0)
    beta: float = option(1.0, help="β: weight of the robustness term ΔC'", low=0)
    protect: float = option(0.1, help="γ: share of heads with the highest Fisher score that are never pruned",
                            low=0, high=1)
    scoring_examples: int = option(128, help="size of the seeded scoring subset of the training set", low=1)
    eps: float = option(1e-8, help="ε of C(x, M) = g / (‖∇x g‖ + ε) and of log(F + ε)", low=0, low_open=True)
    rows_per_pass: int = option(256, help="rows (examples × masked heads) per batched forward+backward", low=1)
    delta_c_mode: str = option("hybrid", choices=DELTA_C_MODES,
                               help="exact | first-order | hybrid (rahp/fast_delta_c.py)")
    hybrid_window: int = option(3, help="hybrid: heads on each side of the cut K whose ΔC is computed exactly",
                                low=0)
    hybrid_extremes: int = option(1, help="hybrid: lowest and highest heads by ΔC computed exactly "
                                          "(normalisation)", low=1)
    plot_ratios: list[float] = option(help="ratios ρ drawn in the pruned-heads-per-layer figure", low=0, high=1,
                                      factory=lambda: [0.2, 0.4, 0.6, 0.8])

    def check(self) -> None:
        if self.ratio + self.protect > 1.0 + 1e-9:
            raise ConfigError(f"--ratio {self.ratio} + --protect {self.protect} > 1: not enough unprotected heads")
