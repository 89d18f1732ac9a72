"""Checks that a model folder can be loaded safely: a readable ``config.json``, safetensors weights
(never pickle) whose header and length agree, and whose names, shapes and dtype fit the config. Used
before any work (``forgetless.validate``) and by every loader, so a truncated, 0-byte or corrupt file,
a pickle-only folder or a folder without a model is one clear ``ModelFileError``.

The stored weights against ``config.json``: transformers builds a model from ``config.json`` and then
fills it from the safetensors files: a config that says 2 layers while the weights hold 4 silently
drops layers 2-3 (streamed calibration wrote a 2-layer model), a hidden size that is not the weights'
fails deep inside a computation (a ``RuntimeError`` in the Hessian of SparseGPT), a config dtype
narrower than the stored floats rounds them on load, and NaN / infinite weights make every score
chance and every Cholesky factorisation fail. Each is one ``ModelFileError`` naming the file and the
numbers:

* ``check_weights_fit(files, config)``: the safetensors headers (no tensor data) against the model
  the config builds on the meta device (no memory): the layer count of every stack, the shape of
  every tensor both have, the dtype (``check_model_folder`` calls it for every plain folder,
  ``io.check_saved_model`` for a forgetless one, against the model its manifest rebuilds);
* ``check_finite_weights(files)``: every stored float tensor finite, read one tensor at a time
  (before a compress run or a streamed calibration, which never holds the model whole);
  ``check_finite_model(model)`` the same for a model object.
"""
from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

import torch
import transformers
from safetensors import safe_open

from ..errors import ModelFileError
from .manifest import is_forgetless_folder

WEIGHTS = "model.safetensors"
NOT_STOCK_WEIGHTS = "model.forgetless.safetensors"  # weights stock from_pretrained must not find (io.save_weights)
INDEX = "model.safetensors.index.json"
PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
LAYER = re.compile(r"^(.+?)\.(\d+)\.")  # "model.layers.3.mlp…" → ("model.layers", 3)
LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "num_decoder_layers",
              "decoder_layers")
WIDE = {"F64": 64, "F32": 32, "BF16": 16, "F16": 16}
TORCH_NAMES = {"float64": "F64", "float32": "F32", "bfloat16": "BF16", "float16": "F16"}
DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",  # safetensors'
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
          torch.bool: "BOOL"}


_REMOTE_CODE = {"allowed": False}  # set by --trust-remote-code (cli) or allow_remote_code(True) (Python)


def allow_remote_code(allowed: bool) -> None:
    """Let transformers run the Python files of model folders that need them (``auto_map``); off
    by default, and every config / tokenizer / model load passes ``trust_remote_code`` explicitly."""
    _REMOTE_CODE["allowed"] = bool(allowed)


def trust_remote_code() -> bool:
    """The value every ``from_pretrained`` call passes as ``trust_remote_code`` (False unless asked)."""
    return _REMOTE_CODE["allowed"]


def check_remote_code(path: str | Path) -> None:
    """A local folder whose ``config.json`` names a ``model_type`` transformers does not know needs
    the folder's own Python code (``auto_map``): refused unless remote code was allowed, with one
    clear error and no prompt on stdin. A known type with an ``auto_map`` loads the library's class."""
    path = Path(path).expanduser()
    if trust_remote_code() or not (path / "config.json").is_file():
        return
    try:
        data = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return  # unreadable: check_model_folder names it
    if not isinstance(data, dict) or data.get("model_type") is None:
        return
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if str(data["model_type"]) in CONFIG_MAPPING:
        return
    if data.get("auto_map"):
        raise ModelFileError(f"{path / 'config.json'}: model_type {data['model_type']!r} needs the folder's own "
                             f"Python code (auto_map {', '.join(sorted(data['auto_map']))[:80]}); forgetless never "
                             "runs it unless you pass --trust-remote-code")
    raise ModelFileError(f"{path / 'config.json'}: model_type {data['model_type']!r} is not an architecture "
                         "transformers knows")


