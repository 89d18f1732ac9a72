"""A linear layer quantized in the format ``grid.WeightFormat`` names, for ``rtn``, ``gptq``, ``awq`` and
``quantize``'s int8 per token:

* weights: integer codes on the min-max grid (``gptq/solver.py``: ``round_to_nearest`` or GPTQ's sweep),
  or float8_e4m3fn codes with one scale per row / matrix (``models/float_codes.py``), rounded alone or
  with GPTQ's error feedback (Frantar et al. 2022, Algorithm 1, eq. 2-3: the same OBS sweep,
  ``_shared/obs_sweep.py``, where a column is fixed to its fp8 value ``S · fp8(w / S)``; the scales
  are taken from the original weights before the sweep, as llm-compressor fixes them);
* inputs (``activations``): ``models/activation_quant.InputQuant``; a static per-tensor scale from the
  largest ``|x|`` of the layer's calibration inputs (``hessian.HessianAccumulator.absmax``).
"""
from __future__ import annotations

import torch
from torch import nn

from ...errors import OptionError
from ...models.activation_quant import FP8, InputQuant, quantize_inputs
from ...models.compressed_tensors import GroupedInts, set_grouped
from ...models.experts import ExpertLinear
from ...models.float_codes import FloatCodes, fp8_codes, fp8_scales
from .._shared.hessian import inverse_cholesky_upper, one_thread, prepare_hessian
from .._shared.obs_sweep import obs_sweep, row_segments
from .grid import WeightFormat

WHAT = {"none": "weight-only", "int8-token": "int8 inputs per token (dynamic)",
        "fp8-token": "fp8 inputs per token (dynamic)", "fp8-tensor": "fp8 inputs per tensor (static, calibrated)"}
CPU_NOTE = ("on CPU the inputs' and weights' quantize-dequantize runs in float32: exactly the numbers a W8A8 kernel "
            "computes, no speedup (int8 / fp8 matrix kernels need a GPU, e.g. vLLM's)")
NO_SPEEDUP = ("no speedup on CPU: weights are dequantized to float32 when loaded (int4 / int8 weight-only matrix "
              "kernels need a GPU, e.g. vLLM's); the saving is on disk and in GPU memory")


def why_no_speedup(fmt: WeightFormat) -> str:
    return CPU_NOTE if fmt.activations != "none" else NO_SPEEDUP


def quantized_artifacts(method) -> dict:
    """What a quantizing method saves with the model: bits, group size (None for a bit budget's mix) and its
    per-layer entries."""
    mixed = bool(method.config.bits_budget)
    return {"bits": None if mixed else method.config.bits, "group_size": None if mixed else method.config.group_size,
            "layers": getattr(method, "layers", [])}


def quantization_section(method, errors: dict, **extra) -> dict | None:
    """A quantizing method's card section (``rtn``, ``gptq``, ``awq``): its format, storage, ``errors``
    (``{name: {mean, max}}``), ``extra`` keys, the speed note, and its sensitivity ranking if measured."""
    from .sensitivity import sensitivity_section

    if not getattr(method, "layers", None):
        return None
    c = method.config
    mixed = bool(c.bits_budget)  # a bit budget's mix: bits and groups per unit, in the budget section
    return {"quantization": {
        "dtype": f"{c.name} {short_label(c)}", "bits": None if mixed else c.bits,
        "group_size": None if mixed else c.group_size, "asymmetric": c.asymmetric,
        "weight_type": c.weight_type, "activations": c.activations, "format": getattr(method, "format", None),
        "layers": len(method.layers), **getattr(method, "storage", {}),
        **({"modules": method.coverage} if getattr(method, "coverage", None) else {}), **errors, **extra, "expected": False,
        "why": why_no_speedup(c)}, **sensitivity_section(method), **budget_section(method)}


def budget_section(method) -> dict:
    """``{"budget": …}`` of a method's card section when it spent a bit budget (``budget.py``)."""
    plan = getattr(method, "plan", None)
    return {"budget": plan.section} if plan is not None else {}


def finish_quantized(method, model: nn.Module, ctx) -> nn.Module:
    """The end of a quantizing method's ``finalize`` (``rtn``, ``gptq``, ``awq``): what the layers store
    (``expert_checkpoint.storage_notes``: storage, format, the card's notes) and the sensitivity ranking."""
    from ...models.expert_checkpoint import storage_notes
    from .sensitivity import run_sensitivity

    method.storage, notes, method.format = storage_notes(method.config.name, model)
    if ctx is not None:
        ctx.notes.extend(notes)
    method.sensitivity = run_sensitivity(model, ctx, method.config)
    return model


def fp8_strategy(fmt: WeightFormat) -> str:
    return "channel" if fmt.group_size == -1 else "tensor"


def short_label(fmt: WeightFormat) -> str:
    """"int4", "fp8", "W8A8 int8", "W8A8 fp8 dynamic", "W8A8 fp8 static", "mixed (4.5-bit budget)": the card's
    quantization dtype."""
    if fmt.bits_budget:
        return f"mixed ({fmt.bits_budget:g}-bit budget)"
    if fmt.activations == "none":
        return "fp8" if fmt.weight_type == "fp8" else f"int{fmt.bits}"
    return {"int8-token": "W8A8 int8", "fp8-token": "W8A8 fp8 dynamic", "fp8-tensor": "W8A8 fp8 static"}[fmt.activations]


