"""AWQ (Lin et al. 2024, "AWQ: Activation-aware Weight Quantization for On-Device LLM Compression and
Acceleration"), §3.2, layer by layer on calibration text: for each group of linears that read one input
(q / k / v, o, gate / up, down) the per-channel scales of eq. 4-5 (``search.py``) are folded into the
module producing that input (``_shared/folding.py``: a norm, or ``v_proj`` / ``up_proj`` rows where
widths match; a group with no producer keeps ``s = 1``), in module order; once every group of the layer
is scaled, each linear's clipping range is searched and its weights rounded to nearest on the
``bits``-bit grid (``quantization/ints.py``; AutoAWQ's asymmetric grid with ``--asymmetric``).
Each layer is calibrated on the outputs of the layers already quantized.

Stored as compressed-tensors ``pack-quantized`` (what llm-compressor's ``AWQModifier`` +
``QuantizationModifier(scheme="W4A16_ASYM")`` write); in memory the dequantized float32 weights, so no
speedup on CPU. The card gets the chosen α per group, the error ratio to plain round-to-nearest on the
calibration inputs, and the per-layer reconstruction error ‖WX − ŴX‖ / ‖WX‖.
"""
from __future__ import annotations

import statistics

import torch

from ...models.sites import weight_matrix
from ...quantization.layers import attach
from .._shared.budget import formatted
from .._shared.folding import FoldingMethod, Group, fold
from .._shared.hessian import relative_reconstruction_error
from .._shared.quantized import QuantizedOutput, describe
from .config import AwqConfig
from .search import clip_search, search_scales


class Awq(QuantizedOutput, FoldingMethod):
    config: AwqConfig

    def transform_layer(self, where: str, groups: list[Group], producers: list) -> list[dict]:
        searched = []
        for (names, modules, stats), producer in zip(groups, producers):
            hessian = stats.hessian.float()
            alpha, errors = None, None
            if producer is not None:
                with formatted(self, names[0], where) as c:  # a bit budget: the group's first linear's format
                    scales, alpha, errors = search_scales([weight_matrix(m) for m in modules], hessian,
                                                          stats.abs_mean, c, c.grid, c.duo_scaling)
                fold(producer[1], modules, scales)
                hessian = hessian / torch.outer(scales, scales)  # the Hessian of the scaled inputs X diag(s)⁻¹
            searched.append((names, modules, hessian, producer, alpha, errors))
        entries = []
        for names, modules, hessian, producer, alpha, errors in searched:  # every fold of the layer done (v → o)
            for name, module in zip(names, modules):
                weight = weight_matrix(module)
                with formatted(self, name, where) as c:
                    codes = c.format.round(clip_search(weight, hessian, c) if c.clip else weight)
                    error = relative_reconstruction_error(weight, codes.dequantize(), hessian)
                    attach(module, codes, None, c.format)
                entries.append({"module": name, "producer": producer[0] if producer else None, "alpha": alpha,
                                "error_ratio": errors["best"] / errors["initial"] if errors and errors["initial"]
                                else None, "reconstruction_error": error})
        return entries

    def note(self, texts: int) -> str:
        c = self.config
        scaled = sum(1 for e in self.layers if e["producer"])
        return (f"awq: {describe(c)}, scales s_X^α{' / s_W^(1−α)' if c.duo_scaling else ''} searched over "
                f"{c.grid} values of α{', clipping searched' if c.clip else ''}; {scaled} of {len(self.layers)} "
                f"linear layers scaled (the rest have no producer to fold into), calibrated on {texts} texts; "
                f"{c.format.speed_note}")

    def section_keys(self) -> dict:
        ratios = [e["error_ratio"] for e in self.layers if e["error_ratio"] is not None]
        return {"awq_error_ratio": {"mean": statistics.fmean(ratios) if ratios else None, "scaled_layers": len(ratios)},
                "calibration_examples": self.config.calibration_examples}
