"""The training-objective contract, shared by every task kind and every method.

An objective is a class registered by name (``@OBJECTIVES.register``) with an optional config
dataclass. Its parts, all optional except the loss:

* ``model_kinds``: the model kinds it trains (``classifier``: class logits; ``seq2seq``: token
  logits of an encoder-decoder, for generation and text-to-text classification alike);
* ``prepare(ctx)``: computes, once, the per-example columns its loss needs (teacher
  probabilities, difficulty degrees, sample weights) as ``{column: list per training example}``;
  they arrive in every batch as ``extras``;
* ``__call__(logits, labels, extras)``: the loss as pure tensor math (tested without a model);
* ``compute_loss(model, inputs, extras)``: what the Trainer calls; by default one forward pass and
  ``__call__``. Objectives that need more (a teacher forward, two dropout passes, perturbed
  embeddings) override it;
* ``training_step(trainer, model, inputs, num_items_in_batch)``: optional replacement of the
  Trainer's step (adversarial training with several ascent steps), returning the detached loss;
* ``callbacks()``: ``TrainerCallback`` objects (e.g. gradient masks before the optimizer step),
  built from what ``prepare`` computed;
* ``log_values()``: extra numbers for the training log.

Everything runs inside the one ``ForgetlessTrainer`` (``training/trainer.py``), so checkpoints,
resume and multi-process training come from the Hugging Face Trainer.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F


from ..registry import OBJECTIVES  # noqa: E402


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy for class logits ``(B, C)`` or token logits ``(B, T, V)`` (targets equal
    to -100 are ignored: padding of generation targets)."""
    if logits.dim() == 3:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)
    return F.cross_entropy(logits, labels)


class Objective:
    name = "base"
    model_kinds: tuple[str, ...] = ("classifier",)

    def __init__(self, config: Any = None):
        self.config = config

    def prepare(self, ctx) -> dict[str, list]:
        return {}

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor, extras: dict) -> torch.Tensor:
        return cross_entropy(logits, labels)

    def compute_loss(self, model, inputs: dict, extras: dict):
        """``(loss, outputs)`` for one batch; ``inputs`` holds the model inputs and ``labels``."""
        outputs = model(**inputs)
        return self(outputs.logits, inputs["labels"], extras), outputs

    def callbacks(self) -> list:
        return []

    def log_values(self) -> dict[str, float]:
        return {}


@OBJECTIVES.register("ce")
class CrossEntropy(Objective):
    """Vanilla fine-tuning: cross-entropy with the gold labels (class or target tokens)."""

    name = "ce"
    model_kinds = ("classifier", "seq2seq", "causal-lm")
