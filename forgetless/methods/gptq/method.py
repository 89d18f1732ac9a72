"""GPTQ (Frantar, Ashkboos, Hoefler & Alistarh 2022, "GPTQ: Accurate Post-Training Quantization for
Generative Pre-trained Transformers"), Algorithm 1, on every linear layer of the transformer stacks:
calibration and layer order (each layer fitted to its quantized predecessors' outputs) shared with
Wanda and SparseGPT (``_shared/oneshot.py``), the column sweep in ``solver.py``.

Each quantized Linear keeps dense float32 weights ``S · (q − Z)`` plus its codes
(``quantization.ints.GroupedInts``); ``save_model`` writes a compressed-tensors
``pack-quantized`` checkpoint (as llm-compressor does: stock ``from_pretrained`` loads it with the
``compressed-tensors`` package, vLLM serves it on GPUs), and ``load_model`` rebuilds the same float32
weights bit for bit. Act-order is recorded as compressed-tensors' ``actorder: "weight"`` (groups
stay contiguous). The model is smaller on disk, not faster on CPU: inference runs the dequantized
float32 weights (int4 matrix kernels need a GPU). The card gets bits, group size, bits per weight
as stored, the grid rule that ran (``grid_rule``: static or dynamic, in the note, ``describe()`` and
the section) and the per-layer reconstruction error ‖WX − ŴX‖ / ‖WX‖.

The format (``quantization/format.py``, from the options of ``quantization/options.py``) also gives fp8
weights (the same sweep fixing each column to its fp8 value, ``quantization/fp8.py``) and quantized
inputs (W8A8: int8 or fp8 per token, or fp8 per tensor with the scale from the calibration inputs' largest
``|x|``), saved as compressed-tensors ``int-quantized`` / ``float-quantized``; on CPU their quantize-dequantize
runs in float32.
"""
from __future__ import annotations

from torch import nn

from ...errors import ConfigError
from ...models.sites import weight_matrix
from ...quantization.format import INTEGER
from ...quantization.layers import attach
from .._shared.hessian import HessianAccumulator
from .._shared.oneshot import OneShotMethod
from .._shared.quantized import QuantizedOutput, describe, label
from .config import GptqConfig
from .solver import gptq_quantize_many

GRID_RULES = {"dynamic": "each group's grid fixed when the sweep reaches it, from the error-updated weights (the "
                         "GPTQ authors' rule)",
              "static": "every group's grid fixed from the original weights before the sweep (static groups, "
                        "llm-compressor's rule)"}


class Gptq(QuantizedOutput, OneShotMethod):
    config: GptqConfig

    fallback = "round-to-nearest"  # GPTQ on identity statistics (``solver.py``)

    def check_streams(self) -> None:
        c = self.config
        if c.format.type != INTEGER:
            raise ConfigError(f"gptq {label(c)}: streamed calibration writes integer codes (pack-quantized, or "
                              "int-quantized with int8 inputs); pass a model object for fp8 weights")

    def compress_linears(self, modules: list[nn.Module], stats: HessianAccumulator) -> list[dict]:
        c = self.config
        weights, fmt = [weight_matrix(m) for m in modules], c.format
        quantized = gptq_quantize_many(weights, stats.hessian, fmt, c.act_order, c.static_groups, c.block_size, c.damp)
        entries = []
        for module, weight, q in zip(modules, weights, quantized):
            q.actorder = "weight" if c.act_order else None
            error = stats.relative_error(weight, q.dequantize())
            attach(module, q, fmt.input_quant(stats.absmax), fmt)
            entries.append({"reconstruction_error": error, "group_size": q.group_size})
        return entries

    @property
    def grid_rule(self) -> str:
        """Which rule fixed the group grids (``solver.py``): "static" or "dynamic"."""
        return "static" if self.config.static_groups or self.config.act_order else "dynamic"

    def note(self, texts: int) -> str:
        c = self.config
        grid = GRID_RULES[self.grid_rule] if c.format.codes.GRIDS_IN_SWEEP else "scales fixed from the original weights"
        return (f"gptq: {describe(c)}{', act-order' if c.act_order else ''}, {grid}, in {len(self.layers)} "
                f"linear layers, calibrated on {texts} texts; {c.format.speed_note}")

    def describe(self) -> dict:
        return {**super().describe(), "grid_rule": self.grid_rule}

    def section_keys(self) -> dict:
        return {"act_order": self.config.act_order, "grid_rule": self.grid_rule,
                "calibration_examples": self.config.calibration_examples}
