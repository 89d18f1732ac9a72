"""Iterative magnitude pruning during task fine-tuning (Du et al. 2023, §3.1 and appendix A;
schedule of Zhu & Gupta 2017).

Unstructured: only the linear weights inside the transformer layers are pruned (embeddings are
frozen and never pruned; biases, LayerNorms, pooler and classifier are kept). Sparsity rises along
the cubic schedule (``pruning.py``: schedule and masks). Pruned weights are re-zeroed after every
optimizer step, so they stay zero (``MagnitudeCallback``, resumable). Sparse weights do not make a
dense model faster: the report says so instead of claiming a speedup.
"""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn
from transformers import TrainerCallback

from ...errors import ConfigError
from ...training.trainer import checkpoint_dir, save_checkpoint_tensors
from ..base import CompressionContext, CompressionMethod
from .config import MagnitudeConfig
from .pruning import MagnitudePruner, cubic_sparsity

MASKS_FILE = "forgetless-magnitude.safetensors"  # masks and schedule history, inside each checkpoint


class MagnitudeCallback(TrainerCallback):
    """Updates masks along the cubic schedule and re-applies them after every optimizer step.

    The masks and the schedule history are saved into every checkpoint (``MASKS_FILE``) and
    restored on resume, so a resumed run prunes exactly as an uninterrupted one: the masks of the
    last pruning step, not masks rebuilt at the checkpoint's step."""

    def __init__(self, pruner: MagnitudePruner, config: MagnitudeConfig):
        self.pruner = pruner
        self.config = config
        self.history: list[tuple[int, float]] = []

    def _target(self, state) -> float:
        c = self.config
        return cubic_sparsity(state.global_step, state.max_steps, c.sparsity, c.initial_sparsity,
                              c.start_fraction, c.end_fraction)

    def on_train_begin(self, args, state, control, **kwargs):
        saved = checkpoint_dir(args, state) / MASKS_FILE
        if state.global_step > 0 and saved.is_file():
            self._restore(saved)
        else:
            self.pruner.prune_to(self._target(state))

    def on_save(self, args, state, control, **kwargs):
        if self.pruner.masks is not None:
            tensors = {f"mask.{i}": m.to(torch.uint8) for i, m in enumerate(self.pruner.masks)}
            tensors["history"] = torch.tensor(self.history, dtype=torch.float64).reshape(-1, 2)
            save_checkpoint_tensors(args, state, MASKS_FILE, tensors)

    def _restore(self, path: Path) -> None:
        tensors = load_file(str(path))
        masks = [tensors[f"mask.{i}"].bool() for i in range(len(self.pruner.linears))]
        if any(m.shape != lin.weight.shape for m, lin in zip(masks, self.pruner.linears)):
            raise ConfigError(f"{path}: saved masks do not match the model's prunable weights")
        self.pruner.masks = masks
        self.pruner.apply()
        self.history = [(int(step), float(target)) for step, target in tensors["history"].tolist()]

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step % self.config.prune_every == 0 or state.global_step >= state.max_steps:
            target = self._target(state)
            self.pruner.prune_to(target)
            self.history.append((state.global_step, target))
        else:
            self.pruner.apply()


class MagnitudePruning(CompressionMethod):
    """prepare (freeze embeddings) → fine-tune with the schedule's callback → finalize (prune to the
    target; with ``recovery: none`` that is one-shot pruning)."""

    def prepare(self, model, ctx: CompressionContext):
        for module in _embedding_modules(model):
            module.requires_grad_(False)
        self.pruner = MagnitudePruner(model, self.config.scope)
        return model

    def callbacks(self, model, ctx):
        self.callback = MagnitudeCallback(self.pruner, self.config)
        return [self.callback]

    def finalize(self, model, ctx):
        self.pruner.prune_to(self.config.sparsity)
        measured = self.pruner.sparsity()
        ctx.notes.append(f"magnitude pruning: measured sparsity {measured:.4f} of {len(self.pruner.linears)} "
                         f"prunable weight matrices (target {self.config.sparsity}); unstructured zeros do "
                         "not speed up dense inference, so no speedup is expected")
        for module in _embedding_modules(model):
            module.requires_grad_(True)
        return model


def _embedding_modules(model: nn.Module) -> list[nn.Module]:
    base = getattr(model, "base_model", model)
    embeddings = getattr(base, "embeddings", None)
    return [embeddings] if embeddings is not None else [model.get_input_embeddings()]
