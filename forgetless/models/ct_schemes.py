"""compressed-tensors' ``quantization_config`` for every scheme forgetless writes, and the tensors each
quantized Linear stores, in the three formats llm-compressor 0.14 writes for its presets (read from its
output: ``tests/fixtures/llmcompressor_w4.json``, ``llmcompressor_schemes.json``):

* ``pack-quantized``: weight-only integer codes (W4A16, W8A16, AWQ; ``compressed_tensors.py``);
* ``int-quantized``: int8 weights with int8 inputs (W8A8): ``M.weight`` as ``I8`` (the signed code
  ``q − 128``) and ``M.weight_scale`` (float32, out × groups; a symmetric grid stores no zero point);
* ``float-quantized``: float8_e4m3fn weights (``float_codes.py``; FP8_DYNAMIC, FP8): ``M.weight`` as
  ``F8_E4M3`` and ``M.weight_scale``; a static input scale as ``M.input_scale`` ([1], float32).

A scheme is ``{"format", "weights", "input_activations"}`` (compressed-tensors' names; the inputs'
args from ``activation_quant.InputQuant.args``). ``config.json`` gets one config group per distinct
scheme (targets ``["Linear"]`` when there is one, else the module names), every other ``nn.Linear``
in ``ignore``, and the format of the groups (``mixed-precision`` when they differ).
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ForgetlessError
from .activation_quant import INPUT_ATTR, InputQuant, quantize_inputs
from .compressed_tensors import FORMAT, GROUPED_BITS, GroupedInts, grouped_modules, set_grouped
from .float_codes import FloatCodes
from .transformers_compat import folder_format_version

INT, FLOAT = "int-quantized", "float-quantized"
FORMATS = (FORMAT, INT, FLOAT)


def module_scheme(module: nn.Module, codes: GroupedInts | FloatCodes) -> dict:
    """The scheme of a quantized Linear (its weight ``codes``, its ``InputQuant`` if any)."""
    inputs = getattr(module, INPUT_ATTR, None)
    if isinstance(codes, FloatCodes):
        form = FLOAT
    elif inputs is None:
        form = FORMAT
    elif codes.bits == 8 and codes.symmetric:
        form = INT
    else:
        raise ForgetlessError(f"{type(module).__name__}: quantized inputs need symmetric 8-bit integer weights "
                              f"(compressed-tensors int-quantized); got {codes.bits}-bit, symmetric={codes.symmetric}")
    return {"format": form, "weights": codes.weights_args(), "input_activations": inputs.args() if inputs else None}


def quantized_linears(model: nn.Module) -> dict[str, tuple[GroupedInts | FloatCodes, dict]]:
    """``{name: (codes, scheme)}`` of the Linears stored quantized (``compressed_tensors.grouped_modules``)."""
    return {name: (codes, module_scheme(model.get_submodule(name), codes))
            for name, codes in grouped_modules(model).items()}


def stored_tensors(name: str, codes: GroupedInts | FloatCodes, scheme: dict, module: nn.Module) -> dict:
    """What the checkpoint holds for Linear ``name`` in place of its ``weight``."""
    if scheme["format"] == INT:
        signed = (codes.codes.to(torch.int16) - 128).to(torch.int8)
        tensors = {f"{name}.weight": signed.contiguous(), f"{name}.weight_scale": codes.scales.float().contiguous()}
    else:
        tensors = codes.stored(name)
    inputs = getattr(module, INPUT_ATTR, None)
    return {**tensors, **(inputs.stored(name) if inputs is not None else {})}


def restore(module: nn.Module, tensors: dict, name: str, scheme: dict) -> None:
    """Put Linear ``name``'s stored tensors (popped from ``tensors``) back on ``module``: its codes,
    the float32 weight they encode and its input quantization."""
    weights, form = scheme["weights"], scheme["format"]
    if form == FLOAT:
        codes = FloatCodes.from_stored(tensors, name, weights)
    elif form == INT:
        signed = tensors.pop(f"{name}.weight", None)
        scales = tensors.pop(f"{name}.weight_scale", None)
        if signed is None or scales is None or signed.dtype != torch.int8:
            raise ForgetlessError(f"quantized module {name} has no int8 weight and weight_scale")
        columns = signed.shape[1]
        size = columns if weights.get("strategy") == "channel" else int(weights["group_size"])
        codes = GroupedInts(8, size, (signed.to(torch.int16) + 128).to(torch.uint8), scales.float(),
                            torch.full(scales.shape, 128, dtype=torch.uint8), weights.get("actorder"),
                            weights.get("strategy"))
    else:
        codes = GroupedInts.from_stored(tensors, name, weights)
    if tuple(codes.codes.shape) != tuple(module.weight.shape):
        raise ForgetlessError(f"holds {tuple(codes.codes.shape)} codes for a {tuple(module.weight.shape)} weight")
    set_grouped(module, codes)
    inputs = scheme.get("input_activations")
    quantize_inputs(module, InputQuant.from_args(inputs, tensors.pop(f"{name}.input_scale", None)) if inputs else None)


def schemes_config(model: nn.Module, schemes: dict[str, dict]) -> dict:
    """``config.json``'s ``quantization_config`` for the quantized Linears ``{name: scheme}`` of ``model``."""
    distinct: dict[str, tuple[dict, list[str]]] = {}
    for name, scheme in schemes.items():
        distinct.setdefault(repr(sorted((k, repr(v)) for k, v in scheme.items())), (scheme, []))[1].append(name)
    groups = {f"group_{index}": {"format": scheme["format"], "input_activations": scheme["input_activations"],
                                 "output_activations": None,
                                 "targets": ["Linear"] if len(distinct) == 1 else sorted(names),
                                 "weights": scheme["weights"]}
              for index, (scheme, names) in enumerate(distinct.values())}
    formats = {group["format"] for group in groups.values()}
    ignore = sorted(name for name, module in model.named_modules()
                    if isinstance(module, nn.Linear) and name not in schemes)
    return {"config_groups": groups, "format": formats.pop() if len(formats) == 1 else "mixed-precision",
            "global_compression_ratio": None, "ignore": ignore, "kv_cache_scheme": None,
            "quant_method": "compressed-tensors", "quantization_status": "compressed", "sparsity_config": {},
            "transform_config": {}, "version": folder_format_version(groups)}


