"""Iterative magnitude pruning, the maths, the masks and the schedule's Trainer callback (Du et al.
2023, §3.1 and appendix A; schedule of Zhu & Gupta 2017), shared by the ``magnitude`` method and
RMC's sample difficulty (``objectives/rmc/difficulty.py``, which prunes models the same way):

    s_t = s_f + (s_i − s_f) · (1 − (t − t_0) / (t_1 − t_0))³      for t_0 ≤ t ≤ t_1

and s_f after t_1; the ``s_t`` share of smallest-|w| weights is zeroed (one threshold over all
prunable weights for ``global`` scope, one per matrix for ``layer``). Only the linear weights inside
the transformer layers are pruned (the adapter's ``prunable_linears``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn
from transformers import TrainerCallback

from ...errors import ConfigError, UnsupportedModelError
from ...models.adapters import get_adapter
from ...models.experts import is_fused_experts, unsupported_experts
from ...training.trainer import checkpoint_dir, save_checkpoint_tensors

MASKS_FILE = "forgetless-magnitude.safetensors"  # masks and schedule history, inside each checkpoint


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
        fused = [name for name, module in model.named_modules() if is_fused_experts(module)
                 or module in dict(unsupported_experts(model)).values()]
        if fused:  # never leave experts unpruned without saying so
            raise UnsupportedModelError(f"magnitude pruning prunes nn.Linear weights while training; {fused[0]} keeps "
                                        "mixture-of-experts weights fused in 3-D tensors: use wanda or sparsegpt "
                                        "(one linear per expert)")
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


@dataclass
class CubicSchedule:
    """The cubic schedule's settings (the ``magnitude`` method's options of the same names)."""

    sparsity: float
    initial_sparsity: float = 0.0
    start_fraction: float = 0.0
    end_fraction: float = 0.7
    prune_every: int = 10


class MagnitudeCallback(TrainerCallback):
    """Updates masks along the cubic schedule and re-applies them after every optimizer step.

    The masks and the schedule history are saved into every checkpoint (``MASKS_FILE``) and
    restored on resume, so a resumed run prunes exactly as an uninterrupted one: the masks of the
    last pruning step, not masks rebuilt at the checkpoint's step."""

    def __init__(self, pruner: MagnitudePruner, schedule: CubicSchedule):
        self.pruner = pruner
        self.schedule = schedule
        self.history: list[tuple[int, float]] = []

    def _target(self, state) -> float:
        c = self.schedule
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
        if state.global_step % self.schedule.prune_every == 0 or state.global_step >= state.max_steps:
            target = self._target(state)
            self.pruner.prune_to(target)
            self.history.append((state.global_step, target))
        else:
            self.pruner.apply()
