"""Held-out perplexity of a causal language model on a text file: the language-modelling check
that compression did not break the model as a language model (the usual headline of LLM
compression tools; forgetless reports it beside the challenge-set numbers).

    PPL = exp( Σ_t −log p(x_t | x_<t) / N )

over every predicted token of the file: each non-empty line (paragraph) is tokenized on its own
and cut into windows of at most ``max_length`` tokens; the first token of a window is not
predicted (no context), so N counts the rest.

A ``.jsonl`` file gives one text per record (its ``document``, ``text`` or ``context`` field; the
XSum and SAMSum files of the data folder). With ``--data-dir`` and no ``--perplexity-file``, a
causal-lm run uses the first ``perplexity_texts`` XSum documents (``default_perplexity_file``).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch

from ..errors import DataError
from ..progress import bar


DEFAULT_FILE = "xsum/test_1000_llm_decoding.jsonl"  # inside the data folder
TEXT_FIELDS = ("document", "text", "context")


def default_perplexity_file(data_dir: str | None) -> str | None:
    """The XSum sample of the data folder (``--data-dir`` or ``$FORGETLESS_DATA_DIR``), if there."""
    folder = data_dir or os.environ.get("FORGETLESS_DATA_DIR")
    path = Path(folder).expanduser() / DEFAULT_FILE if folder else None
    return str(path) if path is not None and path.is_file() else None


def read_texts(path: str | Path, limit: int | None = None) -> list[str]:
    """Non-empty lines of a text file, or the text field of each record of a ``.jsonl`` file;
    the first ``limit`` of them."""
    path = Path(path)
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        texts = [_record_text(line, path) for line in lines] if path.suffix == ".jsonl" else lines
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the text file ({exc})") from exc
    texts = [t for t in texts if t][:limit]
    if not texts:
        raise DataError(f"{path}: the text file has no text")
    return texts


def _record_text(line: str, path: Path) -> str:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: a line is not JSON ({exc})") from exc
    field = next((f for f in TEXT_FIELDS if isinstance(record, dict) and isinstance(record.get(f), str)), None)
    if field is None:
        raise DataError(f"{path}: a record has none of the text fields {', '.join(TEXT_FIELDS)}")
    return " ".join(record[field].split())


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
    for start in bar(range(0, len(windows), batch_size), f"perplexity ({len(windows)} windows)"):
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
