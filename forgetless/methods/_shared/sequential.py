"""Layer-by-layer calibration, as SparseGPT (Frantar & Alistarh 2023, §4 "Implementation") and GPTQ
(Frantar et al. 2022, §4) run it, and llm-compressor's sequential pipeline after them.

The calibration batches go through the model once up to the first layer of a stack, where that
layer's inputs (positional and keyword: hidden states, attention mask, rotary embeddings, encoder
states, …) are captured. Then, layer after layer: run the layer on the captured inputs with a hook
on each of its ``nn.Linear`` modules accumulating the Hessian of that module's inputs (real tokens
only; linears fed the same tensor share one), let the method compress the layer from those
statistics, and run the *compressed* layer again to get the inputs of the next one, so each layer
is fitted to what its compressed predecessors feed it (the last layer of a stack feeds none, so it
runs once). Memory holds one layer's activations for the calibration set, never the whole model's.
With a ``LayerSource`` (``streamed.py``) the weights too: each layer is loaded just before its
statistics and released (written out, freed) once it has fed the next one.
Stacks run in the adapter's order (an encoder-decoder's decoder is captured after its encoder was
compressed). Progress: a bar per stack moving by statistics batch, solve and propagation batch,
and one time estimate after the first layer (``progress.Steps`` / ``progress.estimate``).
"""
from __future__ import annotations

import time
from typing import Callable, Protocol

import torch
from torch import nn

from ... import progress
from ...errors import UnsupportedModelError
from ...models.adapters import get_adapter
from ...models.gates import HookSet
from ...models.sites import in_features, is_linear
from .hessian import HessianAccumulator

# compress(stack, index, layer, {name in layer: (linear or GPT-2 Conv1D, accumulator)}) → anything the method reports
LayerCompressor = Callable[[str, int, nn.Module, dict[str, tuple[nn.Linear, HessianAccumulator]]], object]


class LayerSource(Protocol):
    """Where a layer's weights come from when the model is not held whole (``models/streaming.py``)."""

    def load(self, stack: str, index: int, layer: nn.Module) -> None:
        """Give ``layer`` its weights (before its statistics)."""

    def release(self, stack: str, index: int, layer: nn.Module) -> None:
        """Done with ``layer`` (compressed, its outputs propagated): write it out and free it."""


class _Captured(Exception):
    """Raised by the capture hook to stop the forward pass at the first layer."""


def capture_layer_inputs(model: nn.Module, layer: nn.Module, batches: list[dict]) -> list[tuple[tuple, dict]]:
    """``(args, kwargs)`` that ``layer`` receives for each batch (the forward stops there)."""
    captured: list[tuple[tuple, dict]] = []

    def hook(module, args, kwargs):
        captured.append((args, dict(kwargs)))
        raise _Captured

    with HookSet() as hooks, torch.no_grad():
        hooks.add(layer.register_forward_pre_hook(hook, with_kwargs=True))
        for batch in batches:
            try:
                takes_cache = getattr(getattr(model, "config", None), "use_cache", False)
                model(**batch, use_cache=False) if takes_cache else model(**batch)
            except _Captured:
                pass
    if len(captured) != len(batches):
        raise UnsupportedModelError(f"{type(model).__name__}: the calibration forward pass did not reach the first layer")
    return captured


def _with_hidden(args: tuple, kwargs: dict, hidden: torch.Tensor) -> tuple[tuple, dict]:
    if args:
        return (hidden, *args[1:]), kwargs
    return args, {**kwargs, "hidden_states": hidden}


def _hidden_of(output) -> torch.Tensor:
    return output[0] if isinstance(output, (tuple, list)) else output


