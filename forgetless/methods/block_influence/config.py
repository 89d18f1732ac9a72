"""Options of layer removal by Block Influence (ShortGPT: Men et al. 2024). Standard library only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...config import MethodConfig, recovery_option
from ...errors import ConfigError, OptionError
from ...options import option
from ...registry import METHODS


@METHODS.register("block-influence", implementation=".method:BlockInfluenceRemoval")
@dataclass
class BlockInfluenceConfig(MethodConfig):
    calibration: ClassVar[str] = "task"  # a label-stratified subset of the training split
    smoke: ClassVar[dict] = {"layers": 2, "calibration_examples": 8}

    layers: int = option(0, help="layers kept (as for truncate); 0: give --remove instead", low=0)
    remove: int = option(0, help="layers removed; 0: give --layers instead", low=0)
    calibration_examples: int = option(256, help="seeded, label-stratified subset of the training set", low=1)
    calibration_batch: int = option(16, help="calibration examples per forward pass", low=1)
    calibration_length: int = option(128, help="max tokens per calibration example", low=2)
    stack: str = option("", help="layer stack to shorten; empty: the model's first stack")
    recovery: str = recovery_option("fine-tune | none (ShortGPT's post-training setting)")

    def check(self) -> None:
        if (self.layers > 0) == (self.remove > 0):
            raise ConfigError(f"block-influence: give exactly one of layers (kept) or remove (removed) as a "
                              f"positive count, got layers={self.layers}, remove={self.remove}")

    def check_model(self, dims: dict, where: str) -> None:
        layers = dims.get("layers")
        if layers:
            for flag, value in (("--layers", self.layers), ("--remove", self.remove)):
                if value >= layers:
                    raise OptionError(f"{flag} {value}: {where} has {layers} layers; valid 0..{layers - 1}")

    def shape_after(self, dims: dict) -> dict:
        layers = dims.get("layers")
        return {**dims, "layers": self.layers or (layers - self.remove if layers else None)}

    def removed_count(self, total: int) -> int:
        """Layers to remove from a stack of ``total``; at least one must stay and one must go."""
        count = self.remove if self.remove else total - self.layers
        if not 1 <= count <= total - 1:
            what = f"remove={self.remove}" if self.remove else f"layers={self.layers}"
            raise ConfigError(f"block-influence: {what} is not possible for a stack of {total} layers; "
                              f"keep between 1 and {total - 1}")
        return count
