"""Teacher probabilities for distillation objectives, computed once per (training set, teacher) and
cached on disk (Du et al. §5: "teacher probabilities are computed once and stored with the
training set").

Cache key: the training set's content fingerprint, a hash of the teacher's weights, and the
tokenisation length. The file is a NumPy ``.npz`` (no pickle) written atomically.
"""
from __future__ import annotations

import hashlib
import io
import logging
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..data.task import ExampleSet
from ..errors import ConfigError, DataError
from ..fsutil import atomic_write_bytes

log = logging.getLogger(__name__)


def model_fingerprint(model: nn.Module) -> str:
    """Short hash of a model's parameter names, shapes and values (stable across reloads)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
        digest.update(tensor.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes()
                      if tensor.numel() else b"")
    return digest.hexdigest()[:16]


def cache_root(ctx) -> Path:
    """Where an objective caches its per-training-set columns: ``ctx.cache_dir`` if the context has
    one, else ``<work_dir>/cache``."""
    explicit = getattr(ctx, "cache_dir", None)
    return Path(explicit) if explicit else Path(ctx.work_dir) / "cache"


def atomic_save_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """``np.savez`` written atomically (an interrupted run leaves no partial cache file)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    atomic_write_bytes(path, buffer.getvalue())


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray] | None:
    """Arrays of a cache file, or None when it is missing or unreadable (then it is recomputed)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable cache %s: %s", path, exc)
        return None


def teacher_probabilities(teacher: nn.Module, tokenizer, examples: ExampleSet, cache_dir: str | Path | None = None,
                          max_length: int = 128, batch_size: int = 64) -> np.ndarray:
    """Softmax of the teacher's logits for every example (``(N, C)`` float32), cached on disk."""
    from ..evaluate.predict import predict_logits

    path = None
    if cache_dir is not None:
        key = f"{examples.fingerprint()}-{model_fingerprint(teacher)}-L{max_length}"
        path = Path(cache_dir) / f"teacher-probs-{key}.npz"
        cached = load_npz(path)
        if cached is not None and cached["probs"].shape[0] == len(examples):
            log.info("teacher probabilities from cache %s", path)
            return cached["probs"]
    logits = predict_logits(teacher, tokenizer, examples, batch_size=batch_size, max_length=max_length)
    probs = torch.softmax(torch.as_tensor(logits, dtype=torch.float64), dim=-1).numpy().astype(np.float32)
    if probs.shape[1] != len(examples.label_names):
        raise DataError(f"teacher predicts {probs.shape[1]} classes, training set {examples.name} has "
                        f"{len(examples.label_names)}")
    if path is not None:
        atomic_save_npz(path, probs=probs)
    return probs


def context_teacher_probabilities(ctx) -> np.ndarray:
    """Teacher probabilities on ``ctx.task.train`` with the context's teacher, tokenizer and cache."""
    if ctx.teacher is None:
        raise ConfigError("this objective distils from a teacher, but the context has none")
    return teacher_probabilities(ctx.teacher, ctx.tokenizer, ctx.task.train, cache_root(ctx),
                                 max_length=ctx.train_config.max_length)
