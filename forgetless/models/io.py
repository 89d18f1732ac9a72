"""Save and reload compressed models whose layers differ in head count, FFN width or depth.

Stock ``from_pretrained`` builds every layer from one config value, so it cannot rebuild an
unevenly pruned model. The format here is a plain Hugging Face folder (``config.json``,
tokenizer files) plus ``model.safetensors`` and ``forgetless.json``, which records the per-site
shape. Loading builds the model from its config, reshapes it with the same surgery that made it,
then loads the safetensors weights strictly: no pickle anywhere.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from torch import nn

from ..errors import ForgetlessError, ModelFileError, OutputFolderError
from ..fsutil import atomic_directory
from .manifest import FORMAT, MANIFEST, is_forgetless_folder, read_manifest, transformers_model_class
from .checks import TOKENIZER_FILES, check_loaded, check_model_folder, load_tokenizer, weight_files, weights_file
from .quantized_io import load_weights, save_weights
from .stock import stock_config
from .surgery import model_shape, reshape_like
from .weights_fit import check_weights_fit


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
    returns the manifest's ``quantization`` entry: ``quantized_io.save_weights``, or the end of a
    streamed calibration that wrote them layer by layer), the tokenizer and ``forgetless.json``."""
    model.config.architectures = [type(model).__name__]
    stock_config(model).save_pretrained(folder)  # uniform FFN widths written in: stock loading exact
    if getattr(model, "generation_config", None) is not None and model.can_generate():
        model.generation_config.save_pretrained(folder)
    quantization = write_weights(model, folder)  # model.safetensors; int8 / bf16 layout in quantized_io.py
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    manifest = {"format": FORMAT, "model_class": type(model).__name__, "shape": model_shape(model),
                "metadata": metadata or {}, **({"quantization": quantization} if quantization else {})}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")


def check_saved_model(path: str | Path) -> None:
    """A forgetless folder's manifest fits its config: the architecture rebuilt on the meta device (no
    memory, no weights read) in the recorded shape, with every quantized module it names, and the
    stored weights' headers fit it (``weights_fit.check_weights_fit``). Before any work; ``load_model``
    then checks the weights against it."""
    with torch.device("meta"):
        model, manifest = _build(Path(path))
    if not manifest.get("quantization"):  # its weights fit the model the manifest rebuilds (layers, widths, dtype)
        check_weights_fit(weight_files(path), model.config, model)
    names = (manifest.get("quantization") or {}).get("modules") or []
    unknown = [name for name in names if not _has_module(model, name)]
    if unknown:
        raise ModelFileError(f"{Path(path) / MANIFEST}: its quantization entry names modules the model does not "
                             f"have ({', '.join(unknown[:3])})")


def _has_module(model: nn.Module, name: str) -> bool:
    try:
        model.get_submodule(name)
    except AttributeError:
        return False
    return True


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
