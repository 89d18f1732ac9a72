"""Quantization as a compression method with the same report card as pruning: ``quantize``.

* ``dtype = "int8"``: post-training dynamic quantization (Jacob et al. 2018, "Quantization and
  Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference", eq. 1:
  ``r = S (q − Z)``), with one scale / zero point per output channel of each weight matrix and
  activations quantized per batch at run time (Zafrir et al. 2019, "Q8BERT", apply the same affine
  map to BERT's Linear layers). Which Linears: ``linears = "stacks"`` (default) every ``nn.Linear``
  inside the transformer stacks (the adapter's ``prunable_linears``, as magnitude pruning);
  ``"all"`` also the pooler, classifier head and LM head.
* ``dtype = "bf16"``: every weight (and so every activation) in bfloat16: the same 8-bit exponent
  as fp32 with a 7-bit mantissa, ``bf16(x) = round_to_nearest_even(x, 2^-7 · 2^⌊log2|x|⌋)``.
  Fast on CPUs with native bf16 (AVX512-BF16 / AMX), slow emulation elsewhere.

Nothing is trained (the method returns the quantized model); run it after a structural method
with ``then`` (``--then quantize:dtype=int8``) so the card shows what pruning *plus* quantization
forgot and the compounded speedup against the fp32 base. fp8 and int4 weight-only formats need a
GPU kernel library (torchao); this CPU build raises a ``ConfigError`` for them.
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..errors import ConfigError
from ..models.adapters import get_adapter
from ..models.quantized_io import cast_bf16, quantize_int8
from .base import METHODS, CompressionMethod

GPU_ONLY = ("fp8", "int4")
LINEARS = ("stacks", "all")


@dataclass
class QuantizeConfig:
    dtype: str = "int8"  # int8 (dynamic, per-channel weights) | bf16 (all weights and activations)
    linears: str = "stacks"  # int8: stacks (Linears inside the transformer layers) | all (also pooler / heads)

    def __post_init__(self):
        if self.dtype in GPU_ONLY:
            raise ConfigError(f"quantize: dtype {self.dtype!r} (weight-only) needs a GPU and torchao; this build "
                              "runs on CPU: choose int8 or bf16")
        if self.dtype not in ("int8", "bf16"):
            raise ConfigError(f"quantize: unknown dtype {self.dtype!r}; choose int8 or bf16")
        if self.linears not in LINEARS:
            raise ConfigError(f"quantize: unknown linears {self.linears!r}; choose {' or '.join(LINEARS)}")
        if self.dtype == "bf16" and self.linears != "stacks":
            raise ConfigError("quantize: bf16 casts the whole model; linears applies to int8 only")


def linear_names(model: nn.Module, linears: str) -> list[str]:
    """Module names of the Linears ``linears`` selects (see the module docstring)."""
    if linears == "all":
        return [name for name, module in model.named_modules() if isinstance(module, nn.Linear)]
    ids = {id(module) for _, module in get_adapter(model).prunable_linears(model)}
    return [name for name, module in model.named_modules() if id(module) in ids]


def speedup_expected(model: nn.Module, dtype: str) -> tuple[bool, str]:
    """Whether a speedup over fp32 is to be expected, and why (recorded in the card)."""
    if dtype == "bf16":
        native = _cpu_has("avx512_bf16", "amx_bf16")
        return native, ("this CPU has native bf16 matrix instructions (AVX512-BF16 / AMX)" if native else
                        "no native bf16 instructions found in /proc/cpuinfo: bf16 may be emulated, slower than fp32")
    hidden = int(getattr(model.config, "hidden_size", 0) or getattr(model.config, "d_model", 0) or 0)
    if hidden < 256:
        return False, (f"hidden size {hidden}: int8 dynamic quantization adds a per-batch quantization step "
                       "that outweighs the int8 matrix products on matrices this small")
    return True, "int8 matrix products (fbgemm / onednn) on weights four times narrower than fp32"


def _cpu_has(*flags: str) -> bool:
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return any(flag in text.split() for flag in flags)


@METHODS.register("quantize", QuantizeConfig)
class Quantize(CompressionMethod):
    """Post-training quantization: no training, the model's Linears (int8) or all weights (bf16)
    are replaced in the returned model."""

    name = "quantize"
    structured = False  # no weight is removed: parameter counts stay, bytes per weight shrink
    kinds = ("classification", "generation")

    def compress(self, model, ctx):
        model = model.float().eval()
        if self.config.dtype == "bf16":
            cast_bf16(model)
            what = "every weight and activation in bfloat16"
        else:
            names = linear_names(model, self.config.linears)
            if not names:
                raise ConfigError(f"quantize: no nn.Linear found for linears={self.config.linears!r}")
            quantize_int8(model, names)
            what = f"{len(names)} Linear modules ({self.config.linears}) in dynamic int8, per-channel weights"
        expected, why = speedup_expected(model, self.config.dtype)
        self.speedup = {"expected": expected, "why": why}
        ctx.notes.append(f"quantize {self.config.dtype}: {what}; speedup {'expected' if expected else 'not expected'}"
                         f" ({why})")
        return model
