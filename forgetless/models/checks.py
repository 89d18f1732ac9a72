"""Checks that a model folder can be loaded safely, reading no tensor data: a readable
``config.json``, safetensors weights (never pickle) whose header and length agree. Used before any
work (``forgetless.validate``) and by every loader, so a truncated, 0-byte or corrupt file, a
pickle-only folder or a folder without a model is one clear ``ModelFileError``."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import transformers

from ..errors import ModelFileError

WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")


def check_model_folder(path: str | Path):
    """The config of a local model folder, after checking it can be loaded safely: a readable
    ``config.json`` and safetensors weights whose header and size agree (a truncated, 0-byte or
    corrupt file is caught here, not in the middle of loading). Pickle-only folders are refused
    with the command that converts them. Raises ``ModelFileError``; reads no tensor data."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ModelFileError(f"model folder {str(path)!r} does not exist")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelFileError(f"{path}: not a model folder (no config.json)")
    try:
        config = transformers.AutoConfig.from_pretrained(str(path))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelFileError(f"{config_file}: unreadable model config ({first[:200]})") from exc
    if (path / WEIGHTS).exists():
        check_safetensors(path / WEIGHTS)
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
    return config


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
