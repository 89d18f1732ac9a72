"""Round-to-nearest (RTN) quantization, the baseline GPTQ (Frantar et al. 2022) is measured against: per
output row and group of ``group_size`` input columns the min-max grid of ``quantization/ints.py`` (``S = (max −
min) / (2^b − 1)``, ``Z = round(−min / S)``; symmetric: ``S = 2·max|w| / (2^b − 1)``, ``Z = 2^(b−1)``),
each weight rounded alone, ``ŵ = S · (q − Z)``; or float8_e4m3fn codes with one scale per row or matrix
(``S = max|w| / 448``, ``quantization/fp8.py``). The same rule as llm-compressor's
``QuantizationModifier`` ("memoryless_minmax" observer), up to float rounding: the integer grid here is
computed in float64, theirs in float32 (a tiny Llama, 4 bits, groups of 32: asymmetric codes and zero
points identical, 38 of 128 scales 1 ulp apart; symmetric scales identical, 28 of 4096 codes one step
apart, all at exact ties ``w / S = −7.5``); the fp8 grid in float32, as theirs.

With ``activations`` int8-token / fp8-token (W8A8-INT8, FP8-DYNAMIC) every quantized layer's inputs are
quantized per token at run time (``quantization/inputs.py``); static input scales need calibration
and are ``gptq``'s.

Every linear layer of the transformer stacks that ``targets`` / ``ignore`` choose (``models/targets.py``;
mixture-of-experts: each expert's projections, ``models/experts.py``), no calibration. Stored as
compressed-tensors (``pack-quantized``, ``int-quantized`` or ``float-quantized``: stock ``from_pretrained``
loads it with the ``compressed-tensors`` package); in memory the dequantized float32 weights, so no
speedup on CPU. Exact zeros stay zero (the grid always holds 0), so a pruned pattern survives.
"""
from __future__ import annotations

import torch

from ...models.experts import linearized
from ...models.sites import weight_matrix
from ...models.targets import coverage, select_linears
from ...quantization.layers import attach
from .._shared.budget import formatted, selection_of, start_budget
from .._shared.oneshot import coverage_note
from .._shared.quantized import QuantizedOutput, describe, finish_quantized
from ..base import CompressionMethod
from .config import RtnConfig


class Rtn(QuantizedOutput, CompressionMethod):
    """``finalize`` rounds every linear layer of the stacks; ``report_section`` hands bits, group size,
    storage and the relative weight error ‖W − Ŵ‖_F / ‖W‖_F per layer to the card."""

    config: RtnConfig
    ERROR = "weight_error"  # the layers' relative weight error (round-to-nearest measures no output)

    def finalize(self, model, ctx):
        c = self.config
        self.check_fits(model)
        start_budget(self, model, ctx)
        with linearized(model), torch.no_grad():
            linears = select_linears(model, selection_of(self))
            self.coverage = coverage(model, linears, selection_of(self))
            self.layers = []
            for name, module in linears:
                with formatted(self, name):
                    self.layers.append({"module": name, "weight_error": self._round(module)})
        if ctx is not None:
            what = "the budget's formats" if self.plan is not None else describe(c)
            ctx.notes.append(f"rtn: {what}, round-to-nearest in {len(self.layers)} linear layers; {c.format.speed_note}")
            ctx.notes.append(coverage_note("rtn", self.coverage))
        return finish_quantized(self, model, ctx)

    def _round(self, module) -> float:
        """Round ``module``'s weight to the format's grid; its relative weight error ‖W − Ŵ‖_F / ‖W‖_F."""
        fmt = self.config.format
        original = weight_matrix(module).double()  # a copy: the weight becomes Ŵ in place
        attach(module, fmt.round(weight_matrix(module)), fmt.input_quant(), fmt)
        return float((original - weight_matrix(module).double()).norm() / original.norm()) if original.any() else 0.0

    def section_keys(self) -> dict:
        return {"act_order": False}
