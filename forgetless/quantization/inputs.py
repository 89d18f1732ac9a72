"""Quantized inputs of a Linear (W8A8 int8, FP8): the quantize-dequantize of the activations that a
W8A8 kernel (vLLM's) computes in integer / float8 arithmetic, run on the CPU in the model's precision.

Symmetric absmax quantization (Jacob et al. 2018, eq. 1 with ``Z = 0``; Xiao et al. 2023 "SmoothQuant",
§2: per-token activation scales; Micikevicius et al. 2022 "FP8 formats for deep learning": E4M3, largest
finite value 448), as compressed-tensors 0.20 computes it (``calculate_qparams``, ``fake_quantize``), so
a folder loaded by plain transformers runs the same numbers:

    s = max(|min(x)|, |max(x)|, 0) / (R / 2)       R = 255 (int8: −128 … 127) or 896 (fp8: −448 … 448)
    x̂ = s · round(clamp(x / s, q_min, q_max))       (int8: round half to even; fp8: cast to float8_e4m3fn)

``x`` ranges over one token (the last dimension: ``token``, dynamic, computed for every input) or over
the whole tensor with ``s`` fixed from calibration (``tensor``, static: the largest ``|x|`` seen on the
calibration tokens). A scale of exactly 0 becomes the dtype's machine epsilon (an all-zero token stays
zero). compressed-tensors reduces every dimension after the first two (the same for the ``batch × tokens ×
hidden`` inputs of transformers' models).

``InputQuant`` is kept on the module (``INPUT_ATTR``) and applied by a forward pre-hook
(``quantize_inputs``); ``args()`` is compressed-tensors' ``input_activations``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

INPUT_ATTR = "input_quant"  # the attribute holding a Linear's ``InputQuant``
HOOK_ATTR = "_input_quant_hook"
FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
RANGES = {"int": (-128.0, 127.0), "float": (-FP8_MAX, FP8_MAX)}
ACTIVATIONS = {"int8-token": ("int", "token"), "fp8-token": ("float", "token"), "fp8-tensor": ("float", "tensor")}


def absmax_scale(low: torch.Tensor, high: torch.Tensor, kind: str) -> torch.Tensor:
    """compressed-tensors' symmetric scale from the minima / maxima of the values (0 always in range)."""
    q_min, q_max = RANGES[kind]
    low, high = torch.clamp(low, max=0), torch.clamp(high, min=0)
    half = torch.tensor(q_max - q_min, dtype=low.dtype) / 2
    scale = torch.maximum(low.abs(), high.abs()) / half
    return torch.where(scale == 0, torch.tensor(torch.finfo(scale.dtype).eps, dtype=scale.dtype), scale)


def quantize_dequantize(x: torch.Tensor, scale: torch.Tensor, kind: str) -> torch.Tensor:
    """``s · round(clamp(x / s))`` on the int8 or float8_e4m3fn grid (``scale`` broadcast against ``x``)."""
    q_min, q_max = RANGES[kind]
    scaled = (x / scale).clamp_(q_min, q_max)  # in place on the new tensors: two fewer copies of the activations
    rounded = scaled.round_() if kind == "int" else scaled.to(FP8).to(x.dtype)
    return rounded.mul_(scale) if rounded.dtype == torch.promote_types(rounded.dtype, scale.dtype) else \
        rounded.to(scale.dtype) * scale


def token_scales(x: torch.Tensor, kind: str) -> torch.Tensor:
    """One scale per token (over the last dimension, kept for broadcasting)."""
    return absmax_scale(torch.amin(x, dim=-1, keepdim=True), torch.amax(x, dim=-1, keepdim=True), kind)


@dataclass
class InputQuant:
    """How a Linear's inputs are quantized: ``kind`` "int" (int8) or "float" (float8_e4m3fn), ``strategy``
    "token" (dynamic) or "tensor" (static: ``scale``, a one-element float32 tensor from calibration)."""

    kind: str
    strategy: str
    scale: torch.Tensor | None = None

    def __post_init__(self):
        if self.kind not in RANGES or self.strategy not in ("token", "tensor"):
            raise ValueError(f"input quantization {self.kind} / {self.strategy}: kind int or float, strategy token "
                             "or tensor")
        if (self.strategy == "tensor") != (self.scale is not None):
            raise ValueError("a per-tensor input scale is static (give scale); a per-token one is dynamic (none)")

    @classmethod
    def named(cls, activations: str, absmax: float | None = None) -> InputQuant:
        """From an ``activations`` option value (``ACTIVATIONS``); ``absmax``: calibration's largest |x|
        (static schemes only)."""
        kind, strategy = ACTIVATIONS[activations]
        if strategy == "token":
            return cls(kind, strategy)
        value = torch.tensor([float(absmax)], dtype=torch.float32)
        return cls(kind, strategy, absmax_scale(-value, value, kind))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.strategy == "token":
            return quantize_dequantize(x, token_scales(x, self.kind), self.kind)
        return quantize_dequantize(x, self.scale.to(x.device, x.dtype), self.kind)

    def args(self) -> dict:
        """compressed-tensors' ``QuantizationArgs`` of these inputs, keys as llm-compressor writes them."""
        dynamic = self.strategy == "token"
        return {"actorder": None, "block_structure": None, "dynamic": dynamic, "group_size": None, "num_bits": 8,
                "observer": None if dynamic else "static_minmax", "observer_kwargs": {}, "scale_dtype": None,
                "strategy": self.strategy, "symmetric": True, "type": self.kind, "zp_dtype": None}

    @classmethod
    def from_args(cls, args: dict, scale: torch.Tensor | None) -> InputQuant:
        """Inverse of ``args`` (``scale``: the stored ``input_scale`` of a static scheme)."""
        if int(args.get("num_bits", 0)) != 8 or not args.get("symmetric", False) or \
                args.get("strategy") not in ("token", "tensor") or args.get("type") not in RANGES or \
                bool(args.get("dynamic")) != (args.get("strategy") == "token"):
            raise ValueError(f"input activations {args}: forgetless reads symmetric 8-bit int / float inputs, "
                             "dynamic per token or static per tensor")
        return cls(args["type"], args["strategy"], None if args["strategy"] == "token" else scale.float().reshape(1))

    def stored(self, name: str) -> dict[str, torch.Tensor]:
        """The module's activation tensors in the checkpoint (a static scale only)."""
        return {} if self.scale is None else {f"{name}.input_scale": self.scale.to(torch.float32).reshape(1)}


def _pre_hook(module: nn.Module, args: tuple):
    quant = getattr(module, INPUT_ATTR, None)
    if quant is None or not args:
        return None
    return (quant(args[0]), *args[1:])


def quantize_inputs(module: nn.Module, quant: InputQuant | None) -> None:
    """Quantize ``module``'s inputs with ``quant`` from now on (None: stop); one hook per module."""
    setattr(module, INPUT_ATTR, quant)
    if quant is not None and getattr(module, HOOK_ATTR, None) is None:
        setattr(module, HOOK_ATTR, module.register_forward_pre_hook(_pre_hook))
    if quant is None and getattr(module, HOOK_ATTR, None) is not None:
        getattr(module, HOOK_ATTR).remove()
        setattr(module, HOOK_ATTR, None)


def input_quantized(model: nn.Module) -> dict[str, InputQuant]:
    """``{module name: InputQuant}`` of the modules whose inputs are quantized."""
    return {name: quant for name, module in model.named_modules()
            if (quant := getattr(module, INPUT_ATTR, None)) is not None}
