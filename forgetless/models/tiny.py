"""Tiny randomly initialised models by name, for fast runs and tests (no download).

``tiny-t5``, ``tiny-bart``, ``tiny-bert2bert``: encoder-decoders (4 + 4 layers, hidden 32, 4 heads,
FFN 64). ``tiny-bert``: a 2-layer BERT encoder for classification; ``tiny-llama``: a 4-layer Llama
with grouped-query attention (4 query heads, 2 key/value heads), as a classifier or, for the
``causal-lm`` model kind, with its language-modelling head. Each is built for a tokenizer
(the task's own vocabulary when it has one, else the bundled MiniLM WordPiece tokenizer) and
seeded, so the same name and seed always give the same weights.
"""
from __future__ import annotations

import torch
import transformers

from ..errors import ConfigError
from .seq2seq import build_bert2bert

TINY_SEQ2SEQ = ("tiny-t5", "tiny-bart", "tiny-bert2bert")
TINY_CLASSIFIERS = ("tiny-bert", "tiny-llama")
TINY_MODELS = TINY_SEQ2SEQ + TINY_CLASSIFIERS


def tiny_seq2seq(kind: str, vocab_size: int, pad: int = 0, bos: int = 2, eos: int = 3, layers: int = 4,
                 hidden: int = 32, heads: int = 4, ffn: int = 64, max_positions: int = 512, seed: int = 0):
    """A small encoder-decoder (``kind`` in ``TINY_SEQ2SEQ``) for a vocabulary, seeded."""
    torch.manual_seed(seed)
    if kind == "tiny-t5":
        config = transformers.T5Config(vocab_size=vocab_size, d_model=hidden, d_kv=hidden // heads, d_ff=ffn,
                                       num_layers=layers, num_decoder_layers=layers, num_heads=heads,
                                       relative_attention_num_buckets=16, dropout_rate=0.0,
                                       decoder_start_token_id=pad, pad_token_id=pad, eos_token_id=eos)
        model, start = transformers.T5ForConditionalGeneration(config), pad
    elif kind == "tiny-bart":
        config = transformers.BartConfig(vocab_size=vocab_size, d_model=hidden, encoder_layers=layers,
                                         decoder_layers=layers, encoder_attention_heads=heads,
                                         decoder_attention_heads=heads, encoder_ffn_dim=ffn, decoder_ffn_dim=ffn,
                                         max_position_embeddings=max_positions, dropout=0.0, attention_dropout=0.0,
                                         pad_token_id=pad, bos_token_id=bos, eos_token_id=eos,
                                         decoder_start_token_id=bos, forced_eos_token_id=None)
        model, start = transformers.BartForConditionalGeneration(config), bos
    elif kind == "tiny-bert2bert":
        bert = transformers.BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                                       num_attention_heads=heads, intermediate_size=ffn,
                                       max_position_embeddings=max_positions, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0, pad_token_id=pad)
        model, start = build_bert2bert(bert), bos
    else:
        raise ConfigError(f"unknown tiny model {kind!r}; choose from {', '.join(TINY_SEQ2SEQ)}")
    for cfg in (model.config, model.generation_config):
        cfg.decoder_start_token_id, cfg.pad_token_id, cfg.eos_token_id = start, pad, eos
    model.generation_config.bos_token_id = None
    model.generation_config.forced_eos_token_id = None
    return model


def tiny_llama_config(vocab_size: int, pad: int = 0, **overrides) -> transformers.LlamaConfig:
    """A small Llama with grouped-query attention (4 query heads, 2 key/value heads)."""
    return transformers.LlamaConfig(**{"vocab_size": vocab_size, "hidden_size": 32, "intermediate_size": 64,
                                       "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
                                       "max_position_embeddings": 512, "pad_token_id": pad, **overrides})


def tiny_classifier(kind: str, vocab_size: int, label_names: list[str], pad: int = 0, seed: int = 0):
    """A small classifier (``tiny-bert``, ``tiny-llama``) with ``len(label_names)`` outputs, seeded."""
    if kind not in TINY_CLASSIFIERS:
        raise ConfigError(f"unknown tiny classifier {kind!r}; choose from {', '.join(TINY_CLASSIFIERS)}")
    torch.manual_seed(seed)
    id2label = dict(enumerate(label_names))
    if kind == "tiny-llama":
        config = tiny_llama_config(vocab_size, pad, num_labels=len(label_names), id2label=id2label,
                                   label2id={v: k for k, v in id2label.items()})
        return transformers.LlamaForSequenceClassification(config)
    config = transformers.BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=512,
                                     pad_token_id=pad, num_labels=len(label_names), id2label=id2label,
                                     label2id={v: k for k, v in id2label.items()})
    return transformers.BertForSequenceClassification(config)


def tiny_model_config(name: str):
    """The config of tiny model ``name`` (its shape: built with a small vocabulary, the global RNG
    left as it was); None for any other name."""
    if name not in TINY_MODELS:
        return None
    with torch.random.fork_rng(devices=[]):
        model = tiny_seq2seq(name, 16) if name in TINY_SEQ2SEQ else tiny_classifier(name, 16, ["a", "b"])
    return model.config
