"""The training-objective contract, shared by every task type and every method; it lives next to the
Trainer that calls it (``trainer.py``), and the objectives (``forgetless/objectives/<family>/``)
implement it.

An objective is a config dataclass registered by name (``@OBJECTIVES.register(name,
implementation=...)`` in ``objectives/<family>/config.py``, standard library only) and an
implementation, a subclass of :class:`Objective` built from that config. Its parts, all optional
except the loss:

* ``config.model_kinds``: the model kinds it trains (``classifier``: class logits; ``seq2seq``: token
  logits of an encoder-decoder, for generation and text-to-text classification alike);
* ``prepare(ctx)``: computes, once, the per-example columns its loss needs (teacher
  probabilities, difficulty degrees, sample weights) as ``{column: list per training example}``;
  they arrive in every batch as ``extras`` (read them with :func:`batch_column`);
* ``__call__(logits, labels, extras)``: the loss as pure tensor math (tested without a model);
* ``compute_loss(model, inputs, extras)``: what the Trainer calls; by default one forward pass and
  ``__call__``. Objectives that need more (a teacher forward, two dropout passes, perturbed
  embeddings) override it;
* ``training_step(trainer, model, inputs, num_items_in_batch)``: optional replacement of the
  Trainer's step (adversarial training with several ascent steps), returning the detached loss;
* ``callbacks()``: ``TrainerCallback`` objects (e.g. gradient masks before the optimizer step),
  built from what ``prepare`` computed;
* ``log_values()``: extra numbers for the training log;
* ``difficulty_summary(ctx)``: for an objective whose config declares ``uses_difficulty``, the
  per-sample difficulty it computes from the context's teacher and how well it finds the task's
  hard examples (a sweep reports it before its runs).

Everything runs inside the one ``ForgetlessTrainer`` (``training/trainer.py``), so checkpoints,
resume and multi-process training come from the Hugging Face Trainer. Without an objective the
Trainer uses this base class: cross-entropy with the gold labels.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F

from ..errors import ConfigError


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy for class logits ``(B, C)`` or token logits ``(B, T, V)`` (targets equal
    to -100 are ignored: padding of generation targets)."""
    if logits.dim() == 3:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)
    return F.cross_entropy(logits, labels)


def batch_column(batch: dict, name: str, objective: str) -> torch.Tensor:
    """A per-example column of the batch, or a ConfigError saying ``prepare`` was not run."""
    if name not in batch:
        raise ConfigError(f"objective {objective!r} needs the batch column {name!r}: run objective.prepare(ctx) "
                          f"and pass its result as training extras")
    return batch[name]


class Objective:
    """Base of every objective: cross-entropy with the gold labels (class or target tokens)."""

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

    def difficulty_summary(self, ctx) -> dict | None:
        """The sample difficulty this objective uses (module docstring); None: it uses none."""
        return None
