"""One-shot, calibration-based compression of every linear layer of a model's transformer stacks, as
Wanda (Sun et al. 2023, §3), SparseGPT (Frantar & Alistarh 2023, Algorithm 1) and GPTQ (Frantar et
al. 2022, §4) run it: a seeded calibration set from the task's training split, fed as the model kind
feeds it, goes layer by layer through ``sequential.run_layer_by_layer``; each linear layer's weight
(out × in) is replaced from that layer's input statistics (``OneShotMethod.compress_linears``, given
the linears fed the same inputs together: q / k / v, gate / up share one Hessian and one solve).
``calibrate(model, batches)`` is that step on given batches (the benchmarks call it).
Reported per layer: the relative reconstruction error ``‖WX − ŴX‖_F / ‖WX‖_F`` on the calibration
inputs (``hessian.py``); for pruning (``OneShotPruning``, the solver in ``prune_weights``) also the
reached sparsity and the N:M check (``masks.nm_check``: groups with exactly n non-zeros, fewer,
fewer because the base weights were already zero, more).

Zeros are not removed (``structured = False``): a dense model runs no faster on CPU. With
``recovery: fine-tune`` the zeros are held fixed during training (``HoldZeros``).
"""
from __future__ import annotations

import statistics
from abc import ABC, abstractmethod

import torch
from torch import nn
from transformers import TrainerCallback

from ...metrics.predict import scoring_mode
from ...models.experts import linearized
from ...models.sites import in_features, weight_matrix
from ...models.targets import Selection, coverage, select_linears
from ..base import CompressionContext, CompressionMethod
from .budget import formatted, selection_of, split_by_format, start_budget
from .calibration import calibration_batches
from .hessian import HessianAccumulator
from .masks import NmCheck, nm_check, nm_nonzeros
from .oneshot_config import OneShotConfig, OneShotPruningConfig
from .sequential import LayerSource, groups_of, run_layer_by_layer

NM_COUNTS = ("groups", "exactly_n", "fewer_than_n", "fewer_base_zero", "more_than_n")
NO_SPEEDUP = "no speedup on CPU: unstructured and N:M sparsity need sparse kernels / sparse tensor cores"


def chosen_linears(model: nn.Module, config, selection: Selection | None = None) -> tuple[list[tuple[str, int]], dict]:
    """``[(name, input width)]`` of the linears ``config``'s ``targets`` / ``ignore`` choose (checked
    against the model: ``models/targets.py``; experts one per expert and projection) and the card's
    ``coverage`` of them (``selection``: another, e.g. less the linears a bit budget keeps)."""
    selection = selection or Selection.of(config)
    with linearized(model):
        chosen = select_linears(model, selection)
        return [(name, in_features(module)) for name, module in chosen], coverage(model, chosen, selection)


def coverage_note(name: str, covered: dict) -> str:
    """The card's sentence on what was compressed (``targets.coverage``)."""
    experts = f", {covered['experts']} of them expert projections" if covered["experts"] else ""
    return (f"{name}: compressed {covered['modules']} linear layers{experts} (--targets {','.join(covered['targets'])}"
            f"{' --ignore ' + ','.join(covered['ignore']) if covered['ignore'] else ''}): {covered['weights']:,} weights, "
            f"{100 * covered['share']:.1f}% of the model's {covered['parameters']:,} parameters")


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


