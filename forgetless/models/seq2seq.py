"""Encoder-decoder adapters (T5, BART, ``EncoderDecoderModel``) and the bert2bert builder.

What these families need beyond the encoder-only adapters (Ko et al., "NASH", §2-§4 prune heads,
FFN units and layers in both stacks):

* **Cross-attention** sites (``kind="cross"``) next to self-attention in every decoder layer.
* **T5's shared relative position bias.** Only layer 0 of a stack owns ``relative_attention_bias``;
  it computes a bias for *its* heads and every later layer reuses it. Once heads are pruned in a
  stack, each layer gets its own copy of the bias table sliced to its kept heads, and every
  attention of that stack computes its own bias (a forward pre-hook drops the bias passed down).
  Dropping layer 0 hands its bias table to the new first layer.
* **Decoder layer drop**: ``layer_idx`` renumbering and the layer count in the decoder's own
  config entry (``num_decoder_layers`` / ``decoder_layers`` / ``decoder.num_hidden_layers``),
  which is what the generation cache is sized from.
* A decoder self-attention with every head removed still counts tokens in the KV cache
  (``sites.CachedEmptyAttention``, from the adapter base).
"""
from __future__ import annotations

import copy

import torch
import transformers
from torch import nn

from .adapters import Adapter, BertAdapter, register_adapter, renumber
from .sites import AttentionSite, EmptyAttention, FfnSite, Slot


def _drop_passed_bias(module, args, kwargs):
    """Forward pre-hook: make a T5 attention compute its own (per-layer) position bias."""
    kwargs["position_bias"] = None
    return args, kwargs


# ------------------------------------------------------------------------------------------------
@register_adapter("t5", "mt5")
class T5Adapter(Adapter):
    """T5: ``{encoder,decoder}.block[i].layer[0].SelfAttention``, ``layer[1].EncDecAttention``
    (decoder), ``layer[-1].DenseReluDense.{wi | wi_0, wi_1}, wo``."""

    is_seq2seq = True
    empty_output, empty_returns = "o", 3
    layer_count_keys = {"encoder": "num_layers", "decoder": "num_decoder_layers"}
    ffn_width_keys = {"encoder": "d_ff", "decoder": "d_ff"}

    def stacks(self, model):
        return {"encoder": model.encoder.block, "decoder": model.decoder.block}

    def attention_sites(self, model):
        sites = []
        for stack, blocks in self.stacks(model).items():
            for i, block in enumerate(blocks):
                parts = [("self", block.layer[0], "SelfAttention")]
                if stack == "decoder":
                    parts.append(("cross", block.layer[1], "EncDecAttention"))
                for kind, owner, name in parts:
                    core = getattr(owner, name)
                    sites.append(AttentionSite.of(stack, i, kind, core, ("q", "k", "v"), Slot(core, "o"),
                                                  "key_value_proj_dim", Slot(owner, name),
                                                  extra={"blocks": blocks, "stack_module": stack}))
        return sites

    def ffn_sites(self, model):
        sites = []
        for stack, blocks in self.stacks(model).items():
            for i, block in enumerate(blocks):
                dense = block.layer[-1].DenseReluDense
                inputs = [Slot(dense, "wi_0"), Slot(dense, "wi_1")] if hasattr(dense, "wi_0") else [Slot(dense, "wi")]
                sites.append(FfnSite(stack, i, inputs, Slot(dense, "wo")))
        return sites

    def after_head_prune(self, site, keep):
        core = site.core.get()
        blocks = site.extra["blocks"]
        localize_t5_bias(blocks)
        core.n_heads = len(keep)
        core.inner_dim = len(keep) * site.head_dim
        if site.kind == "self" and getattr(core, "relative_attention_bias", None) is not None:
            old = core.relative_attention_bias
            new = nn.Embedding(old.num_embeddings, len(keep), device=old.weight.device, dtype=old.weight.dtype)
            with torch.no_grad():
                new.weight.copy_(old.weight[:, keep])
            core.relative_attention_bias = new

    def before_layer_drop(self, model, stack, keep):
        blocks = self.stacks(model)[stack]
        first = blocks[0].layer[0].SelfAttention
        if 0 in keep or getattr(first, "forgetless_own_bias", False) or isinstance(first, EmptyAttention):
            return
        target = blocks[min(keep)].layer[0].SelfAttention
        target.relative_attention_bias = first.relative_attention_bias
        target.has_relative_attention_bias = True

    def after_layer_drop(self, model, stack, keep):
        n = len(keep)
        if stack == "encoder":
            model.config.num_layers = n
            model.encoder.config.num_layers = n
        else:
            model.config.num_decoder_layers = n
            model.decoder.config.num_layers = n
        # generate() sizes its cache from config.get_text_config(decoder=True), whose legacy T5 path
        # maps ``decoder_layers`` (not ``num_decoder_layers``) to the layer count: record it there.
        for config in (model.config, model.decoder.config):
            config.decoder_layers = model.config.num_decoder_layers
        renumber(self.stacks(model)[stack])


