"""Streamed calibration: a one-shot method (Wanda, SparseGPT, GPTQ: ``oneshot.py``) run on a model
whose weights stay on disk, the way llm-compressor's sequential pipeline onloads one layer at a
time (accelerate's offloading, ``device_map``): only the layer being calibrated is in memory.

``compress_streamed(folder, config, texts, out)`` builds the model's skeleton and reads its
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
"""
from __future__ import annotations

from pathlib import Path

from ...config import TrainConfig
from ...errors import ConfigError
from ...fsutil import atomic_directory
from ...models.checks import load_tokenizer
from ...models.io import check_model_destination, keep_from_stock_if_wrong, write_compressed_config, write_model_files
from ...models.loading import _pad_token, resolve_model_path
from ...models.streaming import LayerStream
from ..base import CompressionContext
from .sensitivity import check_sensitivity
from .calibration import calibration_batches
from .oneshot_config import OneShotConfig


def check_streamable(stack: list, out_dir) -> None:
    """One method, one-shot (wanda / sparsegpt / gptq), nothing trained, and an output folder;
    one ``ConfigError`` naming what is not, before any work."""
    if len(stack) != 1:
        raise ConfigError(f"streamed calibration runs one method; got {', '.join(c.name for c in stack)} "
                          "(a stack needs the model in memory: pass a model object)")
    config = stack[0]
    if not isinstance(config, OneShotConfig):
        raise ConfigError(f"method {config.name!r} does not calibrate layer by layer; streamed calibration runs "
                          "the one-shot methods (wanda, sparsegpt, gptq): pass a model object instead of a folder")
    check_sensitivity(config, None, "forgetless.apply_streamed")
    if getattr(config, "bits_budget", 0):
        raise ConfigError(f"bits_budget={config.bits_budget:g}: measures each unit of the whole model at every "
                          "candidate format, and streamed calibration holds one layer at a time; pass a model object")
    if config.recovers:
        raise ConfigError(f"method {config.name!r} with recovery: fine-tune trains the whole model; streamed "
                          "calibration trains nothing (recovery='none')")
    if out_dir is None:
        raise ConfigError("out_dir: a model given as a folder is compressed layer by layer and written there; "
                          "pass out_dir= (or a model object to get one back)")


def compress_streamed(model: str | Path, config: OneShotConfig, texts: list[str], out_dir, *,
                      tokenizer=None, device: str = "cpu", seed: int = 0) -> Path:
    """Compress the causal LM in folder ``model`` (or a short name: ``smollm2``) with the one-shot
    ``config`` on calibration ``texts``, layer by layer, into the model folder ``out_dir`` (module
    docstring); returns its path."""
    from ...registry import METHODS

    out = Path(out_dir).expanduser()
    check_model_destination(out)
    folder = Path(resolve_model_path(str(model)))
    stream = LayerStream(folder, device)
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer(folder)
    stream.model.config.pad_token_id = _pad_token(tokenizer, str(folder))  # as load_causal_lm sets it
    method = METHODS.build(config)
    method.check_fits(stream.model)
    ctx = CompressionContext(task=None, tokenizer=tokenizer, teacher=None, work_dir=None,
                             train_config=TrainConfig(progress=False), seed=seed, kind=None, calibration=texts)
    batches = calibration_batches(ctx, config)
    stream.on_release = lambda layer: method.measure_compressed()
    with atomic_directory(out) as tmp:
        try:
            stream.start(tmp)
            method.calibrate(stream.model, batches, source=stream)
        except BaseException:
            stream.abort()
            raise
        metadata = {"method": method.describe(), "artifacts": method.artifacts(), "then": [],
                    "streamed": {"device": str(stream.device), "calibration_texts":
                                 sum(len(b["input_ids"]) for b in batches)}}
        write_model_files(stream.model, tmp, tokenizer, metadata, lambda model, where: _finish(stream, where))
    return out


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
