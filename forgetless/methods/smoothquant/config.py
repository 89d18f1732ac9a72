"""Options of SmoothQuant (Xiao, Lin, Seznec, Wu, Demouth & Han 2023, "SmoothQuant: Accurate and Efficient
Post-Training Quantization for Large Language Models", §4): per-input-channel smoothing factors from the
calibration inputs' absolute maxima, ``s_j = max|X_j|^α / max|W_j|^(1−α)`` (eq. 4), folded into the
module that produces the input; nothing is quantized here (stack a quantizing method after it:
``--method smoothquant --then gptq:bits=8,group_size=-1,activations=int8-token``, or ``--scheme
W8A8-INT8``). Standard library only: see ``method.py``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...options import option
from ...registry import METHODS
from .._shared.oneshot_config import OneShotConfig


@METHODS.register("smoothquant", implementation=".method:SmoothQuant")
@dataclass
class SmoothQuantConfig(OneShotConfig):
    """SmoothQuant: an equivalent model whose linear inputs have smaller outliers (no weight is removed or
    rounded: a quantizing method goes after it)."""

    smoke: ClassVar[dict] = {"calibration_examples": 8, "calibration_batch": 4}
    recovers: ClassVar[bool] = False  # a one-shot transform: nothing is trained

    alpha: float = option(0.5, low=0, high=1, help=(
        "migration strength α of s_j = max|X_j|^α / max|W_j|^(1−α): 0 leaves the inputs, 1 moves their whole "
        "range into the weights (the paper's 0.5; llm-compressor's W8A8 examples 0.8)"))
    producers: str = option("norms", choices=("norms", "norms-and-linears"), help=(
        "fold the factors into the norm before a linear (the paper's and llm-compressor's q/k/v and gate/up inputs) "
        "| also into a linear whose outputs another reads channel for channel (v → o, up → down)"))
