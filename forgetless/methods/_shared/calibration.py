"""Calibration data shared by the methods that score a model before cutting it (head scoring of
Michel et al. 2019 and RAHP, ShortGPT's Block Influence): a seeded, label-stratified subset of the
training set and its length-sorted, padded batches."""
from __future__ import annotations

import numpy as np

from ...data.task import ExampleSet
from ...errors import ConfigError
from ...training.encode import collate, encode


def scoring_subset(examples: ExampleSet, size: int, seed: int) -> ExampleSet:
    """A seeded subset of ``size`` examples, stratified by label (all if ``size`` >= the set)."""
    if size < 1:
        raise ConfigError(f"scoring set size must be >= 1, got {size}")
    if size >= len(examples):
        return examples
    rng = np.random.default_rng(seed)
    labels = np.asarray(examples.labels)
    picked = []
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        take = max(1, int(round(size * len(idx) / len(labels))))
        picked.append(rng.permutation(idx)[:take])
    chosen = np.concatenate(picked)[:size]  # rounding may overshoot by one per class
    return examples.subset(sorted(chosen.tolist()), f"{examples.name}-scoring")


def scoring_batches(tokenizer, examples: ExampleSet, batch_size: int, max_length: int,
                    rows: list[dict] | None = None) -> list[dict]:
    """Length-sorted, padded batches of ``examples`` (labels included), or of ``rows`` already
    encoded by the model kind (``kind.scoring_rows``: a causal LM's prompt + label word)."""
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    rows = encode(examples, tokenizer, max_length) if rows is None else list(rows)
    rows.sort(key=lambda r: len(r["input_ids"]))
    pad = tokenizer.pad_token_id or 0
    return [collate(rows[i:i + batch_size], pad) for i in range(0, len(rows), batch_size)]
