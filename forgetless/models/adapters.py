"""Architecture adapters: the only place that knows where layers, heads and FFN units live.

Algorithms ask an adapter for *sites* (see ``sites.py``) and never index model internals
themselves. Encoder-only families live here; encoder-decoder families register in ``seq2seq.py``
(the ``forgetless.models`` package imports every family module, so all are registered).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

from torch import nn

from ..errors import UnsupportedModelError
from .blocks import is_decoder_only
from .sites import AttentionSite, CachedEmptyAttention, EmptyAttention, FfnSite, Slot, is_linear

_ADAPTERS: dict[str, "Adapter"] = {}
_GENERIC: list["Adapter"] = []  # the adapter of every other decoder-only family (``decoder_only.py``)


def register_adapter(*model_types: str) -> Callable[[type], type]:
    def decorator(cls: type) -> type:
        for model_type in model_types:
            _ADAPTERS[model_type] = cls()
        return cls

    return decorator


def register_generic_decoder(cls: type) -> type:
    """Class decorator: ``cls`` serves every decoder-only family without an adapter of its own."""
    _GENERIC[:] = [cls()]
    return cls


def get_adapter(model: nn.Module) -> "Adapter":
    """The adapter for ``model``: its family's (by ``config.model_type``), else the generic decoder
    adapter for any decoder-only language model (``blocks.is_decoder_only``); a clear error otherwise."""
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type in _ADAPTERS:
        return _ADAPTERS[model_type]
    if is_decoder_only(config):
        return _GENERIC[0]
    raise UnsupportedModelError(
        f"no forgetless adapter for model_type {model_type!r}: forgetless compresses any decoder-only language model "
        f"of transformers and these encoder / encoder-decoder families: "
        f"{', '.join(sorted(k for k, a in _ADAPTERS.items() if not a.is_decoder_only))}")


LAYER_INDEX = ("layer_idx", "layer_id")  # a layer's own index (KV cache, recurrent state: RWKV's layer_id)


def renumber(layers: nn.ModuleList) -> None:
    """Give every module of the i-th layer ``layer_idx = i`` (the KV cache is indexed by it)."""
    for new_idx, layer in enumerate(layers):
        for module in layer.modules():
            for name in LAYER_INDEX:
                if isinstance(getattr(module, name, None), int):
                    setattr(module, name, new_idx)


class Adapter(ABC):
    """Base adapter. Subclasses implement ``stacks``, ``attention_sites``, ``ffn_sites``."""

    is_seq2seq = False
    is_decoder_only = False
    has_sites = True  # knows where heads and FFN units live (False: the generic decoder adapter)
    layer_count_keys: dict[str, str] = {}  # stack → config attribute holding its layer count
    ffn_width_keys: dict[str, str] = {}  # stack → config attribute (dotted: nested) holding its FFN width
    empty_output: str | None = None  # attribute of the attention module holding its output projection, if inside it
    empty_returns = 2  # outputs the attention module returns (an emptied one returns as many)

    @abstractmethod
    def stacks(self, model: nn.Module) -> dict[str, nn.ModuleList]:
        """Layer lists by stack name ("encoder", "decoder")."""

    @abstractmethod
    def attention_sites(self, model: nn.Module) -> list[AttentionSite]:
        """Every attention block, in stack and layer order."""

    @abstractmethod
    def ffn_sites(self, model: nn.Module) -> list[FfnSite]:
        """Every feed-forward block, in stack and layer order."""

    # ----- helpers shared by every family -------------------------------------------------
    def logits_from_embeds(self, model: nn.Module, embeds, inputs: dict):
        """Classifier logits for input embeddings ``embeds`` (gradients w.r.t. the input: RAHP
        ΔCLEVER, CLEVER) and the other token inputs (attention mask, …)."""
        return model(inputs_embeds=embeds, **inputs).logits

    def empty_attention(self, site: AttentionSite) -> nn.Module:
        """Module that replaces ``site.core`` once it has no head left (a decoder's self-attention
        keeps counting tokens in the KV cache)."""
        out = site.o.get() if self.empty_output else None
        if site.stack == "decoder" and site.kind == "self":
            return CachedEmptyAttention(self.empty_output, out, self.empty_returns, site.core.get().layer_idx)
        return EmptyAttention(self.empty_output, out, self.empty_returns)

    def after_head_prune(self, site: AttentionSite, keep: list[int]) -> None:
        """Update attributes of the attention module that record the head count."""

    def before_layer_drop(self, model: nn.Module, stack: str, keep: list[int]) -> None:
        """Move state a dropped layer shares with the stack (e.g. T5's relative position bias, owned by
        layer 0) to a kept layer; called before the layers are removed."""

    def after_layer_drop(self, model: nn.Module, stack: str, keep: list[int]) -> None:
        """Renumber layer indices and update the config after layers were dropped."""
        model.config.__setattr__(self.layer_count_keys[stack], len(keep))
        renumber(self.stacks(model)[stack])

    def prunable_linears(self, model: nn.Module) -> list[tuple[str, nn.Module]]:
        """Linear layers (``sites.is_linear``: GPT-2's ``Conv1D`` too, whose (in, out) weight layout
        unstructured pruning ignores) inside the transformer stacks, no embeddings, pooler or
        classifier: the weights magnitude pruning acts on (Du et al. §3.1), named ``stack.layer.module``."""
        return [(f"{stack}.{i}.{name}", module) for stack, layers in self.stacks(model).items()
                for i, layer in enumerate(layers) for name, module in layer.named_modules() if is_linear(module)]

    def layer_parameters(self, model: nn.Module) -> int:
        return sum(p.numel() for layers in self.stacks(model).values() for p in layers.parameters())


@register_adapter("bert", "roberta", "xlm-roberta", "electra")
class BertAdapter(Adapter):
    """BERT-style layers: ``attention.{self,output}`` (and ``crossattention`` in a bert2bert decoder),
    ``intermediate``, ``output``."""

    layer_count_keys = {"encoder": "num_hidden_layers"}
    ffn_width_keys = {"encoder": "intermediate_size"}

    def stacks(self, model):
        return {"encoder": model.base_model.encoder.layer}

    def attentions(self, stack: str, layer: nn.Module) -> list[tuple[str, str]]:
        """(site kind, attribute) of each attention block of one layer."""
        return [("self", "attention")]

    def attention_sites(self, model):
        sites = []
        for stack, layers in self.stacks(model).items():
            for i, layer in enumerate(layers):
                for kind, name in self.attentions(stack, layer):
                    attn = getattr(layer, name)
                    sites.append(AttentionSite.of(stack, i, kind, attn.self, ("query", "key", "value"),
                                                  Slot(attn.output, "dense"), "attention_head_size", Slot(attn, "self")))
        return sites

    def ffn_sites(self, model):
        return [FfnSite(stack, i, [Slot(layer.intermediate, "dense")], Slot(layer.output, "dense"))
                for stack, layers in self.stacks(model).items() for i, layer in enumerate(layers)]

    def after_head_prune(self, site, keep):
        core = site.core.get()
        core.num_attention_heads = len(keep)
        core.all_head_size = len(keep) * site.head_dim


@register_adapter("distilbert")
class DistilBertAdapter(Adapter):
    """DistilBERT: ``transformer.layer[i].attention.{q,k,v,out}_lin`` and ``ffn.lin1/lin2``."""

    layer_count_keys = {"encoder": "n_layers"}
    ffn_width_keys = {"encoder": "hidden_dim"}
    empty_output = "out_lin"

    def stacks(self, model):
        return {"encoder": model.base_model.transformer.layer}

    def attention_sites(self, model):
        return [AttentionSite.of("encoder", i, "self", layer.attention, ("q_lin", "k_lin", "v_lin"),
                                 Slot(layer.attention, "out_lin"), "attention_head_size", Slot(layer, "attention"))
                for i, layer in enumerate(self.stacks(model)["encoder"])]

    def ffn_sites(self, model):
        return [FfnSite("encoder", i, [Slot(layer.ffn, "lin1")], Slot(layer.ffn, "lin2"))
                for i, layer in enumerate(self.stacks(model)["encoder"])]

    def after_head_prune(self, site, keep):
        site.core.get().n_heads = len(keep)
