"""FP8 weights (``--weight-type fp8``, registered as ``fp8``; Micikevicius et al. 2022, "FP8 formats for deep learning": E4M3, largest finite value
448) in memory (``FloatCodes``) and as compressed-tensors' ``float-quantized`` checkpoint, the format
llm-compressor writes for its ``FP8_DYNAMIC`` / ``FP8`` presets and vLLM serves.

One float32 scale per output row (``channel``) or for the whole matrix (``tensor``), computed as
compressed-tensors 0.20 does (``calculate_qparams``, symmetric): ``S = max|w| / 448``; the stored code is
``q = float8_e4m3fn(clamp(w / S, −448, 448))`` (round to nearest even) and the weight ``ŵ = S · q``
in float32. On disk a quantized Linear ``M`` keeps ``M.weight`` as ``F8_E4M3`` (out × in) and
``M.weight_scale`` (float32, ``out × 1`` or ``[1]``); loading multiplies them back in float32, the same
product as compressed-tensors' decompression.

GPTQ (Frantar et al. 2022, Algorithm 1, eq. 2-3) fixes each column to its fp8 value ``S · fp8(w / S)``
(``Fp8Rule``); the scales are taken from the original weights before the sweep, as llm-compressor fixes them.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import ForgetlessError, OptionError
from .format import QuantFormat, check_group_size
from .inputs import FP8, absmax_scale

STRATEGIES = ("channel", "tensor")
FLOAT_QUANTIZED = "float-quantized"  # compressed-tensors' format of float8 weights
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
    CT_TYPE = "float"  # compressed-tensors' ``type`` of these weights
    FORMATS = (FLOAT_QUANTIZED,)
    GRIDS_IN_SWEEP = False  # GPTQ takes the scales from the original weights, before its sweep

    # --- what the format asks of fp8 codes
    @staticmethod
    def check(fmt: QuantFormat) -> None:
        """float8_e4m3fn: 8 bits, symmetric, one scale per row (-1) or per matrix (0)."""
        check_group_size(fmt.group_size, tensor=True)
        if fmt.bits != 8 or not fmt.symmetric:
            fixes = [f"give --bits 8 (got {fmt.bits})"] * (fmt.bits != 8) + ["drop --asymmetric"] * (not fmt.symmetric)
            raise OptionError(f"--weight-type fp8: float8_e4m3fn is an 8-bit symmetric format; {' and '.join(fixes)}")
        if fmt.group_size not in (-1, 0):
            raise OptionError(f"--group-size {fmt.group_size}: fp8 weights take one scale per output row (-1) or per "
                              "matrix (0), as compressed-tensors' FP8 schemes")

    @staticmethod
    def takes_inputs(fmt: QuantFormat) -> bool:
        """Quantized inputs: fp8, per token or per tensor (compressed-tensors' FP8 schemes)."""
        return fmt.activations.startswith("fp8")

    @staticmethod
    def label(fmt: QuantFormat) -> str:
        return "fp8"

    @staticmethod
    def describe(fmt: QuantFormat) -> str:
        return f"fp8 (e4m3) weights, one scale per {'output row' if fmt.group_size == -1 else 'matrix'}"

    @staticmethod
    def ct_format(fmt: QuantFormat) -> str:
        return FLOAT_QUANTIZED

    @classmethod
    def rounded(cls, weight: torch.Tensor, fmt: QuantFormat) -> FloatCodes:
        """Every weight rounded alone to its scale's fp8 grid (llm-compressor's ``QuantizationModifier``)."""
        scales = fp8_scales(weight, fmt.strategy)
        return cls(fp8_codes(weight.detach().to(torch.float32), scales), scales, fmt.strategy)

    @classmethod
    def gptq_rule(cls, weights: list[torch.Tensor], weight_t: torch.Tensor, perm: torch.Tensor, fmt: QuantFormat,
                  static: bool) -> Fp8Rule:
        """GPTQ's column rule (scales from the original ``weights``, fixed before the sweep)."""
        return Fp8Rule([fp8_scales(w, fmt.strategy) for w in weights], weights, weight_t.shape[0], fmt.strategy)

    # --- one layer's codes
    @property
    def group_size(self) -> int:
        """-1: one scale per row; 0: one for the tensor (the ``group_size`` option's values)."""
        return -1 if self.strategy == "channel" else 0

    def dequantize(self) -> torch.Tensor:
        """``S · q`` in float32 (the codes' values looked up: the CPU's float8 cast is elementwise and slow)."""
        return torch.take(FP8_VALUES.to(self.codes.device), self.codes.view(torch.uint8).long()) * self.scales

    def ct_form(self, inputs: bool) -> str:
        return FLOAT_QUANTIZED

    def weights_args(self) -> dict:
        """compressed-tensors' ``QuantizationArgs`` of this weight, keys as llm-compressor writes them."""
        return {"actorder": None, "block_structure": None, "dynamic": False, "group_size": None, "num_bits": 8,
                "observer": "memoryless_minmax", "observer_kwargs": {}, "scale_dtype": None,
                "strategy": self.strategy, "symmetric": True, "type": "float", "zp_dtype": None}

    def stored(self, name: str, form: str = FLOAT_QUANTIZED) -> dict[str, torch.Tensor]:
        return {f"{name}.weight": self.codes.contiguous(), f"{name}.weight_scale": self.scales.contiguous()}

    @staticmethod
    def reads(form: str, weights: dict) -> bool:
        return weights.get("type") == "float" and weights.get("strategy") in STRATEGIES

    @staticmethod
    def layout(name: str, form: str, weights: dict, rows: int, columns: int, scale: tuple) -> dict[str, tuple]:
        return {f"{name}.weight": ((rows, columns), "F8_E4M3"), f"{name}.weight_scale": scale}

    @classmethod
    def from_stored(cls, tensors: dict, name: str, args: dict, form: str = FLOAT_QUANTIZED) -> FloatCodes:
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


class Fp8Rule:
    """GPTQ's rounding to fp8 as a ``ColumnRule`` on the permuted, transposed weight (``in × out``):
    scales per output row (``out``, one value repeated for a per-matrix scale), fixed before the sweep."""

    def __init__(self, scales: list[torch.Tensor], weights: list[torch.Tensor], columns: int, strategy: str):
        self.layer_scales, self.strategy = scales, strategy
        self.scales = torch.cat([s.expand(len(wi), 1) for s, wi in zip(scales, weights)]).reshape(-1).to(torch.float64)
        self.codes = torch.zeros(columns, len(self.scales), dtype=FP8)

    def start_block(self, start: int, end: int, weight_t: torch.Tensor) -> None:
        pass

    def fix(self, index: int, column: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
        self.codes[index] = fp8_codes(column, self.scales)
        return self.codes[index].to(torch.float64) * self.scales

    def results(self, perm: torch.Tensor, segments: list[slice]) -> list[FloatCodes]:
        """Each linear's codes (``segments``: its rows), in natural column order."""
        codes = torch.empty_like(self.codes)
        codes[perm] = self.codes
        return [FloatCodes(codes[:, rows].T.contiguous(), scale, self.strategy)
                for rows, scale in zip(segments, self.layer_scales)]
