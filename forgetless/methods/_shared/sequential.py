"""Layer-by-layer calibration, as SparseGPT (Frantar & Alistarh 2023, §4 "Implementation") and GPTQ
(Frantar et al. 2022, §4) run it, and llm-compressor's sequential pipeline after them.

The calibration batches go through the model once with every layer of a stack standing in for
itself (``_Stands``): each records its *own* inputs (positional and keyword: attention mask,
rotary embeddings, encoder states, …; in transformers 5 they differ per layer where layer types
differ: Gemma 2/3, Cohere 2 and Qwen give sliding-window and full-attention layers their own masks
and rotary tables), only the first one runs, and the hidden states it feeds the next are recorded.
Then, layer after layer: run the layer on the captured inputs with a hook
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

import functools
import time
from typing import Callable, Protocol

import torch
from torch import nn

from ... import progress
from ...errors import UnsupportedModelError
from ...models.adapters import get_adapter
from ...models.experts import linearized
from ...models.gates import HookSet
from ...models.sites import in_features, is_linear
from .hessian import HessianAccumulator

# compress(stack, index, layer, {name in layer: (linear or GPT-2 Conv1D, accumulator)}) → anything the method reports
LayerCompressor = Callable[[str, int, nn.Module, dict[str, tuple[nn.Linear, HessianAccumulator]]], object]
Selector = Callable[[str, nn.Module], bool]  # (module name, linear) → compress it
Group = tuple[list[str], list[nn.Module], HessianAccumulator]  # linears fed one tensor, their statistics


class LayerSource(Protocol):
    """Where a layer's weights come from when the model is not held whole (``models/streaming.py``)."""

    def captured(self, stack: str) -> None:
        """Every layer of ``stack`` has its inputs: what only the capture pass ran may be freed."""

    def load(self, stack: str, index: int, layer: nn.Module) -> None:
        """Give ``layer`` its weights (before its statistics)."""

    def release(self, stack: str, index: int, layer: nn.Module) -> None:
        """Done with ``layer`` (compressed, its outputs propagated): write it out and free it."""


class _Captured(Exception):
    """Raised by the last block's stand-in to stop the capture pass."""


class _Stands:
    """Inside, every block of ``blocks`` stands in for itself: it records the arguments the model gives
    it and passes its input hidden states on unchanged, in the form of block 0's output (which runs
    for real), and the last one stops the forward pass. So one pass records each block's own
    arguments (per-layer masks and rotary tables, shared biases) at the cost of one block. A model
    whose hidden states change between blocks (a rescaling in its loop) cannot be carried block by
    block: one error."""

    def __init__(self, model: nn.Module, blocks: nn.ModuleList):
        self.model, self.blocks = model, blocks
        self.inputs: list[list[tuple[tuple, dict]]] = [[] for _ in blocks]
        self.first: list[torch.Tensor] = []  # block 0's input hidden states, per batch
        self.output = self.passed = None

    def __enter__(self):
        for index, block in enumerate(self.blocks):
            block.forward = functools.partial(self._stand, index)  # an instance attribute: hooks still run
        return self

    def __exit__(self, *exc) -> None:
        for block in self.blocks:
            block.__dict__.pop("forward", None)

    def _stand(self, index: int, *args, **kwargs):
        hidden = _hidden_in(args, kwargs, self.model)
        if index == 0:
            self.first.append(hidden)
        elif hidden is not self.passed:
            raise UnsupportedModelError(f"{type(self.model).__name__}: its hidden states change between blocks "
                                        f"{index - 1} and {index} (outside them); calibrating block by block would "
                                        "feed each block the wrong inputs")
        self.inputs[index].append(_with_hidden(args, kwargs, None))
        if index == len(self.blocks) - 1:
            raise _Captured
        block = self.blocks[index]
        self.output = type(block).forward(block, *args, **kwargs) if index == 0 else _with_hidden_out(self.output, hidden)
        self.passed = _hidden_of(self.output)
        return self.output


def capture_block_inputs(model: nn.Module, blocks: nn.ModuleList, batches: list[dict]) -> _Stands:
    """Every block's own arguments for each batch (``_Stands``: ``inputs[block][batch]``, hidden states
    left out; ``first[batch]``: block 0's input hidden states)."""
    with _Stands(model, blocks) as stands, torch.no_grad():
        for batch in batches:
            try:
                takes_cache = getattr(getattr(model, "config", None), "use_cache", False)
                model(**batch, use_cache=False) if takes_cache else model(**batch)
            except _Captured:
                pass
    if any(len(inputs) != len(batches) for inputs in stands.inputs):
        raise UnsupportedModelError(f"{type(model).__name__}: the calibration forward pass did not reach every block")
    return stands


def _hidden_in(args: tuple, kwargs: dict, model: nn.Module) -> torch.Tensor:
    hidden = args[0] if args else kwargs.get("hidden_states")
    if not isinstance(hidden, torch.Tensor):
        raise UnsupportedModelError(f"{type(model).__name__}: its blocks take no hidden states (first argument or "
                                    "hidden_states=) to calibrate on")
    return hidden