def check_model_folder(path: str | Path):
    """The config of a local model folder, after checking it can be loaded safely: a readable
    ``config.json`` and safetensors weights whose header and size agree (a truncated, 0-byte or
    corrupt file is caught here, not in the middle of loading). Pickle-only folders are refused
    with the command that converts them. Raises ``ModelFileError``; reads no tensor data."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise ModelFileError(f"{path}: is a file; a model is a folder (config.json and model.safetensors)")
    if not path.is_dir():
        raise ModelFileError(f"model folder {str(path)!r} does not exist")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelFileError(f"{path}: not a model folder (no config.json)")
    check_remote_code(path)
    try:
        config = transformers.AutoConfig.from_pretrained(str(path), trust_remote_code=trust_remote_code())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelFileError(f"{config_file}: unreadable model config ({first[:200]})") from exc
    if (path / WEIGHTS).exists() or (path / NOT_STOCK_WEIGHTS).exists():
        tensor_header(weights_file(path))  # a complete file (its header read)
    elif (path / INDEX).is_file():
        stored_tensors(weight_files(path))  # every shard complete
    elif any((path / name).exists() for name in PICKLE_WEIGHTS):
        raise ModelFileError(f"{path}: only pickle weights (pytorch_model.bin), which forgetless does not load; "
                             "convert them once with: python -c \"import transformers as t; "
                             f"t.AutoModel.from_pretrained('{path}').save_pretrained('{path}-safetensors')\"")
    else:
        raise ModelFileError(f"{path}: no weights ({WEIGHTS} is missing)")
    if not is_forgetless_folder(path):  # a forgetless folder: io.check_saved_model and the strict load
        check_weights_fit(weight_files(path), config)
    return config


def weight_files(path: str | Path) -> list[Path]:
    """The safetensors files of a model folder: its weights file, or the shards its index names (an
    unreadable index is a ``ModelFileError``)."""
    path = Path(path)
    if weights_file(path).is_file():
        return [weights_file(path)]
    try:
        return sorted({path / name for name in json.loads((path / INDEX).read_text())["weight_map"].values()})
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise ModelFileError(f"{path / INDEX}: unreadable safetensors index ({exc})") from exc


def weights_file(path: str | Path) -> Path:
    """The weights of a saved model folder: ``model.safetensors``, or ``model.forgetless.safetensors``
    where stock ``from_pretrained`` must not load them (``io.save_weights``)."""
    path = Path(path)
    return path / NOT_STOCK_WEIGHTS if (path / NOT_STOCK_WEIGHTS).exists() and not (path / WEIGHTS).exists() \
        else path / WEIGHTS


def tensor_header(file: str | Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{name: (shape, safetensors dtype)}`` of a complete safetensors file, from its JSON header (no
    tensor data read): the header parses and the file is exactly as long as the header's largest data
    offset says (a truncated or 0-byte file fails here)."""
    file = Path(file)
    try:
        size = file.stat().st_size
        with file.open("rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                raise ModelFileError(f"{file}: empty or truncated safetensors file ({size} bytes)")
            (length,) = struct.unpack("<Q", head)
            if length > min(size - 8, 100_000_000):
                raise ModelFileError(f"{file}: corrupt safetensors header (claims {length} bytes, file has {size})")
            header = json.loads(handle.read(length))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{file}: corrupt safetensors file ({exc})") from exc
    if not isinstance(header, dict):
        raise ModelFileError(f"{file}: corrupt safetensors header")
    header.pop("__metadata__", None)
    try:
        end = max((int(v["data_offsets"][1]) for v in header.values()), default=0)
        tensors = {name: (tuple(int(d) for d in v["shape"]), str(v["dtype"])) for name, v in sorted(header.items())}
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ModelFileError(f"{file}: corrupt safetensors header ({exc})") from exc
    if 8 + length + end != size:
        raise ModelFileError(f"{file}: truncated or corrupt safetensors file ({size} bytes, the header "
                             f"describes {8 + length + end})")
    return tensors


# a tokenizer is one of these; the JSON ones must parse (a corrupt file is one error, not a JSONDecodeError)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model",
                   "tokenizer.model", "sentencepiece.bpe.model")
TOKENIZER_JSON = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "added_tokens.json")


