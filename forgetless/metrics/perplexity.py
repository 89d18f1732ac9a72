"""Perplexity as the LLM-compression papers measure it: the texts joined into one document
(``"\n\n".join``, as the SparseGPT and Wanda scripts join WikiText-2's rows), tokenized once (with
the tokenizer's default special tokens, as those scripts), cut into non-overlapping windows of ``L``
tokens (the trailing partial window dropped), each window scored on its own:

    PPL = exp( Σ_windows Σ_{t=2..L} −log p(x_t | x_1..x_{t−1} of the window) / (W · (L − 1)) )

(SparseGPT, Frantar & Alistarh 2023, and Wanda, Sun et al. 2023: ``exp(Σ mean window loss · L /
(W · L))``, the same number). The first token of each window has no context and is not predicted.
``L`` defaults to the model's context capped at 2048 (LLaMA's; ``default_window``); the card states
``L``, the windows and the tokens. A ``cap`` scores a seeded subset of the windows
(``--perplexity-windows``). The windows are scored by ``llm/scoring.py`` with bounded memory (no batch
of windows' full-vocabulary logits and their log-softmax is held: only each token's log-probability).

The LLM tasks read WikiText-2 test from the data folder (``llm/suite.py``); a causal-lm run on a
classification task reads ``--perplexity-file`` (text lines, or ``.jsonl`` records' ``document`` /
``text`` / ``context``; default with ``--data-dir``: the first ``--perplexity-texts`` XSum documents).
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import torch

from ..errors import DataError
from ..llm.scoring import Row, score_rows
from ..progress import bar


DEFAULT_FILE = "xsum/test_1000_llm_decoding.jsonl"  # inside the data folder


def default_perplexity_file(data_dir: str | None) -> str | None:
    """The XSum sample of the data folder (``--data-dir`` or ``$FORGETLESS_DATA_DIR``), if there."""
    folder = data_dir or os.environ.get("FORGETLESS_DATA_DIR")
    path = Path(folder).expanduser() / DEFAULT_FILE if folder else None
    return str(path) if path is not None and path.is_file() else None


CONTEXT_CAP = 2048  # LLaMA's context, the window of the papers' WikiText-2 numbers


def default_window(model, window: int | None = None) -> int:
    """``window`` when given, else the model's context (``max_position_embeddings`` / ``n_positions``)
    capped at ``CONTEXT_CAP``."""
    if window:
        return int(window)
    config = getattr(model, "config", None)
    context = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    return min(int(context or CONTEXT_CAP), CONTEXT_CAP)


def join(texts: list[str]) -> str:
    """One document, as the papers' scripts build it: ``"\n\n".join(rows)``."""
    return "\n\n".join(texts)


@torch.no_grad()
def perplexity(model, tokenizer, text: str, window: int, batch_size: int = 1, cap: int | None = None,
               seed: int = 0) -> dict:
    """``{perplexity, nll, window, windows, tokens, scored, dropped}`` of ``model`` on ``text`` (module
    docstring): ``tokens`` of the text, ``windows`` scored (all, or a seeded ``cap`` of them; at most
    ``batch_size`` per forward, fewer when their logits would pass ``scoring.LOGITS_BUDGET``),
    ``scored`` predicted tokens, ``dropped`` tokens of the trailing partial window. A text shorter
    than ``window`` is scored as one window of all its tokens."""
    model.eval()
    ids = tokenizer(text, return_tensors="pt", verbose=False)["input_ids"][0]
    if ids.numel() < 2:
        raise DataError(f"perplexity: the text has {ids.numel()} token(s); at least 2 are needed")
    window = min(window, ids.numel())  # a text shorter than one window is one window (the card states it)
    count = ids.numel() // window
    chosen = list(range(count))
    if cap is not None and cap < count:
        chosen = sorted(np.random.default_rng(seed).choice(count, size=cap, replace=False).tolist())
    rows = [Row(tuple(ids[i * window:(i + 1) * window].tolist()), window - 1) for i in chosen]
    with bar(desc=f"perplexity ({len(chosen)} windows of {window} tokens)", total=len(rows), unit="window") as meter:
        total = -sum(ll for ll, _ in score_rows(model, rows, batch_size, meter.update))
    scored = len(chosen) * (window - 1)
    return {"perplexity": math.exp(total / scored), "nll": total / scored, "window": window, "windows": len(chosen),
            "windows_total": count, "tokens": int(ids.numel()), "scored": scored,
            "dropped": int(ids.numel() - count * window)}
