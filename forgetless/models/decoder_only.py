"""Decoder-only adapters. ``DecoderOnlyAdapter`` serves every decoder-only language model of
transformers (``blocks.is_decoder_only``) with no per-family code: its one ``"decoder"`` stack is the
list of decoder blocks ``blocks.decoder_blocks`` finds, which is all that one-shot methods (Wanda,
SparseGPT, GPTQ, RTN), magnitude pruning, layer removal and the LLM evaluation need. Layer removal
renumbers ``layer_idx`` (the KV cache is indexed by it) and cuts the config to the kept blocks
(``layer_removal.py``: the block count, ``layer_types`` and every other per-layer list), checked
against what transformers builds from it.

Head and FFN-unit pruning need to know where heads and units live: per family, in the subclasses
below (Llama / Qwen2 / Qwen3 / Mistral; GPT-2); any other family refuses them with one error.

* **Grouped-query attention.** Removing a k/v head without its G query heads (or the reverse)
  leaves a model that ``repeat_kv`` cannot run, so the prunable unit is a **key/value group**
  (``sites.AttentionSite``). G never changes, so ``num_key_value_groups`` stays valid; the layer's
  head counts are recorded on the module where the class keeps them.
* **GPT-2's fused ``c_attn``** computes ``[q | k | v]`` in one ``Conv1D`` (weight (in, out)): a
  head owns three column blocks of it (``AttentionSite.qkv``); ``split_size`` follows the head count.
* A self-attention with every unit removed still counts tokens in the KV cache
  (``sites.CachedEmptyAttention``).
"""
from __future__ import annotations

import torch

from ..errors import UnsupportedModelError
from .adapters import Adapter, register_adapter, register_generic_decoder, renumber
from .blocks import decoder_blocks
from .layer_removal import apply_changes, check_cut, cut_config
from .sites import AttentionSite, EmptyAttention, FfnSite, Slot

PER_FAMILY = ("gpt2", "llama", "mistral", "qwen2", "qwen3")  # the families with head / FFN-unit surgery


@register_generic_decoder
class DecoderOnlyAdapter(Adapter):
    """Any decoder-only model: one ``"decoder"`` stack, the blocks ``blocks.decoder_blocks`` finds."""

    is_decoder_only = True
    has_sites = False

    def stacks(self, model):
        return {"decoder": decoder_blocks(model)[1]}

    def attention_sites(self, model):
        raise UnsupportedModelError(self._per_family(model, "attention-head pruning"))

    def ffn_sites(self, model):
        raise UnsupportedModelError(self._per_family(model, "FFN-unit pruning"))

    @staticmethod
    def _per_family(model, what: str) -> str:
        kind = getattr(model.config, "model_type", type(model).__name__)
        return (f"{what} needs to know where {kind}'s heads and FFN units live: forgetless knows it for "
                f"{', '.join(PER_FAMILY)}; one-shot methods, magnitude pruning and layer removal work on any decoder")

    def logits_from_embeds(self, model, embeds, inputs):
        """Logits at each row's last real token. ``*ForSequenceClassification`` finds that token from
        ``input_ids`` and, given only ``inputs_embeds``, scores the last position: a padded row's pad.
        Here the position is the last 1 of the attention mask (either padding side). It equals
        transformers' choice unless a real token carries the pad id (forgetless sets pad = eos when
        a tokenizer has none, so an appended EOS): then transformers pools before it, this at it."""
        head = getattr(model, "score", None)
        if head is None:
            raise UnsupportedModelError(f"{type(model).__name__}: no `score` head to classify from input embeddings")
        hidden = model.base_model(inputs_embeds=embeds, **inputs).last_hidden_state
        mask = inputs.get("attention_mask")
        if mask is None:
            return head(hidden[:, -1])
        positions = torch.arange(mask.shape[1], device=mask.device)
        last = (positions * (mask != 0)).argmax(dim=-1)
        return head(hidden[torch.arange(hidden.shape[0], device=hidden.device), last])

    def before_layer_drop(self, model, stack, keep):
        """The config cut to ``keep`` must build exactly the kept blocks (``layer_removal.check_cut``; a
        family with head / FFN surgery is known to, and its blocks may be sliced already)."""
        if not self.has_sites:
            check_cut(model, cut_config(model.config, keep), keep)

    def after_layer_drop(self, model, stack, keep):
        """``keep``: the old indices of the blocks now in the stack (the config still describes the old one)."""
        apply_changes(model.config, cut_config(model.config, keep))
        renumber(self.stacks(model)[stack])


