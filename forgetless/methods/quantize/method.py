"""Quantization as a compression method with the same report card as pruning: ``quantize``.

* ``dtype = "int8-per-tensor"``: post-training dynamic quantization (Jacob et al. 2018, eq. 1
  ``r = S (q − Z)``, weights per output channel; activations with ONE scale per tensor, computed per
  batch: ``models/io.py``), as Zafrir et al. 2019's "Q8BERT" applies it to BERT's Linears,
  with PyTorch's fbgemm / onednn int8 kernels (fast on CPU). On a decoder LLM it is lossy: a few input
  features with outliers (SmolLM2's ``mlp.down_proj`` inputs reach 1,400× their median) set the one
  scale and round most other activations to 0 (WikiText-2 perplexity 35 → 103); ``finalize`` measures
  the inputs' outliers on a few texts and warns.
* ``dtype = "int8-per-token"``: W8A8 as LLM deployments run it (Xiao et al. 2023, §2): int8 weights with
  one symmetric scale per output channel, int8 inputs with one scale per token at run time
  (``quantization/inputs.py``), round-to-nearest (``rtn`` with the W8A8-INT8 format; ``--scheme
  W8A8-INT8`` adds SmoothQuant and GPTQ); saved as compressed-tensors ``int-quantized``; emulated in
  float32 on CPU (no speedup).
* ``dtype = "int8"``: per token on a decoder LLM (the causal-lm model kind), per tensor otherwise.

Which Linears: ``linears = "stacks"`` (default) those inside the transformer stacks (the adapter's
``prunable_linears``, as magnitude pruning); ``"all"`` also the pooler, classifier head and LM head.
* ``dtype = "bf16"``: every weight (and so every activation) in bfloat16: the same 8-bit exponent
  as fp32 with a 7-bit mantissa, ``bf16(x) = round_to_nearest_even(x, 2^-7 · 2^⌊log2|x|⌋)``.
  Fast on CPUs with native bf16 (AVX512-BF16 / AMX), slow emulation elsewhere.

Nothing is trained (the method returns the quantized model); run it after a structural method
with ``then`` (``--then quantize:dtype=int8``) so the card shows what pruning *plus* quantization
forgot and the compounded speedup against the fp32 base. fp8 and int4 weight-only formats need a
GPU kernel library to be fast; they are ``rtn`` / ``gptq`` options here (``config.py`` says so).
"""
from __future__ import annotations

import logging

import torch
from torch import nn

from ...errors import ConfigError
from ...models.adapters import get_adapter
from ...models.io import cast_bf16, quantize_int8
from ...models.sites import weight_matrix
from ...quantization.format import CPU_NOTE, QuantFormat
from ...quantization.layers import attach
from ..base import CompressionMethod
from .outliers import outlier_report

logger = logging.getLogger("forgetless")
W8A8 = QuantFormat(bits=8, group_size=-1, activations="int8-token")


def linear_names(model: nn.Module, linears: str) -> list[str]:
    """Module names of the Linears ``linears`` selects (see the module docstring)."""
    if linears == "all":
        return [name for name, module in model.named_modules() if isinstance(module, nn.Linear)]
    ids = {id(module) for _, module in get_adapter(model).prunable_linears(model)}
    return [name for name, module in model.named_modules() if id(module) in ids]


def speedup_expected(model: nn.Module, dtype: str) -> tuple[bool, str]:
    """Whether a speedup over fp32 is to be expected, and why (recorded in the card)."""
    if dtype == "int8-per-token":
        return False, CPU_NOTE
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


def resolved_dtype(dtype: str, model: nn.Module, ctx) -> str:
    """``int8`` → ``int8-per-token`` on a decoder LLM (the causal-lm model kind), else ``int8-per-tensor``."""
    if dtype != "int8":
        return dtype
    kind = getattr(ctx, "kind", None)
    decoder = kind.language_model if kind is not None else type(model).__name__.endswith("ForCausalLM")
    return "int8-per-token" if decoder else "int8-per-tensor"


class Quantize(CompressionMethod):
    """Post-training quantization: no training (``config.recovers`` is False); ``finalize`` replaces
    the model's Linears (int8 per tensor), rounds them and quantizes their inputs per token (int8 per
    token) or casts all weights (bf16), and records whether a speedup is expected, which
    ``report_section`` hands to the card."""

    def __init__(self, config):
        super().__init__(config)
        self.speedup: dict = {}

    def finalize(self, model, ctx):
        model = model.float().eval()
        self.dtype = resolved_dtype(self.config.dtype, model, ctx)
        if self.dtype == "bf16":
            cast_bf16(model)
            what = "every weight and activation in bfloat16"
        else:
            names = linear_names(model, self.config.linears)
            if not names:
                raise ConfigError(f"quantize: no nn.Linear found for linears={self.config.linears!r}")
            what = self._int8(model, names, ctx)
        expected, why = speedup_expected(model, self.dtype)
        self.speedup = {"expected": expected, "why": why}
        chosen = f" (int8 on a {'decoder LLM' if self.dtype == 'int8-per-token' else 'non-LLM model'})" \
            if self.config.dtype == "int8" else ""
        ctx.notes.append(f"quantize {self.dtype}{chosen}: {what}; speedup {'expected' if expected else 'not expected'}"
                         f" ({why})")
        return model

    def _int8(self, model: nn.Module, names: list[str], ctx) -> str:
        if self.dtype == "int8-per-token":
            with torch.no_grad():
                for name in names:
                    module = model.get_submodule(name)
                    attach(module, W8A8.round(weight_matrix(module)), W8A8.input_quant(), W8A8)
            return (f"{len(names)} Linear modules ({self.config.linears}): int8 weights per output channel, int8 inputs "
                    "per token (W8A8, compressed-tensors int-quantized)")
        self.outliers = outlier_report(model, names, ctx) if resolved_dtype("int8", model, ctx) == \
            "int8-per-token" else None
        if self.outliers and self.outliers["warn"]:
            logger.warning(self.outliers["text"])
            ctx.notes.append(self.outliers["text"])
        quantize_int8(model, names)
        return f"{len(names)} Linear modules ({self.config.linears}) in dynamic int8, per-channel weights, per-tensor inputs"

    def report_section(self) -> dict | None:
        """``{"quantization": {dtype, expected, why}}`` for the card's deployment section (None before
        the model was quantized)."""
        if not self.speedup:
            return None
        outliers = getattr(self, "outliers", None)
        return {"quantization": {"dtype": self.config.dtype, "scheme": self.dtype, **self.speedup,
                                 **({"outliers": outliers} if outliers else {})}}
