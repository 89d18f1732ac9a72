"""Per-input-channel scales folded into the module that produces a linear layer's input, the step
SmoothQuant (Xiao et al. 2023, §4, eq. 3: ``Y = (X diag(s)⁻¹) · (diag(s) W)``) and AWQ (Lin et al. 2024,
§3.2, eq. 4: ``Q(W · diag(s)) (diag(s)⁻¹ · X)``) share; ``FoldingMethod`` runs it layer by layer.

Which module produces an input is found by a test, not by family names: the linears of one decoder
layer that read the same tensor (q / k / v, gate / up; ``sequential.py`` groups them) form a group,
and a *producer* of that group is a module of the same layer into which a fold is exact. Every module
with a weight of the group's width (a norm's 1-D weight, or, where ``linears`` is allowed, the output
rows of an ``nn.Linear``) is tried on one calibration batch: a random positive vector ``r`` is folded
into it and the group (below), and it is the producer when the layer's output stays what it was (to
1e-4 relative). An RMSNorm / LayerNorm whose output only the group reads passes (``w·x̂ + b`` is linear
in its weight and bias); so do ``v_proj`` before ``o_proj`` (attention is linear in the values, per
channel) and ``up_proj`` before ``down_proj`` (``act(gate) · up``), when their widths match;
``gate_proj`` (inside the activation), ``q_proj`` (inside the softmax), a Gemma norm (``(1 + w) · x̂``),
a post-norm BERT's LayerNorm (its output also feeds the residual) or ``v_proj`` under grouped-query
attention (fewer value channels than ``o_proj`` inputs) do not, and such a group is left unscaled
(llm-compressor's mappings skip the same).

Folding ``s`` into a group divides the producer's output channels by ``s`` (norm weight and bias;
a linear's rows and bias) and multiplies the group's input columns by ``s``: the layer computes the
same function (up to float rounding) before any quantization.
"""
from __future__ import annotations

from abc import abstractmethod

import torch
from torch import nn

from ...errors import ConfigError
from ...metrics.predict import scoring_mode
from ...models.adapters import get_adapter
from ...models.gates import HookSet
from ...models.sites import in_features, weight_matrix
from .._shared.oneshot import CalibratedMethod
from .._shared.sequential import Group, groups_of, run_layer_by_layer
from .budget import selection_of
from .sensitivity import record_fold

TOLERANCE = 1e-4


def _channels(module: nn.Module) -> torch.Tensor | None:
    """The output-channel weight of a candidate producer: a 1-D weight, or an ``nn.Linear``'s rows."""
    weight = getattr(module, "weight", None)
    if not isinstance(weight, torch.Tensor):
        return None
    return weight if weight.dim() == 1 or type(module) is nn.Linear else None


def scale_outputs(module: nn.Module, factor: torch.Tensor) -> None:
    """Multiply ``module``'s output channels by ``factor`` (weight rows or entries, and the bias)."""
    weight = module.weight.data
    weight.mul_(factor.to(weight.device, weight.dtype).reshape(-1, *([1] * (weight.dim() - 1))))
    bias = getattr(module, "bias", None)
    if isinstance(bias, torch.Tensor):
        bias.data.mul_(factor.to(bias.device, bias.dtype))


def scale_inputs(modules: list[nn.Module], factor: torch.Tensor) -> None:
    """Multiply the input columns of ``modules`` (linears) by ``factor``."""
    for module in modules:
        weight = weight_matrix(module)
        weight.mul_(factor.to(weight.device, weight.dtype).reshape(1, -1))


def fold(producer: nn.Module, group: list[nn.Module], scales: torch.Tensor) -> None:
    """``Y = (X / s) · (s W)``: the producer's outputs divided by ``scales``, the group's inputs multiplied."""
    scale_outputs(producer, 1.0 / scales)
    scale_inputs(group, scales)
    record_fold(group, producer, scales)


def _layer_output(layer: nn.Module, probe: tuple[tuple, dict]) -> torch.Tensor:
    with torch.no_grad():
        out = layer(*probe[0], **probe[1])
    return (out[0] if isinstance(out, (tuple, list)) else out).detach().clone()