class CalibratedMethod(CompressionMethod, ABC):
    """What the methods calibrated layer by layer share (``OneShotMethod``; ``folding.FoldingMethod``): prepare =
    check the options against the modules, calibrate on the run's calibration texts (``calibrate``), note it."""

    hessian_every: int = 1  # the Hessian over every k-th calibration token (``HessianAccumulator``)

    def check_fits(self, model: nn.Module) -> None:
        """Options against the model's modules, before calibration: ``targets`` / ``ignore`` (``models/targets.py``)
        and each chosen linear's input width (``check_width``)."""
        for name, width in chosen_linears(model, self.config)[0]:
            self.check_width(name, width)

    def check_width(self, name: str, width: int) -> None:
        """One chosen linear's input width against the options (nothing by default)."""

    def check_streams(self) -> None:
        """Streamed calibration (``streamed.py``: the weights on disk, one layer in memory) can run this method
        with its options: nothing by default; else one ``ConfigError`` saying why, before any work."""

    @abstractmethod
    def calibrate(self, model: nn.Module, batches: list[dict], source: LayerSource | None = None) -> None:
        """The compression step on given calibration ``batches`` (tokenized model inputs)."""

    @abstractmethod
    def note(self, texts: int) -> str:
        """The card's note on what was done."""

    def prepare(self, model, ctx: CompressionContext):
        self.check_fits(model)
        start_budget(self, model, ctx)
        batches = calibration_batches(ctx, self.config)
        self.calibrate(model, batches)
        ctx.notes.append(self.note(sum(len(b["input_ids"]) for b in batches)))
        return model


class OneShotMethod(CalibratedMethod):
    """prepare: check the options against the modules, calibrate, and compress layer by layer."""

    config: OneShotConfig

    @abstractmethod
    def compress_linears(self, modules: list[nn.Module], stats: HessianAccumulator) -> list[dict]:
        """Replace the weights of ``modules`` (linears of one layer fed the same inputs, whose
        statistics are ``stats``) from those statistics; returns each one's report entry."""

    def prepare(self, model, ctx: CompressionContext):
        model = super().prepare(model, ctx)
        ctx.notes.append(coverage_note(self.config.name, self.coverage))
        if self.unreached:
            ctx.notes.append(f"{self.config.name}: {self.unreached} linear layers (experts the router sent no calibration "
                             f"token to) were compressed on identity statistics: {self.fallback}")
        return model

    fallback = "by magnitude"  # what identity statistics (``HessianAccumulator.identity``) amount to

    def calibrate(self, model: nn.Module, batches: list[dict], source: LayerSource | None = None) -> None:
        """The compression step on given calibration ``batches`` (tokenized model inputs): every
        layer calibrated and compressed in order (``sequential.run_layer_by_layer``); ``source``:
        where each layer's weights come from when the model holds none (``streamed.py``)."""
        if source is not None:
            self.check_streams()
        device = next(p for p in model.parameters() if not p.is_meta).device
        batches = [{k: v.to(device) for k, v in b.items()} for b in batches]
        self.layers: list[dict] = []
        self.coverage = chosen_linears(model, self.config, selection_of(self))[1]
        self.unreached = 0
        with scoring_mode(model, freeze=False), torch.no_grad():
            run_layer_by_layer(model, batches, self._compress_layer, label=self.config.name,
                               hessian_every=self.hessian_every, source=source, select=selection_of(self))

    def measure_compressed(self) -> None:
        """Measure on the weights what the layers compressed so far report (``finalize`` does it for
        a model held whole; streamed calibration after each layer, before its weights are freed)."""

    def _compress_layer(self, stack: str, index: int, layer: nn.Module, stats: dict) -> None:
        entries = {}  # linears fed the same inputs share an accumulator: one solve
        for names in (part for same, _, _ in groups_of(stats) for part in split_by_format(self, f"{stack}.{index}", same)):
            modules, accumulator = [stats[n][0] for n in names], stats[names[0]][1]
            unreached = accumulator.reached == 0  # an expert no calibration token was routed to
            if unreached:
                accumulator = HessianAccumulator.identity(in_features(modules[0]), weight_matrix(modules[0]).device)
                self.unreached += len(names)
            with formatted(self, names[0], f"{stack}.{index}"):
                reports = self.compress_linears(modules, accumulator)
            entries.update(zip(names, ({**r, "no_calibration_tokens": True} if unreached else r for r in reports)))
        for name in stats:  # in module order
            self.layers.append({"stack": stack, "layer": index, "module": name, **entries[name]})


