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
            raise OptionError(f"--layers {self.layers}: {where} has {layers} layers; keep 1..{layers - 1}")
