"""Forward hooks on a model: head, FFN-unit and layer gates, and layer-output recording
(transformers v5 has no ``head_mask``). ``HookSet`` is the one holder of such hooks; everything
that gates or records a model (``Gates`` here, per-example head gates for scoring, NASH's L0 masks,
hidden-state distillation) installs its hooks through it and removes them all at once.

A head gate multiplies that head's slice of the input of the attention output projection; an FFN
gate multiplies the intermediate activation entering the FFN output projection. A gate tensor has
one entry per unit (shape ``(units,)``) or one row per example (``(batch, units)``). Gates are
plain tensors beside the weights; set ``requires_grad`` on them to get importance gradients
(Michel et al. 2019, ∂L/∂ξ).
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from .adapters import get_adapter
from .sites import SiteKey

GateSource = Callable[[], "torch.Tensor | None"]  # called at every forward; None = no gating


def scale_heads(x: torch.Tensor, gate: torch.Tensor, head_dim: int) -> torch.Tensor:
    """Multiply each head's ``head_dim`` slice of the last axis of ``x`` by its gate; ``gate`` is
    ``(heads,)`` or ``(batch, heads)``."""
    if gate.dim() == 1:
        return x * gate.repeat_interleave(head_dim).to(x.dtype)
    heads = gate.shape[-1]
    shaped = x.reshape(*x.shape[:-1], heads, head_dim)
    gate = gate.reshape(gate.shape[0], *([1] * (x.dim() - 2)), heads, 1).to(x.dtype)
    return (shaped * gate).reshape(x.shape)


class HookSet:
    """A group of forward hooks on one model; ``remove()`` (or leaving the ``with`` block) drops them."""

    def __init__(self) -> None:
        self._handles: list = []

    def gate_heads(self, model: nn.Module, source_of: Callable[[object], GateSource | None]) -> None:
        """Pre-hook on every attention output projection; ``source_of(site)`` gives the callable
        that returns that site's current head gate (or ``None`` to leave the site alone)."""
        for site in get_adapter(model).attention_sites(model):
            source = source_of(site) if site.num_heads else None
            if source is not None:
                self._handles.append(site.o.get().register_forward_pre_hook(_head_hook(source, site.head_dim)))

    def gate_units(self, model: nn.Module, source_of: Callable[[object], GateSource | None]) -> None:
        """Pre-hook on every FFN output projection; ``source_of(site)`` as in ``gate_heads``."""
        for site in get_adapter(model).ffn_sites(model):
            source = source_of(site)
            if source is not None:
                self._handles.append(site.output.get().register_forward_pre_hook(_head_hook(source, 1)))

    def gate_layers(self, model: nn.Module, source_of: Callable[[str, int], GateSource | None]) -> None:
        """A gate of 0 turns a whole layer into the identity map."""
        for stack, modules in get_adapter(model).stacks(model).items():
            for i, layer in enumerate(modules):
                source = source_of(stack, i)
                if source is not None:
                    self._handles.append(layer.register_forward_hook(_layer_hook(source), with_kwargs=True))

    def record_outputs(self, model: nn.Module) -> dict[str, list]:
        """Record every layer's output hidden states into the returned ``{stack: [tensor per layer]}``,
        refreshed at every forward."""
        outputs = {}
        for name, layers in get_adapter(model).stacks(model).items():
            outputs[name] = [None] * len(layers)
            for i, layer in enumerate(layers):
                self._handles.append(layer.register_forward_hook(_record_hook(outputs[name], i)))
        return outputs

    def add(self, handle) -> None:
        self._handles.append(handle)

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _head_hook(source: GateSource, head_dim: int):
    def hook(module, args):
        gate = source()
        if gate is None:
            return None
        return (scale_heads(args[0], gate, head_dim),) + tuple(args[1:])

    return hook


def _layer_hook(source: GateSource):
    """A gate of 0 returns the layer's input hidden states unchanged (identity layer)."""

    def hook(module, args, kwargs, output):
        gate = source()
        if gate is None or float(gate) != 0.0:
            return output
        hidden = args[0] if args else kwargs["hidden_states"]
        if isinstance(output, (tuple, list)):  # the block's own form (OpenAI GPT returns a list)
            return type(output)([hidden, *output[1:]])
        return hidden

    return hook


def _record_hook(store: list, index: int):
    def hook(module, args, output):
        store[index] = output[0] if isinstance(output, (tuple, list)) else output

    return hook


class Gates(HookSet):
    """0/1 (or real-valued) gates for heads, FFN units and layers of a model.

    ``heads[key]`` has one entry per head of that attention site, ``ffn[key]`` one per FFN unit,
    ``layers[(stack, i)]`` is a 0/1 float: 0 makes the layer an identity map.
    """

    def __init__(self, model: nn.Module, heads: bool = True, ffn: bool = True, layers: bool = False,
                 requires_grad: bool = False):
        super().__init__()
        self.model = model
        device = next(model.parameters()).device
        self.heads: dict[SiteKey, torch.Tensor] = {}
        self.ffn: dict[SiteKey, torch.Tensor] = {}
        self.layers: dict[tuple[str, int], torch.Tensor] = {}

        def new(key, store, n):
            store[key] = torch.ones(n, device=device, requires_grad=requires_grad)
            return lambda: store[key]

        if heads:
            self.gate_heads(model, lambda site: new(site.key, self.heads, site.num_heads))
        if ffn:
            self.gate_units(model, lambda site: new(site.key, self.ffn, site.width))
        if layers:
            self.gate_layers(model, lambda stack, i: new((stack, i), self.layers, ()))

    def set_head_mask(self, key: SiteKey, keep: list[int]) -> None:
        """Zero every head of ``key`` not in ``keep``."""
        with torch.no_grad():
            self.heads[key].zero_()
            self.heads[key][list(keep)] = 1.0

    def set_ffn_mask(self, key: SiteKey, keep: list[int]) -> None:
        with torch.no_grad():
            self.ffn[key].zero_()
            self.ffn[key][list(keep)] = 1.0

    def set_layer_mask(self, stack: str, keep: list[int]) -> None:
        with torch.no_grad():
            for (s, i), gate in self.layers.items():
                if s == stack:
                    gate.fill_(1.0 if i in keep else 0.0)
