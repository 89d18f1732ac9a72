"""Config of ``nash-distil``: NASH's distillation objective for encoder-decoders (Ko et al. 2023,
§4.3), ``L = w_kd·L_pred + w_ce·CE + λ_enc·L_h^enc + λ_dec·L_h^dec``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...config import ObjectiveConfig
from ...errors import ConfigError
from ...options import option
from ...registry import OBJECTIVES

DIRECTIONS = ("forward", "reverse")
KL_REDUCTIONS = ("token", "batchmean")


@OBJECTIVES.register("nash-distil", implementation=".objective:NashDistil")
@dataclass
class NashDistilConfig(ObjectiveConfig):
    model_kinds: ClassVar[tuple[str, ...]] = ("seq2seq",)

    temperature: float = option(1.0, help="KD temperature T", low=0, low_open=True)
    direction: str = option("forward", choices=DIRECTIONS,
                            help="forward: KL(p_T ‖ p_S) (NASH/CoFi code); reverse: KL(p_S ‖ p_T)")
    lambda_enc: float = option(0.001, help="weight of the encoder hidden-state MSE (paper: 0.001)", low=0)
    lambda_dec: float = option(0.001, help="weight of the decoder hidden-state MSE (paper: 0.001)", low=0)
    kd_weight: float = option(1.0, help="weight of the token-level KL", low=0)
    ce_weight: float = option(0.0, help="weight of cross-entropy with the gold target tokens", low=0)
    kl_reduction: str = option("token", choices=KL_REDUCTIONS, help="token: mean over target tokens (default); "
                                                                    "batchmean: per-sequence sum (CoFi code)")

    def check(self) -> None:
        if self.kd_weight == 0 and self.ce_weight == 0:
            raise ConfigError(f"{self.flag('kd_weight')} and {self.flag('ce_weight')} are both 0: nothing to train on")