def _folds_exactly(layer: nn.Module, producer: nn.Module, group: list[nn.Module], probe: tuple[tuple, dict],
                   reference: torch.Tensor, factor: torch.Tensor) -> bool:
    """Folding ``factor`` into ``producer`` and ``group`` leaves the layer's output as it was (to 1e-4)."""
    touched = [producer, *group]
    saved = [{key: t.detach().clone() for key, t in m.named_parameters(recurse=False)} for m in touched]
    try:
        with torch.no_grad():
            scale_outputs(producer, 1.0 / factor)
            scale_inputs(group, factor)
        moved = _layer_output(layer, probe)
    finally:
        with torch.no_grad():
            for module, tensors in zip(touched, saved):
                for key, tensor in tensors.items():
                    getattr(module, key).data.copy_(tensor)
    return bool((moved - reference).abs().max() <= TOLERANCE * reference.abs().max().clamp_min(1e-30))


def find_producers(layer: nn.Module, groups: list[Group], probe: tuple[tuple, dict],
                   linears: bool) -> list[tuple[str, nn.Module] | None]:
    """The producer of each group (module docstring), or None; ``probe``: one batch's layer inputs."""
    reference = _layer_output(layer, probe)
    found: list[tuple[str, nn.Module] | None] = [None] * len(groups)
    widths = [in_features(modules[0]) for _, modules, _ in groups]
    generator = torch.Generator().manual_seed(0)
    for name, module in layer.named_modules():
        channels = _channels(module)
        if channels is None or (channels.dim() == 2 and not linears):
            continue
        factor = torch.rand(channels.shape[0], generator=generator, dtype=torch.float64) * 1.5 + 0.5
        for i, (_, modules, _) in enumerate(groups):
            if found[i] is None and widths[i] == channels.shape[0] and all(m is not module for m in modules) \
                    and _folds_exactly(layer, module, modules, probe, reference, factor):
                found[i] = (name, module)
    return found


class FoldingMethod(CalibratedMethod):
    """Calibrates layer by layer (``sequential.run_layer_by_layer``) keeping one batch of each layer's
    inputs (the probe ``find_producers`` runs on the first layer of each class: a class wires its
    modules one way), then ``transform_layer`` with the layer's groups."""

    producers_of_linears: bool = True
    streams: bool = False  # streamed calibration runs it (``check_streams``): SmoothQuant

    def check_streams(self) -> None:
        """Only a method that sets ``streams``: its folds change norms and linears of one layer only, which the
        stream writes with the layer (SmoothQuant); AWQ's are not checked against the in-memory path."""
        if not self.streams:
            raise ConfigError(f"method {self.config.name!r}: streamed calibration runs wanda, sparsegpt, gptq and "
                              "smoothquant; pass a model object instead of a folder")

    @abstractmethod
    def transform_layer(self, where: str, groups: list[Group], producers: list) -> list[dict]:
        """Scale (and quantize) one layer's groups; returns report entries."""

    def calibrate(self, model: nn.Module, batches: list[dict], source=None) -> None:
        if source is not None:
            self.check_streams()
        device = next(p for p in model.parameters() if not p.is_meta).device
        batches = [{k: v.to(device) for k, v in b.items()} for b in batches]
        self.layers, self.probes, self.wiring = [], {}, {}
        try:
            with scoring_mode(model, freeze=False), HookSet() as hooks, torch.no_grad():
                for layers in get_adapter(model).stacks(model).values():
                    for layer in layers:
                        hooks.add(layer.register_forward_pre_hook(self._keep_probe, with_kwargs=True))
                run_layer_by_layer(model, batches, self._layer, label=self.config.name,
                                   hessian_every=self.hessian_every, source=source, select=selection_of(self))
        finally:
            self.probes = {}

    def _keep_probe(self, layer, args, kwargs):
        self.probes.setdefault(id(layer), (args, dict(kwargs)))

    def _layer(self, stack: str, index: int, layer: nn.Module, stats: dict) -> None:
        groups = groups_of(stats)
        key = (type(layer), tuple(tuple(names) for names, _, _ in groups))
        if key not in self.wiring:  # one layer class wires its modules the same way: tested on its first layer
            found = find_producers(layer, groups, self.probes[id(layer)], self.producers_of_linears)
            self.wiring[key] = [p[0] if p else None for p in found]
        producers = [(name, layer.get_submodule(name)) if name else None for name in self.wiring[key]]
        self.probes[id(layer)] = None  # free the batch (the key stays: later calls keep nothing)
        for entry in self.transform_layer(f"{stack}.{index}", groups, producers):
            self.layers.append({"stack": stack, "layer": index, **entry})

    def measure_compressed(self) -> None:
        """Nothing to measure after a layer: the report entries are taken as each layer is scaled."""
