"""lm-eval's ``generate_until`` requests answered by forgetless: greedy, batched, KV cache, with
lm-eval's own rules for what a request asks (``llm/lm.py`` calls ``generate_until``).

lm-eval's ``HFLM.generate_until`` is followed step for step, through lm-eval's own helpers:

* the request's ``generation_kwargs`` normalised by ``normalize_gen_kwargs`` (``until`` as a list,
  ``max_gen_toks`` and its aliases; lm-eval's default of 256 new tokens), the tokenizer's end-of-sequence
  text added to ``until`` (``handle_stop_sequences``); sampling is refused: a paired comparison of two
  models needs their deterministic (greedy) answers;
* each context encoded as ``HFLM.tok_batch_encode`` encodes it (its special-token rule), cut from the
  left to ``max_length − max_gen_toks`` tokens;
* greedy generation of at most ``max_gen_toks`` tokens by ``answers.generate_answers`` (the one greedy
  generator of forgetless, shared with the divergence of ``llm/answers.py``): contexts of similar
  length batched together, left-padded, a batch stopping once every row has ended (an end token, or
  one of ``until`` by lm-eval's ``stop_sequences_criteria``);
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


def _lm_eval_helpers():
    """lm-eval's generation helpers (``utils_hf`` holds the stopping criteria since 0.4.12, ``utils`` before)."""
    from lm_eval.models import utils

    try:
        from lm_eval.models.utils_hf import stop_sequences_criteria
    except ImportError:  # lm-eval 0.4.10 / 0.4.11
        stop_sequences_criteria = utils.stop_sequences_criteria
    return utils.normalize_gen_kwargs, utils.handle_stop_sequences, utils.postprocess_generated_text, \
        stop_sequences_criteria


def settings(request, default_max_gen_toks: int, eos: str | None) -> tuple[list[str], int]:
    """``(until, max_gen_toks)`` of one request's generation kwargs, as lm-eval normalises them; one
    ``ConfigError`` naming the task when they ask for sampling."""
    normalize, handle_stop, _, _ = _lm_eval_helpers()
    kwargs = normalize(dict(request.args[1] or {}), default_max_gen_toks)
    if kwargs.get("do_sample") or float(kwargs.get("temperature") or 0.0) > 0.0:
        raise ConfigError(f"lm-eval task {request.task_name}: its generation_kwargs ask for sampling (do_sample / "
                          "temperature > 0); forgetless compares base and compressed on their greedy answers: set "
                          "do_sample: false in the task's generation_kwargs")
    return handle_stop(kwargs.get("until"), eos=eos), int(kwargs["max_gen_toks"])


def generate_until(hf, model, tokenizer, requests, batch_size: int, on_rows=None) -> tuple[list[str], list[list[int]]]:
    """lm-eval's answer string and the generated token ids of every request, in order (module docstring);
    ``hf``: lm-eval's ``HFLM`` of ``model`` (its tokenization rules, window and default ``max_gen_toks``)."""
    _, _, postprocess, stop_criteria = _lm_eval_helpers()
    eos = None if hf.eot_token_id is None else hf.tok_decode(hf.eot_token_id, skip_special_tokens=False)
    groups: dict[str, list[int]] = {}
    for number, request in enumerate(requests):  # one batch never mixes generation settings (as lm-eval)
        groups.setdefault(json.dumps(request.args[1], sort_keys=True, default=str), []).append(number)
    ends = answers.end_tokens(model, tokenizer)
    pad = answers.pad_id(tokenizer, ends)
    texts: list = [None] * len(requests)
    tokens: list = [None] * len(requests)
    for numbers in groups.values():
        until, max_gen_toks = settings(requests[numbers[0]], hf.max_gen_toks, eos)
        room = hf.max_length - max_gen_toks
        if room <= 0:
            raise ConfigError(f"lm-eval task {requests[numbers[0]].task_name}: max_gen_toks {max_gen_toks} leaves no "
                              f"room for a prompt in the model's window of {hf.max_length} tokens; give fewer "
                              "max_gen_toks in its generation_kwargs")
        contexts = {n: hf.tok_batch_encode([requests[n].args[0]], left_truncate_len=room)[0][0].tolist()
                    for n in numbers}
        order = sorted(numbers, key=lambda n: -len(contexts[n]))  # little padding in a batch (lm-eval: longest first)
        generated = answers.generate_answers(
            model, [contexts[n] for n in order], max_gen_toks, batch_size, ends, pad,
            stopping=lambda width, rows: stop_criteria(tokenizer, until, width, rows), on_batch=on_rows)
        for n, ids in zip(order, generated):
            texts[n] = postprocess(hf.tok_decode(ids), until, None)
            tokens[n] = ids
    return texts, tokens
