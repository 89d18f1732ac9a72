"""Generate and score: decoded predictions for a ``PairSet`` and ROUGE / METEOR against its
references (NASH Tables 1-2 report METEOR and ROUGE-L on TweetQA, ROUGE on summarisation)."""
from __future__ import annotations

import torch
from torch import nn

from .data import PairSet, Seq2SeqTask
from .metrics import generation_scores


@torch.no_grad()
def generate_texts(model: nn.Module, tokenizer, sources: list[str], batch_size: int = 32,
                   max_source_length: int = 128, max_new_tokens: int = 32, num_beams: int = 1) -> list[str]:
    """Greedy (``num_beams=1``) or beam-search decoding of ``sources``."""
    model.eval()
    device = next(model.parameters()).device
    out: list[str] = []
    for start in range(0, len(sources), batch_size):
        enc = tokenizer(sources[start:start + batch_size], truncation=True, max_length=max_source_length,
                        padding=True, return_tensors="pt").to(device)
        ids = model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                             max_new_tokens=max_new_tokens, num_beams=num_beams, do_sample=False)
        out.extend(t.strip() for t in tokenizer.batch_decode(ids, skip_special_tokens=True))
    return out


def evaluate_set(model, tokenizer, pairs: PairSet, with_meteor: bool = True, **generate_kwargs) -> dict:
    predictions = generate_texts(model, tokenizer, pairs.sources, **generate_kwargs)
    scores = generation_scores(predictions, pairs.references, with_meteor=with_meteor)
    scores["n"] = len(pairs)
    # share of distinct outputs: a model collapsed onto one frequent answer scores near 0
    scores["distinct_predictions"] = len(set(predictions)) / max(len(predictions), 1)
    scores["examples"] = [{"source": s[:200], "prediction": p, "reference": r[0]}
                          for s, p, r in list(zip(pairs.sources, predictions, pairs.references))[:3]]
    return scores


def evaluate_task(model, tokenizer, task: Seq2SeqTask, **generate_kwargs) -> dict[str, dict]:
    """Scores on the task's dev set and on every extra evaluation set."""
    results = {"dev": evaluate_set(model, tokenizer, task.dev, task.with_meteor, **generate_kwargs)}
    for name, pairs in task.extra.items():
        results[name] = evaluate_set(model, tokenizer, pairs, with_meteor=False, **generate_kwargs)
    return results
