"""FP8 weights (Micikevicius et al. 2022, "FP8 formats for deep learning": E4M3, largest finite value
448) in memory (``FloatCodes``) and as compressed-tensors' ``float-quantized`` checkpoint, the format
llm-compressor writes for its ``FP8_DYNAMIC`` / ``FP8`` presets and vLLM serves.

One float32 scale per output row (``channel``) or for the whole matrix (``tensor``), computed as
compressed-tensors 0.20 does (``calculate_qparams``, symmetric): ``S = max|w| / 448``; the stored code is
``q = float8_e4m3fn(clamp(w / S, −448, 448))`` (round to nearest even) and the weight ``ŵ = S · q``
in float32. On disk a quantized Linear ``M`` keeps ``M.weight`` as ``F8_E4M3`` (out × in) and
``M.weight_scale`` (float32, ``out × 1`` or ``[1]``); loading multiplies them back in float32, the same
product as compressed-tensors' decompression.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import ForgetlessError
from .activation_quant import FP8, absmax_scale

STRATEGIES = ("channel", "tensor")
FP8_VALUES = torch.arange(256, dtype=torch.uint8).view(FP8).to(torch.float32)  # code byte → its value


def fp8_scales(weight: torch.Tensor, strategy: str) -> torch.Tensor:
    """compressed-tensors' scales of ``weight`` (out × in, computed in float32): ``out × 1`` or ``[1]``."""
    w = weight.detach().to(torch.float32)
    if strategy == "channel":
        return absmax_scale(w.amin(dim=1, keepdim=True), w.amax(dim=1, keepdim=True), "float")
    return absmax_scale(w.amin().reshape(1), w.amax().reshape(1), "float")


def fp8_codes(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """``float8_e4m3fn(clamp(w / S, −448, 448))`` (``scales`` broadcast against ``values``)."""
    return torch.clamp(values / scales.to(values.dtype), -448.0, 448.0).to(FP8)


@dataclass
class FloatCodes:
    """One Linear's weight as float8_e4m3fn codes (``out × in``) with float32 scales per row or tensor."""

    codes: torch.Tensor
    scales: torch.Tensor
    strategy: str = "channel"
    bits = 8
    actorder = None

    @classmethod
    def round_to_nearest(cls, weight: torch.Tensor, strategy: str = "channel") -> FloatCodes:
        """Every weight rounded alone to its scale's fp8 grid (llm-compressor's ``QuantizationModifier``)."""
        scales = fp8_scales(weight, strategy)
        return cls(fp8_codes(weight.detach().to(torch.float32), scales), scales, strategy)

    @property
    def group_size(self) -> int:
        """-1: one scale per row; 0: one for the tensor (the ``group_size`` option's values)."""
        return -1 if self.strategy == "channel" else 0

    def dequantize(self) -> torch.Tensor:
        """``S · q`` in float32 (the codes' values looked up: the CPU's float8 cast is elementwise and slow)."""
        return torch.take(FP8_VALUES.to(self.codes.device), self.codes.view(torch.uint8).long()) * self.scales

    def weights_args(self) -> dict:
        """compressed-tensors' ``QuantizationArgs`` of this weight, keys as llm-compressor writes them."""
        return {"actorder": None, "block_structure": None, "dynamic": False, "group_size": None, "num_bits": 8,
                "observer": "memoryless_minmax", "observer_kwargs": {}, "scale_dtype": None,
                "strategy": self.strategy, "symmetric": True, "type": "float", "zp_dtype": None}

    def stored(self, name: str) -> dict[str, torch.Tensor]:
        return {f"{name}.weight": self.codes.contiguous(), f"{name}.weight_scale": self.scales.contiguous()}

    @classmethod
    def from_stored(cls, tensors: dict, name: str, args: dict) -> FloatCodes:
        """Inverse of ``stored`` (pops the module's tensors from ``tensors``)."""
        strategy = args.get("strategy")
        if strategy not in STRATEGIES or int(args.get("num_bits", 0)) != 8 or not args.get("symmetric", False):
            raise ForgetlessError(f"{name}: forgetless reads symmetric 8-bit float weights per channel or per tensor, "
                                  f"not {args}")
        try:
            codes, scales = tensors.pop(f"{name}.weight"), tensors.pop(f"{name}.weight_scale")
        except KeyError as exc:
            raise ForgetlessError(f"quantized module {name} has no {exc.args[0]}") from exc
        expected = (codes.shape[0], 1) if strategy == "channel" else (1,)
        if codes.dtype != FP8 or tuple(scales.shape) != expected:
            raise ForgetlessError(f"{name}: weight {codes.dtype} with weight_scale {tuple(scales.shape)}; expected "
                                  f"{FP8} with {expected}")
        return cls(codes, scales.float(), strategy)
