"""Checks that a model folder can be loaded safely, reading no tensor data: a readable
``config.json``, safetensors weights (never pickle) whose header and length agree, and whose names,
shapes and dtype fit the config (``weights_fit.py``). Used before any
work (``forgetless.validate``) and by every loader, so a truncated, 0-byte or corrupt file, a
pickle-only folder or a folder without a model is one clear ``ModelFileError``."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import torch
import transformers

from ..errors import ModelFileError
from .manifest import is_forgetless_folder
from .weights_fit import check_finite_model, check_weights_fit, stored_tensors

WEIGHTS = "model.safetensors"
NOT_STOCK_WEIGHTS = "model.forgetless.safetensors"  # weights stock from_pretrained must not find (quantized_io)
INDEX = "model.safetensors.index.json"
PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")


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
        check_safetensors(weights_file(path))
    elif (path / INDEX).is_file():
        try:
            shards = sorted(set(json.loads((path / INDEX).read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise ModelFileError(f"{path / INDEX}: unreadable safetensors index ({exc})") from exc
        for shard in shards:
            check_safetensors(path / shard)
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
    """The safetensors files of a checked model folder: its weights file, or the shards its index names."""
    path = Path(path)
    if weights_file(path).is_file():
        return [weights_file(path)]
    return sorted({path / name for name in json.loads((path / INDEX).read_text())["weight_map"].values()})


def weights_file(path: str | Path) -> Path:
    """The weights of a saved model folder: ``model.safetensors``, or ``model.forgetless.safetensors``
    where stock ``from_pretrained`` must not load them (``quantized_io.save_weights``)."""
    path = Path(path)
    return path / NOT_STOCK_WEIGHTS if (path / NOT_STOCK_WEIGHTS).exists() and not (path / WEIGHTS).exists() \
        else path / WEIGHTS


def check_safetensors(file: str | Path) -> None:
    """A safetensors file is complete: its JSON header parses and the file is exactly as long as
    the header's largest data offset says (a truncated or 0-byte file fails here)."""
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
    try:
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ModelFileError(f"{file}: corrupt safetensors header ({exc})") from exc
    if 8 + length + end != size:
        raise ModelFileError(f"{file}: truncated or corrupt safetensors file ({size} bytes, the header "
                             f"describes {8 + length + end})")


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
    if (path / INDEX).is_file():
        stored = set(json.loads((path / INDEX).read_text()).get("weight_map", {}))
    else:
        stored = set(tensor_header(weights_file(path)))
    missing = [name for name in head if name not in stored]
    if missing:
        raise ModelFileError(f"{path}: saved from a trained {config.architectures[0]}, but its weights lack the "
                             f"classification head ({', '.join(missing[:3])}); it would be random. Give the complete "
                             "folder, or a base model folder (a new head is then trained)")


def tensor_header(path: str | Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{name: (shape, safetensors dtype)}`` of a safetensors file (reads no tensor data)."""
    return {name: (shape, dtype) for name, (shape, dtype, _) in stored_tensors([path]).items()}
