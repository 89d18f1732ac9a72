"""Where the prunable units of a transformer live: attention sites (heads) and FFN sites (units).

A *site* names a module slot by (owner module, attribute name) so surgery can swap the linear
layers for sliced copies. Sites are re-read from the model after every change, never cached.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch
from torch import nn
from transformers.pytorch_utils import Conv1D

from .transformers_compat import cache_from_kwargs

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
    """One multi-head attention block: q/k/v projections (rows grouped by unit) and output projection.

    The prunable *unit* ("head") of a site is what can be removed on its own:

    * multi-head attention (BERT, T5, BART, GPT-2, Llama without GQA): one head; ``head_dim`` rows
      of q, k, v and ``head_dim`` columns of o;
    * grouped-query attention (Llama / Qwen2 / Mistral with ``num_key_value_heads`` <
      ``num_attention_heads``): one **key/value group**, i.e. its k/v head (``kv_dim`` rows of k and
      v) together with the G = n_heads / n_kv_heads query heads that read it (``head_dim`` = G ×
      head size rows of q and columns of o). Query head h belongs to group h // G (``repeat_kv``).

    So ``head_dim`` is always the width of one unit in q rows and o input columns (what head gates
    multiply), ``kv_dim`` its width in k / v rows (``None``: same as ``head_dim``).

    ``qkv`` is set instead of ``q``/``k``/``v`` where one fused projection computes
    ``[q | k | v]`` (GPT-2's ``c_attn``); each unit then owns three blocks of its columns.
    Projections may be ``nn.Linear`` or transformers' ``Conv1D`` (weight stored (in, out)).
    """

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
    kv_dim: int | None = None  # rows of k and v per unit (grouped-query attention); None: head_dim
    qkv: Slot | None = None  # fused [q | k | v] projection (GPT-2); q, k, v are None then

    @classmethod
    def of(cls, stack: str, layer: int, kind: str, core: nn.Module, qkv_names: tuple[str, str, str], o: Slot,
           head_dim: str, core_slot: Slot, **fields) -> "AttentionSite":
        """A site with separate q / k / v projections ``qkv_names`` of ``core`` and head width
        ``core.<head_dim>``; an emptied core (``EmptyAttention``) keeps only ``o``, width 0."""
        empty = isinstance(core, EmptyAttention)
        q, k, v = (None if empty else Slot(core, name) for name in qkv_names)
        return cls(stack, layer, kind, q, k, v, o, 0 if empty else getattr(core, head_dim), core_slot, **fields)

    @property
    def key(self) -> SiteKey:
        return (self.stack, self.layer, self.kind)

    @property
    def num_heads(self) -> int:
        """Number of prunable units (heads, or key/value groups under grouped-query attention)."""
        if self.qkv is not None:
            return out_features(self.qkv.get()) // (3 * self.head_dim)
        return 0 if self.q is None else out_features(self.q.get()) // self.head_dim

    def unit_width(self, role: str) -> int:
        """Features one unit owns in projection ``role`` (q, k, v, o; qkv: per block of three)."""
        if role in ("k", "v"):
            return self.head_dim if self.kv_dim is None else self.kv_dim
        return self.head_dim

    def head_parameters(self) -> list[tuple[nn.Parameter, int, str]]:
        """(parameter, dim along which heads are laid out, role) for every tensor a head owns.
        A unit owns ``unit_width(role)`` consecutive entries along that dim (role ``qkv``: three
        blocks of ``head_dim``, one each in the q, k and v thirds)."""
        if self.num_heads == 0:
            return []
        out = []
        inputs = [("qkv", self.qkv)] if self.qkv is not None else [("q", self.q), ("k", self.k), ("v", self.v)]
        for role, slot in inputs:
            lin = slot.get()
            out.append((lin.weight, weight_dim(lin, 0), role))
            if lin.bias is not None:
                out.append((lin.bias, 0, role))
        out.append((self.o.get().weight, weight_dim(self.o.get(), 1), "o"))
        return out

    def slices(self, units: list[int]) -> list[tuple[Slot, torch.Tensor, int]]:
        """(slot, feature index to keep, 0 = output / 1 = input features) for every projection
        when only ``units`` are kept."""
        if self.qkv is not None:
            n = self.num_heads
            rows = head_index(units, self.head_dim)
            fused = torch.cat([rows + block * n * self.head_dim for block in range(3)])
            out = [(self.qkv, fused, 0)]
        else:
            out = [(slot, head_index(units, self.unit_width(role)), 0)
                   for role, slot in (("q", self.q), ("k", self.k), ("v", self.v))]
        return out + [(self.o, head_index(units, self.head_dim), 1)]


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
        return in_features(self.output.get())

    def unit_parameters(self) -> list[tuple[nn.Parameter, int]]:
        out = []
        for slot in self.inputs:
            lin = slot.get()
            out.append((lin.weight, weight_dim(lin, 0)))
            if lin.bias is not None:
                out.append((lin.bias, 0))
        out.append((self.output.get().weight, weight_dim(self.output.get(), 1)))
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


class CachedEmptyAttention(EmptyAttention):
    """Self-attention of a decoder with every head removed: contributes zeros (plus the output
    bias), but still appends one zero feature per token to the KV cache at each step, so the cache
    length that generation computes positions and masks from keeps counting the decoded tokens (a
    zero-head entry would not do: ``DynamicLayer.get_seq_length`` reports 0 for an empty tensor)."""

    def __init__(self, out_name=None, out=None, returns=2, layer_idx=None):
        super().__init__(out_name, out, returns)
        self.layer_idx = layer_idx

    def forward(self, hidden_states, *args, **kwargs):
        cache = cache_from_kwargs(kwargs)  # transformers 5.24 renamed the argument: transformers_compat
        if cache is not None and self.layer_idx is not None:
            cache = getattr(cache, "self_attention_cache", cache)
            b, s = hidden_states.shape[:2]
            step = hidden_states.new_zeros(b, 1, s, 1)
            cache.update(step, step, self.layer_idx)
        return super().forward(hidden_states, *args, **kwargs)


def head_index(heads: list[int], head_dim: int) -> torch.Tensor:
    """Row indices of the given heads in a q/k/v projection whose rows are grouped head by head."""
    if not heads:
        return torch.zeros(0, dtype=torch.long)
    return torch.cat([torch.arange(h * head_dim, (h + 1) * head_dim) for h in heads])


def is_conv1d(module: nn.Module) -> bool:
    """transformers' ``Conv1D`` (GPT-2): a linear layer whose weight is stored (in, out)."""
    return isinstance(module, Conv1D)


def is_linear(module: nn.Module) -> bool:
    """An ``nn.Linear`` or a GPT-2 ``Conv1D``: the linear layers of a transformer stack."""
    return isinstance(module, (nn.Linear, Conv1D))


def weight_matrix(module: nn.Module) -> torch.Tensor:
    """The (out × in) weight data of an ``nn.Linear`` or of a ``Conv1D`` (a transposed view)."""
    return module.weight.data.T if is_conv1d(module) else module.weight.data


def in_features(module: nn.Module) -> int:
    return module.nx if is_conv1d(module) else module.in_features


def out_features(module: nn.Module) -> int:
    return module.nf if is_conv1d(module) else module.out_features


def weight_dim(module: nn.Module, features: int) -> int:
    """Dim of ``module.weight`` holding output (``features`` = 0) or input (1) features."""
    return 1 - features if is_conv1d(module) else features


class SlicedConv1D(Conv1D):
    """``Conv1D`` (same parameters and state dict) that also runs with zero input features
    (every unit removed): the output is then the bias."""

    def forward(self, x):
        out = torch.addmm(self.bias, x.flatten(0, -2), self.weight)
        return out.view(*x.shape[:-1], self.nf)


def feature_slice(module: nn.Module, index: torch.Tensor, dim: int) -> nn.Module:
    """A new ``nn.Linear`` or ``Conv1D`` keeping output (dim=0) or input (dim=1) features ``index``
    of ``module`` (a ``Conv1D`` weight is (in, out): its outputs are weight columns); the bias
    follows the outputs and is kept whole with inputs."""
    index = index.to(device=module.weight.device, dtype=torch.long)
    weight = module.weight.detach().index_select(weight_dim(module, dim), index).clone()
    bias = module.bias
    if bias is not None:
        bias = bias.detach().index_select(0, index).clone() if dim == 0 else bias.detach().clone()
    if is_conv1d(module):
        new = SlicedConv1D(weight.shape[1], weight.shape[0]).to(device=weight.device, dtype=weight.dtype)
    else:
        with warnings.catch_warnings():  # zero-width layers are legitimate after removing every unit
            warnings.simplefilter("ignore", UserWarning)
            new = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device=weight.device,
                            dtype=weight.dtype)
    with torch.no_grad():
        new.weight.copy_(weight)
        if bias is not None:
            new.bias.copy_(bias)
    new.weight.requires_grad_(module.weight.requires_grad)
    return new
