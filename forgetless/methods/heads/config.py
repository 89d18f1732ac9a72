"""Options of attention-head pruning by importance (Michel et al. 2019, "Are Sixteen Heads Really
Better than One?"; as used in Du et al. 2023, §3.1). Standard library only."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from ...errors import OptionError
from ...options import option
from ...registry import METHODS
from .._shared.head_config import HeadPruningConfig


@METHODS.register("heads", implementation=".method:MichelHeadPruning")
@dataclass
class HeadsConfig(HeadPruningConfig):
    """Scores need only a label loss: a classifier's class or, for a causal LM, the label word after
    the task's prompt (grouped-query attention: the unit is a key/value group)."""

    model_kinds: ClassVar[tuple[str, ...]] = ("classifier", "causal-lm")
    prune_count: int = option(0, help="exact number of heads to prune, instead of --ratio (0: use --ratio)", low=0)
    iterations: int = option(1, help="1: one-shot; n: n equal steps, re-scoring between steps", low=1)
    layer_norm: bool = option(True, help="Michel et al.'s per-layer l2 normalisation of importance")

    def check(self) -> None:
        ratio_default = next(f for f in dataclasses.fields(self) if f.name == "ratio").default
        if self.prune_count and self.ratio != ratio_default:
            raise OptionError(f"--prune-count {self.prune_count} and --ratio {self.ratio}: give one (a count of heads "
                              "or a share of them), not both")

    def check_model(self, dims: dict, where: str) -> None:
        layers, heads = dims.get("layers"), dims.get("heads")
        if layers and heads and self.prune_count >= layers * heads:
            raise OptionError(f"--prune-count {self.prune_count}: {where} has {layers * heads} heads "
                              f"({layers} layers × {heads}); valid 0..{layers * heads - 1}")
