"""compressed-tensors' ``quantization_config`` for every scheme forgetless writes, and the tensors each
quantized Linear stores, in the formats llm-compressor 0.14 writes for its presets (read from its output:
``tests/fixtures/llmcompressor_w4.json``, ``llmcompressor_schemes.json``); each format's tensors are its
codes' own (``ints.py``: ``pack-quantized``, ``int-quantized``; ``fp8.py``: ``float-quantized``), a static
input scale ``M.input_scale`` ([1], float32) is the inputs' (``inputs.py``).

A scheme is ``{"format", "weights", "input_activations"}`` (compressed-tensors' names; the inputs'
args from ``inputs.InputQuant.args``). ``config.json`` gets one config group per distinct scheme (targets
``["Linear"]`` when there is one, else the module names), every other ``nn.Linear`` in ``ignore``, and the
format of the groups (``mixed-precision`` when they differ).
"""
from __future__ import annotations

from torch import nn

from ..errors import ForgetlessError
from .inputs import INPUT_ATTR, InputQuant, quantize_inputs
from .ints import PACKED
from .layers import grouped_modules, set_grouped
from .registry import all_codes

TESTED_COMPRESSED_TENSORS = ("0.17", "0.20")  # oldest and newest minor release tested (models/transformers_compat.py)
OLDEST_READER, DENSE_PACKING = f"{TESTED_COMPRESSED_TENSORS[0]}.0", "0.18.0"


def module_scheme(module: nn.Module, codes) -> dict:
    """The scheme of a quantized Linear (its weight ``codes``, its ``InputQuant`` if any)."""
    inputs = getattr(module, INPUT_ATTR, None)
    try:
        form = codes.ct_form(inputs is not None)
    except ForgetlessError as exc:
        raise ForgetlessError(f"{type(module).__name__}: {exc}") from exc
    return {"format": form, "weights": codes.weights_args(), "input_activations": inputs.args() if inputs else None}


def quantized_linears(model: nn.Module) -> dict[str, tuple[object, dict]]:
    """``{name: (codes, scheme)}`` of the Linears stored quantized (``layers.grouped_modules``)."""
    return {name: (codes, module_scheme(model.get_submodule(name), codes))
            for name, codes in grouped_modules(model).items()}


def stored_tensors(name: str, codes, scheme: dict, module: nn.Module) -> dict:
    """What the checkpoint holds for Linear ``name`` in place of its ``weight``."""
    inputs = getattr(module, INPUT_ATTR, None)
    return {**codes.stored(name, scheme["format"]), **(inputs.stored(name) if inputs is not None else {})}


def _codes_of(form: str, weights: dict):
    """The registered codes' class that reads a config group of ``form`` with these ``weights`` args, or None."""
    return next((codes for codes in all_codes() if form in codes.FORMATS and codes.reads(form, weights)), None)


def restore(module: nn.Module, tensors: dict, name: str, scheme: dict) -> None:
    """Put Linear ``name``'s stored tensors (popped from ``tensors``) back on ``module``: its codes,
    the float32 weight they encode and its input quantization."""
    weights, form = scheme["weights"], scheme["format"]
    codes = _codes_of(form, weights).from_stored(tensors, name, weights, form)
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


def folder_format_version(config_groups: dict) -> str:
    """The oldest compressed-tensors release that reads a folder whose ``quantization_config`` has these
    ``config_groups``: 0.18.0 when a packed group's codes do not divide 32 bits, else 0.17.0."""
    return DENSE_PACKING if uneven_bits(config_groups) else OLDEST_READER


def uneven_bits(config_groups: dict) -> set[int]:
    """The code widths of the packed groups that do not divide 32 bits (3)."""
    widths = {int((group.get("weights") or {}).get("num_bits") or 32) for group in config_groups.values()
              if group.get("format") == PACKED}
    return {bits for bits in widths if 32 % bits}


def _check_group(group: str, scheme: dict) -> None:
    weights, inputs, form = scheme.get("weights") or {}, scheme.get("input_activations"), scheme.get("format")
    formats = [f for codes in all_codes() for f in codes.FORMATS]
    if scheme.get("output_activations") or form not in formats:
        raise ForgetlessError(f"config group {group}: format {form!r}; forgetless reads {', '.join(formats)} without "
                              "output activations")
    if _codes_of(form, weights) is None or (form == PACKED and inputs):
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
    strategy = weights.get("strategy")
    groups = {"channel": 1, "tensor": 1}.get(strategy) or -(-columns // int(weights["group_size"]))
    scale = ((1,) if strategy == "tensor" else (rows, groups), float_dtype)
    layout = _codes_of(form, weights).layout(name, form, weights, rows, columns, scale)
    inputs = scheme.get("input_activations") or {}
    if inputs and not inputs.get("dynamic"):
        layout[f"{name}.input_scale"] = ((1,), "F32")
    return layout


def scheme_text(scheme: dict) -> str:
    """A config group's scheme in words: "int4 weights, groups of 128, symmetric", "+ fp8 inputs per token"."""
    args = scheme["weights"]
    kind = f"{args['type']}{args['num_bits']}".replace("float8", "fp8")
    where = {"channel": "one scale per output row", "tensor": "one scale per tensor"}.get(
        args["strategy"], f"groups of {args['group_size']}")
    text = (f"{kind} weights, {where}, {'symmetric' if args['symmetric'] else 'asymmetric'}"
            f"{', act-order' if args.get('actorder') else ''}")
    inputs = scheme.get("input_activations")
    if not inputs:
        return f"weight-only {text}"
    how = "per token, dynamic" if inputs["strategy"] == "token" else "per tensor, static (calibrated)"
    return f"{text}; {inputs['type']}{inputs['num_bits']} inputs {how}".replace("float8", "fp8")


def storage_note(method: str, storage: dict, form: str = PACKED) -> str:
    """The card's note on what the quantized layers store (``grouped_storage``) in compressed-tensors ``form``."""
    if not storage.get("weights"):
        return f"{method}: no layer is stored quantized (compressed-tensors quantizes nn.Linear weights only)"
    return (f"{method}: stored as compressed-tensors {form}: {storage['bits_per_weight']:.3f} bits per weight "
            f"in the quantized layers ({storage['weights']:,} weights in {storage['bytes'] / 2 ** 20:.2f} MiB, float32 "
            f"would take {storage['weights'] * 4 / 2 ** 20:.2f} MiB)")


def grouped_storage(quantized: dict) -> dict:
    """Weights covered and bytes stored (codes, scales, zero points, shapes) by packed modules."""
    weights = sum(q.codes.numel() for q in quantized.values())
    stored = sum(t.numel() * t.element_size() for name, q in quantized.items() for t in q.stored(name).values())
    return {"weights": weights, "bytes": stored, "bits_per_weight": 8 * stored / weights if weights else None}
