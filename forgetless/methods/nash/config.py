"""Options of NASH (Ko et al. 2023, "A Simple Unified Framework of Structured Pruning for
Accelerating Encoder-Decoder Language Models") and the CoFi-style baseline (Xia et al. 2022): L0
hard-concrete masks with a Lagrangian sparsity constraint (appendix B). Standard library only."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ...config import MethodConfig
from ...errors import ConfigError, OptionError
from ...options import option
from ...registry import METHODS
from .._shared.layer_selection import STRATEGIES

ENCODER_PRUNING = ("l0", "layers", "none")


@dataclass
class L0Config(MethodConfig):
    """Options shared by the L0-mask methods (``nash``, ``cofi``): encoder-decoder models only; the
    training stage learns the masks, then the units are removed and the model fine-tuned."""

    task_types: ClassVar[tuple[str, ...]] = ("generation", "classification")
    model_kinds: ClassVar[tuple[str, ...]] = ("seq2seq",)
    seq2seq_only: ClassVar[bool] = True
    default_objective: ClassVar[str] = "nash-distil"

    sparsity_warmup: float = option(0.5, help="fraction of the pruning steps over which the target rises from 0",
                                    low=0, high=1)
    l0_learning_rate: float = option(0.01, help="learning rate of log α and the Lagrange multipliers", low=0,
                                     low_open=True, high=10)
    init_droprate: float = option(0.5, help="CoFi's initial log α = log(1 − p) − log p", low=0, low_open=True,
                                  high=1)
    finetune_epochs: float = option(1.0, help="fine-tuning after the units are removed (0: none)", low=0, high=1e6)

    below_one: ClassVar[tuple[str, ...]] = ("init_droprate",)  # options that must stay below 1

    def check(self) -> None:
        for name in self.below_one:
            if getattr(self, name) >= 1:
                raise ConfigError(f"{self.flag(name)} {getattr(self, name)}: must be below 1")

    @property
    def init_log_alpha(self) -> float:
        return math.log(1 - self.init_droprate) - math.log(self.init_droprate)


@METHODS.register("nash", implementation=".method:Nash")
@dataclass
class NashConfig(L0Config):
    smoke: ClassVar[dict] = {"decoder_layers": 2, "finetune_epochs": 0}
    below_one: ClassVar[tuple[str, ...]] = ("init_droprate", "encoder_sparsity")

    decoder_layers: int = option(3, help="d_s, decoder layers kept", low=1)
    decoder_selection: str = option("stride", choices=STRATEGIES,
                                    help="stride (NASH's uniform, §4.1) | first | last | spread (Table 3)")
    encoder_pruning: str = option("l0", choices=ENCODER_PRUNING,
                                  help="l0 (NASH) | layers (drop encoder layers by stride) | none (Table 4)")
    encoder_sparsity: float = option(0.3, help="target share of encoder head/FFN parameters removed", low=0, high=1)

    def check_model(self, dims: dict, where: str) -> None:
        decoder = dims.get("decoder_layers")
        if decoder and self.decoder_layers > decoder:
            raise OptionError(f"--decoder-layers {self.decoder_layers}: {where} has {decoder} decoder layers; "
                              f"valid 1..{decoder}")

    def shape_after(self, dims: dict) -> dict:
        return {**dims, "decoder_layers": self.decoder_layers}


@METHODS.register("cofi", implementation=".method:Cofi")
@dataclass
class CofiConfig(L0Config):
    smoke: ClassVar[dict] = {"sparsity": 0.4, "finetune_epochs": 0}
    below_one: ClassVar[tuple[str, ...]] = ("init_droprate", "sparsity")

    sparsity: float = option(0.5, help="target share of all encoder + decoder head / FFN parameters removed",
                             low=0, high=1)
