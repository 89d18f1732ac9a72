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
as stored, the grid rule that ran (``grid_rule``: static or dynamic, in the note, ``describe()`` and
the section) and the per-layer reconstruction error ‖WX − ŴX‖ / ‖WX‖.
"""
from __future__ import annotations

import statistics

from torch import nn

from ...models.compressed_tensors import set_grouped
from ...models.expert_checkpoint import storage_notes
from ...models.sites import weight_matrix
from ..quantize.grid import check_group_fits
from .._shared.hessian import HessianAccumulator
from .._shared.oneshot import OneShotMethod
from .config import GptqConfig
from .solver import gptq_quantize_many

NO_SPEEDUP = ("no speedup on CPU: weights are dequantized to float32 when loaded (int4 / int8 weight-only matrix "
              "kernels need a GPU, e.g. vLLM's); the saving is on disk and in GPU memory")
GRID_RULES = {"dynamic": "each group's grid fixed when the sweep reaches it, from the error-updated weights (the "
                         "GPTQ authors' rule)",
              "static": "every group's grid fixed from the original weights before the sweep (static groups, "
                        "llm-compressor's rule)"}


class Gptq(OneShotMethod):
    config: GptqConfig

    fallback = "round-to-nearest"  # GPTQ on identity statistics (``solver.py``)

    def check_width(self, name: str, width: int) -> None:
        check_group_fits(self.config.group_size, width, f"{name} has")

    def compress_linears(self, modules: list[nn.Module], stats: HessianAccumulator) -> list[dict]:
        c = self.config
        weights = [weight_matrix(m) for m in modules]
        quantized = gptq_quantize_many(weights, stats.hessian, bits=c.bits, group_size=c.group_size,
                                       symmetric=not c.asymmetric, act_order=c.act_order, static_groups=c.static_groups,
                                       block_size=c.block_size, damp=c.damp)
        entries = []
        for module, weight, q in zip(modules, weights, quantized):
            q.actorder = "weight" if c.act_order else None
            error = stats.relative_error(weight, q.dequantize())
            set_grouped(module, q)
            entries.append({"reconstruction_error": error, "group_size": q.group_size})
        return entries

    @property
    def grid_rule(self) -> str:
        """Which rule fixed the group grids (``solver.py``): "static" or "dynamic"."""
        return "static" if self.config.static_groups or self.config.act_order else "dynamic"

    def note(self, texts: int) -> str:
        c = self.config
        return (f"gptq: {c.bits}-bit weights, group size {c.group_size}, {'asymmetric' if c.asymmetric else 'symmetric'}"
                f"{', act-order' if c.act_order else ''}, {GRID_RULES[self.grid_rule]}, in {len(self.layers)} linear "
                f"layers, calibrated on {texts} texts; {NO_SPEEDUP}")

    def describe(self) -> dict:
        return {**super().describe(), "grid_rule": self.grid_rule}

    def finalize(self, model, ctx):
        self.storage, notes = storage_notes("gptq", model)
        if ctx is not None:
            ctx.notes.extend(notes)
        return model

    def artifacts(self) -> dict:
        return {"bits": self.config.bits, "group_size": self.config.group_size, "layers": self.layers}

    def report_section(self) -> dict | None:
        if not getattr(self, "layers", None):
            return None
        c = self.config
        errors = [e["reconstruction_error"] for e in self.layers]
        return {"quantization": {
            "dtype": f"gptq int{c.bits}", "bits": c.bits, "group_size": c.group_size, "asymmetric": c.asymmetric,
            "act_order": c.act_order, "grid_rule": self.grid_rule, "layers": len(self.layers),
            **getattr(self, "storage", {}),
            "reconstruction_error": {"mean": statistics.fmean(errors), "max": max(errors)},
            "calibration_examples": c.calibration_examples, "expected": False, "why": NO_SPEEDUP}}
