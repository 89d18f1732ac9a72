"""One-shot, calibration-based compression of every linear layer of a model's transformer stacks, as
Wanda (Sun et al. 2023, §3), SparseGPT (Frantar & Alistarh 2023, Algorithm 1) and GPTQ (Frantar et
al. 2022, §4) run it: a seeded calibration set from the task's training split, fed as the model kind
feeds it, goes layer by layer through ``sequential.run_layer_by_layer``; each linear layer's weight
(out × in) is replaced from that layer's input statistics (``OneShotMethod.compress_linear``).
Reported per layer: the relative reconstruction error ``‖WX − ŴX‖_F / ‖WX‖_F`` on the calibration
inputs (``hessian.py``); for pruning (``OneShotPruning``, the solver in ``prune_weight``) also the
reached sparsity and the N:M check.

Zeros are not removed (``structured = False``): a dense model runs no faster on CPU. With
``recovery: fine-tune`` the zeros are held fixed during training (``HoldZeros``).
"""
from __future__ import annotations

import statistics
from abc import ABC, abstractmethod

import torch
from torch import nn
from transformers import TrainerCallback

from ...models.adapters import get_adapter
from ...models.sites import in_features, weight_matrix
from ..base import CompressionContext, CompressionMethod
from .calibration import calibration_batches
from .hessian import HessianAccumulator, relative_reconstruction_error
from .masks import nm_pattern_holds
from .oneshot_config import OneShotConfig, OneShotPruningConfig
from .sequential import run_layer_by_layer

NO_SPEEDUP = "no speedup on CPU: unstructured and N:M sparsity need sparse kernels / sparse tensor cores"


def linear_widths(model: nn.Module):
    """``(where, input width)`` of every linear layer of the stacks (``where``: "decoder layer 0 q_proj")."""
    for name, module in get_adapter(model).prunable_linears(model):
        stack, index, inner = name.split(".", 2)
        yield f"{stack} layer {index} {inner}", in_features(module)


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


class OneShotMethod(CompressionMethod, ABC):
    """prepare: check the options against the modules, calibrate, and compress layer by layer."""

    config: OneShotConfig

    def check_fits(self, model: nn.Module) -> None:
        """Options against the model's modules, before calibration (none by default)."""

    @abstractmethod
    def compress_linear(self, module: nn.Module, stats: HessianAccumulator) -> dict:
        """Replace ``module``'s weight from its calibration statistics; returns its report entry."""

    @abstractmethod
    def note(self, texts: int) -> str:
        """The card's note on what was done."""

    def prepare(self, model, ctx: CompressionContext):
        self.check_fits(model)
        batches = calibration_batches(ctx, self.config)
        device = next(model.parameters()).device
        batches = [{k: v.to(device) for k, v in b.items()} for b in batches]
        self.layers: list[dict] = []
        training = model.training
        model.eval()
        try:
            with torch.no_grad():
                run_layer_by_layer(model, batches, self._compress_layer)
        finally:
            model.train(training)
        ctx.notes.append(self.note(sum(len(b["input_ids"]) for b in batches)))
        return model

    def _compress_layer(self, stack: str, index: int, layer: nn.Module, stats: dict) -> None:
        for name, (module, accumulator) in stats.items():
            entry = self.compress_linear(module, accumulator)
            self.layers.append({"stack": stack, "layer": index, "module": name, **entry})


class OneShotPruning(OneShotMethod):
    """prepare (calibrate and prune layer by layer) → optional recovery with the zeros held → finalize
    (measure the reached sparsity and the N:M pattern on the final weights)."""

    config: OneShotPruningConfig

    @abstractmethod
    def prune_weight(self, weight: torch.Tensor, stats: HessianAccumulator) -> torch.Tensor:
        """The pruned (out × in) weight from the layer's calibration statistics."""

    def check_fits(self, model: nn.Module) -> None:
        for where, width in linear_widths(model):
            self.config.check_nm_fits(width, f"{where} has")

    def prepare(self, model, ctx: CompressionContext):
        self.masks: list[tuple[nn.Module, torch.Tensor]] = []
        return super().prepare(model, ctx)

    def note(self, texts: int) -> str:
        return (f"{self.config.name}: one-shot {self.config.pattern} pruning of {len(self.layers)} linear layers on "
                f"{texts} calibration texts; {NO_SPEEDUP}")

    def compress_linear(self, module: nn.Module, stats: HessianAccumulator) -> dict:
        weight = weight_matrix(module)
        pruned = self.prune_weight(weight, stats).to(weight.dtype)
        error = relative_reconstruction_error(weight, pruned, stats.hessian)
        weight.copy_(pruned)
        self.masks.append((module, weight != 0))
        return {"reconstruction_error": error}

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
