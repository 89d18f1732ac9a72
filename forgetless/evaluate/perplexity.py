"""Held-out perplexity of a causal language model on a text file: the language-modelling check
that compression did not break the model as a language model (the usual headline of LLM
compression tools; forgetless reports it beside the challenge-set numbers).

    PPL = exp( Σ_t −log p(x_t | x_<t) / N )

over every predicted token of the file: each non-empty line (paragraph) is tokenized on its own
and cut into windows of at most ``max_length`` tokens; the first token of a window is not
predicted (no context), so N counts the rest.
"""
from __future__ import annotations

import math
from pathlib import Path

import torch

from ..errors import DataError


def read_texts(path: str | Path) -> list[str]:
    path = Path(path)
    try:
        texts = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the perplexity text file ({exc})") from exc
    if not texts:
        raise DataError(f"{path}: the perplexity text file has no text")
    return texts


@torch.no_grad()
def perplexity(model, tokenizer, texts: list[str], max_length: int = 128, batch_size: int = 8) -> dict:
    """``{"perplexity", "nll", "tokens"}`` of ``model`` on ``texts`` (see the module docstring)."""
    model.eval()
    device = next(model.parameters()).device
    windows = []
    for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        windows += [ids[i:i + max_length] for i in range(0, len(ids), max_length) if len(ids[i:i + max_length]) > 1]
    if not windows:
        raise DataError("perplexity: no text window has two tokens or more")
    total, count = 0.0, 0
    pad = tokenizer.pad_token_id or 0
    for start in range(0, len(windows), batch_size):
        rows = windows[start:start + batch_size]
        width = max(map(len, rows))
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=device)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
        logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float()[:, :-1], dim=-1)
        target = ids[:, 1:]
        nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1) * mask[:, 1:]
        total += float(nll.sum())
        count += int(mask[:, 1:].sum())
    return {"perplexity": math.exp(total / count), "nll": total / count, "tokens": count}
