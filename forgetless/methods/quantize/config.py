"""Options of post-training quantization (``quantize``: Jacob et al. 2018's affine int8, eq. 1, and
bfloat16). Standard library only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...config import MethodConfig
from ...errors import ConfigError
from ...options import option
from ...registry import METHODS

GPU_ONLY = ("fp8", "int4")
DTYPES = ("int8", "bf16")


@METHODS.register("quantize", implementation=".method:Quantize")
@dataclass
class QuantizeConfig(MethodConfig):
    """Nothing is trained; no weight is removed (parameter counts stay, bytes per weight shrink)."""

    task_types: ClassVar[tuple[str, ...]] = ("classification", "generation")
    structured: ClassVar[bool] = False
    quantizes: ClassVar[bool] = True
    smoke: ClassVar[dict] = {"dtype": "int8"}

    dtype: str = option("int8", choices=DTYPES + GPU_ONLY,
                        help="int8 (dynamic, per-channel weights) | bf16 (all weights and activations); "
                             "weight-only int4: --method rtn or gptq; fp8 needs a GPU and torchao")
    linears: str = option("stacks", choices=("stacks", "all"),
                          help="int8: stacks (Linears inside the transformer layers) | all (also pooler / heads)")

    @property
    def recovers(self) -> bool:
        return False  # post-training only: there is no recovery stage

    def check(self) -> None:
        if self.dtype == "int4":
            raise ConfigError("quantize: dtype 'int4' (weight-only) is --method rtn --bits 4 (round-to-nearest) or "
                              "--method gptq --bits 4, saved as compressed-tensors")
        if self.dtype in GPU_ONLY:
            raise ConfigError(f"quantize: dtype {self.dtype!r} (weight-only) needs a GPU and torchao; this build "
                              "runs on CPU: choose int8 or bf16")
        if self.dtype == "bf16" and self.linears != "stacks":
            raise ConfigError("quantize: bf16 casts the whole model; linears applies to int8 only")
