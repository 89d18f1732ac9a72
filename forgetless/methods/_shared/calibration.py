"""Calibration data of the methods that look at a model's inputs before cutting it:

* the task's own (head scoring of Michel et al. 2019 and RAHP, ShortGPT's Block Influence, and by
  default the one-shot methods): a seeded, label-stratified subset of the training set and its
  length-sorted, padded batches (``scoring_subset``, ``scoring_batches``);
* generic text for the one-shot methods (Wanda, SparseGPT and GPTQ calibrate on C4 / WikiText in
  their papers): ``calibration_texts`` reads a ``datasets.Dataset`` with a text column, a list of
  strings, a text file (one text per line, or ``.jsonl`` records) or a set of the data folder by
  name (``CALIBRATION_SETS``); ``calibration_batches`` feeds either source to a one-shot method.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from ...data.registry import DATA_DIR_ENV, data_root
from ...data.task import ExampleSet
from ...data.task_kinds import task_kind
from ...errors import ConfigError, DataError
from ...data.texts import read_texts
from ...training.encode import clip_texts, collate, encode

# sets of the data folder (``--data-dir`` / $FORGETLESS_DATA_DIR) usable as calibration text, by name
CALIBRATION_SETS = {"xsum": "xsum/test_1000_llm_decoding.jsonl", "wikitext2": "llm/wikitext2/wiki.test.raw",
                    "samsum": "samsum/validation_context_response.jsonl"}
TEXT_COLUMNS = ("text", "document", "content", "context")  # a Dataset's text column, the first present


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


def scored_train(ctx) -> ExampleSet:
    """The training split a method scoring the model on its task reads (heads, block-influence): the
    task's; on an LLM task, whose training split is calibration text, the ``--calibration-data`` texts
    (``ctx.calibration``) when given."""
    if ctx.calibration is not None and task_kind(ctx.task).calibration_only:
        texts = list(ctx.calibration)
        return ExampleSet("train", texts, [0] * len(texts), ["text"], source="--calibration-data")
    return ctx.task.train


# ----- generic calibration text ---------------------------------------------------------------------
def calibration_texts(source, data_dir: str | None = None, where: str = "calibration") -> list[str]:
    """The non-empty texts of ``source`` (module docstring); one ``DataError`` naming ``where`` when
    it holds none or cannot be read, before any work."""
    if isinstance(source, (list, tuple)):
        if not all(isinstance(t, str) for t in source):
            bad = next(t for t in source if not isinstance(t, str))
            raise DataError(f"{where}: a list of texts must hold strings only, got a {type(bad).__name__}")
        texts = [t for t in source if t.strip()]
    elif hasattr(source, "column_names") and hasattr(source, "__getitem__"):  # a datasets.Dataset
        column = next((c for c in TEXT_COLUMNS if c in source.column_names), None)
        if column is None:
            raise DataError(f"{where}: the dataset has none of the text columns {', '.join(TEXT_COLUMNS)} "
                            f"(its columns: {', '.join(source.column_names)}); rename one")
        texts = [t for t in source[column] if isinstance(t, str) and t.strip()]
    elif isinstance(source, (str, Path)):
        texts = read_texts(_text_file(str(source), data_dir, where))
    else:
        raise DataError(f"{where}: expected a list of texts, a datasets.Dataset with a text column, a text file "
                        f"or a data-folder set ({', '.join(CALIBRATION_SETS)}); got {type(source).__name__}")
    if not texts:
        raise DataError(f"{where}: no text to calibrate on")
    return texts


def _text_file(source: str, data_dir: str | None, where: str) -> Path:
    """A text file given by path, or by the name of a set of the data folder."""
    path = Path(source).expanduser()
    if path.is_file():
        return path
    if source in CALIBRATION_SETS:
        root = data_root(data_dir)
        if root is None:
            raise DataError(f"{where} {source}: a set of the data folder; give --data-dir DIR or set "
                            f"{DATA_DIR_ENV}")
        if not (root / CALIBRATION_SETS[source]).is_file():
            raise DataError(f"{where} {source}: {root / CALIBRATION_SETS[source]} does not exist")
        return root / CALIBRATION_SETS[source]
    raise DataError(f"{where} {source}: not a text file, nor a set of the data folder "
                    f"({', '.join(CALIBRATION_SETS)})")


def calibration_batches(ctx, config) -> list[dict]:
    """``{input_ids, attention_mask}`` batches of ``config.calibration_batch`` texts for a one-shot
    method (``config``: its ``OneShotConfig``), all-padding columns dropped. With calibration texts
    (``ctx.calibration``): a seeded sample of ``calibration_examples`` of them, each cut to
    ``calibration_length`` tokens, length-sorted and right-padded; else a seeded, label-stratified
    subset of the task's training split, tokenized as the model kind feeds it (prompts for a causal LM),
    length-sorted too."""
    if ctx.calibration is not None:
        inputs = _text_inputs(ctx.tokenizer, ctx.calibration, config.calibration_examples,
                              config.calibration_length, ctx.seed)
    else:
        if ctx.kind is None or ctx.task is None:
            raise ConfigError(f"{config.name}: the run gives no task and model kind to take calibration texts from")
        subset = scoring_subset(ctx.task.train, config.calibration_examples, ctx.seed)
        view = dataclasses.replace(ctx.task, train=subset)
        inputs = ctx.kind.probe_inputs(ctx.tokenizer, view, len(subset), config.calibration_length)
        order = torch.argsort(inputs["attention_mask"].sum(dim=1), stable=True)  # length-sorted: least padding
        inputs = {k: v[order] for k, v in inputs.items()}
    batches = []
    for start in range(0, len(inputs["input_ids"]), config.calibration_batch):
        batch = {k: v[start:start + config.calibration_batch] for k, v in inputs.items()}
        used = batch["attention_mask"].bool().any(dim=0)  # right or left padding: a contiguous span
        batches.append({k: v[:, used] for k, v in batch.items()})
    return batches


def _text_inputs(tokenizer, texts: list[str], size: int, max_length: int, seed: int) -> dict:
    """A seeded sample of ``size`` texts (all when fewer), tokenized, length-sorted, right-padded."""
    if tokenizer is None:
        raise ConfigError("calibration texts need the model's tokenizer; pass tokenizer=")
    picked = sorted(np.random.default_rng(seed).permutation(len(texts))[:size].tolist())
    ids = tokenizer(clip_texts([texts[i] for i in picked], max_length), truncation=True,
                    max_length=max_length)["input_ids"]
    ids = sorted((row for row in ids if row), key=len)
    width = max(map(len, ids))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0  # masked out: any id will do
    return {"input_ids": torch.tensor([row + [pad] * (width - len(row)) for row in ids]),
            "attention_mask": torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in ids])}
