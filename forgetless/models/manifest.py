"""The ``forgetless.json`` manifest of a saved model folder: format, model class, per-site shape
and metadata. Its own module so that save / load (``io``), the stock-loading check (``stock``) and
the model card (``model_card``) all read it without importing each other."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import ForgetlessError

FORMAT = "forgetless-model-1"
MANIFEST = "forgetless.json"


def is_forgetless_folder(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


def read_manifest(path: str | Path) -> dict:
    manifest_path = Path(path) / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ForgetlessError(f"{manifest_path}: not a readable forgetless manifest ({exc})") from exc
    if manifest.get("format") != FORMAT:
        raise ForgetlessError(f"{manifest_path}: unknown format {manifest.get('format')!r}, expected {FORMAT!r}")
    return manifest


def transformers_model_class(name: str) -> type:
    """Only model classes of the transformers package itself are instantiated (no remote code)."""
    import transformers

    cls = getattr(transformers, name, None)
    if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)):
        raise ForgetlessError(f"model class {name!r} is not a transformers model class")
    return cls
