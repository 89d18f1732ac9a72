"""Save and reload compressed models: layers that differ in head count, FFN width or depth, and
quantized weights in plain tensors (no pickle, no ``torch.save``).

Stock ``from_pretrained`` builds every layer from one config value, so it cannot rebuild an
unevenly pruned model. The format here is a plain Hugging Face folder (``config.json``,
tokenizer files) plus ``model.safetensors`` and ``forgetless.json``, which records the per-site
shape. Loading builds the model from its config, reshapes it with the same surgery that made it,
then loads the safetensors weights strictly.

Three quantized weight formats, recorded under ``quantization`` in ``forgetless.json``:

* ``bf16``: every floating-point tensor of the model cast to bfloat16; ``model.safetensors`` holds
  them as ``BF16`` tensors under their usual names (stock ``from_pretrained`` reads them too).
* ``int8``: dynamic quantization (Jacob et al. 2018, "Quantization and Training of Neural Networks
  for Efficient Integer-Arithmetic-Only Inference", eq. 1 ``r = S (q − Z)``): each listed
  ``nn.Linear`` keeps int8 weights with one scale ``S`` and zero point ``Z`` per output channel;
  activations are quantized per batch at run time (PyTorch's fbgemm / onednn kernels). For each
  quantized module ``M`` the file holds ``M.weight.int8`` (int8, out × in), ``M.weight.scale``
  (float64, out), ``M.weight.zero_point`` (int64, out) and ``M.bias`` (float32); every other
  tensor (embeddings, layer norms, heads not quantized) under its usual name.
* ``compressed-tensors``: weight-only integer codes with a per-group grid (GPTQ), stored as
  compressed-tensors' ``pack-quantized`` checkpoint: ``config.json``'s ``quantization_config`` and
  ``M.weight_packed`` / ``weight_scale`` / ``weight_shape`` (/ ``weight_zero_point``) per Linear, as
  llm-compressor writes them (``quantization/compressed_tensors.py``). Stock ``from_pretrained`` loads it exactly
  with the ``compressed-tensors`` package installed; forgetless reads it without the package.

Whatever is written, stock ``from_pretrained`` loads the right weights or fails loudly: a folder it
would load silently wrong (int8: every quantized Linear's ``weight`` missing, left at random initial
values) keeps its tensors in ``model.forgetless.safetensors``, where stock loading finds no weights
and stops (``stock.stock_fit`` decides, for every folder, after it is written).

Loading rebuilds the fp32 architecture, applies the same quantization to the same module names,
then puts the stored int8 weights, scales and zero points (or integer codes) back: the rebuilt model
computes exactly what was saved.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import warnings
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from safetensors.torch import load_model as load_safetensors
from torch import nn

from ..errors import ForgetlessError, ModelFileError, OutputFolderError
from ..fsutil import atomic_directory
from ..quantization.compressed_tensors import (grouped_storage, read_schemes, restore, scheme_text, schemes_config,
                                               stored_tensors)
from .checks import (NOT_STOCK_WEIGHTS, TOKENIZER_FILES, WEIGHTS, check_loaded, check_model_folder, check_weights_fit,
                     load_tokenizer, tensor_header, weight_files, weights_file)
from .expert_checkpoint import experts_scheme, quantized_checkpoint, unpack_experts
from .manifest import FORMAT, MANIFEST, is_forgetless_folder, read_manifest, transformers_model_class
from .stock import stock_config, stock_fit
from .surgery import model_shape, reshape_like

DTYPES = ("int8", "bf16", "compressed-tensors")
INT8_SCHEME = "dynamic int8: per-output-channel affine weights (S, Z), activations quantized per batch"


def model_fingerprint(model: nn.Module) -> str:
    """Short hash of a model's state: names, shapes, dtypes and values (stable across reloads; the
    non-tensor entries of quantized modules by their repr). Keys caches and in-memory models."""
    digest = hashlib.sha256()
    for name, value in sorted(model.state_dict().items()):
        if isinstance(value, torch.Tensor) and not value.is_quantized:
            digest.update(f"{name}:{tuple(value.shape)}:{value.dtype}".encode())
            digest.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            digest.update(f"{name}:{value!r}".encode())
    return digest.hexdigest()[:16]


def save_model(model: nn.Module, path: str | Path, tokenizer=None, metadata: dict | None = None) -> Path:
    """Write ``model`` (and ``tokenizer``) to ``path`` atomically; returns the path.

    ``config.json`` carries the FFN widths where every layer of a stack has the same width (so stock
    ``from_pretrained`` rebuilds the model exactly; see ``stock.py``). The model card (``README.md``)
    has one writer, ``report.model_card.write_model_card``: a folder handed to users gets one there
    (``forgetless compress``, ``finetune``), a cached teacher needs none."""
    path = Path(path)
    check_model_destination(path)
    with atomic_directory(path) as tmp:
        write_model_files(model, tmp, tokenizer, metadata, save_weights)
    return path


def check_model_destination(path: Path) -> None:
    """``path`` may receive a model folder: new, empty, or a model folder forgetless wrote."""
    if path.is_dir() and any(path.iterdir()) and not is_forgetless_folder(path):
        raise OutputFolderError(f"{path}: holds files forgetless did not write; save_model replaces only a "
                                "model folder it wrote (name a new or empty folder)")
    if path.exists() and not path.is_dir():
        raise OutputFolderError(f"{path}: is an existing file; name a folder")


def write_model_files(model: nn.Module, folder: Path, tokenizer, metadata: dict | None, write_weights) -> None:
    """``config.json``, the generation config, the weights (``write_weights(model, folder)``, which
    returns the manifest's ``quantization`` entry: ``save_weights``, or the end of a
    streamed calibration that wrote them layer by layer), the tokenizer and ``forgetless.json``."""
    model.config.architectures = [type(model).__name__]
    stock_config(model).save_pretrained(folder)  # uniform FFN widths written in: stock loading exact
    if getattr(model, "generation_config", None) is not None and model.can_generate():
        model.generation_config.save_pretrained(folder)
    quantization = write_weights(model, folder)  # model.safetensors; int8 / bf16 layout: save_weights
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    manifest = {"format": FORMAT, "model_class": type(model).__name__, "shape": model_shape(model),
                "metadata": metadata or {}, **({"quantization": quantization} if quantization else {})}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")


def check_saved_model(path: str | Path) -> None:
    """A forgetless folder's manifest fits its config: the architecture rebuilt on the meta device (no
    memory, no weights read) in the recorded shape, with every quantized module it names, and the
    stored weights' headers fit it (``checks.check_weights_fit``). Before any work; ``load_model``
    then checks the weights against it."""
    with torch.device("meta"):
        model, manifest = _build(Path(path))
    if not manifest.get("quantization"):  # its weights fit the model the manifest rebuilds (layers, widths, dtype)
        check_weights_fit(weight_files(path), model.config, model)
    names = (manifest.get("quantization") or {}).get("modules") or []
    modules = dict(model.named_modules(remove_duplicate=False))
    unknown = [name for name in names if name not in modules]
    if unknown:
        raise ModelFileError(f"{Path(path) / MANIFEST}: its quantization entry names modules the model does not "
                             f"have ({', '.join(unknown[:3])})")


def _build(path: Path):
    """``(model, manifest)``: the folder checked (``check_model_folder``), its model class built from
    the config and reshaped as the manifest records (random weights)."""
    manifest = read_manifest(path)
    model_class = transformers_model_class(manifest["model_class"])
    config = check_model_folder(path)
    weights = weights_file(path)
    if not weights.is_file():
        raise ModelFileError(f"{path}: {weights.name} is missing (incomplete or foreign folder)")
    try:
        model = model_class._from_config(config)  # in config.json's dtype, as from_pretrained: an fp16 folder stays fp16
        reshape_like(model, manifest["shape"])
    except (KeyError, ValueError, IndexError, TypeError, AttributeError, RuntimeError, ForgetlessError) as exc:
        raise ModelFileError(f"{path / MANIFEST}: its shape does not fit the model's config "
                             f"({type(exc).__name__}: {str(exc)[:200]})") from exc
    return model, manifest


def load_model(path: str | Path, device: str = "cpu", with_tokenizer: bool = True):
    """Rebuild a model saved by ``save_model``. Returns ``(model, tokenizer or None)``.

    The folder is checked first (``checks.check_model_folder``: config, complete safetensors); a
    manifest whose shapes do not match the config or the weights is a ``ModelFileError``."""
    path = Path(path)
    model, manifest = _build(path)
    weights = weights_file(path)
    try:
        missing, unexpected = load_weights(model, str(weights), manifest.get("quantization"))
    except ModelFileError:
        raise
    except (RuntimeError, ValueError, OSError, KeyError, TypeError, AttributeError, ForgetlessError) as exc:
        first = str(exc).strip().splitlines()
        detail = next((line.strip() for line in first if "size mismatch" in line), first[0] if first else "")
        raise ModelFileError(f"{weights}: weights do not match the shape or quantization recorded in {MANIFEST} "
                             f"({detail[:200]})") from exc
    if missing or unexpected:
        raise ModelFileError(f"{weights}: weights do not match the recorded shape "
                             f"(missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]})")
    check_loaded(model, path)  # NaN / inf weights are an error, not a report of chance accuracy
    model.to(device).eval()
    tokenizer = None
    if with_tokenizer and any((path / name).is_file() for name in TOKENIZER_FILES):
        tokenizer = load_tokenizer(path)
    return model, tokenizer


# ----- quantized weights: apply, describe, count --------------------------------------------------
def _dynamic_linear():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.nn.quantized.dynamic import Linear

    return Linear


def quantized_modules(model: nn.Module) -> list[str]:
    """Names of the int8 dynamically quantized Linear modules of ``model``."""
    linear = _dynamic_linear()
    return [name for name, module in model.named_modules() if isinstance(module, linear)]


def quantize_int8(model: nn.Module, names: list[str]) -> nn.Module:
    """Replace the ``nn.Linear`` (or ``Conv1D``) modules ``names`` by dynamically quantized int8 Linears, in place
    (``torch.ao.quantization.quantize_dynamic`` with per-channel weight observers; deprecated in
    favour of torchao, whose CPU int8 path needs ``torch.compile`` to be fast, so the eager fbgemm
    kernels are used here)."""
    for name in names:
        _conv1d_to_linear(model, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notice, once per call
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        quantize_dynamic(model, {name: per_channel_dynamic_qconfig for name in names}, dtype=torch.qint8,
                         inplace=True)
    missing = sorted(set(names) - set(quantized_modules(model)))
    if missing:
        raise ForgetlessError(f"int8 quantization left these modules unquantized (not nn.Linear?): {missing[:5]}")
    return model


def _conv1d_to_linear(model: nn.Module, name: str) -> None:
    """transformers' ``Conv1D`` (GPT-2; weight stored in × out) becomes the equal ``nn.Linear``
    (weight out × in), so it can be quantized; loading does the same before restoring weights."""
    from transformers.pytorch_utils import Conv1D

    module = model.get_submodule(name)
    if not isinstance(module, Conv1D):
        return
    linear = nn.Linear(module.weight.shape[0], module.weight.shape[1], bias=module.bias is not None)
    with torch.no_grad():
        linear.weight.copy_(module.weight.t())
        if module.bias is not None:
            linear.bias.copy_(module.bias)
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, linear)


def cast_bf16(model: nn.Module) -> nn.Module:
    """Every floating-point parameter and buffer in bfloat16 (activations follow)."""
    model.to(torch.bfloat16)
    model.config.dtype = "bfloat16"
    return model


def describe(model: nn.Module) -> dict | None:
    """The manifest's ``quantization`` entry: dtype, scheme and quantized modules; None for fp32."""
    names = quantized_modules(model)
    if names:
        return {"dtype": "int8", "scheme": INT8_SCHEME, "modules": names}
    floats = {p.dtype for p in itertools.chain(model.parameters(), model.buffers()) if p.is_floating_point()}
    if floats == {torch.bfloat16}:
        return {"dtype": "bf16", "scheme": "every floating-point tensor in bfloat16", "modules": []}
    return None