def localize_t5_bias(blocks: nn.ModuleList) -> None:
    """Give every layer of a T5 stack its own relative-bias table (a copy of layer 0's) and make
    every attention compute its own bias. Idempotent; must run before any per-layer slicing."""
    first = blocks[0].layer[0].SelfAttention
    if getattr(first, "forgetless_own_bias", False):
        return
    table = getattr(first, "relative_attention_bias", None)
    for block in blocks:
        for sub in block.layer[:-1]:
            attn = getattr(sub, "SelfAttention", None) or getattr(sub, "EncDecAttention", None)
            if isinstance(attn, EmptyAttention) or attn is None:
                continue
            if hasattr(sub, "SelfAttention") and table is not None and getattr(attn, "relative_attention_bias", None) is None:
                attn.relative_attention_bias = copy.deepcopy(table)
                attn.has_relative_attention_bias = True
            attn.forgetless_own_bias = True
            attn.register_forward_pre_hook(_drop_passed_bias, with_kwargs=True)


# ------------------------------------------------------------------------------------------------
@register_adapter("bart", "mbart")
class BartAdapter(Adapter):
    """BART: ``model.{encoder,decoder}.layers[i].self_attn`` / ``encoder_attn`` (q/k/v/out_proj),
    ``fc1`` / ``fc2``."""

    is_seq2seq = True
    empty_output = "out_proj"
    layer_count_keys = {"encoder": "encoder_layers", "decoder": "decoder_layers"}
    ffn_width_keys = {"encoder": "encoder_ffn_dim", "decoder": "decoder_ffn_dim"}

    def stacks(self, model):
        base = model.get_encoder().layers, model.get_decoder().layers
        return {"encoder": base[0], "decoder": base[1]}

    def attention_sites(self, model):
        sites = []
        for stack, layers in self.stacks(model).items():
            for i, layer in enumerate(layers):
                kinds = [("self", "self_attn")] + ([("cross", "encoder_attn")] if stack == "decoder" else [])
                for kind, name in kinds:
                    core = getattr(layer, name)
                    sites.append(AttentionSite.of(stack, i, kind, core, ("q_proj", "k_proj", "v_proj"),
                                                  Slot(core, "out_proj"), "head_dim", Slot(layer, name)))
        return sites

    def ffn_sites(self, model):
        return [FfnSite(stack, i, [Slot(layer, "fc1")], Slot(layer, "fc2"))
                for stack, layers in self.stacks(model).items() for i, layer in enumerate(layers)]

    def after_head_prune(self, site, keep):
        site.core.get().num_heads = len(keep)


# ------------------------------------------------------------------------------------------------
@register_adapter("encoder-decoder")
class EncoderDecoderAdapter(BertAdapter):
    """``EncoderDecoderModel`` with BERT-style encoder and decoder ("bert2bert"): decoder layers
    hold ``attention`` (self) and ``crossattention``."""

    is_seq2seq = True
    ffn_width_keys = {"encoder": "encoder.intermediate_size", "decoder": "decoder.intermediate_size"}

    def stacks(self, model):
        return {"encoder": model.encoder.encoder.layer, "decoder": model.decoder.base_model.encoder.layer}

    def attentions(self, stack, layer):
        return [("self", "attention")] + ([("cross", "crossattention")] if stack == "decoder" else [])

    def after_layer_drop(self, model, stack, keep):
        getattr(model.config, stack).num_hidden_layers = len(keep)
        getattr(model, stack).config.num_hidden_layers = len(keep)
        renumber(self.stacks(model)[stack])


# ------------------------------------------------------------------------------------------------
def build_bert2bert(encoder: str | transformers.BertConfig, decoder: str | transformers.BertConfig | None = None,
                    tokenizer=None, max_length: int = 64) -> nn.Module:
    """A "bert2bert" ``EncoderDecoderModel`` warm-started from a BERT checkpoint folder (both stacks;
    the decoder's cross-attention is new) or built from two ``BertConfig`` objects (tests).

    Sets ``decoder_start_token_id`` ([CLS]), ``pad_token_id`` and ``eos_token_id`` ([SEP]) so that
    training (labels shifted right) and generation work.
    """
    decoder = encoder if decoder is None else decoder
    if isinstance(encoder, transformers.PretrainedConfig):
        dec_cfg = copy.deepcopy(decoder)
        dec_cfg.is_decoder, dec_cfg.add_cross_attention = True, True
        config = transformers.EncoderDecoderConfig.from_encoder_decoder_configs(encoder, dec_cfg)
        model = transformers.EncoderDecoderModel(config=config)
        ids = dict(cls=1, pad=0, sep=2)
    else:
        model = transformers.EncoderDecoderModel.from_encoder_decoder_pretrained(
            str(encoder), str(decoder), encoder_use_safetensors=True, decoder_use_safetensors=True,
            encoder_trust_remote_code=False, decoder_trust_remote_code=False)  # bert2bert: BERT folders only
        tok = tokenizer or transformers.AutoTokenizer.from_pretrained(str(encoder), trust_remote_code=False)
        ids = dict(cls=tok.cls_token_id, pad=tok.pad_token_id, sep=tok.sep_token_id)
    for cfg in (model.config, model.generation_config):
        cfg.decoder_start_token_id = ids["cls"]
        cfg.pad_token_id = ids["pad"]
        cfg.eos_token_id = ids["sep"]
    model.config.vocab_size = model.config.decoder.vocab_size
    model.generation_config.max_length = max_length
    model.config.tie_word_embeddings = False
    return model
