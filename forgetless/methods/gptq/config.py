"""Options of GPTQ (Frantar, Ashkboos, Hoefler & Alistarh 2022): quantization of every linear layer of
the transformer stacks to ``bits``-bit integers with a per-group grid (or to float8_e4m3fn), the rounding
error fed back through the damped inverse Hessian of the calibration inputs (Algorithm 1); the format
options (``quantization/options.py``'s ``WeightFormat``, shared with ``rtn`` and ``awq``) also quantize the
layers' inputs (W8A8). Standard library only: see ``method.py`` and ``solver.py`` (its docstring: the
two grid rules, ``static_groups``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...errors import OptionError
from ...options import option
from ...quantization.options import WeightFormat
from ...registry import METHODS
from .._shared.oneshot_config import OneShotConfig


@METHODS.register("gptq", implementation=".method:Gptq")
@dataclass
class GptqConfig(OneShotConfig, WeightFormat):
    """GPTQ: weights rounded to a per-group integer grid with second-order error feedback; stored
    packed on disk, dequantized to float32 in memory (smaller file, no speedup on CPU)."""

    quantizes: ClassVar[bool] = True
    smoke: ClassVar[dict] = {"group_size": 16, "calibration_examples": 8, "calibration_batch": 4}

    act_order: bool = option(False, switch=True, help=(
        "quantize columns in decreasing order of the Hessian diagonal (the paper's act-order; group grids "
        "then taken from the original weights)"))
    static_groups: bool = option(False, switch=True, help=(
        "take every group's grid from the original weights before the sweep (llm-compressor's rule); default: "
        "each group's grid when the sweep reaches it, from the error-updated weights (the GPTQ authors' code)"))
    damp: float = option(0.01, low=0, low_open=True, high=1, help=(
        "relative dampening: λ = damp · mean(diag H) added to the Hessian's diagonal (the authors' 0.01)"))
    block_size: int = option(128, low=1, help="columns per lazy-update block (the authors' 128)")
    recovery: str = option("none", choices=("fine-tune", "none"), help=(
        "none only: a fine-tune would move the weights off the integer grid (fine-tune first, then run gptq, "
        "e.g. with --then gptq)"))

    def check(self) -> None:
        super().check()
        self.check_format(calibrates=True)
        if getattr(self.format.codes, "gptq_rule", None) is None:  # a format may offer round-to-nearest only
            raise OptionError(f"--weight-type {self.weight_type}: these codes have no GPTQ column rule "
                              "(quantization/registry.py); use --method rtn")
        if self.recovery != "none":
            raise OptionError(f"--recovery {self.recovery}: gptq stores integer codes; training afterwards would move "
                              "the weights off their grid and lose the packed storage. Fine-tune before (another "
                              "method, then --then gptq) and keep --recovery none")

    def check_model(self, dims: dict, where: str) -> None:
        self.check_widths(dims, where)
