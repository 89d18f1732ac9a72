"""Head, FFN-unit and layer gates applied by forward hooks (transformers v5 has no ``head_mask``).

A head gate multiplies that head's slice of the input of the attention output projection; an FFN
gate multiplies the intermediate activation entering the FFN output projection. Gates are plain
tensors beside the weights; set ``requires_grad`` on them to get importance gradients
(Michel et al. 2019, ∂L/∂ξ).
"""
from __future__ import annotations

import torch
from torch import nn

from .adapters import get_adapter
from .sites import SiteKey


class Gates:
    """Installs gate hooks on a model; use as a context manager or call ``remove()``.

    ``heads[key]`` has one entry per head of that attention site, ``ffn[key]`` one per FFN unit,
    ``layers[(stack, i)]`` is a 0/1 float: 0 makes the layer an identity map.
    """

    def __init__(self, model: nn.Module, heads: bool = True, ffn: bool = True, layers: bool = False,
                 requires_grad: bool = False):
        self.model = model
        adapter = get_adapter(model)
        device = next(model.parameters()).device
        self.heads: dict[SiteKey, torch.Tensor] = {}
        self.ffn: dict[SiteKey, torch.Tensor] = {}
        self.layers: dict[tuple[str, int], torch.Tensor] = {}
        self._handles = []
        if heads:
            for site in adapter.attention_sites(model):
                if site.num_heads == 0:
                    continue
                gate = torch.ones(site.num_heads, device=device, requires_grad=requires_grad)
                self.heads[site.key] = gate
                self._handles.append(site.o.get().register_forward_pre_hook(_head_hook(gate, site.head_dim)))
        if ffn:
            for site in adapter.ffn_sites(model):
                gate = torch.ones(site.width, device=device, requires_grad=requires_grad)
                self.ffn[site.key] = gate
                self._handles.append(site.output.get().register_forward_pre_hook(_unit_hook(gate)))
        if layers:
            for stack, modules in adapter.stacks(model).items():
                for i, layer in enumerate(modules):
                    gate = torch.ones((), device=device)
                    self.layers[(stack, i)] = gate
                    self._handles.append(layer.register_forward_hook(_layer_hook(gate), with_kwargs=True))

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

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def __enter__(self) -> "Gates":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _head_hook(gate: torch.Tensor, head_dim: int):
    def hook(module, args):
        x = args[0]
        return (x * gate.repeat_interleave(head_dim).to(x.dtype),) + tuple(args[1:])

    return hook


def _unit_hook(gate: torch.Tensor):
    def hook(module, args):
        x = args[0]
        return (x * gate.to(x.dtype),) + tuple(args[1:])

    return hook


def _layer_hook(gate: torch.Tensor):
    """A gate of 0 returns the layer's input hidden states unchanged (identity layer)."""

    def hook(module, args, kwargs, output):
        if float(gate) != 0.0:
            return output
        hidden = args[0] if args else kwargs["hidden_states"]
        if isinstance(output, tuple):
            return (hidden,) + tuple(output[1:])
        return hidden

    return hook
