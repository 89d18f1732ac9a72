"""Where the prunable units of a transformer live: attention sites (heads) and FFN sites (units).

A *site* names a module slot by (owner module, attribute name) so surgery can swap the linear
layers for sliced copies. Sites are re-read from the model after every change, never cached.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch
from torch import nn

SiteKey = tuple[str, int, str]  # (stack, layer index, kind): ("encoder", 3, "self"), ("ffn" kind for FFN)


@dataclass
class Slot:
    """An attribute ``name`` of ``owner`` that holds a module."""

    owner: nn.Module
    name: str

    def get(self) -> nn.Module:
        return getattr(self.owner, self.name)

    def set(self, module: nn.Module) -> None:
        setattr(self.owner, self.name, module)


@dataclass
class AttentionSite:
    """One multi-head attention block: q/k/v projections (rows grouped by head) and output projection."""

    stack: str
    layer: int
    kind: str  # "self" or "cross"
    q: Slot | None
    k: Slot | None
    v: Slot | None
    o: Slot
    head_dim: int
    core: Slot  # module that computes attention; replaced by EmptyAttention at zero heads
    extra: dict = field(default_factory=dict)  # adapter-specific (e.g. T5 relative bias)

    @property
    def key(self) -> SiteKey:
        return (self.stack, self.layer, self.kind)

    @property
    def num_heads(self) -> int:
        return 0 if self.q is None else self.q.get().out_features // self.head_dim

    def head_parameters(self) -> list[tuple[nn.Parameter, int, str]]:
        """(parameter, dim along which heads are laid out, role) for every tensor a head owns."""
        if self.q is None:
            return []
        out = []
        for role, slot in (("q", self.q), ("k", self.k), ("v", self.v)):
            lin = slot.get()
            out.append((lin.weight, 0, role))
            if lin.bias is not None:
                out.append((lin.bias, 0, role))
        out.append((self.o.get().weight, 1, "o"))
        return out


@dataclass
class FfnSite:
    """One feed-forward block: input projections (rows = units) and output projection (columns = units)."""

    stack: str
    layer: int
    inputs: list[Slot]
    output: Slot

    @property
    def key(self) -> SiteKey:
        return (self.stack, self.layer, "ffn")

    @property
    def width(self) -> int:
        return self.output.get().in_features

    def unit_parameters(self) -> list[tuple[nn.Parameter, int]]:
        out = []
        for slot in self.inputs:
            lin = slot.get()
            out.append((lin.weight, 0))
            if lin.bias is not None:
                out.append((lin.bias, 0))
        out.append((self.output.get().weight, 1))
        return out


class EmptyAttention(nn.Module):
    """Attention with every head removed: contributes zeros (plus the output bias, if the output
    projection lives inside this module, as in DistilBERT or T5).

    ``returns`` is how many outputs the replaced module returned (a tuple); extra ones are ``None``.
    """

    def __init__(self, out_name: str | None = None, out: nn.Module | None = None, returns: int = 2):
        super().__init__()
        self.out_name = out_name
        if out_name is not None:
            self.add_module(out_name, out)
        self.returns = returns

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs):
        zeros = hidden_states.new_zeros(*hidden_states.shape[:-1], 0)
        out = getattr(self, self.out_name)(zeros) if self.out_name is not None else zeros
        return (out,) + (None,) * (self.returns - 1)


def linear_slice(linear: nn.Linear, index: torch.Tensor, dim: int) -> nn.Linear:
    """A new ``nn.Linear`` keeping rows (dim=0, output features) or columns (dim=1, input features)
    ``index`` of ``linear``; the bias is sliced with rows and kept whole with columns."""
    index = index.to(device=linear.weight.device, dtype=torch.long)
    weight = linear.weight.detach().index_select(dim, index).clone()
    bias = None
    if linear.bias is not None:
        bias = linear.bias.detach().index_select(0, index).clone() if dim == 0 else linear.bias.detach().clone()
    out_features, in_features = weight.shape
    with warnings.catch_warnings():  # zero-width layers are legitimate after removing every unit
        warnings.simplefilter("ignore", UserWarning)
        new = nn.Linear(in_features, out_features, bias=bias is not None, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        new.weight.copy_(weight)
        if bias is not None:
            new.bias.copy_(bias)
    new.weight.requires_grad_(linear.weight.requires_grad)
    return new


def head_index(heads: list[int], head_dim: int) -> torch.Tensor:
    """Row indices of the given heads in a q/k/v projection whose rows are grouped head by head."""
    if not heads:
        return torch.zeros(0, dtype=torch.long)
    return torch.cat([torch.arange(h * head_dim, (h + 1) * head_dim) for h in heads])
