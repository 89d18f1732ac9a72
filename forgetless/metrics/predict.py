"""Batched inference over an ``ExampleSet`` with dynamic padding (examples sorted by length).

Inputs are cut by characters before tokenizing (``training.encode.clip_texts``: at most
``CHARS_PER_TOKEN × max_length`` characters per text), then by tokens, so memory stays bounded. ``scoring_mode``: eval mode (and
frozen weights) for scoring passes that need gradients (CLEVER, RAHP head scores)."""
from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import torch
from tqdm.auto import tqdm

from ..data.task import ExampleSet
from ..training.encode import TOKEN_KEYS, clip_texts, collate, encode


@contextlib.contextmanager
def scoring_mode(model: torch.nn.Module, freeze: bool) -> Iterator[None]:
    """Eval mode (no dropout) and, with ``freeze``, no weight gradients; both restored afterwards."""
    was_training = model.training
    flags = [(p, p.requires_grad) for p in model.parameters()]
    model.eval()
    if freeze:
        for p, _ in flags:
            p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)
        model.train(was_training)


@torch.no_grad()
def predict_logits(model, tokenizer, examples: ExampleSet, batch_size: int = 64, max_length: int = 128,
                   progress: bool = False, desc: str | None = None) -> np.ndarray:
    """Logits for every example of ``examples`` (rows in the set's order)."""
    model.eval()
    device = next(model.parameters()).device
    rows = encode(examples, tokenizer, max_length)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]["input_ids"]))
    out = [None] * len(rows)
    pad = tokenizer.pad_token_id or 0
    starts = range(0, len(order), batch_size)
    for start in tqdm(starts, desc=desc or f"predict {examples.name}", disable=not progress, leave=False):
        idx = order[start:start + batch_size]
        batch = collate([rows[i] for i in idx], pad)
        logits = model(**{k: v.to(device) for k, v in batch.items() if k in TOKEN_KEYS}).logits
        for i, row in zip(idx, logits.float().cpu().numpy()):
            out[i] = row
    return np.stack(out)


@torch.no_grad()
def generate_texts(model, tokenizer, sources: list[str], batch_size: int = 32, max_length: int = 128,
                   max_new_tokens: int = 32, num_beams: int = 1, progress: bool = False,
                   desc: str | None = None) -> list[str]:
    """Greedy (``num_beams=1``) or beam-search decoding of ``sources`` (sorted by length into
    batches, returned in the given order)."""
    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    out: list[str] = [""] * len(sources)
    starts = range(0, len(order), batch_size)
    for start in tqdm(starts, desc=desc or "generate", disable=not progress, leave=False):
        idx = order[start:start + batch_size]
        enc = tokenizer(clip_texts([sources[i] for i in idx], max_length), truncation=True, max_length=max_length, padding=True,
                        return_tensors="pt").to(device)
        ids = model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                             max_new_tokens=max_new_tokens, num_beams=num_beams, do_sample=False)
        for i, text in zip(idx, tokenizer.batch_decode(ids, skip_special_tokens=True)):
            out[i] = text.strip()
    return out