def check_tokenizer_files(path: str | Path) -> None:
    """A model folder holds a readable tokenizer: without one, transformers builds an empty tokenizer
    (its special tokens only: every word becomes [UNK]) and says nothing. Reads the JSON files only."""
    path = Path(path).expanduser()
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise ModelFileError(f"{path}: no tokenizer files ({', '.join(TOKENIZER_FILES[:3])} …); save the tokenizer "
                             "with the model (tokenizer.save_pretrained(FOLDER))")
    for name in TOKENIZER_JSON:
        if (path / name).is_file():
            try:
                json.loads((path / name).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ModelFileError(f"{path / name}: unreadable tokenizer file ({exc})") from exc


def load_tokenizer(path: str | Path):
    """The tokenizer saved in a model folder (``check_tokenizer_files`` first); a file transformers
    cannot read is a ``ModelFileError`` naming the folder."""
    check_tokenizer_files(path)
    try:
        return transformers.AutoTokenizer.from_pretrained(str(path), trust_remote_code=trust_remote_code())
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ModelFileError(f"{path}: unreadable tokenizer ({first[:200]})") from exc


# heads a checkpoint of another task has or lacks: a new classifier head is initialised, a
# pre-training head (MLM, LM, QA) is left out; every other tensor must come from the checkpoint
TASK_HEADS = ("classifier", "score", "pre_classifier", "classification_head", "cls", "lm_head", "qa_outputs",
              "pooler", "generator_predictions", "generator_lm_head", "discriminator_predictions", "final_logits_bias")


def check_loaded(model, path, info: dict | None = None) -> None:
    """After a load: every floating tensor finite, and (``info``: ``from_pretrained``'s
    ``output_loading_info``) no tensor of the model body missing from the checkpoint or left unused
    (a missing tensor would silently be random). Raises ``ModelFileError`` naming the tensor."""
    prefix = getattr(model, "base_model_prefix", "") or ""

    def body(key: str) -> bool:
        parts = key.split(".")
        parts = parts[1:] if parts and parts[0] == prefix else parts
        return not parts or parts[0] not in TASK_HEADS

    for kind in ("missing_keys", "unexpected_keys"):
        keys = sorted(k for k in (info or {}).get(kind) or () if body(k))
        if keys:
            what = "lacks" if kind == "missing_keys" else "has tensors the model does not use:"
            raise ModelFileError(f"{path}: the checkpoint {what} {len(keys)} tensor(s) of the model "
                                 f"({', '.join(keys[:3])}{', …' if len(keys) > 3 else ''}); it does not match its "
                                 "config.json")
    check_finite_model(model, str(path))


def is_trained_classifier(config) -> bool:
    """A config saved from a ``*ForSequenceClassification`` model: its head was trained and is read."""
    return any(a.endswith("ForSequenceClassification") for a in getattr(config, "architectures", None) or [])


def check_classifier_head(path: str | Path, config) -> None:
    """A folder saved from a trained classifier holds its classification head: a missing head would be
    replaced by random values without a word (transformers initialises what it does not find).
    Compares the names of a meta-device model (no memory) with the safetensors headers."""
    path = Path(path).expanduser()
    if not is_trained_classifier(config):
        return
    with torch.device("meta"):
        model = transformers.AutoModelForSequenceClassification.from_config(config)
    prefix = model.base_model_prefix + "."
    head = sorted(name for name in model.state_dict() if not name.startswith(prefix))
    stored = stored_tensors(weight_files(path))
    missing = [name for name in head if name not in stored]
    if missing:
        raise ModelFileError(f"{path}: saved from a trained {config.architectures[0]}, but its weights lack the "
                             f"classification head ({', '.join(missing[:3])}); it would be random. Give the complete "
                             "folder, or a base model folder (a new head is then trained)")


# ----- the stored weights against config.json (module docstring) ----------------------------------
def stored_tensors(files: list[Path]) -> dict[str, tuple[tuple[int, ...], str, Path]]:
    """``{name: (shape, safetensors dtype, file)}`` of a folder's weight ``files``; reads headers only."""
    return {name: (shape, dtype, Path(file)) for file in files for name, (shape, dtype) in tensor_header(file).items()}


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
