"""Turn an ``ExampleSet`` into tokenized rows and batches (dynamic padding).

Extra per-example columns (teacher probabilities, difficulty degrees, sample weights) travel with
the rows and arrive in the batch as float tensors, so objectives can read them.
"""
from __future__ import annotations

from typing import Any

import torch

from ..data.task import ExampleSet
from ..errors import DataError

TOKEN_KEYS = ("input_ids", "attention_mask", "token_type_ids")


def encode(examples: ExampleSet, tokenizer, max_length: int = 128,
           extras: dict[str, list] | None = None) -> list[dict[str, Any]]:
    """Tokenize ``examples``; each row gets ``labels``, ``index`` and any ``extras`` columns."""
    enc = tokenizer(examples.text_a, examples.text_b, truncation=True, max_length=max_length)
    rows = []
    for i in range(len(examples)):
        row = {key: enc[key][i] for key in TOKEN_KEYS if key in enc}
        row["labels"] = int(examples.labels[i])
        row["index"] = i
        rows.append(row)
    for name, values in (extras or {}).items():
        if len(values) != len(rows):
            raise DataError(f"extra column {name!r} has {len(values)} values for {len(rows)} examples")
        for row, value in zip(rows, values):
            row[name] = value
    return rows


def collate(rows: list[dict[str, Any]], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Pad token columns to the longest row; stack every other column."""
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
        dtype = torch.long if key in ("labels", "index") else torch.float32
        batch[key] = torch.tensor(values, dtype=dtype)
    return batch


class Collator:
    """Picklable collate function bound to a tokenizer's pad id (for DataLoader workers)."""

    def __init__(self, tokenizer):
        self.pad_token_id = tokenizer.pad_token_id or 0

    def __call__(self, rows):
        return collate(rows, self.pad_token_id)