def quantized_weight_counts(model: nn.Module) -> tuple[int, int]:
    """(elements, non-zero elements) of the int8 weights and biases: parameters ``model.parameters()``
    no longer lists once a Linear is quantized."""
    total = nonzero = 0
    for name in quantized_modules(model):
        module = model.get_submodule(name)
        weight, bias = module.weight(), module.bias()
        total += weight.numel() + (bias.numel() if bias is not None else 0)
        nonzero += int((weight.int_repr() != weight.q_per_channel_zero_points().view(-1, 1)).sum()
                       if weight.qscheme() == torch.per_channel_affine else (weight.dequantize() != 0).sum())
        nonzero += int((bias != 0).sum()) if bias is not None else 0
    return total, nonzero


# ----- weights: save / load -----------------------------------------------------------------------
def _plain_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters and persistent buffers, each shared tensor once (tied weights under one name)."""
    persistent = set(model.state_dict())
    return {name: tensor for name, tensor in itertools.chain(model.named_parameters(), model.named_buffers())
            if name in persistent}


def save_weights(model: nn.Module, folder: Path) -> dict | None:
    """Write the weights into ``folder`` (which holds the model's ``config.json``): ``model.safetensors``
    in the layouts above, ``quantization_config`` into ``config.json`` for compressed-tensors; returns
    the manifest's ``quantization`` entry (None for an unquantized model). A folder stock
    ``from_pretrained`` would load silently wrong gets its weights as ``model.forgetless.safetensors``."""
    folder = Path(folder)
    entry = describe(model)
    int8 = entry is not None and entry["dtype"] == "int8"
    packed, replaced, schemes = quantized_checkpoint(model) if entry is None else ({}, [], {})
    # tied weights under the input embedding's name (the first in the model's order): safetensors'
    # save_model kept "lm_head.weight" (alphabetically first), which vLLM skips for a tied model,
    # serving an embedding it never loaded
    tensors = {name: t.detach().contiguous() for name, t in _plain_tensors(model).items() if name not in replaced}
    if int8:
        _store_int8(model, entry["modules"], tensors)
    _store_packed(model, packed, schemes, tensors)
    save_file(tensors, str(folder / WEIGHTS), metadata={"format": "forgetless-int8-dynamic" if int8 else "pt"})
    if packed:
        entry = write_compressed_config(model, folder, schemes, grouped_storage(packed))
    keep_from_stock_if_wrong(model, folder)
    return entry


def _store_int8(model: nn.Module, names: list[str], tensors: dict) -> None:
    """The int8 modules ``names`` into ``tensors``: weights, scales and zero points per output channel, bias."""
    for name in names:
        module = model.get_submodule(name)
        weight, bias = module.weight(), module.bias()
        if weight.qscheme() != torch.per_channel_affine:
            raise ForgetlessError(f"{name}: only per-channel int8 weights are saved, got {weight.qscheme()}")
        tensors[f"{name}.weight.int8"] = weight.int_repr().contiguous()
        tensors[f"{name}.weight.scale"] = weight.q_per_channel_scales().contiguous()
        tensors[f"{name}.weight.zero_point"] = weight.q_per_channel_zero_points().contiguous()
        if bias is not None:
            tensors[f"{name}.bias"] = bias.detach().contiguous()


def _store_packed(model: nn.Module, packed: dict, schemes: dict[str, dict], tensors: dict) -> None:
    """``packed`` (``expert_checkpoint.quantized_checkpoint``: linears, and experts' pieces standing for
    the fused parameters it replaces) into ``tensors`` as compressed-tensors in their ``schemes``."""
    for name, codes in packed.items():
        tensors.pop(f"{name}.weight", None)
        linear = name in schemes  # a Linear of the model (its scheme may quantize inputs), else an expert's piece
        tensors.update(stored_tensors(name, codes, schemes[name], model.get_submodule(name)) if linear
                       else codes.stored(name))


def write_compressed_config(model: nn.Module, folder: Path, schemes: dict[str, dict], storage: dict) -> dict:
    """``quantization_config`` into ``folder/config.json`` for the quantized modules (``{name: scheme}``
    as ``quantization.compressed_tensors.module_scheme`` gives it, or ``{name: weights args}`` of weight-only integer codes;
    storage as ``grouped_storage`` counts it); returns the manifest's ``quantization`` entry."""
    schemes = {name: scheme if "weights" in scheme else {"format": "pack-quantized", "weights": scheme,
                                                         "input_activations": None}
               for name, scheme in schemes.items()}
    config = schemes_config(model, schemes)
    config_file = folder / "config.json"
    data = json.loads(config_file.read_text())
    data["quantization_config"] = config
    config_file.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    text = "; ".join(scheme_text(group) for group in config["config_groups"].values())
    return {"dtype": "compressed-tensors", "scheme": f"{text} (compressed-tensors {config['format']})",
            "modules": sorted(schemes), **storage}


def keep_from_stock_if_wrong(model: nn.Module, folder: Path) -> None:
    """Move ``model.safetensors`` to ``model.forgetless.safetensors`` when stock ``from_pretrained``
    would load it without an error but with wrong weights (``stock.stock_fit``)."""

    header = tensor_header(folder / WEIGHTS)
    fit, _ = stock_fit(type(model), json.loads((folder / "config.json").read_text()), header)
    if fit == "silent":
        os.replace(folder / WEIGHTS, folder / NOT_STOCK_WEIGHTS)


def load_weights(model: nn.Module, path: str, quantization: dict | None) -> tuple[list[str], list[str]]:
    """Load ``path`` into the freshly built ``model`` (quantized in place as the manifest says);
    returns ``(missing, unexpected)`` tensor names like safetensors' ``load_model``."""
    if quantization is None:
        return load_safetensors(model, path, strict=False)
    dtype = quantization.get("dtype")
    if dtype == "bf16":
        cast_bf16(model)
        return load_safetensors(model, path, strict=False)
    if dtype == "compressed-tensors":
        return _load_compressed(model, path)
    if dtype == "grouped":
        raise ModelFileError(f"{path}: written by an earlier forgetless in its private 'grouped' GPTQ format, which "
                             "is no longer read; rerun gptq (it now writes compressed-tensors)")
    if dtype != "int8":
        raise ModelFileError(f"{path}: unknown quantization dtype {dtype!r} in forgetless.json; known: {DTYPES}")
    names = quantization["modules"]
    quantize_int8(model, names)
    tensors = load_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized-tensor constructors are marked deprecated
        for name in names:
            try:
                ints, scale, zero = (tensors.pop(f"{name}.weight.{k}") for k in ("int8", "scale", "zero_point"))
            except KeyError as exc:
                raise ForgetlessError(f"{path}: quantized module {name} has no {exc.args[0]}") from exc
            weight = torch._make_per_channel_quantized_tensor(ints, scale, zero, 0)
            model.get_submodule(name).set_weight_bias(weight, tensors.pop(f"{name}.bias", None))
    return _copy_plain(model, tensors)


def _load_compressed(model: nn.Module, path: str) -> tuple[list[str], list[str]]:
    """The compressed-tensors checkpoint beside ``config.json``: codes back on their modules, float32
    weights they encode, inputs quantized as stored; the in-memory config keeps no
    ``quantization_config`` (saving derives it)."""
    config = json.loads((Path(path).parent / "config.json").read_text()).get("quantization_config") or {}
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tensors = load_file(path)
    try:
        for name, scheme in read_schemes(model, config).items():
            module = model.get_submodule(name)
            restore(module, tensors, name, scheme)
            tensors[f"{name}.weight"] = module.weight.detach()
        unpack_experts(model, tensors, experts_scheme(config))
    except (ForgetlessError, ValueError, KeyError) as exc:
        raise ModelFileError(f"{path}: compressed-tensors weights do not fit the model ({exc})") from exc
    return _copy_plain(model, tensors)


def _copy_plain(model: nn.Module, tensors: dict) -> tuple[list[str], list[str]]:
    """Copy ``tensors`` into the model's parameters and buffers of the same names (quantized modules
    take no ``state_dict``); returns ``(missing, unexpected)`` names, copying nothing unless both are empty."""
    expected = _plain_tensors(model)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if not missing and not unexpected:
        with torch.no_grad():
            for name, tensor in tensors.items():
                expected[name].copy_(tensor)
    return missing, unexpected
