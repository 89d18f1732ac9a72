"""JTT baseline, Just Train Twice (Liu et al. 2021), as used by Du et al., "What do Compressed
Large Language Models Forget?", §5.2 / appendix B.

1. Train a *first* (identification) model with plain cross-entropy for a short schedule.
2. Its training-set errors form the error set; those samples get weight λ_up = 2, the others 1,
   and the weights are divided by their mean so the average weight is 1.
3. The student is trained with the weighted cross-entropy ``mean_i w_i·CE(y_i, p_S,i)``.

The first model is a fresh copy of the pretrained model (``first_model``; by default the
context's ``base_model`` if it has one, else the bundled ``minilm``) trained with the same
``fine_tune`` Trainer. Its error set is cached on disk, keyed by the training set, the first
model and its schedule, so a second run does not retrain it.
"""
from __future__ import annotations

import logging
import shutil
from dataclasses import asdict, replace

import numpy as np
import torch
import transformers

from ...metrics.predict import predict_logits
from ...models.loading import load_classifier
from ...training.objective import Objective, batch_column
from ...training.trainer import fine_tune
from ..cache import atomic_save_npz, cache_key, context_cache_dir, load_npz
from ..formulas import jtt_weights, weighted_ce
from .config import JTTConfig

WEIGHT_COLUMN = "sample_weight"
log = logging.getLogger(__name__)


def first_model_errors(ctx, config: JTTConfig) -> np.ndarray:
    """Boolean array: which training examples the identification model misclassifies (cached)."""
    train = ctx.task.train
    first = config.first_model or getattr(ctx, "base_model", None) or "minilm"
    train_config = replace(ctx.train_config, epochs=config.first_epochs, learning_rate=config.first_learning_rate,
                           max_steps=-1, seed=ctx.seed, save_steps=10 ** 9)
    digest = cache_key({"train": train.fingerprint(), "first": str(first), "epochs": config.first_epochs,
                        "lr": config.first_learning_rate, "seed": ctx.seed, "batch": train_config.batch_size,
                        "max_length": train_config.max_length})
    path = context_cache_dir(ctx) / f"jtt-errors-{digest}.npz"
    cached = load_npz(path)
    if cached is not None and len(cached["misclassified"]) == len(train):
        log.info("JTT error set from cache %s", path)
        return cached["misclassified"].astype(bool)
    transformers.set_seed(ctx.seed)
    model, _ = load_classifier(str(first), ctx.task.label_names, device=getattr(ctx, "device", "cpu"))
    out_dir = ctx.work_dir / "jtt-first-model"
    shutil.rmtree(out_dir, ignore_errors=True)  # a stale run of another configuration must not resume
    model = fine_tune(model, ctx.tokenizer, train, out_dir, train_config)
    logits = predict_logits(model, ctx.tokenizer, train, max_length=train_config.max_length)
    shutil.rmtree(out_dir, ignore_errors=True)
    misclassified = logits.argmax(-1) != np.asarray(train.labels)
    atomic_save_npz(path, misclassified=misclassified, logits=logits.astype(np.float32))
    return misclassified


class JTT(Objective):
    """Weighted cross-entropy with the JTT weights as the ``sample_weight`` column."""

    def __init__(self, config: JTTConfig):
        super().__init__(config)
        self.summary: dict = {}

    def prepare(self, ctx) -> dict[str, list]:
        errors = first_model_errors(ctx, self.config)
        weights = jtt_weights(torch.as_tensor(errors), self.config.lambda_up)
        self.summary = {"error_set_size": int(errors.sum()), "n": int(len(errors)),
                        "error_rate": float(errors.mean()), "config": asdict(self.config)}
        ctx.notes.append(f"JTT: first model misclassifies {int(errors.sum())} of {len(errors)} training "
                         f"examples; they are up-weighted x{self.config.lambda_up} (weights mean 1)")
        return {WEIGHT_COLUMN: weights.tolist()}

    def __call__(self, logits, labels, batch):
        weights = batch_column(batch, WEIGHT_COLUMN, self.config.name).to(logits.device)
        return weighted_ce(logits, labels, weights)
