"""Options of round-to-nearest (RTN) weight-only quantization: every linear layer of the transformer
stacks (or those ``targets`` / ``ignore`` choose, as for the other one-shot methods) rounded to a
per-group ``bits``-bit integer grid, no calibration (the baseline of Frantar et al. 2022, "GPTQ",
Table 1-3; llm-compressor's ``QuantizationModifier`` for W4A16). The options are ``gptq``'s grid options. Standard library only: see ``method.py``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...options import option
from ...registry import METHODS
from .._shared.oneshot_config import TargetsConfig
from ..quantize.grid import ASYMMETRIC_HELP, BITS, GROUP_SIZE_HELP, check_group_fits, check_group_size


@METHODS.register("rtn", implementation=".method:Rtn")
@dataclass
class RtnConfig(TargetsConfig):
    """RTN: each weight rounded to its group's min-max grid; stored packed as compressed-tensors,
    dequantized to float32 in memory (smaller file, no speedup on CPU)."""

    structured: ClassVar[bool] = False
    quantizes: ClassVar[bool] = True
    task_types: ClassVar[tuple[str, ...]] = ("classification",)
    model_kinds: ClassVar[tuple[str, ...]] = ("classifier", "causal-lm")
    smoke: ClassVar[dict] = {"group_size": 16}

    bits: int = option(4, choices=BITS, help="bits per weight code (2 | 3 | 4 | 8)")
    group_size: int = option(128, low=-1, help=GROUP_SIZE_HELP)
    asymmetric: bool = option(False, switch=True, help=ASYMMETRIC_HELP)

    @property
    def recovers(self) -> bool:
        return False  # post-training: a fine-tune would move the weights off the grid (fine-tune first, then rtn)

    def check(self) -> None:
        super().check()
        check_group_size(self.group_size)

    def check_model(self, dims: dict, where: str) -> None:
        for width in sorted(set(dims.get("widths") or ())) if self.every_linear else ():
            check_group_fits(self.group_size, width, f"{where} has linear layers with")
