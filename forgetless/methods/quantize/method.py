"""Quantization as a compression method with the same report card as pruning: ``quantize``.

* ``dtype = "int8"``: post-training dynamic quantization (Jacob et al. 2018, eq. 1 ``r = S (q − Z)``,
  per output channel; activations per batch: ``models/quantized_io.py``), as Zafrir et al. 2019's
  "Q8BERT" applies it to BERT's Linears. Which Linears: ``linears = "stacks"`` (default) those
  inside the transformer stacks (the adapter's ``prunable_linears``, as magnitude pruning);
  ``"all"`` also the pooler, classifier head and LM head.
* ``dtype = "bf16"``: every weight (and so every activation) in bfloat16: the same 8-bit exponent
  as fp32 with a 7-bit mantissa, ``bf16(x) = round_to_nearest_even(x, 2^-7 · 2^⌊log2|x|⌋)``.
  Fast on CPUs with native bf16 (AVX512-BF16 / AMX), slow emulation elsewhere.

Nothing is trained (the method returns the quantized model); run it after a structural method
with ``then`` (``--then quantize:dtype=int8``) so the card shows what pruning *plus* quantization
forgot and the compounded speedup against the fp32 base. fp8 and int4 weight-only formats need a
GPU kernel library (torchao); this CPU build raises a ``ConfigError`` for them (``config.py``).
"""
from __future__ import annotations

from torch import nn

from ...errors import ConfigError
from ...models.adapters import get_adapter
from ...models.quantized_io import cast_bf16, quantize_int8
from ..base import CompressionMethod


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


class Quantize(CompressionMethod):
    """Post-training quantization: no training (``config.recovers`` is False); ``finalize`` replaces
    the model's Linears (int8) or casts all weights (bf16) and records whether a speedup is expected,
    which ``report_section`` hands to the card."""

    def __init__(self, config):
        super().__init__(config)
        self.speedup: dict = {}

    def finalize(self, model, ctx):
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

    def report_section(self) -> dict | None:
        """``{"quantization": {dtype, expected, why}}`` for the card's deployment section (None before
        the model was quantized)."""
        if not self.speedup:
            return None
        return {"quantization": {"dtype": self.config.dtype, **self.speedup}}
