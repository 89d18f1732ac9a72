"""lm-eval's ``generate_until`` requests answered by forgetless: greedy, batched, KV cache, with
lm-eval's own rules for what a request asks (``llm/lm.py`` calls ``generate_until``).

lm-eval's ``HFLM.generate_until`` is followed step for step, through lm-eval's own helpers:

* the request's ``generation_kwargs`` normalised by ``normalize_gen_kwargs`` (``until`` as a list,
  ``max_gen_toks`` and its aliases; lm-eval's default of 256 new tokens), the tokenizer's end-of-sequence
  text added to ``until`` (``handle_stop_sequences``); sampling is refused: a paired comparison of two
  models needs their deterministic (greedy) answers;
* each context encoded as ``HFLM.tok_batch_encode`` encodes it (its special-token rule); where lm-eval
  would cut a prompt from the left to fit ``max_gen_toks`` new tokens in its window, without a word,
  forgetless refuses the run naming the item: the window is the model's whole context (a long-context
  retrieval prompt must not lose its start), not the 2,048 tokens the log-likelihood requests are capped at;
* greedy generation of at most ``max_gen_toks`` tokens by ``answers.generate_answers`` (the one greedy
  generator of forgetless, shared with the divergence of ``llm/answers.py``): contexts of similar
  length batched together (``batches``: at most ``batch_size`` rows and ``batch_size × ROW_TOKENS``
  tokens of prompt and answer, the memory of a batch's KV cache), left-padded, a batch stopping once
  every row has ended (an end token, or one of ``until`` by lm-eval's ``stop_sequences_criteria``);
* the answer decoded as ``HFLM.tok_decode`` decodes it and cut at the first ``until`` string
  (``postprocess_generated_text``).

lm-eval then computes every per-item metric from these strings (the task's ``process_results``).
Each answer's generated token ids are kept too (``generated``): the card shows where two models'
answers part from the first differing token.
"""
from __future__ import annotations

import json

from ..errors import ConfigError
from . import answers
from .scoring import ROW_TOKENS


def _lm_eval_helpers():
    """lm-eval's generation helpers (``utils_hf`` holds the stopping criteria since 0.4.12, ``utils`` before)."""
    from lm_eval.models import utils

    try:
        from lm_eval.models.utils_hf import stop_sequences_criteria
    except ImportError:  # lm-eval 0.4.10 / 0.4.11
        stop_sequences_criteria = utils.stop_sequences_criteria
    return utils.normalize_gen_kwargs, utils.handle_stop_sequences, utils.postprocess_generated_text, \
        stop_sequences_criteria


DEFAULT_MAX_GEN_TOKS = 256  # lm-eval's HFLM default when a task names none


def normalized(name: str, where, generation_kwargs: dict | None, default_max_gen_toks: int = DEFAULT_MAX_GEN_TOKS):
    """A task's generation kwargs as lm-eval normalises them (``until`` a list, ``max_gen_toks``); one
    ``ConfigError`` naming the task when they ask for sampling or for no new token."""
    normalize = _lm_eval_helpers()[0]
    kwargs = normalize(dict(generation_kwargs or {}), default_max_gen_toks)
    if kwargs.get("do_sample") or float(kwargs.get("temperature") or 0.0) > 0.0:
        raise ConfigError(f"lm-eval task {name} ({where}): its generation_kwargs ask for sampling (do_sample / "
                          "temperature > 0); forgetless compares base and compressed on their greedy answers: set "
                          "do_sample: false in the task's generation_kwargs")
    if int(kwargs["max_gen_toks"]) < 1:
        raise ConfigError(f"lm-eval task {name} ({where}): max_gen_toks {kwargs['max_gen_toks']} in its "
                          "generation_kwargs; give 1 or more new tokens")
    return kwargs


def task_max_new_tokens(task, where) -> int:
    """The new tokens a loaded generation task's answers may have (lm-eval's default 256 when it names none);
    ``where``: its YAML file."""
    return int(normalized(task.config.task, where, task.config.generation_kwargs)["max_gen_toks"])


