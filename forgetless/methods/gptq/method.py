"""GPTQ (Frantar, Ashkboos, Hoefler & Alistarh 2022, "GPTQ: Accurate Post-Training Quantization for
Generative Pre-trained Transformers"), Algorithm 1, on every linear layer of the transformer stacks:
calibration and layer order (each layer fitted to its quantized predecessors' outputs) shared with
Wanda and SparseGPT (``_shared/oneshot.py``), the column sweep in ``solver.py``.

Each quantized Linear keeps dense float32 weights ``S · (q − Z)`` plus its codes
(``models.compressed_tensors.GroupedInts``); ``save_model`` writes a compressed-tensors
``pack-quantized`` checkpoint (as llm-compressor does: stock ``from_pretrained`` loads it with the
``compressed-tensors`` package, vLLM serves it on GPUs), and ``load_model`` rebuilds the same float32
weights bit for bit. Act-order is recorded as compressed-tensors' ``actorder: "weight"`` (groups
stay contiguous). The model is smaller on disk, not faster on CPU: inference runs the dequantized
float32 weights (int4 matrix kernels need a GPU). The card gets bits, group size, bits per weight
as stored and the per-layer reconstruction error ‖WX − ŴX‖ / ‖WX‖.
"""
from __future__ import annotations

import statistics

from torch import nn

from ...models.compressed_tensors import grouped_modules, grouped_storage, set_grouped, storage_note, unpacked_modules
from ...models.sites import weight_matrix
from ..quantize.grid import check_group_fits
from .._shared.hessian import HessianAccumulator, relative_reconstruction_error
from .._shared.oneshot import OneShotMethod, linear_widths
from .config import GptqConfig
from .solver import gptq_quantize

NO_SPEEDUP = ("no speedup on CPU: weights are dequantized to float32 when loaded (int4 / int8 weight-only matrix "
              "kernels need a GPU, e.g. vLLM's); the saving is on disk and in GPU memory")


class Gptq(OneShotMethod):
    config: GptqConfig

    def check_fits(self, model: nn.Module) -> None:
        for where, width in linear_widths(model):
            check_group_fits(self.config.group_size, width, f"{where} has")

    def compress_linear(self, module: nn.Module, stats: HessianAccumulator) -> dict:
        c = self.config
        weight = weight_matrix(module)
        quantized = gptq_quantize(weight, stats.hessian, bits=c.bits, group_size=c.group_size, symmetric=c.symmetric,
                                  act_order=c.act_order, block_size=c.block_size, damp=c.damp)
        quantized.actorder = "weight" if c.act_order else None
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
        dense = unpacked_modules(model)
        if ctx is not None:
            ctx.notes.append(storage_note("gptq", self.storage))
        if dense and ctx is not None:  # GPT-2's Conv1D: compressed-tensors stores nn.Linear only
            ctx.notes.append(f"gptq: {len(dense)} quantized layers (e.g. {dense[0]}) are not nn.Linear and are saved "
                             "as float32 (their values on the int grid): compressed-tensors packs nn.Linear only")
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
