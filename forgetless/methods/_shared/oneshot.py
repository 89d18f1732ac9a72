"""One-shot, calibration-based pruning of every linear layer of a model's transformer stacks, as
Wanda (Sun et al. 2023, §3) and SparseGPT (Frantar & Alistarh 2023, Algorithm 1) run it: a seeded
calibration set from the task's training split, fed as the model kind feeds it, goes layer by layer
through ``sequential.run_layer_by_layer``; each linear layer's weight (out × in) is replaced by its
pruned version (exact zeros) from that layer's input statistics. The subclass gives the solver
(``prune_weight``). Reported per layer: reached sparsity, the N:M check, and the relative
reconstruction error ``‖WX − ŴX‖_F / ‖WX‖_F`` on the calibration inputs (``hessian.py``).

Zeros are not removed (``structured = False``): a dense model runs no faster on CPU. With
``recovery: fine-tune`` the zeros are held fixed during training (``HoldZeros``).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import dataclasses
import statistics

import torch
from torch import nn
from transformers import TrainerCallback

from ...errors import ConfigError, OptionError
from ...models.adapters import get_adapter
from ...models.sites import in_features, is_conv1d
from ..base import CompressionContext, CompressionMethod
from .calibration import scoring_subset
from .hessian import HessianAccumulator, relative_reconstruction_error
from .masks import nm_pattern_holds
from .oneshot_config import OneShotPruningConfig
from .sequential import run_layer_by_layer

NO_SPEEDUP = "no speedup on CPU: unstructured and N:M sparsity need sparse kernels / sparse tensor cores"


def weight_matrix(module: nn.Module) -> torch.Tensor:
    """The (out × in) weight of an ``nn.Linear`` or of GPT-2's ``Conv1D`` (stored in × out)."""
    return module.weight.data.T if is_conv1d(module) else module.weight.data


def calibration_batches(ctx: CompressionContext, config: OneShotPruningConfig) -> list[dict]:
    """Seeded, label-stratified calibration texts of the training split, tokenized as the model kind
    feeds them, in batches of ``calibration_batch`` with the all-padding columns dropped."""
    if ctx.kind is None:
        raise ConfigError(f"{config.name}: the run gives no model kind to feed the calibration texts")
    subset = scoring_subset(ctx.task.train, config.calibration_examples, ctx.seed)
    view = dataclasses.replace(ctx.task, train=subset)
    inputs = ctx.kind.probe_inputs(ctx.tokenizer, view, len(subset), config.calibration_length)
    batches = []
    for start in range(0, len(subset), config.calibration_batch):
        batch = {k: v[start:start + config.calibration_batch] for k, v in inputs.items()}
        used = batch["attention_mask"].bool().any(dim=0)  # right or left padding: a contiguous span
        batches.append({k: v[:, used] for k, v in batch.items()})
    return batches


def check_pattern_fits(model: nn.Module, config: OneShotPruningConfig) -> None:
    """N:M needs every prunable layer's input width to be a multiple of M (checked before any work)."""
    nm = config.nm
    if nm is None:
        return
    for stack, layers in get_adapter(model).stacks(model).items():
        for index, layer in enumerate(layers):
            for name, m in layer.named_modules():
                if (isinstance(m, nn.Linear) or is_conv1d(m)) and in_features(m) % nm[1]:
                    raise OptionError(f"--pattern {config.pattern}: {stack} layer {index} {name} has {in_features(m)} "
                                      f"inputs, not a multiple of {nm[1]}; use --pattern unstructured")


class HoldZeros(TrainerCallback):
    """Re-applies the one-shot keep-masks after every optimizer step of a recovery fine-tune."""

    def __init__(self, masks: list[tuple[nn.Module, torch.Tensor]]):
        self.masks = masks

    def apply(self) -> None:
        with torch.no_grad():
            for module, keep in self.masks:
                weight_matrix(module).mul_(keep)

    def on_train_begin(self, args, state, control, **kwargs):
        self.apply()

    def on_step_end(self, args, state, control, **kwargs):
        self.apply()


class OneShotPruning(CompressionMethod, ABC):
    """prepare (calibrate and prune layer by layer) → optional recovery with the zeros held → finalize
    (measure the reached sparsity and the N:M pattern on the final weights)."""

    config: OneShotPruningConfig

    @abstractmethod
    def prune_weight(self, weight: torch.Tensor, stats: HessianAccumulator) -> torch.Tensor:
        """The pruned (out × in) weight from the layer's calibration statistics."""

    def prepare(self, model, ctx: CompressionContext):
        check_pattern_fits(model, self.config)
        batches = calibration_batches(ctx, self.config)
        device = next(model.parameters()).device
        batches = [{k: v.to(device) for k, v in b.items()} for b in batches]
        self.layers: list[dict] = []
        self.masks: list[tuple[nn.Module, torch.Tensor]] = []
        training = model.training
        model.eval()
        try:
            with torch.no_grad():
                run_layer_by_layer(model, batches, self._compress_layer)
        finally:
            model.train(training)
        ctx.notes.append(f"{self.config.name}: one-shot {self.config.pattern} pruning of {len(self.layers)} linear "
                         f"layers on {sum(len(b['input_ids']) for b in batches)} calibration texts; {NO_SPEEDUP}")
        return model

    def _compress_layer(self, stack: str, index: int, layer: nn.Module, stats: dict) -> None:
        for name, (module, accumulator) in stats.items():
            weight = weight_matrix(module)
            pruned = self.prune_weight(weight, accumulator).to(weight.dtype)
            error = relative_reconstruction_error(weight, pruned, accumulator.hessian)
            weight.copy_(pruned)
            self.masks.append((module, weight != 0))
            self.layers.append({"stack": stack, "layer": index, "module": name, "reconstruction_error": error})

    def callbacks(self, model, ctx):
        return [HoldZeros(self.masks)]

    def finalize(self, model, ctx):
        if self.config.recovers:
            HoldZeros(self.masks).apply()
        nm = self.config.nm
        for entry, (module, _) in zip(self.layers, self.masks):
            weight = weight_matrix(module)
            entry["sparsity"] = float((weight == 0).sum()) / weight.numel()
            entry["zeros"], entry["weights"] = int((weight == 0).sum()), weight.numel()
            entry["nm_holds"] = nm_pattern_holds(weight, *nm) if nm else None
        return model

    # ----- what the run reports ------------------------------------------------------------------
    def artifacts(self) -> dict:
        return {"pattern": self.config.pattern, "target_sparsity": self.config.target_sparsity,
                "layers": self.layers}

    def report_section(self) -> dict:
        zeros = sum(e["zeros"] for e in self.layers)
        total = sum(e["weights"] for e in self.layers)
        errors = [e["reconstruction_error"] for e in self.layers]
        nm = self.config.nm
        return {"sparsity": {
            "pattern": self.config.pattern, "target": self.config.target_sparsity,
            "reached": zeros / total if total else 0.0, "layers": len(self.layers),
            "nm_pattern_holds": all(e["nm_holds"] for e in self.layers) if nm else None,
            "reconstruction_error": {"mean": statistics.fmean(errors) if errors else None,
                                     "max": max(errors) if errors else None},
            "calibration_examples": self.config.calibration_examples,
            "speedup": NO_SPEEDUP}}
