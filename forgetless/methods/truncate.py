"""Truncated student (Du et al. 2023, "Truncated-l6"; Sanh et al. 2019 initialisation idea):
keep the first ``layers`` transformer layers, physically drop the rest, then fine-tune."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..models.adapters import get_adapter
from ..models.surgery import drop_layers
from .base import METHODS, CompressionMethod


@dataclass
class TruncateConfig:
    layers: int = 3  # number of layers kept
    keep: str = "first"  # "first": layers 0..k-1 (Truncated-l6); "uniform": spread evenly

    def __post_init__(self):
        if self.layers < 1:
            raise ConfigError(f"layers must be >= 1, got {self.layers}")
        if self.keep not in ("first", "uniform"):
            raise ConfigError(f"keep must be 'first' or 'uniform', got {self.keep!r}")


def kept_layers(total: int, keep: int, how: str) -> list[int]:
    if how == "first":
        return list(range(keep))
    if keep == 1:
        return [0]
    return sorted({round(i * (total - 1) / (keep - 1)) for i in range(keep)})


@METHODS.register("truncate", TruncateConfig)
class Truncate(CompressionMethod):
    name = "truncate"

    def prepare(self, model, ctx):
        stacks = get_adapter(model).stacks(model)
        stack = next(iter(stacks))  # the first stack: "encoder"; "decoder" for decoder-only models
        total = len(stacks[stack])
        if self.config.layers >= total:
            raise ConfigError(f"truncate: model has {total} layers; keep fewer than that (got {self.config.layers})")
        keep = kept_layers(total, self.config.layers, self.config.keep)
        drop_layers(model, stack, keep)
        ctx.notes.append(f"truncate: kept {stack} layers {keep} of {total}, then fine-tuned")
        return model
