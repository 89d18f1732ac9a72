"""Seq2seq models by name: ``minilm`` (bert2bert warm start from the bundled MiniLM), tiny T5 /
BART / bert2bert built from small configs (demo and tests; random weights), a forgetless folder,
or any local Hugging Face seq2seq folder."""
from __future__ import annotations

import transformers

from ..errors import ConfigError
from ..models.seq2seq import build_bert2bert, load_seq2seq

TINY = ("tiny-t5", "tiny-bart", "tiny-bert2bert")


def tiny_model(kind: str, vocab_size: int, pad: int = 0, bos: int = 2, eos: int = 3, layers: int = 4,
               hidden: int = 32, heads: int = 4, ffn: int = 64, max_positions: int = 256):
    """A small randomly initialised encoder-decoder (``kind`` in ``TINY``) for a given vocabulary."""
    if kind == "tiny-t5":
        config = transformers.T5Config(vocab_size=vocab_size, d_model=hidden, d_kv=hidden // heads, d_ff=ffn,
                                       num_layers=layers, num_decoder_layers=layers, num_heads=heads,
                                       relative_attention_num_buckets=16, dropout_rate=0.0,
                                       decoder_start_token_id=pad, pad_token_id=pad, eos_token_id=eos)
        model = transformers.T5ForConditionalGeneration(config)
        start = pad
    elif kind == "tiny-bart":
        config = transformers.BartConfig(vocab_size=vocab_size, d_model=hidden, encoder_layers=layers,
                                         decoder_layers=layers, encoder_attention_heads=heads,
                                         decoder_attention_heads=heads, encoder_ffn_dim=ffn, decoder_ffn_dim=ffn,
                                         max_position_embeddings=max_positions, dropout=0.0, attention_dropout=0.0,
                                         pad_token_id=pad, bos_token_id=bos, eos_token_id=eos,
                                         decoder_start_token_id=bos, forced_eos_token_id=None)
        model = transformers.BartForConditionalGeneration(config)
        start = bos
    elif kind == "tiny-bert2bert":
        bert = transformers.BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                                       num_attention_heads=heads, intermediate_size=ffn,
                                       max_position_embeddings=max_positions, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0, pad_token_id=pad)
        model = build_bert2bert(bert)
        start = bos
    else:
        raise ConfigError(f"unknown tiny model {kind!r}; choose from {', '.join(TINY)}")
    for cfg in (model.config, model.generation_config):
        cfg.decoder_start_token_id, cfg.pad_token_id, cfg.eos_token_id = start, pad, eos
    model.generation_config.bos_token_id = None
    model.generation_config.forced_eos_token_id = None
    return model


def build_model(name: str, task_tokenizer=None, max_new_tokens: int = 32):
    """``(model, tokenizer)`` for a model name; tiny models use the task's own tokenizer when it has
    one, otherwise the bundled MiniLM tokenizer."""
    if name in TINY:
        tokenizer = task_tokenizer
        if tokenizer is None:
            from ..models.loading import resolve_model_path

            tokenizer = transformers.AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
        ids = dict(pad=tokenizer.pad_token_id, bos=tokenizer.cls_token_id, eos=tokenizer.sep_token_id)
        return tiny_model(name, len(tokenizer), **ids), tokenizer
    model, tokenizer = load_seq2seq(name, max_length=max_new_tokens + 2)
    return model, tokenizer
