"""The model glue of the divergence along the base's own answers (``llm/divergence.py`` holds the maths).

* ``PromptSet``: the prompts (``--divergence-prompts N`` of ``--divergence-file``, default the data
  folder's IFEval prompts), read and checked when the task is built, before any model is loaded;
* ``base_answers``: the base answers each prompt greedily once (its chat template when its tokenizer has
  one; batches left-padded, KV cache, at most ``max_new_tokens`` tokens, stopping at end of sequence),
  kept in the shared cache (``$FORGETLESS_CACHE/llm-answers/<key>.json``, written atomically), keyed
  on the base's weights, the tokenizer, the prompts and the generation settings as ``llm/cache.py`` keys
  an evaluation;
* ``compare_answers``: base and compressed run teacher-forced on prompt + the base's answer, one forward
  of each per batch (right padding: every real token sees only real tokens at its own position), scored
  per answer token (``divergence.score_answer``) and summarized for the card, with two or three prompts
  where the answers part (the compressed model's own greedy text generated for those only).
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..errors import ConfigError, DataError
from ..fsutil import json_digest, json_lines
from . import cache
from .divergence import score_answer, summarize
from .scoring import LOGITS_BUDGET, vocabulary  # bytes of fp32 logits one forward may keep, here per model

PROMPT_FIELDS = ("prompt", "text", "question")  # the field of a .jsonl record holding the prompt
DEFAULT_MAX_NEW_TOKENS = 64
IFEVAL_PROMPTS = "ifeval/input_data.jsonl"  # under the data folder's llm/
SCORE_BATCH = 8  # rows per teacher-forced forward: their logits over the vocabulary are the memory
EXAMPLES = 3  # prompts where the answers part, shown on the card


@dataclass
class PromptSet:
    """The prompts the base answers (a seeded sample of ``size`` read from ``source``) and how long an answer may be."""

    name: str
    source: str
    prompts: list[str]
    size: int
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS

    def fingerprint(self) -> str:
        return json_digest([self.prompts, self.max_new_tokens])[:16]


def read_prompts(path: str | Path, flag: str = "--divergence-file") -> list[str]:
    """The prompts of a file: the ``prompt`` (or ``text`` / ``question``) field of each ``.jsonl`` record,
    else each non-empty line; one ``DataError`` naming the file when it holds none."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{flag} {path}: not a file (prompts: a .jsonl file with a prompt field, or text lines)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{flag} {path}: cannot read the prompts ({exc})") from exc
    where = f"{flag} {path}"
    prompts = [_prompt_of(row, f"{where} line {number}") for number, row in json_lines(text, where)] \
        if path.suffix == ".jsonl" else text.splitlines()
    prompts = [p for p in prompts if p.strip()]
    if not prompts:
        raise DataError(f"{where}: the file holds no prompt (a .jsonl file with a non-empty "
                        f"{' / '.join(PROMPT_FIELDS)} field per record, or text lines)")
    return prompts


def _prompt_of(record: dict, where: str) -> str:
    field = next((f for f in PROMPT_FIELDS if isinstance(record.get(f), str)), None)
    if field is None:
        raise DataError(f"{where}: a record has none of the prompt fields {', '.join(PROMPT_FIELDS)}")
    return record[field]


def prompt_set(path: str | Path, n: int, max_new_tokens: int | None, seed: int) -> PromptSet:
    """``n`` prompts of ``path`` (a seeded sample in file order; all when ``n`` is at least their number)."""
    prompts = read_prompts(path)
    if n < len(prompts):
        chosen = sorted(np.random.default_rng([seed, 56]).choice(len(prompts), size=n, replace=False).tolist())
        prompts_kept = [prompts[i] for i in chosen]
    else:
        prompts_kept = prompts
    return PromptSet(Path(path).stem, str(path), prompts_kept, len(prompts), max_new_tokens or DEFAULT_MAX_NEW_TOKENS)


# ----- the base's answers -----------------------------------------------------------------------------
def encode_prompts(tokenizer, prompts: list[str]) -> tuple[list[list[int]], bool]:
    """Token ids of each prompt, as a user turn of the chat template when the tokenizer has one
    (``add_generation_prompt``), else the plain text with the tokenizer's special tokens; and which."""
    chat = bool(getattr(tokenizer, "chat_template", None))
    if chat:
        texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                               add_generation_prompt=True) for p in prompts]
        ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    else:
        ids = tokenizer(prompts)["input_ids"]
    return [list(row) for row in ids], chat


def model_window(model) -> int | None:
    """The model's context in tokens (``max_position_embeddings`` / ``n_positions``); None when it has none."""
    config = model.config
    window = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    return int(window) if window else None


