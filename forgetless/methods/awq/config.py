"""Options of AWQ (Lin, Tang, Tang, Yang, Chen, Wang, Xiao, Dang, Gan & Han 2024, "AWQ: Activation-aware
Weight Quantization for On-Device LLM Compression and Acceleration", §3.2): per-input-channel scales
``s = s_X^α`` searched over a grid of α on calibration data (eq. 4-5), then a search of each group's
clipping range, then round-to-nearest; weight-only integer codes (``quantization/options.py``; the
scheme W4A16-AWQ is 4 bits, groups of 128, asymmetric, as AutoAWQ and llm-compressor's AWQ).
Standard library only: see ``method.py``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...errors import OptionError
from ...options import option
from ...quantization.format import PACKED
from ...quantization.options import WeightFormat
from ...registry import METHODS
from .._shared.oneshot_config import OneShotConfig


@METHODS.register("awq", implementation=".method:Awq")
@dataclass
class AwqConfig(OneShotConfig, WeightFormat):
    """AWQ: scales that protect the channels with large activations, folded into the preceding module, then
    integer codes; stored as compressed-tensors pack-quantized (no speedup on CPU)."""

    quantizes: ClassVar[bool] = True
    smoke: ClassVar[dict] = {"group_size": 16, "calibration_examples": 8, "calibration_batch": 4}
    recovers: ClassVar[bool] = False  # post-training: a fine-tune would move the weights off the grid

    grid: int = option(20, low=2, high=1000, help="α values searched, evenly from 0 to 1 (the paper's 20)")
    duo_scaling: bool = option(True, help=(
        "true: s = s_X^α / s_W^(1−α) with s_W the mean group-normalised |W| per input channel (AutoAWQ's and "
        "llm-compressor's default); false: the paper's s = s_X^α"))
    clip: bool = option(True, help=(
        "search each group's clipping range (max |w| × 1, 0.95, …, 0.55) for the smallest output error after "
        "scaling (the paper's and AutoAWQ's; llm-compressor 0.14 does not)"))

    def check(self) -> None:
        super().check()
        self.check_format(calibrates=True)
        if self.format.ct_format != PACKED:
            flag = f"--weight-type {self.weight_type}" if self.weight_type != "int" else \
                f"--activations {self.activations}"
            raise OptionError(f"{flag}: awq writes weight-only integer codes (W4A16); for fp8 or quantized inputs use "
                              "rtn or gptq")

    def check_model(self, dims: dict, where: str) -> None:
        self.check_widths(dims, where)
