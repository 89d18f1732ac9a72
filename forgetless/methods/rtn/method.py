"""Round-to-nearest (RTN) weight-only quantization, the baseline GPTQ (Frantar et al. 2022) is
measured against: per output row and group of ``group_size`` input columns the min-max grid of
``gptq/solver.py`` (``S = (max − min) / (2^b − 1)``, ``Z = round(−min / S)``; symmetric: ``S =
2·max|w| / (2^b − 1)``, ``Z = 2^(b−1)``), each weight rounded alone, ``ŵ = S · (q − Z)``. The same
rule as llm-compressor's ``QuantizationModifier`` ("memoryless_minmax" observer), up to float rounding:
the grid here is computed in float64, theirs in float32 (a tiny Llama, 4 bits, groups of 32: asymmetric
codes and zero points identical, 38 of 128 scales 1 ulp apart; symmetric scales identical, 28 of 4096
codes one step apart, all at exact ties ``w / S = −7.5``).

Every linear layer of the transformer stacks that ``targets`` / ``ignore`` choose (``models/targets.py``;
mixture-of-experts: each expert's projections, ``models/experts.py``), no calibration.
Stored like ``gptq``'s output (compressed-tensors ``pack-quantized``: stock ``from_pretrained`` loads
it with the ``compressed-tensors`` package); in memory the dequantized float32 weights, so no
speedup on CPU. Exact zeros stay zero (the grid always holds 0), so a pruned pattern survives.
"""
from __future__ import annotations

import statistics

import torch

from ...models.compressed_tensors import set_grouped
from ...models.expert_checkpoint import storage_notes
from ...models.experts import linearized
from ...models.sites import weight_matrix
from ...models.targets import Selection, coverage, select_linears
from .._shared.oneshot import coverage_note
from ..base import CompressionMethod
from ..gptq.method import NO_SPEEDUP
from ..gptq.solver import round_to_nearest
from ..quantize.grid import check_group_fits
from .config import RtnConfig


class Rtn(CompressionMethod):
    """``finalize`` rounds every linear layer of the stacks; ``report_section`` hands bits, group size,
    storage and the relative weight error ‖W − Ŵ‖_F / ‖W‖_F per layer to the card."""

    config: RtnConfig

    def finalize(self, model, ctx):
        c = self.config
        with linearized(model), torch.no_grad():
            linears = select_linears(model, Selection.of(c))
            for name, module in linears:
                check_group_fits(c.group_size, weight_matrix(module).shape[1], f"{name} has")
            self.coverage = coverage(model, linears, Selection.of(c))
            self.layers = [{"module": name, "weight_error": self._round(module)} for name, module in linears]
        self.storage, notes = storage_notes("rtn", model)
        if ctx is not None:
            ctx.notes.append(f"rtn: {c.bits}-bit weights, group size {c.group_size}, "
                             f"{'asymmetric' if c.asymmetric else 'symmetric'}, round-to-nearest in {len(self.layers)} "
                             f"linear layers; {NO_SPEEDUP}")
            ctx.notes.extend(notes)
            ctx.notes.append(coverage_note("rtn", self.coverage))
        return model

    def _round(self, module) -> float:
        """Round ``module``'s weight to the grid; its relative weight error ‖W − Ŵ‖_F / ‖W‖_F."""
        c = self.config
        weight = weight_matrix(module)
        quantized = round_to_nearest(weight, c.bits, c.group_size, not c.asymmetric)
        error = float((weight.double() - quantized.dequantize().double()).norm() / weight.double().norm()
                      ) if weight.any() else 0.0
        set_grouped(module, quantized)
        return error

    def artifacts(self) -> dict:
        return {"bits": self.config.bits, "group_size": self.config.group_size, "layers": getattr(self, "layers", [])}

    def report_section(self) -> dict | None:
        if not getattr(self, "layers", None):
            return None
        c = self.config
        errors = [e["weight_error"] for e in self.layers]
        return {"quantization": {
            "dtype": f"rtn int{c.bits}", "bits": c.bits, "group_size": c.group_size, "asymmetric": c.asymmetric,
            "act_order": False, "layers": len(self.layers), **self.storage, "modules": self.coverage,
            "weight_error": {"mean": statistics.fmean(errors), "max": max(errors)}, "expected": False,
            "why": NO_SPEEDUP}}
