"""Options of post-training quantization (``quantize``): int8 (Jacob et al. 2018's affine int8, eq. 1) with
one activation scale per tensor (PyTorch's dynamic int8 kernels) or per token (W8A8, as LLM deployments
run it), and bfloat16. Standard library only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...config import MethodConfig
from ...errors import ConfigError
from ...options import option
from ...registry import METHODS

GPU_ONLY = ("fp8", "int4")
DTYPES = ("int8", "int8-per-tensor", "int8-per-token", "bf16")


@METHODS.register("quantize", implementation=".method:Quantize")
@dataclass
class QuantizeConfig(MethodConfig):
    """Nothing is trained; no weight is removed (parameter counts stay, bytes per weight shrink)."""

    task_types: ClassVar[tuple[str, ...]] = ("classification", "generation")
    structured: ClassVar[bool] = False
    quantizes: ClassVar[bool] = True
    smoke: ClassVar[dict] = {"dtype": "int8"}
    recovers: ClassVar[bool] = False  # post-training only: there is no recovery stage

    dtype: str = option("int8", choices=DTYPES + GPU_ONLY, help=(
        "int8-per-tensor: PyTorch's dynamic int8 (weights per output channel, ONE activation scale per tensor "
        "computed per batch; fast fbgemm / onednn CPU kernels; right for encoders, lossy on LLMs whose activations "
        "have outliers) | int8-per-token: W8A8 (int8 weights per output channel, int8 inputs per token, as vLLM "
        "runs LLMs; saved as compressed-tensors, emulated in float32 on CPU) | int8: per-token on a decoder "
        "LLM (causal-lm), per-tensor otherwise | bf16 (all weights and activations); weight-only int4 / int8: "
        "--method rtn or gptq; fp8: --scheme FP8-DYNAMIC"))
    linears: str = option("stacks", choices=("stacks", "all"),
                          help="int8: stacks (Linears inside the transformer layers) | all (also pooler / heads)")

    def check(self) -> None:
        if self.dtype == "int4":
            raise ConfigError("quantize: dtype 'int4' (weight-only) is --method rtn --bits 4 (round-to-nearest) or "
                              "--method gptq --bits 4, saved as compressed-tensors")
        if self.dtype == "fp8":
            raise ConfigError("quantize: dtype 'fp8' is --scheme FP8-DYNAMIC (rtn: fp8 weights per row, fp8 inputs per "
                              "token) or FP8 (static input scales), saved as compressed-tensors float-quantized")
        if self.dtype == "bf16" and self.linears != "stacks":
            raise ConfigError("quantize: bf16 casts the whole model; linears applies to int8 only")