def check_window(model, prompt_ids: list[list[int]], prompts: PromptSet) -> None:
    """Every prompt plus ``max_new_tokens`` fits the model's context: one ``ConfigError`` naming the longest."""
    window = model_window(model)
    longest = max(range(len(prompt_ids)), key=lambda i: len(prompt_ids[i]))
    need = len(prompt_ids[longest]) + prompts.max_new_tokens
    if window is not None and need > window:
        raise ConfigError(f"--divergence-max-new-tokens {prompts.max_new_tokens}: prompt {longest} of {prompts.source} "
                          f"has {len(prompt_ids[longest])} tokens, so its answer needs {need} > the model's "
                          f"context of {window} tokens; give fewer new tokens or shorter prompts")


def end_tokens(model, tokenizer) -> list[int]:
    """The ids that end an answer: the generation config's end-of-sequence ids and the tokenizer's."""
    ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = list(ids) if isinstance(ids, (list, tuple)) else [ids]
    return sorted({int(i) for i in [*ids, tokenizer.eos_token_id] if i is not None})


def pad_id(tokenizer, ends: list[int]) -> int:
    if tokenizer.pad_token_id is not None:
        return int(tokenizer.pad_token_id)
    return ends[0] if ends else 0


def device_of(model) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def generate_answers(model, prompt_ids: list[list[int]], max_new_tokens: int, batch_size: int, ends: list[int],
                     pad: int, stopping=None, on_batch=None) -> list[list[int]]:
    """Greedy answers, batches left-padded, KV cache; each answer up to and including its first end token.
    ``stopping(width, rows)``: the stopping criteria of a batch of ``rows`` prompts padded to ``width``
    tokens (lm-eval's ``until`` strings, ``llm/generation.py``); ``on_batch(n)`` after each batch."""
    import transformers

    config = transformers.GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                                           eos_token_id=ends or None, pad_token_id=pad)
    answers, device = [], device_of(model)
    for start in range(0, len(prompt_ids), batch_size):
        rows = prompt_ids[start:start + batch_size]
        width = max(len(r) for r in rows)
        ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=device)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
        criteria = {"stopping_criteria": stopping(width, len(rows))} if stopping is not None else {}
        out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config, **criteria)
        for row in out[:, width:].tolist():
            stop = next((i for i, t in enumerate(row) if t in ends), None)
            answers.append(row if stop is None else row[:stop + 1])
        if on_batch is not None:
            on_batch(len(rows))
    return answers


def answers_entry(model, tokenizer, prompts: PromptSet, batch_size: int) -> Path | None:
    """Where the base's answers to ``prompts`` are kept; None when its weights cannot be hashed."""
    return cache.entry(model, tokenizer, {"prompts": prompts.fingerprint(), "generation": "greedy",
                                          "batch_size": batch_size}, folder="llm-answers")


def base_answers(model, tokenizer, prompts: PromptSet, batch_size: int) -> dict:
    """``{prompt_ids, answers, chat, ends, cache}``: the base's greedy answer (token ids) to each prompt,
    from the cache when this base answered these prompts before."""
    if not prompts.prompts:
        raise ConfigError("divergence: no prompt to answer")
    prompt_ids, chat = encode_prompts(tokenizer, prompts.prompts)
    check_window(model, prompt_ids, prompts)
    ends = end_tokens(model, tokenizer)
    entry = answers_entry(model, tokenizer, prompts, batch_size)
    kept = cache.load(entry)
    if isinstance(kept, dict) and kept.get("prompt_ids") == prompt_ids:
        _say(f"the base's answers to {len(prompt_ids)} prompts are reused from {entry}")
        return {**kept, "cache": {"path": str(entry), "reused": True}}
    _say(f"the base answers {len(prompt_ids)} prompts greedily (at most {prompts.max_new_tokens} new tokens)")
    answers = generate_answers(model, prompt_ids, prompts.max_new_tokens, batch_size, ends, pad_id(tokenizer, ends))
    result = {"prompt_ids": prompt_ids, "answers": answers, "chat": chat, "ends": ends}
    cache.store(entry, result)
    return {**result, "cache": {"path": str(entry) if entry else None, "reused": False}}


# ----- teacher-forced scoring ------------------------------------------------------------------------
@torch.no_grad()
def answer_logits(model, rows: list[tuple[list[int], list[int]]], pad: int) -> list[torch.Tensor]:
    """Per (prompt, answer) row, the model's logits ``(len(answer), V)`` at the positions that predict
    the answer's tokens: one right-padded forward of the rows, logits kept from the earliest such position."""
    sequences = [p + a for p, a in rows]
    width = max(len(s) for s in sequences)
    first = min(len(p) for p, _ in rows) - 1  # the earliest position that predicts an answer token
    ids = torch.tensor([s + [pad] * (width - len(s)) for s in sequences], device=device_of(model))
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sequences], device=device_of(model))
    keep = {"logits_to_keep": width - first} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    logits = model(input_ids=ids, attention_mask=mask, **keep).logits[:, -(width - first):].float().cpu()
    # copies of the answers' rows: the batch's logits (prompt positions included) are freed before the other model runs
    return [logits[i, len(p) - 1 - first:len(p) - 1 - first + len(a)].clone() for i, (p, a) in enumerate(rows)]


