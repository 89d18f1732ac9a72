"""GPTQ (Frantar, Ashkboos, Hoefler & Alistarh 2022, "GPTQ: Accurate Post-Training Quantization for
Generative Pre-trained Transformers"), Algorithm 1, on every linear layer of the transformer stacks:
calibration and layer order (each layer fitted to its quantized predecessors' outputs) shared with
Wanda and SparseGPT (``_shared/oneshot.py``), the column sweep in ``solver.py``.

Each quantized Linear keeps dense float32 weights ``S · (q − Z)`` plus its codes
(``models.quantized_io.GroupedInts``); ``save_model`` writes the codes packed (``bits`` per weight
plus a float32 scale and a packed zero point per group), and ``load_model`` rebuilds the same
float32 weights bit for bit. The model is smaller on disk, not faster: CPU inference runs the
dequantized float32 weights (int4 matrix kernels need a GPU library). The card gets bits, group
size, bits per weight as stored and the per-layer reconstruction error ‖WX − ŴX‖ / ‖WX‖.
"""
from __future__ import annotations

import statistics

from torch import nn

from ...models.quantized_io import grouped_modules, grouped_storage, set_grouped
from ...models.sites import weight_matrix
from .._shared.hessian import HessianAccumulator, relative_reconstruction_error
from .._shared.oneshot import OneShotMethod, linear_widths
from .config import GptqConfig
from .solver import gptq_quantize

NO_SPEEDUP = ("no speedup on CPU: weights are dequantized to float32 when loaded (int4 / int3 / int2 matrix "
              "kernels need a GPU library); the saving is on disk")


class Gptq(OneShotMethod):
    config: GptqConfig

    def check_fits(self, model: nn.Module) -> None:
        for where, width in linear_widths(model):
            self.config.check_group_fits(width, f"{where} has")

    def compress_linear(self, module: nn.Module, stats: HessianAccumulator) -> dict:
        c = self.config
        weight = weight_matrix(module)
        quantized = gptq_quantize(weight, stats.hessian, bits=c.bits, group_size=c.group_size, symmetric=c.symmetric,
                                  act_order=c.act_order, block_size=c.block_size, damp=c.damp)
        error = relative_reconstruction_error(weight, quantized.dequantize(), stats.hessian)
        set_grouped(module, quantized)
        return {"reconstruction_error": error, "group_size": quantized.group_size}

    def note(self, texts: int) -> str:
        c = self.config
        return (f"gptq: {c.bits}-bit weights, group size {c.group_size}, {'symmetric' if c.symmetric else 'asymmetric'}"
                f"{', act-order' if c.act_order else ''} in {len(self.layers)} linear layers, calibrated on {texts} "
                f"texts; {NO_SPEEDUP}")

    def finalize(self, model, ctx):
        self.storage = grouped_storage(grouped_modules(model))
        return model

    def artifacts(self) -> dict:
        return {"bits": self.config.bits, "group_size": self.config.group_size, "layers": self.layers}

    def report_section(self) -> dict | None:
        if not getattr(self, "layers", None):
            return None
        c = self.config
        errors = [e["reconstruction_error"] for e in self.layers]
        return {"quantization": {
            "dtype": f"gptq int{c.bits}", "bits": c.bits, "group_size": c.group_size, "symmetric": c.symmetric,
            "act_order": c.act_order, "layers": len(self.layers), **getattr(self, "storage", {}),
            "reconstruction_error": {"mean": statistics.fmean(errors), "max": max(errors)},
            "calibration_examples": c.calibration_examples, "expected": False, "why": NO_SPEEDUP}}
