"""Turn a training set into tokenized rows and batches (dynamic padding), for both task kinds.

* an ``ExampleSet`` (classification): text (pairs) → ``input_ids`` (+ masks) and an integer label;
* a ``PairSet`` (generation): source → ``input_ids``; target → ``labels`` token ids ending in EOS.

Extra per-example columns (teacher probabilities, difficulty degrees, sample weights) travel with
the rows and arrive in the batch as float tensors, so objectives can read them.

Bounded memory: every text is cut to ``CHARS_PER_TOKEN × max_length`` characters *before* it is
tokenized or paired (``clip_texts``), then the tokenizer truncates to ``max_length`` tokens; so a
200k-word input costs no more than a long sentence (without the cut, a fast tokenizer builds the
full pair before truncating it). 16 characters per token keeps every token of ordinary text: a
WordPiece / BPE token rarely spans more than a dozen characters.
"""
from __future__ import annotations

from typing import Any

import torch

from ..data.task import ExampleSet, PairSet
from ..errors import DataError

TOKEN_KEYS = ("input_ids", "attention_mask", "token_type_ids")
MODEL_KEYS = TOKEN_KEYS + ("labels",)
IGNORE_INDEX = -100  # label id ignored by token-level losses (padding of targets)
CHARS_PER_TOKEN = 16  # characters kept per allowed token before tokenizing (bounded memory)


def clip_texts(texts: list[str] | None, max_tokens: int) -> list[str] | None:
    """Each text cut to ``CHARS_PER_TOKEN * max_tokens`` characters (None stays None)."""
    if texts is None:
        return None
    limit = CHARS_PER_TOKEN * max(1, int(max_tokens))
    return [t if len(t) <= limit else t[:limit] for t in texts]


def encode(examples: ExampleSet, tokenizer, max_length: int = 128,
           extras: dict[str, list] | None = None) -> list[dict[str, Any]]:
    """Tokenize ``examples``; each row gets ``labels``, ``index`` and any ``extras`` columns."""
    enc = tokenizer(clip_texts(examples.text_a, max_length), clip_texts(examples.text_b, max_length),
                    truncation=True, max_length=max_length)
    rows = []
    for i in range(len(examples)):
        row = {key: enc[key][i] for key in TOKEN_KEYS if key in enc}
        row["labels"] = int(examples.labels[i])
        row["index"] = i
        rows.append(row)
    return _add_extras(rows, extras)


def encode_pairs(pairs: PairSet, tokenizer, eos_token_id: int, max_source: int = 128, max_target: int = 32,
                 extras: dict[str, list] | None = None) -> list[dict[str, Any]]:
    """Rows with ``input_ids``, ``attention_mask`` and ``labels`` (target tokens + EOS) per pair."""
    enc = tokenizer(clip_texts(pairs.sources, max_source), truncation=True, max_length=max_source)
    tgt = tokenizer(clip_texts(pairs.targets, max_target), add_special_tokens=False, truncation=True,
                    max_length=max(1, max_target - 1))
    rows = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
             "labels": list(tgt["input_ids"][i]) + [eos_token_id], "index": i} for i in range(len(pairs))]
    return _add_extras(rows, extras)


def encode_causal_pairs(pairs: PairSet, tokenizer, max_source: int = 128, max_target: int = 32,
                        extras: dict[str, list] | None = None) -> list[dict[str, Any]]:
    """Rows for a decoder-only LM: ``input_ids`` = prompt + target tokens, ``labels`` = the target
    tokens at their positions and ``IGNORE_INDEX`` over the prompt (the model shifts labels). A long
    prompt keeps its last ``max_source`` tokens, as zero-shot scoring cuts it: the instruction's
    end and the answer cue stay next to the target."""
    src = [ids[-max_source:] for ids in tokenizer(pairs.sources, add_special_tokens=False)["input_ids"]]
    tgt = tokenizer(pairs.targets, add_special_tokens=False, truncation=True, max_length=max_target)["input_ids"]
    rows = [{"input_ids": s + t, "attention_mask": [1] * (len(s) + len(t)), "labels": [IGNORE_INDEX] * len(s) + t,
             "index": i} for i, (s, t) in enumerate(zip(src, tgt))]
    return _add_extras(rows, extras)


def encode_for_training(examples, tokenizer, model, max_length: int, max_target_length: int,
                        extras: dict[str, list] | None = None) -> list[dict[str, Any]]:
    """Rows of either kind of set (the model's EOS id ends encoder-decoder targets; a decoder-only
    LM gets prompt + target in one sequence)."""
    if isinstance(examples, PairSet):
        if not getattr(model.config, "is_encoder_decoder", False):
            return encode_causal_pairs(examples, tokenizer, max_length, max_target_length, extras)
        eos = model.generation_config.eos_token_id
        eos = eos[0] if isinstance(eos, list) else eos
        return encode_pairs(examples, tokenizer, eos, max_length, max_target_length, extras)
    return encode(examples, tokenizer, max_length, extras)


def _add_extras(rows: list[dict], extras: dict[str, list] | None) -> list[dict]:
    for name, values in (extras or {}).items():
        if len(values) != len(rows):
            raise DataError(f"extra column {name!r} has {len(values)} values for {len(rows)} examples")
        for row, value in zip(rows, values):
            row[name] = value
    return rows


def collate(rows: list[dict[str, Any]], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Pad token columns to the longest row (label sequences with ``IGNORE_INDEX``); stack every
    other column."""
    longest = max(len(row["input_ids"]) for row in rows)
    batch: dict[str, torch.Tensor] = {}
    for key in TOKEN_KEYS:
        if key not in rows[0]:
            continue
        fill = pad_token_id if key == "input_ids" else 0
        batch[key] = torch.tensor([list(row[key]) + [fill] * (longest - len(row[key])) for row in rows])
    for key in rows[0]:
        if key in TOKEN_KEYS:
            continue
        values = [row[key] for row in rows]
        if key == "labels" and isinstance(values[0], (list, tuple)):
            width = max(len(v) for v in values)
            batch[key] = torch.tensor([list(v) + [IGNORE_INDEX] * (width - len(v)) for v in values])
            continue
        dtype = torch.long if key in ("labels", "index") else torch.float32
        batch[key] = torch.tensor(values, dtype=dtype)
    return batch


def split_batch(batch: dict) -> tuple[dict, dict]:
    """(model inputs incl. labels, extra per-example columns)."""
    inputs = {k: v for k, v in batch.items() if k in MODEL_KEYS}
    extras = {k: v for k, v in batch.items() if k not in MODEL_KEYS}
    return inputs, extras