def settings(request, default_max_gen_toks: int, eos: str | None) -> tuple[list[str], int]:
    """``(until, max_gen_toks)`` of one request's generation kwargs, as lm-eval normalises them."""
    kwargs = normalized(request.task_name, "its YAML", request.args[1], default_max_gen_toks)
    return _lm_eval_helpers()[1](kwargs.get("until"), eos=eos), int(kwargs["max_gen_toks"])


def generate_until(hf, model, tokenizer, requests, batch_size: int, on_rows=None) -> tuple[list[str], list[list[int]]]:
    """lm-eval's answer string and the generated token ids of every request, in order (module docstring);
    ``hf``: lm-eval's ``HFLM`` of ``model`` (its tokenization rules, window and default ``max_gen_toks``)."""
    _, _, postprocess, stop_criteria = _lm_eval_helpers()
    ends = answers.end_tokens(model, tokenizer)
    pad = answers.pad_id(tokenizer, ends)
    texts: list = [None] * len(requests)
    tokens: list = [None] * len(requests)
    for numbers, until, max_gen_toks, contexts in plan(hf, requests, answers.model_window(model) or hf.max_length):
        for batch in batches(numbers, contexts, max_gen_toks, batch_size):
            generated = answers.generate_answers(
                model, [contexts[n] for n in batch], max_gen_toks, len(batch), ends, pad,
                stopping=lambda width, rows: stop_criteria(tokenizer, until, width, rows), on_batch=on_rows)
            for n, ids in zip(batch, generated):
                texts[n] = postprocess(hf.tok_decode(ids), until, None)
                tokens[n] = ids
    return texts, tokens


def batches(numbers: list[int], contexts: dict[int, list[int]], max_gen_toks: int, batch_size: int) -> list[list[int]]:
    """The requests in batches, longest prompt first (little padding; lm-eval's order), each at most
    ``batch_size`` rows and ``batch_size × scoring.ROW_TOKENS`` tokens of prompt and answer (its KV cache:
    memory stays bounded for long prompts, e.g. a passkey hidden in 4,096 tokens); one row at least."""
    budget = batch_size * ROW_TOKENS
    out: list[list[int]] = []
    for n in sorted(numbers, key=lambda n: -len(contexts[n])):
        last = out[-1] if out else None
        if last and len(last) < batch_size and (len(last) + 1) * (len(contexts[last[0]]) + max_gen_toks) <= budget:
            last.append(n)
        else:
            out.append([n])
    return out


def plan(hf, requests, window: int) -> list[tuple]:
    """``(request numbers, until, max_gen_toks, {number: context ids})`` per group of requests with the same
    generation kwargs (a batch never mixes them, as lm-eval's); every prompt checked to fit ``window`` with
    its new tokens before anything is generated (one ``ConfigError`` naming the item)."""
    eos = None if hf.eot_token_id is None else hf.tok_decode(hf.eot_token_id, skip_special_tokens=False)
    groups: dict[str, list[int]] = {}
    for number, request in enumerate(requests):
        groups.setdefault(json.dumps(request.args[1], sort_keys=True, default=str), []).append(number)
    planned = []
    for numbers in groups.values():
        until, max_gen_toks = settings(requests[numbers[0]], DEFAULT_MAX_GEN_TOKS, eos)
        contexts = {n: hf.tok_batch_encode([requests[n].args[0]])[0][0].tolist() for n in numbers}
        longest = max(numbers, key=lambda n: len(contexts[n]))
        if len(contexts[longest]) + max_gen_toks > window:
            request = requests[longest]
            raise ConfigError(f"lm-eval task {request.task_name}, item {request.doc_id}: its prompt has "
                              f"{len(contexts[longest])} tokens, so with max_gen_toks {max_gen_toks} it needs "
                              f"{len(contexts[longest]) + max_gen_toks} > the model's context of {window} tokens (lm-eval "
                              "would cut the prompt from the left without a word); give shorter prompts or fewer "
                              "max_gen_toks")
        planned.append((numbers, until, max_gen_toks, contexts))
    return planned
