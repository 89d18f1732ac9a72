"""Tiny random decoder-only models of every family transformers registers, for the any-decoder tests:
one set of small sizes given to each family's config under its own field names (``attribute_map``),
a character tokenizer of 101 ids (so embeddings stay tiny), calibration texts."""
from __future__ import annotations

import dataclasses
import string

import torch
import transformers
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

from forgetless.models.blocks import is_decoder_only

VOCAB = 101
TINY = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
            eos_token_id=2, num_local_experts=4, num_experts=4, n_routed_experts=4, num_experts_per_tok=2,
            moe_intermediate_size=32, shared_expert_intermediate_size=32, n_shared_experts=1, kv_lora_rank=16,
            q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, ffn_dim=64, n_inner=64,
            rotary_dim=8, dff=64, decoder_ffn_dim=64, d_inner=64,  # FFN widths under other names (CTRL, TrOCR, XLNet)
            mamba_n_heads=4, mamba_d_state=16, mamba_chunk_size=16, mamba_num_heads=4, mamba_head_dim=32,
            ssm_state_size=16, chunk_size=16,  # state-space layers (Bamba, Granite-hybrid, Nemotron-H)
            linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
            index_n_heads=2, index_head_dim=16, index_topk=4)  # linear / indexed attention (Qwen3-Next, DeepSeek-V4)
HYBRID = ["linear_attention", "full_attention", "linear_attention"]  # one attention block among 3 (its KV cache)
OVERRIDES = {"falcon_h1": dict(mamba_d_ssm=64), "bamba": dict(attn_layer_indices=[1]),
             "granitemoehybrid": dict(layer_types=["mamba", "attention", "mamba"]),
             "jamba": dict(attn_layer_period=2, attn_layer_offset=1), "nemotron_h": dict(n_groups=1),
             **{t: dict(layer_types=HYBRID) for t in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "qwen4_exp_text")}}
MAX_PARAMETERS = 3_000_000  # a family whose config these sizes do not reach is skipped (SKIPPED says so)
TEXTS = ["The quick brown fox jumps over the lazy dog.", "Pack my box with five dozen liquor jugs!",
         "How vexingly quick daft zebras jump.", "Sphinx of black quartz, judge my vow."]


def decoder_types() -> list[str]:
    """Every decoder-only model type of transformers' causal-LM registry (``blocks.is_decoder_only``)."""
    return sorted(t for t in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES if is_decoder_only(transformers.CONFIG_MAPPING[t]))


def tiny_config(model_type: str, **changes):
    """``model_type``'s config with the TINY sizes it has fields for (a few families need more:
    ``OVERRIDES``) and ``changes``."""
    cls = transformers.CONFIG_MAPPING[model_type]
    names = {f.name for f in dataclasses.fields(cls)}
    mapped = getattr(cls, "attribute_map", {})
    values = {}
    for key, value in {**TINY, **OVERRIDES.get(model_type, {}), **changes}.items():
        field = key if key in names else mapped.get(key)
        if field in names:
            values[field] = value
    if "kv_lora_rank" in names:  # multi-head latent attention: one key / value head per query head
        values[mapped.get("num_key_value_heads", "num_key_value_heads")] = values.get("num_attention_heads", 4)
    return cls(**values)


def tiny_model(model_type: str, seed: int = 0, **changes):
    """A random ``…ForCausalLM`` of ``model_type`` from ``tiny_config`` (eval mode)."""
    config = tiny_config(model_type, **changes)
    model_class = getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type])
    with torch.device("meta"):
        size = sum(p.numel() for p in model_class(config).parameters())
    if size > MAX_PARAMETERS:
        raise ValueError(f"{model_type}: its tiny config still has {size:,} parameters")
    torch.manual_seed(seed)
    return model_class(config).eval()


def char_tokenizer():
    """One id per printable character (pad 0, bos 1, eos 2, unk 3): 101 ids."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    chars = sorted(set(string.printable) - set("\x0b\x0c\r"))
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(chars)}}
    assert len(vocab) == VOCAB
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>",
                                                eos_token="</s>", unk_token="<unk>")


def left_padded():
    """Two rows of 7 ids, the second left-padded by 2: ``(input_ids, attention_mask)``."""
    ids = torch.randint(4, VOCAB, (2, 7), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    ids[1, :2], mask[1, :2] = 0, 0
    return ids, mask