class OneShotPruning(OneShotMethod):
    """prepare (calibrate and prune layer by layer) → optional recovery with the zeros held → finalize
    (measure the reached sparsity and the N:M pattern on the final weights)."""

    config: OneShotPruningConfig

    @abstractmethod
    def prune_weights(self, weights: list[torch.Tensor], stats: HessianAccumulator) -> list[torch.Tensor]:
        """The pruned (out × in) weights of linears fed the same inputs, from their statistics."""

    def check_width(self, name: str, width: int) -> None:
        self.config.check_nm_fits(width, f"{name} has")

    def calibrate(self, model: nn.Module, batches: list[dict], source: LayerSource | None = None) -> None:
        # per pruned module, in ``self.layers`` order: (module, keep-mask when a recovery will train it,
        # N:M groups with fewer than n non-zeros before pruning when there are any)
        self.pruned: list[tuple[nn.Module, torch.Tensor | None, torch.Tensor | None]] = []
        super().calibrate(model, batches, source)

    def note(self, texts: int) -> str:
        return (f"{self.config.name}: one-shot {self.config.pattern} pruning of {len(self.layers)} linear layers on "
                f"{texts} calibration texts; {NO_SPEEDUP}")

    def compress_linears(self, modules: list[nn.Module], stats: HessianAccumulator) -> list[dict]:
        weights = [weight_matrix(m) for m in modules]
        nm = self.config.nm
        entries = []
        for module, weight, pruned in zip(modules, weights, self.prune_weights(weights, stats)):
            pruned = pruned.to(weight.dtype)
            error = stats.relative_error(weight, pruned)
            short = nm_nonzeros(weight, nm[1]) < nm[0] if nm else None
            weight.copy_(pruned)
            self.pruned.append((module, weight != 0 if self.config.recovers else None,
                                short if short is not None and bool(short.any()) else None))
            entries.append({"reconstruction_error": error, "error_tokens": stats.tokens})
        return entries

    def callbacks(self, model, ctx):
        return [HoldZeros([(module, keep) for module, keep, _ in self.pruned])]

    def finalize(self, model, ctx):
        if self.config.recovers:
            HoldZeros([(module, keep) for module, keep, _ in self.pruned]).apply()
        self._measure(self.layers)
        return model

    def measure_compressed(self) -> None:
        self._measure([entry for entry in self.layers if "sparsity" not in entry])

    def _measure(self, entries: list[dict]) -> None:
        """Reached sparsity and N:M check of ``entries`` (of ``self.layers``) on their modules' weights."""
        nm = self.config.nm
        where = {id(entry): index for index, entry in enumerate(self.layers)}
        for entry in entries:
            module, _, base_short = self.pruned[where[id(entry)]]
            weight = weight_matrix(module)
            entry["sparsity"] = float((weight == 0).sum()) / weight.numel()
            entry["zeros"], entry["weights"] = int((weight == 0).sum()), weight.numel()
            entry["nm"] = nm_check(weight, *nm, base_short).as_dict() if nm else None

    # ----- what the run reports ------------------------------------------------------------------
    def artifacts(self) -> dict:
        return {"pattern": self.config.pattern, "target_sparsity": self.config.target_sparsity,
                "layers": self.layers}

    def nm_total(self) -> NmCheck | None:
        """The N:M check over every pruned linear (None when unstructured)."""
        nm = self.config.nm
        if nm is None:
            return None
        total = NmCheck(*nm)
        for entry in self.layers:
            total = total + NmCheck(*nm, **{k: entry["nm"][k] for k in NM_COUNTS})
        return total

    def report_section(self) -> dict:
        zeros = sum(e["zeros"] for e in self.layers)
        total = sum(e["weights"] for e in self.layers)
        errors = [e["reconstruction_error"] for e in self.layers]
        nm = self.nm_total()
        return {"sparsity": {
            "pattern": self.config.pattern, "target": self.config.target_sparsity,
            "reached": zeros / total if total else 0.0, "layers": len(self.layers),
            "nm_check": nm.as_dict() if nm else None,
            "reconstruction_error": {"mean": statistics.fmean(errors) if errors else None,
                                     "max": max(errors) if errors else None,
                                     "every_kth_token": self.hessian_every},  # measured on every k-th token
            "calibration_examples": self.config.calibration_examples, "modules": self.coverage,
            "no_calibration_tokens": self.unreached, "speedup": NO_SPEEDUP}}
