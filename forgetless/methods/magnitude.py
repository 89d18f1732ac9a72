"""Iterative magnitude pruning during task fine-tuning (Du et al. 2023, §3.1 and appendix A;
schedule of Zhu & Gupta 2017).

Unstructured: only the linear weights inside the transformer layers are pruned (embeddings are
frozen and never pruned; biases, LayerNorms, pooler and classifier are kept). Sparsity rises
along the cubic schedule

    s_t = s_f + (s_i − s_f) · (1 − (t − t_0) / (t_1 − t_0))³      for t_0 ≤ t ≤ t_1

and stays at s_f after t_1. Pruned weights are re-zeroed after every optimizer step, so they stay
zero. Sparse weights do not make a dense model faster: the report says so instead of claiming
a speedup.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import TrainerCallback

from ..errors import ConfigError
from ..models.adapters import get_adapter
from .base import METHODS, CompressionContext, CompressionMethod, check_recovery


@dataclass
class MagnitudeConfig:
    sparsity: float = 0.4  # final share of zero weights among prunable ones
    initial_sparsity: float = 0.0
    start_fraction: float = 0.0  # share of training steps before pruning starts
    end_fraction: float = 0.7  # share of training steps at which the target is reached
    prune_every: int = 10  # steps between mask updates
    scope: str = "global"  # "global": one threshold for all layers; "layer": per weight matrix
    recovery: str = "fine-tune"  # fine-tune: gradual pruning during training; none: one-shot to `sparsity`

    def __post_init__(self):
        check_recovery(self.recovery)
        if not 0.0 <= self.sparsity < 1.0:
            raise ConfigError(f"sparsity must be in [0, 1), got {self.sparsity}")
        if not 0.0 <= self.initial_sparsity <= self.sparsity:
            raise ConfigError("initial_sparsity must be in [0, sparsity]")
        if not 0.0 <= self.start_fraction < self.end_fraction <= 1.0:
            raise ConfigError("need 0 <= start_fraction < end_fraction <= 1")
        if self.prune_every < 1:
            raise ConfigError("prune_every must be >= 1")
        if self.scope not in ("global", "layer"):
            raise ConfigError(f"scope must be 'global' or 'layer', got {self.scope!r}")


def cubic_sparsity(step: int, total_steps: int, final: float, initial: float = 0.0,
                   start_fraction: float = 0.0, end_fraction: float = 0.7) -> float:
    """Zhu & Gupta (2017) cubic schedule, in training-step units."""
    t0, t1 = start_fraction * total_steps, end_fraction * total_steps
    if step <= t0:
        return initial
    if step >= t1 or t1 <= t0:
        return final
    progress = (step - t0) / (t1 - t0)
    return final + (initial - final) * (1.0 - progress) ** 3


def magnitude_masks(weights: list[torch.Tensor], sparsity: float, scope: str = "global") -> list[torch.Tensor]:
    """Boolean keep-masks that zero the ``sparsity`` share of smallest-|w| entries
    (over all weights at once for ``global``, per tensor for ``layer``)."""
    if sparsity <= 0:
        return [torch.ones_like(w, dtype=torch.bool) for w in weights]
    if scope == "layer":
        return [magnitude_masks([w], sparsity, "global")[0] for w in weights]
    magnitudes = torch.cat([w.detach().abs().flatten() for w in weights])
    k = int(round(sparsity * magnitudes.numel()))
    if k == 0:
        return [torch.ones_like(w, dtype=torch.bool) for w in weights]
    threshold = torch.kthvalue(magnitudes.float().cpu(), k).values.item()
    return [w.detach().abs() > threshold for w in weights]


class MagnitudePruner:
    """Holds keep-masks for a model's prunable linear weights and applies them."""

    def __init__(self, model: nn.Module, scope: str = "global"):
        self.linears = [lin for _, lin in get_adapter(model).prunable_linears(model)]
        self.scope = scope
        self.masks: list[torch.Tensor] | None = None

    def prune_to(self, sparsity: float) -> None:
        self.masks = magnitude_masks([lin.weight for lin in self.linears], sparsity, self.scope)
        self.apply()

    @torch.no_grad()
    def apply(self) -> None:
        if self.masks is not None:
            for lin, mask in zip(self.linears, self.masks):
                lin.weight.mul_(mask.to(lin.weight.dtype))

    def sparsity(self) -> float:
        total = sum(lin.weight.numel() for lin in self.linears)
        zeros = sum(int((lin.weight == 0).sum()) for lin in self.linears)
        return zeros / total


def magnitude_prune(model: nn.Module, sparsity: float, scope: str = "global") -> float:
    """One-shot magnitude pruning in place; returns the measured sparsity."""
    pruner = MagnitudePruner(model, scope)
    pruner.prune_to(sparsity)
    return pruner.sparsity()


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
        saved = Path(args.output_dir) / f"checkpoint-{state.global_step}" / MASKS_FILE
        if state.global_step > 0 and saved.is_file():
            self._restore(saved)
        else:
            self.pruner.prune_to(self._target(state))

    def on_save(self, args, state, control, **kwargs):
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir() and self.pruner.masks is not None:
            tensors = {f"mask.{i}": m.to(torch.uint8).contiguous() for i, m in enumerate(self.pruner.masks)}
            tensors["history"] = torch.tensor(self.history, dtype=torch.float64).reshape(-1, 2)
            save_file(tensors, str(folder / MASKS_FILE))

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


@METHODS.register("magnitude", MagnitudeConfig)
class MagnitudePruning(CompressionMethod):
    name = "magnitude"
    structured = False
    kinds = ("classification", "generation")

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
