"""A model folder's stored weights against its ``config.json``, before any work.

transformers builds a model from ``config.json`` and then fills it from the safetensors files: a
config that says 2 layers while the weights hold 4 silently drops layers 2-3 (streamed calibration
wrote a 2-layer model), a hidden size that is not the weights' fails deep inside a computation
(a ``RuntimeError`` in the Hessian of SparseGPT), a config dtype narrower than the stored floats
rounds them on load, and NaN / infinite weights make every score chance and every Cholesky
factorisation fail. Each is one ``ModelFileError`` naming the file and the numbers:

* ``check_weights_fit(files, config)``: the safetensors headers (no tensor data) against the model
  the config builds on the meta device (no memory): the layer count of every stack, the shape of
  every tensor both have, the dtype (``checks.check_model_folder`` calls it for every plain folder,
  ``io.check_saved_model`` for a forgetless one, against the model its manifest rebuilds);
* ``check_finite_weights(files)``: every stored float tensor finite, read one tensor at a time
  (before a compress run or a streamed calibration, which never holds the model whole);
  ``check_finite_model(model)`` the same for a model object.

The files of a folder: ``checks.weight_files``.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import torch
import transformers
from safetensors import safe_open

from ..errors import ModelFileError

LAYER = re.compile(r"^(.+?)\.(\d+)\.")  # "model.layers.3.mlp…" → ("model.layers", 3)
LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "num_decoder_layers",
              "decoder_layers")
WIDE = {"F64": 64, "F32": 32, "BF16": 16, "F16": 16}
TORCH_NAMES = {"float64": "F64", "float32": "F32", "bfloat16": "BF16", "float16": "F16"}


def stored_tensors(files: list[Path]) -> dict[str, tuple[tuple[int, ...], str, Path]]:
    """``{name: (shape, safetensors dtype, file)}`` of a folder's weight ``files``; reads headers only."""
    out = {}
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            for name in handle.keys():
                part = handle.get_slice(name)
                out[name] = (tuple(part.get_shape()), part.get_dtype(), Path(file))
    return out


def meta_model(config):
    """The model ``config`` builds (its ``architectures`` class, else ``AutoModel``), parameters on the
    meta device; None when transformers cannot build it here."""
    names = getattr(config, "architectures", None) or []
    cls = getattr(transformers, names[0], None) if names else None
    try:
        with torch.device("meta"):
            return cls(config) if cls is not None else transformers.AutoModel.from_config(config)
    except Exception:  # noqa: BLE001 - a config transformers cannot build is reported by the loader itself
        return None


def check_weights_fit(files: list[Path], config, model=None) -> None:
    """A folder's weight ``files`` fit ``config`` (module docstring); ``model``: the model to compare
    with (a meta-device one), default the one the config builds. Quantized folders are the loaders'."""
    if getattr(config, "quantization_config", None):
        return
    stored = stored_tensors(files)
    model = meta_model(config) if model is None else model
    if model is None or not stored:
        return
    expected = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    if len(set(stored) & set(expected)) * 2 < len(stored):
        return  # other tensor names (another head, a prefix): the loader's own check names them
    file = next(iter(stored.values()))[2]
    _check_layers(file, config, stored, expected)
    for name, (shape, _, where) in stored.items():  # the same size in another layout is a family's checkpoint form
        if name in expected and shape != expected[name] and math.prod(shape) != math.prod(expected[name]):
            raise ModelFileError(f"{where}: tensor {name} is {_shape(shape)}, but config.json ({_widths(config)}) gives "
                                 f"{_shape(expected[name])}; the weights are not those of this config")
    _check_dtype(file, config, stored)


def _check_layers(file: Path, config, stored: dict, expected: dict) -> None:
    """Every stack (``model.layers``, ``encoder.block`` …) holds the layers the config gives, no more, no fewer."""
    def counts(names) -> dict[str, set[int]]:
        found: dict[str, set[int]] = {}
        for name in names:
            match = LAYER.match(name)
            if match:
                found.setdefault(match.group(1), set()).add(int(match.group(2)))
        return found

    have, want = counts(stored), counts(expected)
    for stack, indices in want.items():
        held = have.get(stack, set())
        if held and held != indices:
            key = next((f"{k}={getattr(config, k)}" for k in LAYER_KEYS if getattr(config, k, None) == len(indices)),
                       f"{len(indices)} layers")
            raise ModelFileError(f"{file}: holds {len(held)} layers under {stack} ({_span(held)}), but config.json "
                                 f"gives {len(indices)} ({key}); fix config.json or give the folder it belongs to")


def _check_dtype(file: Path, config, stored: dict) -> None:
    """A config dtype narrower than (or another 16-bit format than) the stored floats would round them."""
    dtype = str(getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or "").replace("torch.", "")
    said = TORCH_NAMES.get(dtype)
    floats = [kind for _, kind, _ in stored.values() if kind in WIDE]
    if said is None or not floats:
        return
    held = max(set(floats), key=floats.count)
    if held != said and WIDE[said] <= WIDE[held] and said != "F32":
        raise ModelFileError(f"{file}: holds {held} weights, but config.json says dtype {dtype}; loading would round "
                             "them: fix the dtype in config.json (or remove it)")


def check_finite_weights(files: list[Path]) -> None:
    """Every stored float tensor of a folder's weight ``files`` is finite (read one tensor at a time)."""
    for name, (_, kind, file) in stored_tensors(files).items():
        if kind not in WIDE:
            continue
        with safe_open(str(file), framework="pt") as handle:
            tensor = handle.get_tensor(name)
        if not all_finite(tensor):
            bad = int((~torch.isfinite(tensor)).sum())
            raise ModelFileError(f"{file}: tensor {name} holds NaN or infinite values ({bad:,} of {tensor.numel():,}); "
                                 "such a model cannot be evaluated or compressed")


def all_finite(tensor: torch.Tensor) -> bool:
    """No NaN and no ±inf in ``tensor``. One pass, a sum (NaN and ±inf reach the total): about a fifth of the CPU
    of ``abs().amax()`` and a tenth of ``isfinite(tensor).all()`` on SmolLM2's weights. A total that
    is not finite is confirmed by ``aminmax`` (exact: the sum of large finite values may overflow)."""
    if tensor.numel() == 0:
        return True
    if tensor.dtype not in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        tensor = tensor.float()  # float8: no sum / aminmax kernel (e4m3fn stores no inf, only NaN)
    total = tensor.sum(dtype=torch.float64 if tensor.dtype == torch.float64 else torch.float32)
    if torch.isfinite(total):
        return True
    low, high = torch.aminmax(tensor)
    return bool(torch.isfinite(low) & torch.isfinite(high))


def check_finite_model(model, where: str = "model") -> None:
    """Every floating parameter and buffer of a model object is finite."""
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.is_floating_point() and tensor.device.type != "meta" and not all_finite(tensor):
            raise ModelFileError(f"{where}: tensor {name} holds NaN or infinite values; such a model cannot be "
                                 "evaluated or compressed")


def _shape(shape) -> str:
    return "×".join(map(str, shape)) or "a scalar"


def _span(indices: set[int]) -> str:
    return f"{min(indices)}-{max(indices)}" if len(indices) == max(indices) - min(indices) + 1 else \
        ", ".join(map(str, sorted(indices)))


def _widths(config) -> str:
    keys = ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim", "d_model",
            "d_ff", "dim", "hidden_dim", "n_embd", "vocab_size")
    return ", ".join(f"{k} {getattr(config, k)}" for k in keys if isinstance(getattr(config, k, None), int))