def _check_group(group: str, scheme: dict) -> None:
    weights, inputs, form = scheme.get("weights") or {}, scheme.get("input_activations"), scheme.get("format")
    if scheme.get("output_activations") or form not in FORMATS:
        raise ForgetlessError(f"config group {group}: format {form!r}; forgetless reads {', '.join(FORMATS)} without "
                              "output activations")
    if form == FLOAT:
        fits = weights.get("type") == "float" and weights.get("strategy") in ("channel", "tensor")
    else:
        fits = weights.get("type") == "int" and weights.get("strategy") in ("group", "channel") and \
            int(weights.get("num_bits", 0)) in (GROUPED_BITS if form == FORMAT else (8,))
    if not fits or (form == FORMAT and inputs):
        raise ForgetlessError(f"config group {group}: {form} with weights {weights.get('type')} "
                              f"{weights.get('num_bits')}-bit {weights.get('strategy')} is not a scheme forgetless reads")


def read_schemes(model: nn.Module, config: dict) -> dict[str, dict]:
    """``{module name: scheme}`` for the Linears of ``model`` that ``quantization_config`` ``config``
    quantizes (targets ``"Linear"`` or exact names; ``ignore``: exact names). Anything else (regular
    expressions, other formats or strategies) is a ``ForgetlessError`` naming it."""
    if config.get("quant_method") != "compressed-tensors":
        raise ForgetlessError(f"quantization_config is {config.get('quant_method')!r}; forgetless reads "
                              "compressed-tensors only")
    ignore = set(config.get("ignore") or ())
    linears = [name for name, module in model.named_modules() if isinstance(module, nn.Linear)]
    found: dict[str, dict] = {}
    for group, scheme in config.get("config_groups", {}).items():
        scheme = {"format": config.get("format"), **scheme}
        _check_group(group, scheme)
        targets = scheme.get("targets") or []
        if any(t.startswith("re:") for t in [*targets, *ignore]):
            raise ForgetlessError(f"config group {group}: regular-expression targets are not read by forgetless")
        for name in linears:
            if name not in ignore and ("Linear" in targets or name in targets):
                found.setdefault(name, {k: scheme.get(k) for k in ("format", "weights", "input_activations")})
    return found


def stored_layout(name: str, scheme: dict, rows: int, columns: int, float_dtype: str) -> dict[str, tuple]:
    """``{tensor name: (shape, safetensors dtype)}`` a Linear of ``rows × columns`` stores in ``scheme``
    (``float_dtype``: the checkpoint's float dtype name, e.g. ``F32``)."""
    weights, form = scheme["weights"], scheme["format"]
    strategy, bits = weights.get("strategy"), int(weights["num_bits"])
    groups = {"channel": 1, "tensor": 1}.get(strategy) or -(-columns // int(weights["group_size"]))
    scale = ((1,) if strategy == "tensor" else (rows, groups), float_dtype)
    if form == FORMAT:
        layout = {f"{name}.weight_packed": ((rows, -(-columns * bits // 32)), "I32"), f"{name}.weight_scale": scale,
                  f"{name}.weight_shape": ((2,), "I64")}
        if not weights.get("symmetric", True):
            layout[f"{name}.weight_zero_point"] = ((-(-rows * bits // 32), groups), "I32")
        return layout
    layout = {f"{name}.weight": ((rows, columns), "I8" if form == INT else "F8_E4M3"), f"{name}.weight_scale": scale}
    inputs = scheme.get("input_activations") or {}
    if inputs and not inputs.get("dynamic"):
        layout[f"{name}.input_scale"] = ((1,), "F32")
    return layout
