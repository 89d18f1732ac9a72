"""Streamed calibration: one-shot methods (Wanda, SparseGPT, GPTQ: ``oneshot.py``; SmoothQuant:
``folding.py``) run on a model whose weights stay on disk, the way llm-compressor's sequential pipeline
onloads one layer at a time (accelerate's offloading, ``device_map``): only the layer being calibrated is
in memory.

``compress_streamed(folder, stack, texts, out)`` builds the model's skeleton and reads its
embeddings / norms / head (``models/streaming.LayerStream``), captures the first layer's inputs,
then for each decoder layer: read its tensors from the folder, accumulate its statistics,
compress it, propagate the calibration activations through the compressed layer, write it into
``out/model.safetensors`` and free it (``sequential.run_layer_by_layer`` with a ``LayerSource``).
The arithmetic is the in-memory path's, in the same order, so the saved weights are bit for bit
those of ``apply`` on the loaded model + ``save_model`` (``tests/methods/test_streaming.py``); the folder
(``config.json`` with compressed-tensors' ``quantization_config`` for GPTQ, tokenizer,
``forgetless.json``) is written by the same code as ``save_model`` (``io.write_model_files``) and
loads with ``forgetless.load_model`` and stock ``from_pretrained`` alike. With ``device="cuda"`` each
layer runs on the GPU (the embeddings and head stay there too); the weights file is written from
the CPU.

A stack (``--scheme W8A8-INT8``: SmoothQuant, then GPTQ int8 with int8 inputs) runs as successive
passes, as ``apply`` runs it in memory: each method calibrates on the model the one before left, from
the same calibration batches. The one before wrote it as a folder of the model's float dtype inside the
output's temporary folder (bit for bit the weights ``apply`` holds between the two), removed once the
next pass has read it; only the last method may quantize (``validate.check_chain``, in ``api``). That
folder is one more copy of the weights on disk: the free space is checked first (``disk_needed``). The manifest
records the methods as ``save_run`` does (``method`` and its ``artifacts``, ``then``).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from ...config import TrainConfig
from ...errors import ConfigError
from ...fsutil import atomic_directory, check_free_space
from ...models.checks import load_tokenizer
from ...models.io import check_model_destination, keep_from_stock_if_wrong, write_compressed_config, write_model_files
from ...models.loading import _pad_token, resolve_model_path
from ...models.memory_fit import weight_bytes
from ...models.streaming import LayerStream
from ..base import CompressionContext
from .sensitivity import check_sensitivity
from .calibration import calibration_batches
from .oneshot_config import OneShotConfig


def check_streamable(stack: list, out_dir) -> None:
    """Every method one-shot and streamable (``check_streams``: wanda, sparsegpt, gptq with integer codes,
    smoothquant), nothing trained or measured on the whole model, and an output folder; one ``ConfigError``
    naming what is not, before any work (``api.apply_streamed`` checks the chain first: only the last method
    quantizes, as a quantized folder is no streamed input)."""
    from ...registry import METHODS

    for config in stack:
        _check_streamable_method(config)
        METHODS.build(config).check_streams()
    if out_dir is None:
        raise ConfigError("out_dir: a model given as a folder is compressed layer by layer and written there; "
                          "pass out_dir= (or a model object to get one back)")


def _check_streamable_method(config) -> None:
    if not isinstance(config, OneShotConfig):
        raise ConfigError(f"method {config.name!r} does not calibrate layer by layer; streamed calibration runs "
                          "the one-shot methods (wanda, sparsegpt, gptq, smoothquant): pass a model object instead "
                          "of a folder")
    check_sensitivity(config, None, "forgetless.apply_streamed")
    if getattr(config, "bits_budget", 0):
        raise ConfigError(f"bits_budget={config.bits_budget:g}: measures each unit of the whole model at every "
                          "candidate format, and streamed calibration holds one layer at a time; pass a model object")
    if config.recovers:
        raise ConfigError(f"method {config.name!r} with recovery: fine-tune trains the whole model; streamed "
                          "calibration trains nothing (recovery='none')")


def disk_needed(folder: Path, methods: int) -> int:
    """Bytes ``compress_streamed`` may hold on the output's disk at once, for a folder of float weights of
    ``W`` bytes: the weights written as side files and then copied into ``model.safetensors``
    (``SafetensorsWriter``: 2 W, a quantized output less), and for a stack the previous pass's folder, read
    while the next one is written (W more)."""
    weights = weight_bytes(folder) or 0
    return weights * (2 + (methods > 1))


def compress_streamed(model: str | Path, stack: list[OneShotConfig], texts: list[str], out_dir, *,
                      tokenizer=None, device: str = "cpu", seed: int = 0) -> Path:
    """Compress the causal LM in folder ``model`` (or a short name: ``smollm2``) with the one-shot methods
    ``stack`` in order on calibration ``texts``, layer by layer, into the model folder ``out_dir`` (module
    docstring); returns its path. A stack runs as successive passes: each method reads the folder the one
    before wrote, a folder in the model's float dtype inside ``out_dir``'s temporary folder, removed once
    read (``atomic_directory`` removes it with everything else on an error)."""
    out = Path(out_dir).expanduser()
    check_model_destination(out)
    folder = Path(resolve_model_path(str(model)))
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer(folder)
    needed = disk_needed(folder, len(stack))
    check_free_space(out.parent, needed, f"out_dir={out}: streaming {', '.join(c.name for c in stack)} "
                     f"({len(stack)} pass{'es' if len(stack) > 1 else ''})", "free some space or name a folder on a "
                     "larger disk")
    with atomic_directory(out) as tmp:
        source, methods, texts_read = folder, [], []
        for index, config in enumerate(stack):
            last = index + 1 == len(stack)
            where = tmp if last else tmp / f".pass-{index + 1}-{config.name}"
            where.mkdir(exist_ok=True)
            method, stream, batches = _pass(source, config, texts, tokenizer, device, seed, where)
            methods.append(method)
            texts_read.append(sum(len(b["input_ids"]) for b in batches))
            metadata = {"method": methods[0].describe(), "artifacts": methods[0].artifacts(),
                        "then": [m.describe() for m in methods[1:]],
                        "streamed": {"device": str(stream.device), "calibration_texts": texts_read}}
            write_model_files(stream.model, where, tokenizer, metadata, lambda model, at: _finish(stream, at))
            if source != folder:
                shutil.rmtree(source)
            source = where
    return out


def _pass(folder: Path, config: OneShotConfig, texts: list[str], tokenizer, device: str, seed: int, out: Path):
    """One streamed pass: ``config``'s method calibrated on ``folder`` layer by layer, each layer written into
    ``out/model.safetensors`` as it is done; returns ``(method, stream, calibration batches)``."""
    from ...registry import METHODS

    stream = LayerStream(folder, device)
    stream.model.config.pad_token_id = _pad_token(tokenizer, str(folder))  # as load_causal_lm sets it
    method = METHODS.build(config)
    method.check_fits(stream.model)
    ctx = CompressionContext(task=None, tokenizer=tokenizer, teacher=None, work_dir=None,
                             train_config=TrainConfig(progress=False), seed=seed, kind=None, calibration=texts)
    batches = calibration_batches(ctx, config)
    stream.on_release = lambda layer: method.measure_compressed()
    try:
        stream.start(out)
        method.calibrate(stream.model, batches, source=stream)
    except BaseException:
        stream.abort()
        raise
    return method, stream, batches


def _finish(stream: LayerStream, folder: Path) -> dict | None:
    """The weights file closed, compressed-tensors' ``quantization_config`` for GPTQ; the manifest's
    ``quantization`` entry (as ``io.save_weights`` returns it)."""
    stream.close()
    entry = None
    if stream.quantized:
        weights, stored = stream.storage["weights"], stream.storage["bytes"]
        entry = write_compressed_config(stream.model, folder, stream.quantized, {
            "weights": weights, "bytes": stored, "bits_per_weight": 8 * stored / weights if weights else None})
    keep_from_stock_if_wrong(stream.model, folder)
    return entry