def _with_hidden(args: tuple, kwargs: dict, hidden) -> tuple[tuple, dict]:
    if args:
        return (hidden, *args[1:]), kwargs
    return args, {**kwargs, "hidden_states": hidden}


def _with_hidden_out(output, hidden: torch.Tensor):
    """``output`` (a block's: the hidden states, or a tuple / list of them and more) with ``hidden`` instead."""
    return type(output)([hidden, *output[1:]]) if isinstance(output, (tuple, list)) else hidden


def _hidden_of(output) -> torch.Tensor:
    return output[0] if isinstance(output, (tuple, list)) else output


def run_layer_by_layer(model: nn.Module, batches: list[dict], compress: LayerCompressor,
                       token_masks: list[torch.Tensor] | None = None, label: str = "calibrate",
                       hessian_every: int = 1, source: LayerSource | None = None,
                       select: Selector | None = None) -> dict[str, list]:
    """Calibrate and compress every layer of every stack in order; returns, per stack, what ``compress``
    returned for each layer. ``token_masks`` (a ``batch × tokens`` bool tensor per batch, default the
    attention masks) select the tokens whose activations count. ``label`` names the step in the progress
    bar and time estimate; ``hessian_every``: the accumulators' (1: the full Hessian); ``source``: loads
    each layer first and releases it last (None: the model holds every layer); ``select(name, linear)``:
    the linears to compress (None: all). Mixture-of-experts run expert by expert (``experts.linearized``)."""
    adapter = get_adapter(model)
    names = {id(module): name for name, module in model.named_modules()}
    masks = token_masks or [b["attention_mask"].bool() if "attention_mask" in b else None for b in batches]
    reports: dict[str, list] = {}
    for stack, layers in adapter.stacks(model).items():
        if source is not None:
            source.load(stack, 0, layers[0])  # block 0 runs in the capture pass
        stands = capture_block_inputs(model, layers, batches)
        if source is not None:
            source.captured(stack)
        hidden = stands.first
        reports[stack] = []
        started = time.perf_counter()
        with progress.Steps(f"{label}: {stack} layers", len(layers), 2 * len(batches) + 1, "layer") as shown:
            for index, layer in enumerate(layers):
                if source is not None and index:
                    source.load(stack, index, layer)
                inputs = [_with_hidden(args, kwargs, h) for (args, kwargs), h in zip(stands.inputs[index], hidden)]
                stands.inputs[index] = []
                chosen = _chooser(select, f"{names[id(layers)]}.{index}.")
                with linearized(layer):
                    stats = layer_statistics(stack, index, layer, inputs, masks, shown, hessian_every, chosen)
                    shown.step("solve")
                    reports[stack].append(compress(stack, index, layer, stats))
                    last = index + 1 == len(layers)  # the last layer's outputs feed no layer of this stack
                    hidden = hidden if last else propagate(layer, inputs, shown)
                if source is not None:
                    source.release(stack, index, layer)
                shown.unit_done()
                if not index:
                    progress.estimate(f"{label}: {stack}", time.perf_counter() - started, "layer", 1, len(layers))
    return reports


def groups_of(stats: dict[str, tuple[nn.Module, HessianAccumulator]]) -> list[Group]:
    """The layer's linears grouped by the input they share (one accumulator), in module order."""
    found: dict[int, Group] = {}
    for name, (module, accumulator) in stats.items():
        found.setdefault(id(accumulator), ([], [], accumulator))
        found[id(accumulator)][0].append(name)
        found[id(accumulator)][1].append(module)
    return list(found.values())


def _chooser(select: Selector | None, prefix: str) -> Selector | None:
    """``select`` on a layer's own module names (``prefix``: the layer's name in the model)."""
    return None if select is None else (lambda name, module: select(prefix + name, module))


def layer_statistics(stack: str, index: int, layer: nn.Module, inputs: list[tuple[tuple, dict]],
                     masks: list, shown: progress.Steps, hessian_every: int = 1,
                     select: Selector | None = None) -> dict[str, tuple[nn.Module, HessianAccumulator]]:
    """``{name: (linear, accumulator)}`` of every linear of ``layer`` that ``select`` chooses (None: all)
    over the captured ``inputs`` (linears fed the same tensor share one accumulator object)."""
    linears = {name: m for name, m in layer.named_modules() if is_linear(m) and (select is None or select(name, m))}
    if not linears:
        for batch in range(len(inputs)):
            shown.step(f"statistics {batch + 1}/{len(inputs)}")
        return {}
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


def propagate(layer: nn.Module, inputs: list[tuple[tuple, dict]], shown: progress.Steps) -> list[torch.Tensor]:
    """What the (compressed) ``layer`` makes of each input: the next layer's input hidden states."""
    hidden = []
    with torch.no_grad():
        for batch, (args, kwargs) in enumerate(inputs):
            hidden.append(_hidden_of(layer(*args, **kwargs)))
            shown.step(f"propagate {batch + 1}/{len(inputs)}")
    return hidden


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
        if mask is not None and mask.shape != x.shape[:-1] and getattr(module, "routed", None) is not None:
            mask = mask.reshape(-1)[module.routed.to(mask.device)]  # an expert's tokens: their flat positions
        accumulator.add(x, mask if mask is not None and mask.shape == x.shape[:-1] else None)

    return hook
