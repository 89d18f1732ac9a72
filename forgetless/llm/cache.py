"""One model's evaluation on an LLM suite, kept in the shared cache and reused when the same weights
meet the same suite again: a grid of compressed models of one base evaluates the base once (on two
CPU cores the suite costs tens of minutes per model). A causal LM's zero-shot scoring of a
classification task (the seeds' GLUE-style tasks, ``kinds/causal_lm.evaluate``) is kept the same way
(``zero_shot_entry_path``): a 1.5B base scores a task's dev and challenge sets in about an hour here, and a
run killed while the compressed model is scored reuses the base's scores when rerun.

The key is everything the numbers depend on: the model's class, config and every weight (its bytes,
hashed), the tokenizer's vocabulary and special tokens, the suite (each task's documents, items and
YAML text — not its path, the perplexity text, window and cap, who scores: shared-context or lm-eval), the batch size, the number of torch threads and the
versions of torch, transformers and lm-eval. A model whose weights cannot be hashed (quantized
tensors) is not cached. Within ``digests_kept`` a model's weights are hashed once for every key. Entries live in ``$FORGETLESS_CACHE/llm-eval/<key>.json``, written
atomically; delete the folder to drop them.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import torch

from ..fsutil import atomic_write_json, json_digest
from ..outputs import cache_root


_KEPT: dict | None = None  # inside ``digests_kept``: id(model) → (model, digest)


@contextlib.contextmanager
def digests_kept():
    """Within the block each model object's weights are hashed once (its evaluation and its answers are both
    keyed on them: SmolLM2's 540 MB take seconds); the block must not change the weights it evaluates."""
    global _KEPT
    outer = _KEPT
    _KEPT = {} if outer is None else outer
    try:
        yield
    finally:
        _KEPT = outer


def model_digest(model) -> str | None:
    """A hash of the model's class, config and weights; None when a tensor cannot be read as bytes."""
    if _KEPT is not None and id(model) in _KEPT:
        return _KEPT[id(model)][1]
    digest = _digest(model)
    if _KEPT is not None:
        _KEPT[id(model)] = (model, digest)  # the model kept alive: its id is not reused in the block
    return digest


def _digest(model) -> str | None:
    digest = hashlib.sha256(type(model).__name__.encode())
    digest.update(model.config.to_json_string(use_diff=False).encode())
    for name, value in model.state_dict().items():
        if not torch.is_tensor(value) or value.is_quantized:
            return None
        digest.update(f"{name}:{value.dtype}:{tuple(value.shape)}".encode())
        digest.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def entry(model, tokenizer, key: dict, name: str = "", versions: tuple = (), folder: str = "llm-eval") -> Path | None:
    """Where a result of ``model`` is kept (``$FORGETLESS_CACHE/<folder>/<name><hash>.json``): keyed on ``key``
    (what else it depends on), the model's weights, its tokenizer (vocabulary, special tokens, chat template:
    generation prompts, ``llm/lm.chat_turns``), the torch threads and the versions of torch, transformers and
    ``versions``; None when the weights cannot be hashed."""
    weights = model_digest(model)
    if weights is None:
        return None
    import transformers

    key = {**key, "weights": weights, "vocabulary": json_digest(sorted(tokenizer.get_vocab().items())),
           "special": tokenizer.special_tokens_map, "chat_template": getattr(tokenizer, "chat_template", None),
           "threads": torch.get_num_threads(), "versions": [torch.__version__, transformers.__version__, *versions]}
    return cache_root() / folder / f"{name}{json_digest(key)[:24]}.json"


def entry_path(model, tokenizer, suite, batch_size: int) -> Path | None:
    """Where this model's evaluation on ``suite`` is kept; None when it cannot be keyed."""
    import lm_eval

    return entry(model, tokenizer, {
        "tasks": {n: [s.fingerprint(), source_digest(s.source)] for n, s in suite.sets.items()},
        "perplexity": suite.perplexity.fingerprint() if suite.perplexity else None, "window": suite.window,
        "scoring": suite.scoring, "batch_size": batch_size}, versions=(getattr(lm_eval, "__version__", None),))


def source_digest(source: str) -> str:
    """A task's YAML by its text, not its path: the same suite read from another checkout or install (a git
    worktree, a virtual environment) finds the same entries; a path that is not a file keys by its name."""
    path = Path(source)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else source


def zero_shot_entry_path(model, tokenizer, task, options: dict) -> Path | None:
    """Where a causal LM's zero-shot scores of ``task``'s evaluation sets are kept; ``options``: everything
    else they depend on (the evaluation options, the prompt, the token budget, the batch size). None when
    the weights cannot be hashed."""
    return entry(model, tokenizer, {
        "sets": {name: json_digest(asdict(examples)) for name, examples in task.eval_sets().items()},
        "train": json_digest(asdict(task.train)) if options.get("shots") else None,
        "labels": task.label_names, "pooled": task.pooled_challenges, "options": options}, "zero-shot-")


def load(path: Path | None) -> dict | None:
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a damaged entry is evaluated again and rewritten


def store(path: Path | None, result: dict) -> None:
    if path is not None:
        atomic_write_json(path, result)
