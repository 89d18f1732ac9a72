"""Truncated student (Du et al. 2023, "Truncated-l6"; Sanh et al. 2019 initialisation idea):
keep ``layers`` transformer layers of the encoder (the first ones by default; see
``layer_selection`` for the other strategies), physically drop the rest, then fine-tune."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..models.adapters import get_adapter
from ..models.surgery import drop_layers
from .base import METHODS, CompressionMethod, check_recovery
from .layer_selection import check_strategy, select_layers


@dataclass
class TruncateConfig:
    layers: int = 3  # number of layers kept
    selection: str = "first"  # first (Truncated-l6) | last | spread | stride: see layer_selection
    recovery: str = "fine-tune"  # fine-tune | none

    def __post_init__(self):
        check_recovery(self.recovery)
        if self.layers < 1:
            raise ConfigError(f"layers must be >= 1, got {self.layers}")
        check_strategy(self.selection)


@METHODS.register("truncate", TruncateConfig)
class Truncate(CompressionMethod):
    name = "truncate"

    def prepare(self, model, ctx):
        stacks = get_adapter(model).stacks(model)
        stack = next(iter(stacks))  # the first stack: "encoder"; "decoder" for decoder-only models
        total = len(stacks[stack])
        if self.config.layers >= total:
            raise ConfigError(f"truncate: model has {total} layers; keep fewer than that (got {self.config.layers})")
        keep = select_layers(total, self.config.layers, self.config.selection)
        drop_layers(model, stack, keep)
        ctx.layer_map = {stack: keep}
        ctx.notes.append(f"truncate: kept {stack} layers {keep} of {total}"
                         + (", then fine-tuned" if self.recovers() else ", no recovery training"))
        return model