@register_adapter("llama", "mistral", "qwen2", "qwen3")
class LlamaAdapter(DecoderOnlyAdapter):
    """Llama-style decoders: ``layers[i].self_attn.{q,k,v,o}_proj`` (grouped-query attention, rotary
    embeddings; Qwen2 has q/k/v biases, Qwen3 per-head q/k RMSNorm over ``head_dim``, Mistral and
    Qwen a sliding window) and the gated MLP ``mlp.{gate,up,down}_proj``."""

    empty_output = "o_proj"

    has_sites = True

    def attention_sites(self, model):
        sites = []
        for i, layer in enumerate(self.stacks(model)["decoder"]):
            core = layer.self_attn
            empty = isinstance(core, EmptyAttention)
            groups = 1 if empty else core.num_key_value_groups
            sites.append(AttentionSite(
                stack="decoder", layer=i, kind="self",
                q=None if empty else Slot(core, "q_proj"), k=None if empty else Slot(core, "k_proj"),
                v=None if empty else Slot(core, "v_proj"), o=Slot(core, "o_proj"),
                head_dim=0 if empty else groups * core.head_dim,  # one unit = one key/value group
                kv_dim=None if empty else core.head_dim,
                core=Slot(layer, "self_attn"),
            ))
        return sites

    def ffn_sites(self, model):
        return [FfnSite("decoder", i, [Slot(layer.mlp, "gate_proj"), Slot(layer.mlp, "up_proj")],
                        Slot(layer.mlp, "down_proj"))
                for i, layer in enumerate(self.stacks(model)["decoder"])]

    def after_head_prune(self, site, keep):
        """``keep`` are key/value groups; the group size G (``num_key_value_groups``) is unchanged."""
        core = site.core.get()
        groups = core.num_key_value_groups
        for name, value in (("num_key_value_heads", len(keep)), ("num_heads", len(keep) * groups),
                            ("num_attention_heads", len(keep) * groups)):
            if hasattr(core, name):  # only the counts this attention class records itself
                setattr(core, name, value)


@register_adapter("gpt2")
class Gpt2Adapter(DecoderOnlyAdapter):
    """GPT-2: ``h[i].attn.c_attn`` (fused q, k, v; ``Conv1D``), ``attn.c_proj``, ``mlp.c_fc`` /
    ``mlp.c_proj`` (``Conv1D``: weight (in, out), so FFN units are columns of ``c_fc`` and rows
    of ``c_proj``)."""

    empty_output = "c_proj"
    has_sites = True

    def stacks(self, model):
        if getattr(model.config, "add_cross_attention", False):
            raise UnsupportedModelError("GPT-2 with cross-attention (add_cross_attention=True) is not supported; "
                                        "use a decoder-only GPT-2")
        return super().stacks(model)

    def attention_sites(self, model):
        sites = []
        for i, block in enumerate(self.stacks(model)["decoder"]):
            core = block.attn
            empty = isinstance(core, EmptyAttention)
            sites.append(AttentionSite(
                stack="decoder", layer=i, kind="self", q=None, k=None, v=None,
                qkv=None if empty else Slot(core, "c_attn"), o=Slot(core, "c_proj"),
                head_dim=0 if empty else core.head_dim, core=Slot(block, "attn"),
            ))
        return sites

    def ffn_sites(self, model):
        return [FfnSite("decoder", i, [Slot(block.mlp, "c_fc")], Slot(block.mlp, "c_proj"))
                for i, block in enumerate(self.stacks(model)["decoder"])]

    def after_head_prune(self, site, keep):
        core = site.core.get()
        core.num_heads = len(keep)
        core.split_size = len(keep) * core.head_dim  # c_attn output is split into q, k, v of this width

    def before_layer_drop(self, model, stack, keep):
        if getattr(model.config, "scale_attn_by_inverse_layer_idx", False) and keep != list(range(len(keep))):
            raise UnsupportedModelError(
                "GPT-2 with scale_attn_by_inverse_layer_idx=True scales attention by 1/(layer_idx+1): removing "
                f"layers other than the last ones (keep {keep}) would change the kept layers")
