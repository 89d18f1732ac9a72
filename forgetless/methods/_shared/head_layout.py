"""The flat order of a model's attention heads, shared by the head-pruning methods (``heads``, ``rahp``)
and their runner (``head_pruning.py``): ``HeadLayout`` maps a flat position over every head of the model to
its (site key, head index) and back; ``head_layout`` reads it from a model (``models/adapters``), and
``layout_json`` / ``layout_from_json`` store it with a method's scores."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...errors import UnsupportedModelError
from ...models.adapters import get_adapter

SiteKey = tuple[str, int, str]


@dataclass(frozen=True)
class HeadLayout:
    """Flat order of heads: site by site (in the adapter's order), head by head."""

    sites: tuple[tuple[SiteKey, int], ...]  # (site key, head count)

    @property
    def total(self) -> int:
        return sum(n for _, n in self.sites)

    def offsets(self) -> dict[SiteKey, int]:
        out, pos = {}, 0
        for key, n in self.sites:
            out[key] = pos
            pos += n
        return out

    def entries(self) -> list[tuple[SiteKey, int]]:
        return [(key, h) for key, n in self.sites for h in range(n)]

    def flatten(self, per_site: dict[SiteKey, torch.Tensor]) -> torch.Tensor:
        return torch.cat([per_site[key].detach().reshape(-1).float().cpu() for key, _ in self.sites])

    def unflatten(self, flat: torch.Tensor) -> dict[SiteKey, torch.Tensor]:
        out, pos = {}, 0
        for key, n in self.sites:
            out[key] = flat[pos:pos + n]
            pos += n
        return out

    def matrix(self, flat: torch.Tensor) -> torch.Tensor:
        """Layers × heads matrix (NaN where a layer has fewer heads than the widest one)."""
        width = max((n for _, n in self.sites), default=0)
        out = torch.full((len(self.sites), width), float("nan"))
        for row, (values, (_, n)) in enumerate(zip(self.unflatten(flat.float()).values(), self.sites)):
            out[row, :n] = values
        return out

    def keep_dict(self, pruned: torch.Tensor) -> dict[SiteKey, list[int]]:
        """``pruned`` (bool, flat) → heads to keep per site, for ``surgery.prune_heads``."""
        return {key: [h for h, p in enumerate(mask.tolist()) if not p]
                for key, mask in self.unflatten(pruned.bool()).items()}


def head_layout(model: nn.Module) -> HeadLayout:
    """Flat head order of ``model`` (sites without heads are left out)."""
    sites = [(site.key, site.num_heads) for site in get_adapter(model).attention_sites(model) if site.num_heads]
    if not sites:
        raise UnsupportedModelError("the model has no attention heads left to score")
    return HeadLayout(tuple(sites))


def layout_json(layout: HeadLayout) -> list:
    """A layout as JSON-able rows ``[stack, layer, site type, heads]``."""
    return [[*key, n] for key, n in layout.sites]


def layout_from_json(sites: list) -> HeadLayout:
    return HeadLayout(tuple(((s, int(layer), k), int(n)) for s, layer, k, n in sites))