def run_layer_by_layer(model: nn.Module, batches: list[dict], compress: LayerCompressor,
                       token_masks: list[torch.Tensor] | None = None, label: str = "calibrate",
                       hessian_every: int = 1, source: LayerSource | None = None) -> dict[str, list]:
    """Calibrate and compress every layer of every stack in order; returns, per stack, what
    ``compress`` returned for each layer. ``token_masks`` (one ``batch × tokens`` bool tensor per
    batch, default the batches' attention masks) select the tokens whose activations count.
    ``label`` names the step in the progress bar and the time estimate (``progress.py``);
    ``hessian_every``: the accumulators' (``HessianAccumulator``: 1 for the full Hessian);
    ``source``: loads each layer first and releases it last (None: the model holds every layer)."""
    adapter = get_adapter(model)
    masks = token_masks or [b["attention_mask"].bool() if "attention_mask" in b else None for b in batches]
    reports: dict[str, list] = {}
    for stack, layers in adapter.stacks(model).items():
        inputs = capture_layer_inputs(model, layers[0], batches)
        reports[stack] = []
        started = time.perf_counter()
        with progress.Steps(f"{label}: {stack} layers", len(layers), 2 * len(inputs) + 1, "layer") as shown:
            for index, layer in enumerate(layers):
                if source is not None:
                    source.load(stack, index, layer)
                stats = layer_statistics(stack, index, layer, inputs, masks, shown, hessian_every)
                shown.step("solve")
                reports[stack].append(compress(stack, index, layer, stats))
                if index + 1 < len(layers):  # the last layer's outputs feed no layer of this stack
                    propagate(layer, inputs, shown)
                if source is not None:
                    source.release(stack, index, layer)
                shown.unit_done()
                if index == 0:
                    progress.estimate(f"{label}: {stack}", time.perf_counter() - started, "layer", 1, len(layers))
    return reports


def layer_statistics(stack: str, index: int, layer: nn.Module, inputs: list[tuple[tuple, dict]],
                     masks: list, shown: progress.Steps,
                     hessian_every: int = 1) -> dict[str, tuple[nn.Module, HessianAccumulator]]:
    """``{name: (linear, accumulator)}`` of every linear of ``layer`` over the captured ``inputs``
    (linears fed the same tensor share one accumulator object)."""
    linears = {name: m for name, m in layer.named_modules() if is_linear(m)}
    if not linears:
        raise UnsupportedModelError(f"{stack} layer {index} ({type(layer).__name__}) has no nn.Linear or Conv1D "
                                    "to calibrate")
    stats = {name: (m, HessianAccumulator(in_features(m), m.weight.device, hessian_every))
             for name, m in linears.items()}
    state = {"mask": None, "fed": {}, "same": {}}
    with HookSet() as hooks, torch.no_grad():
        for m, acc in stats.values():
            hooks.add(m.register_forward_hook(_accumulate(acc, state)))
        for batch, ((args, kwargs), mask) in enumerate(zip(inputs, masks)):
            state["mask"], state["fed"] = mask, {}
            layer(*args, **kwargs)
            shown.step(f"statistics {batch + 1}/{len(inputs)}")
    return {name: (m, state["same"].get(id(acc), acc)) for name, (m, acc) in stats.items()}


def propagate(layer: nn.Module, inputs: list[tuple[tuple, dict]], shown: progress.Steps) -> None:
    """Replace each captured input by what the (compressed) ``layer`` makes of it: the next layer's input."""
    with torch.no_grad():
        for batch, (args, kwargs) in enumerate(inputs):
            inputs[batch] = _with_hidden(args, kwargs, _hidden_of(layer(*args, **kwargs)))
            shown.step(f"propagate {batch + 1}/{len(inputs)}")


def _accumulate(accumulator: HessianAccumulator, state: dict):
    """Forward hook adding a linear's inputs to its accumulator. Linears fed the very same tensor in
    a forward pass (q / k / v, gate / up) share the first one's accumulator: one Hessian, not three."""

    def hook(module, args, output):
        x = args[0]
        key = (x.data_ptr(), tuple(x.shape), x.stride())
        first = state["fed"].get(key)  # (tensor, accumulator); the tensor is held, so its memory is not reused
        if first is not None and first[1] is not accumulator and torch.equal(first[0], x):
            state["same"][id(accumulator)] = first[1]
            return
        state["fed"][key] = (x, accumulator)
        if id(accumulator) in state["same"]:
            raise UnsupportedModelError(f"{type(module).__name__}: its calibration inputs were shared with another "
                                        "linear in one batch but not in another")
        mask = state["mask"]
        accumulator.add(x, mask if mask is not None and mask.shape == x.shape[:-1] else None)

    return hook
