"""Teacher probabilities for the distillation objectives (Distil, Smooth, RMC), computed once per
(training set, teacher) and cached on disk (Du et al. §5: "teacher probabilities are computed once
and stored with the training set").

Cache key: the training set's content fingerprint, a hash of the teacher's weights, and the
tokenisation length (``objectives/cache.py``: NumPy ``.npz``, no pickle, written atomically).
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ...data.task import ExampleSet
from ...errors import ConfigError, DataError
from ...metrics.predict import predict_logits
from ...models.io import model_fingerprint
from ..cache import atomic_save_npz, context_cache_dir, load_npz

log = logging.getLogger(__name__)


def teacher_probabilities(teacher: nn.Module, tokenizer, examples: ExampleSet, cache_dir: str | Path | None = None,
                          max_length: int = 128, batch_size: int = 64) -> np.ndarray:
    """Softmax of the teacher's logits for every example (``(N, C)`` float32), cached on disk."""
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
    return teacher_probabilities(ctx.teacher, ctx.tokenizer, ctx.task.train, context_cache_dir(ctx),
                                 max_length=ctx.train_config.max_length)