def score_batches(prompt_ids: list[list[int]], answers: list[list[int]], batch_size: int, vocabulary: int) -> list[list[int]]:
    """The prompts in batches of similar length (shortest first), each at most ``batch_size`` rows and
    ``LOGITS_BUDGET`` bytes of the fp32 logits ``answer_logits`` keeps (rows × the span from the batch's earliest
    answer position to its end × ``vocabulary``: prompts of different lengths in one batch widen that span for
    every row); one row at least."""
    batches: list[list[int]] = []
    for i in sorted(range(len(prompt_ids)), key=lambda i: len(prompt_ids[i])):
        last = batches[-1] if batches else None
        if last and len(last) < batch_size:
            rows = last + [i]
            span = max(len(prompt_ids[j]) + len(answers[j]) for j in rows) - min(len(prompt_ids[j]) for j in rows) + 1
            if len(rows) * span * vocabulary * 4 <= LOGITS_BUDGET:
                last.append(i)
                continue
        batches.append([i])
    return batches


def score_pairs(base, compressed, prompt_ids: list[list[int]], answers: list[list[int]], pad: int,
                batch_size: int = SCORE_BATCH) -> list:
    """``divergence.AnswerScores`` per prompt: base and compressed teacher-forced on prompt + answer, in batches of
    prompts of similar length whose kept logits stay within ``LOGITS_BUDGET`` per model (``score_batches``)."""
    scored = {}
    for chosen in score_batches(prompt_ids, answers, batch_size, vocabulary(compressed)):
        rows = [(prompt_ids[i], answers[i]) for i in chosen]
        pairs = zip(answer_logits(base, rows, pad), answer_logits(compressed, rows, pad), rows, chosen)
        scored.update({i: score_answer(b, c, torch.tensor(a)) for b, c, (_, a), i in pairs})
    return [scored[i] for i in range(len(prompt_ids))]


def compare_answers(base, compressed, tokenizer, prompts: PromptSet, batch_size: int, seed: int = 0) -> dict:
    """The card's ``divergence`` numbers (``divergence.summarize``), the prompts, the cache and the warnings
    (answers that are only an end token), with up to ``EXAMPLES`` prompts where the answers part."""
    answered = base_answers(base, tokenizer, prompts, batch_size)
    prompt_ids, answers, ends = answered["prompt_ids"], answered["answers"], answered["ends"]
    pad = pad_id(tokenizer, ends)
    _say(f"base and compressed teacher-forced on the base's {len(answers)} answers "
         f"({sum(map(len, answers)):,} tokens)")
    scored = score_pairs(base, compressed, prompt_ids, answers, pad, min(batch_size, SCORE_BATCH))
    summary = summarize(scored, prompts.max_new_tokens, seed=seed)
    empty = sum(len(a) == 1 and a[0] in ends for a in answers)
    warnings = [f"divergence: the base's answer to {empty} of {len(answers)} prompts is only an end-of-sequence token "
                "(it generates nothing there); those answers compare one token"] if empty else []
    return {"prompt_set": {"name": prompts.name, "source": prompts.source, "n": len(prompts.prompts),
                        "size": prompts.size, "max_new_tokens": prompts.max_new_tokens,
                        "chat_template": answered["chat"], "end_tokens": ends},
            "cache": answered["cache"], **summary, "empty_answers": empty, "warnings": warnings,
            "examples": examples(compressed, tokenizer, prompts, answered, scored, pad)}


def examples(compressed, tokenizer, prompts: PromptSet, answered: dict, scored: list, pad: int) -> list[dict]:
    """Up to ``EXAMPLES`` prompts where the answers part (the earliest partings first): the prompt, the
    answer both share, and from the first differing token the base's answer and the compressed model's own
    greedy one (generated for these prompts only; ``predicted`` says it starts with the token the
    teacher-forced forward predicted)."""
    order = sorted((s.first_divergence, i) for i, s in enumerate(scored) if s.first_divergence is not None)
    chosen = [i for _, i in order[:EXAMPLES]]
    if not chosen:
        return []
    own = generate_answers(compressed, [answered["prompt_ids"][i] for i in chosen], prompts.max_new_tokens,
                           len(chosen), answered["ends"], pad)
    out = []
    for i, mine in zip(chosen, own):
        answer, at = answered["answers"][i], scored[i].first_divergence
        text = lambda ids: tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
        out.append({"prompt": prompts.prompts[i], "position": at, "shared": text(answer[:at]),
                    "base": text(answer[at:]), "compressed": text(mine[at:]),
                    "predicted": mine[:at] == answer[:at] and len(mine) > at and answer[at] != mine[at]})
    return out


def _say(line: str) -> None:
    print(f"[forgetless]   divergence: {line}", file=sys.stderr, flush=True)
