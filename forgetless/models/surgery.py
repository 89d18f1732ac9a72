"""Physical model surgery: remove attention heads, FFN units and whole layers.

The result is a plain, smaller ``nn.Module`` whose outputs equal those of the gated model
(see ``gates.py``) to float precision. Layers may end up with different head counts and FFN
widths; ``io.py`` saves and reloads such uneven models.
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ConfigError
from .adapters import get_adapter
from .sites import SiteKey, feature_slice


def prune_heads(model: nn.Module, keep: dict[SiteKey, list[int]]) -> nn.Module:
    """Keep only heads ``keep[key]`` (indices into the site's current heads) of each named site."""
    if not keep:
        return model
    adapter = get_adapter(model)
    sites = {site.key: site for site in adapter.attention_sites(model)}
    for key, heads in keep.items():
        if key not in sites:
            raise ConfigError(f"no attention site {key}; sites: {sorted(sites)}")
        site = sites[key]
        heads = sorted(set(int(h) for h in heads))
        if any(h < 0 or h >= site.num_heads for h in heads):
            raise ConfigError(f"head index out of range for {key} with {site.num_heads} heads: {heads}")
        if len(heads) == site.num_heads:
            continue
        for slot, index, dim in site.slices(heads):  # q/k/v rows (or fused qkv), o columns
            slot.set(feature_slice(slot.get(), index, dim))
        adapter.after_head_prune(site, heads)
        if not heads:
            site.core.set(adapter.empty_attention(site))
    return model


def prune_ffn(model: nn.Module, keep: dict[SiteKey, list[int]]) -> nn.Module:
    """Keep only FFN units ``keep[key]`` of each named FFN site."""
    if not keep:
        return model
    adapter = get_adapter(model)
    sites = {site.key: site for site in adapter.ffn_sites(model)}
    for key, units in keep.items():
        if key not in sites:
            raise ConfigError(f"no FFN site {key}; sites: {sorted(sites)}")
        site = sites[key]
        units = sorted(set(int(u) for u in units))
        if any(u < 0 or u >= site.width for u in units):
            raise ConfigError(f"FFN unit index out of range for {key} (width {site.width})")
        if len(units) == site.width:
            continue
        index = torch.tensor(units, dtype=torch.long)
        for slot in site.inputs:
            slot.set(feature_slice(slot.get(), index, dim=0))
        site.output.set(feature_slice(site.output.get(), index, dim=1))
    return model


def drop_layers(model: nn.Module, stack: str, keep: list[int]) -> nn.Module:
    """Keep only layers ``keep`` (in the given order of indices, sorted) of ``stack``."""
    adapter = get_adapter(model)
    layers = adapter.stacks(model)
    if stack not in layers:
        raise ConfigError(f"model has no layer stack {stack!r}; stacks: {sorted(layers)}")
    n = len(layers[stack])
    keep = sorted(set(int(i) for i in keep))
    if not keep:
        raise ConfigError(f"cannot drop every layer of {stack!r}: keep at least one")
    if keep[0] < 0 or keep[-1] >= n:
        raise ConfigError(f"layer index out of range for {stack!r} with {n} layers: {keep}")
    adapter.before_layer_drop(model, stack, keep)
    kept = nn.ModuleList([layers[stack][i] for i in keep])
    layers[stack]._modules.clear()
    for i, layer in enumerate(kept):
        layers[stack].add_module(str(i), layer)
    adapter.after_layer_drop(model, stack, keep)
    return model


def model_shape(model: nn.Module) -> dict:
    """Per-site head counts, FFN widths and layer counts: enough to rebuild the architecture (a family
    without head / FFN sites, ``adapter.has_sites`` False, has no pruned heads or units to record)."""
    adapter = get_adapter(model)
    return {
        "layers": {stack: len(layers) for stack, layers in adapter.stacks(model).items()},
        "heads": [[*site.key, site.num_heads] for site in adapter.attention_sites(model)] if adapter.has_sites else [],
        "ffn": [[*site.key[:2], site.width] for site in adapter.ffn_sites(model)] if adapter.has_sites else [],
    }


def reshape_like(model: nn.Module, shape: dict) -> nn.Module:
    """Give a freshly built model the layer counts, head counts and FFN widths in ``shape``
    (weights are then overwritten by loading)."""
    for stack, count in shape["layers"].items():
        current = len(get_adapter(model).stacks(model)[stack])
        if count != current:
            drop_layers(model, stack, list(range(count)))
    prune_heads(model, {(s, l, k): list(range(n)) for s, l, k, n in shape["heads"]})
    prune_ffn(model, {(s, l, "ffn"): list(range(w)) for s, l, w in shape["ffn"]})
    return model
