"""Batched inference over an ``ExampleSet`` with dynamic padding (examples sorted by length)."""
from __future__ import annotations

import numpy as np
import torch
from tqdm.auto import tqdm

from ..data.task import ExampleSet
from ..training.encode import TOKEN_KEYS, collate, encode


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
