"""Configs of the robust fine-tuning baselines of RAHP's Table 1: SMART (Jiang et al. 2020), R-Drop
(Wu et al. 2021), FreeLB (Zhu et al. 2020), Child-Tuning_D (Xu et al. 2021) and ROSE (Jiang et al.
2022). The equations and the choices made are in each implementation's docstring."""
from __future__ import annotations

from dataclasses import dataclass

from ...config import ObjectiveConfig
from ...errors import ConfigError
from ...options import option
from ...registry import OBJECTIVES

PERTURBATIONS = {"mt_dnn": 1e-5, "alg1_literal": 1e-3}  # SMART's reading of the inner max → its default step η
KL_REDUCTIONS = ("sum", "mean")                          # R-Drop's batch reduction of the KL term
ROSE_SELECTIONS = ("quantile", "rank")                   # ROSE's selection of the kept updates


@OBJECTIVES.register("smart", implementation=".smart:Smart")
@dataclass
class SmartConfig(ObjectiveConfig):
    smoothness_weight: float = option(1.0, help="λ_s, weight of the adversarial smoothness regulariser R_s", low=0)
    proximal_weight: float = option(1.0, help="μ, weight of the Bregman proximal point term", low=0)
    momentum: float = option(0.99, help="β of the anchor θ̃ (exponential moving average of θ); below 1", low=0)
    ascent_steps: int = option(1, help="T_x̃ (MT-DNN adv_k), ascent steps on the perturbation", low=0)
    step_size: float | None = option(None, help="η: default 1e-5 (mt_dnn, adv_step_size) or 1e-3 (alg1_literal)",
                                     low=0)
    epsilon: float = option(1e-5, help="alg1_literal: ε, radius of the ℓ∞ ball around the word embeddings", low=0)
    noise_std: float = option(1e-5, help="σ of the initial Gaussian perturbation (MT-DNN adv_noise_var)", low=0)
    perturbation: str = option("mt_dnn", choices=tuple(PERTURBATIONS),
                               help="mt_dnn (the authors' code) or alg1_literal (Algorithm 1 read literally)")
    norm_epsilon: float = option(1e-6, help="mt_dnn: stabiliser of the per-token normalisation (MT-DNN adv_epsilon)",
                                 low=0)

    def check(self) -> None:
        if self.momentum >= 1.0:
            raise ConfigError(f"{self.flag('momentum')} {self.momentum}: must be below 1 (the anchor would never move)")
        if self.step_size is None:
            self.step_size = PERTURBATIONS[self.perturbation]


@OBJECTIVES.register("rdrop", implementation=".rdrop:RDrop")
@dataclass
class RDropConfig(ObjectiveConfig):
    kl_weight: float = option(0.5, help="α of eq. 3 (the authors' GLUE code: 0.5; the paper tunes 0.1-1.0 per task)",
                              low=0)
    kl_reduction: str = option("sum", choices=KL_REDUCTIONS, help="sum: KL summed over the batch (the authors' "
                                                                  "code); mean: eq. 3 per example")


@OBJECTIVES.register("freelb", implementation=".freelb:FreeLB")
@dataclass
class FreeLBConfig(ObjectiveConfig):
    ascent_steps: int = option(3, help="K, ascent steps per batch", low=1)
    step_size: float = option(0.1, help="α, ascent step on the normalised perturbation gradient", low=0)
    epsilon: float = option(0.3, help="ε, radius of each example's Frobenius ball (0: no perturbation)", low=0)
    init_magnitude: float = option(0.1, help="σ of the uniform initial perturbation (0: start at δ = 0)", low=0)


@OBJECTIVES.register("child-tuning", implementation=".child_tuning:ChildTuning")
@dataclass
class ChildTuningConfig(ObjectiveConfig):
    kept_share: float = option(0.3, help="share of transformer-layer parameters that stay trainable (p_D); "
                                         "0.3 = 70% frozen", low=0, high=1, low_open=True)


@OBJECTIVES.register("rose-second", implementation=".rose:RoseSecond")
@dataclass
class RoseConfig(ObjectiveConfig):
    lower_quantile: float = option(0.55, help="updates with risk below this quantile are dropped (of little value)",
                                   low=0, high=1)
    upper_quantile: float = option(0.95, help="updates with risk above this quantile are dropped (unrobust)",
                                   low=0, high=1)
    selection: str = option("quantile", choices=ROSE_SELECTIONS, help="quantile: torch.quantile bounds, both "
                                                                      "inclusive (reference code); rank: exact count")

    def check(self) -> None:
        if self.lower_quantile >= self.upper_quantile:
            raise ConfigError(f"{self.flag('lower_quantile')} {self.lower_quantile} must be below "
                              f"{self.flag('upper_quantile')} {self.upper_quantile}")


@OBJECTIVES.register("rose-first", implementation=".rose:RoseFirst")
@dataclass
class RoseFirstConfig(RoseConfig):
    """ROSE-First: the same options, risks from the first-order (dropout) sensitivity."""


@OBJECTIVES.register("rose-ensemble", implementation=".rose:RoseEnsemble")
@dataclass
class RoseEnsembleConfig(RoseConfig):
    first_order_weight: float = option(0.5, help="γ of M = γ·M_first + (1 − γ)·M_second", low=0, high=1)