def describe_format(fmt: WeightFormat) -> str:
    """"int4 weights, groups of 128, symmetric, weight-only" and the like, for the card's notes."""
    if fmt.bits_budget:
        return f"the formats a {fmt.bits_budget:g}-bit budget chose per unit (bit budget note), {WHAT[fmt.activations]}"
    if fmt.weight_type == "fp8":
        weights = f"fp8 (e4m3) weights, one scale per {'output row' if fmt.group_size == -1 else 'matrix'}"
    else:
        groups = "one scale per output row" if fmt.group_size == -1 else f"groups of {fmt.group_size}"
        weights = f"int{fmt.bits} weights, {groups}, {'asymmetric' if fmt.asymmetric else 'symmetric'}"
    return f"{weights}, {WHAT[fmt.activations]}"


def check_linears(linears: list[tuple[str, nn.Module]], fmt: WeightFormat) -> None:
    """Quantized inputs and fp8 weights are stored for ``nn.Linear`` only (compressed-tensors)."""
    if fmt.activations == "none" and fmt.weight_type == "int":
        return
    other = next((name for name, module in linears if type(module) is not nn.Linear), None)
    if other is not None:
        flag = "--weight-type fp8" if fmt.weight_type == "fp8" else f"--activations {fmt.activations}"
        kind = type(dict(linears)[other]).__name__
        if isinstance(dict(linears)[other], ExpertLinear):
            raise OptionError(f"{flag}: {other} is one expert of a fused mixture-of-experts ({kind}), not an "
                              "nn.Linear; compressed-tensors stores this format for nn.Linear only: leave the experts "
                              "out with --ignore 're:.*experts.*', or quantize them weight-only (int, no quantized "
                              "inputs)")
        raise OptionError(f"{flag}: {other} is a {kind}, not an nn.Linear; compressed-tensors stores these schemes "
                          "for nn.Linear only (not GPT-2's Conv1D): leave those out with --ignore")


def round_weight(weight: torch.Tensor, fmt: WeightFormat) -> GroupedInts | FloatCodes:
    """``weight`` (out × in) rounded to nearest in the format's grid."""
    from ..gptq.solver import round_to_nearest

    if fmt.weight_type == "fp8":
        return FloatCodes.round_to_nearest(weight, fp8_strategy(fmt))
    return round_to_nearest(weight, fmt.bits, fmt.group_size, not fmt.asymmetric)


def input_quant(fmt: WeightFormat, absmax: torch.Tensor | None = None) -> InputQuant | None:
    """The inputs' quantization (``absmax``: the calibration inputs' largest |x| per feature, static only)."""
    if fmt.activations == "none":
        return None
    return InputQuant.named(fmt.activations, float(absmax.max()) if absmax is not None else None)


def set_quantized(module: nn.Module, codes: GroupedInts | FloatCodes, inputs: InputQuant | None,
                  fmt: WeightFormat) -> None:
    """``module`` computes with ``codes``' weight and, when ``inputs``, quantized inputs; integer codes
    record the strategy asked for (``-1``: channel, else group, even where one group spans the row)."""
    if isinstance(codes, GroupedInts):
        codes.strategy = "channel" if fmt.group_size == -1 else "group"
    set_grouped(module, codes)
    quantize_inputs(module, inputs)


class _Fp8Rule:
    """GPTQ's rounding to fp8 as a ``ColumnRule`` on the permuted, transposed weight (``in × out``):
    scales per output row (``out``, one value repeated for a per-matrix scale), fixed before the sweep."""

    def __init__(self, scales: torch.Tensor, columns: int):
        self.scales = scales.to(torch.float64)
        self.codes = torch.zeros(columns, len(scales), dtype=FP8)

    def start_block(self, start: int, end: int, weight_t: torch.Tensor) -> None:
        pass

    def fix(self, index: int, column: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
        self.codes[index] = fp8_codes(column, self.scales)
        return self.codes[index].to(torch.float64) * self.scales


@one_thread()
def gptq_fp8_many(weights: list[torch.Tensor], hessian: torch.Tensor, strategy: str = "channel",
                  act_order: bool = False, block_size: int = 128, damp: float = 0.01) -> list[FloatCodes]:
    """GPTQ with fp8 codes for linears fed the same inputs (Hessian ``H = 2XXᵀ/n``); float64 sweep."""
    scales = [fp8_scales(w, strategy) for w in weights]
    h, w = prepare_hessian(hessian, torch.cat([w.detach() for w in weights]), damp)
    row_scales = torch.cat([s.expand(len(wi), 1) for s, wi in zip(scales, weights)]).reshape(-1)
    perm = torch.argsort(h.diagonal(), descending=True, stable=True) if act_order else torch.arange(w.shape[1])
    rule = _Fp8Rule(row_scales, w.shape[1])
    obs_sweep(w.T[perm].contiguous(), inverse_cholesky_upper(h[perm][:, perm]), block_size, rule)
    codes = torch.empty_like(rule.codes)
    codes[perm] = rule.codes
    return [FloatCodes(codes[:, rows].T.contiguous(), scale, strategy)
            for rows, scale in zip(row_segments([len(wi) for wi in weights]), scales)]
