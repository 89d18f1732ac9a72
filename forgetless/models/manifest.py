"""The ``forgetless.json`` manifest of a saved model folder: format, model class, per-site shape
and metadata. Its own module so that save / load (``io``), the stock-loading check (``stock``) and
the model card (``report/model_card.py``) all read it without importing each other."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import ForgetlessError, ModelFileError

FORMAT = "forgetless-model-1"
MANIFEST = "forgetless.json"


def is_forgetless_folder(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


def read_manifest(path: str | Path) -> dict:
    manifest_path = Path(path) / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"{manifest_path}: not a readable forgetless manifest ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise ModelFileError(f"{manifest_path}: unknown format {found!r}, expected {FORMAT!r}")
    if not isinstance(manifest.get("shape"), dict) or not isinstance(manifest.get("model_class"), str):
        raise ModelFileError(f"{manifest_path}: manifest lacks the model class or shape")
    quantization = manifest.get("quantization")
    if quantization is not None and not (isinstance(quantization, dict) and isinstance(quantization.get("dtype"), str)
                                         and isinstance(quantization.get("modules", []), list)):
        raise ModelFileError(f"{manifest_path}: its quantization entry is not {{dtype, scheme, modules}}")
    manifest.setdefault("metadata", {})
    return manifest


def transformers_model_class(name: str) -> type:
    """Only model classes of the transformers package itself are instantiated (no remote code)."""
    import transformers

    cls = getattr(transformers, name, None)
    if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)):
        raise ForgetlessError(f"model class {name!r} is not a transformers model class")
    return cls
