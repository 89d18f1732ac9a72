"""Options of the truncated student (Du et al. 2023, "Truncated-l6"). Standard library only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...config import MethodConfig, recovery_option
from ...errors import OptionError
from ...options import option
from ...registry import METHODS
from .._shared.layer_selection import STRATEGIES


@METHODS.register("truncate", implementation=".method:Truncate")
@dataclass
class TruncateConfig(MethodConfig):
    smoke: ClassVar[dict] = {"layers": 2}

    layers: int = option(3, help="number of layers kept", low=1)
    selection: str = option("first", choices=STRATEGIES,
                            help="which layers are kept: first (Truncated-l6) | last | spread | stride "
                                 "(methods/_shared/layer_selection.py)")
    recovery: str = recovery_option()

    def check_model(self, dims: dict, where: str) -> None:
        layers = dims.get("layers")
        if layers and self.layers >= layers:
            given = f"--layers {self.layers}" + (" (the default)" if self.layers == type(self).layers else "")
            keep = f"keep 1..{layers - 1}" if layers > 1 else "one layer cannot be truncated further"
            raise OptionError(f"{given}: {where} has {layers} layer{'s' * (layers > 1)}; {keep}")

    def shape_after(self, dims: dict) -> dict:
        return {**dims, "layers": self.layers}
