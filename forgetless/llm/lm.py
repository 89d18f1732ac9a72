"""forgetless's model inside lm-evaluation-harness: an ``lm_eval.api.model.LM``, lm-eval's public
interface for a model (``loglikelihood``, ``loglikelihood_rolling``, ``generate_until`` on lm-eval's own
``Instance`` requests). ``lm_eval.simple_evaluate`` builds every request (prompts, choices, target
delimiter), hands them to this object and computes every per-item metric from its answers; only the
log-likelihoods are forgetless's.

* **shared-context** (the default): the requests are tokenized as lm-eval's causal models do
  (``HFLM.tok_encode``; the context's trailing spaces moved to the continuation, the context encoded
  alone and the continuation as the rest of the whole; an empty context becomes lm-eval's prefix
  token; lm-eval adds no BOS of its own) and scored by ``scoring.py``: each item's choices from one
  forward of their shared prefix, memory bounded. lm-eval's rolling windows
  (``utils.get_rolling_token_windows``) are rows of the same scorer.
* **lm-eval** (``--exact-lm-eval``): lm-eval's own ``HFLM`` scores every request, as ``lm_eval run
  --model hf`` does (its own progress bars; rolling windows one per batch).

Either way the answers are ``(log-likelihood, greedy)`` per request, in lm-eval's order. A
``generate_until`` request is answered greedily by ``generation.py`` (lm-eval's own rules, forgetless's
batched generator), or by lm-eval's ``HFLM`` with ``--exact-lm-eval``; its prompt is a user turn of the
model's chat template where the tokenizer has one (``chat_turns``: an instruct model answers in the form it
was tuned for, as the base's answers of ``answers.py`` are asked), else lm-eval's text as it is.
"""
from __future__ import annotations

import dataclasses
import sys

from lm_eval.api.model import LM

from ..errors import ConfigError
from ..progress import bar
from . import generation, scoring
from .records import EXACT, SHARED


class ForgetlessLM(LM):
    """``model`` and ``tokenizer`` as an lm-eval model: requests of at most ``window`` tokens,
    ``batch_size`` rows' worth of tokens per forward (``llm/scoring.py``), ``scoring`` one of ``SHARED`` / ``EXACT``."""

    def __init__(self, model, tokenizer, window: int, batch_size: int, scoring_path: str = SHARED,
                 progress: bool | None = None):
        super().__init__()
        from lm_eval.models.huggingface import HFLM

        self.model, self.window, self.batch_size, self.path = model, window, batch_size, scoring_path
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.hf = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, max_length=window,
                       prefix_token_id=prefix_token(tokenizer))
        self.tokenizer = tokenizer
        self.scored: dict[tuple, int] = {}  # (task, request arguments) → tokens it scored (records.py)
        # (task, prompt) → the token ids generated (generation.py; a request's doc_id counts the items asked for,
        # not the task's documents)
        self.generated: dict[tuple, list[int]] = {}

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        if self.path == EXACT:
            return self.hf.loglikelihood(requests, disable_tqdm=not self.progress)
        groups: dict[tuple, list[int]] = {}
        for number, request in enumerate(requests):  # an item's choices: one lm-eval document
            groups.setdefault((request.task_name, request.doc_id), []).append(number)
        rows = [self.row(*request.args) for request in requests]
        self.scored.update({(request.task_name, tuple(request.args)): row.scored for request, row in zip(requests, rows)})
        label = f"lm-eval: {len(groups):,} items, {len(requests):,} choices scored ({SHARED})"
        with meter(label, len(requests), self.progress) as progress:
            scored = scoring.score_groups(self.model, [[rows[i] for i in g] for g in groups.values()],
                                          self.batch_size, progress.update)
        answers: list = [None] * len(requests)
        for numbers, values in zip(groups.values(), scored):
            for number, value in zip(numbers, values):
                answers[number] = value
        return answers

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        if self.path == EXACT:  # one window per batch: lm-eval's log-softmax of a batch of windows is GBs
            from lm_eval.models.huggingface import HFLM

            single = HFLM(pretrained=self.model, tokenizer=self.tokenizer, batch_size=1, max_length=self.window,
                          prefix_token_id=prefix_token(self.tokenizer))
            return single.loglikelihood_rolling(requests, disable_tqdm=not self.progress)
        from lm_eval import utils

        windows = []
        for number, request in enumerate(requests):
            cuts = utils.get_rolling_token_windows(token_list=self.hf.tok_encode(request.args[0]),
                                                   prefix_token=self.hf.prefix_token_id, max_seq_len=self.window,
                                                   context_len=1)
            windows += [(number, scoring.request_row(*utils.make_disjoint_window(cut), self.window)) for cut in cuts]
        label = f"lm-eval: {len(requests):,} documents, {len(windows):,} windows of {self.window} tokens scored"
        with meter(label, len(windows), self.progress) as progress:
            scored = scoring.score_rows(self.model, [row for _, row in windows], self.batch_size, progress.update)
        totals = [0.0] * len(requests)
        for (number, _), (ll, _) in zip(windows, scored):
            totals[number] += ll
        return totals

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        asked, requests = requests, chat_turns(self.tokenizer, requests)
        if self.path == EXACT:  # lm-eval's own generation, in its window; a prompt it would cut is refused first
            if self.hf.eot_token_id is None:  # HFLM decodes it as a stop string: a TypeError deep inside lm-eval
                raise ConfigError("--exact-lm-eval: lm-eval's own generation needs a tokenizer with an end-of-sequence "
                                  "token, and this model's has none; drop --exact-lm-eval (forgetless generates as "
                                  "lm-eval does, through its own helpers)")
            generation.plan(self.hf, requests, self.hf.max_length)
            return self.hf.generate_until(requests, disable_tqdm=not self.progress)
        label = f"lm-eval: {len(requests):,} answers generated (greedy)"
        with meter(label, len(requests), self.progress) as progress:
            texts, tokens = generation.generate_until(self.hf, self.model, self.tokenizer, requests, self.batch_size,
                                                      progress.update)
        self.generated.update({(r.task_name, r.args[0]): ids for r, ids in zip(asked, tokens)})
        return texts

    def row(self, context: str, continuation: str) -> scoring.Row:
        """One request as lm-eval's causal models tokenize it (module docstring)."""
        encode = self.hf.tok_encode
        if context == "":
            tokens = encode(continuation, add_special_tokens=False)
            prefix = self.hf.prefix_token_id
            context_tokens, tokens = ([prefix], tokens) if tokens[:1] != [prefix] else (tokens[:1], tokens[1:])
        else:
            spaces = len(context) - len(context.rstrip())
            if spaces:
                context, continuation = context[:-spaces], context[-spaces:] + continuation
            whole, context_tokens = encode(context + continuation), encode(context)
            tokens = whole[len(context_tokens):]
        if not tokens or len(tokens) > self.window:
            raise ConfigError(f"lm-eval request with a continuation of {len(tokens)} tokens ({continuation[:40]!r}): "
                              f"it must have 1 to {self.window} tokens (the window); give a larger "
                              "--perplexity-window")
        return scoring.request_row(context_tokens, tokens, self.window)


def meter(label: str, total: int, progress: bool):
    """forgetless's bar (``progress.bar``) counting scored rows, or a silent one."""
    if not progress:
        from tqdm import tqdm

        return tqdm(total=total, disable=True)
    return bar(desc=label, total=total, unit="row")


def prefix_token(tokenizer) -> int | None:
    """lm-eval's default prefix of a rolling window (BOS, else EOS); None keeps that default. A
    tokenizer with neither (a WordPiece vocabulary) uses its [CLS] or pad token."""
    if tokenizer.bos_token_id is not None or tokenizer.eos_token_id is not None:
        return None
    return tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.pad_token_id


def chat_turns(tokenizer, requests: list) -> list:
    """``generate_until`` requests with each prompt as a user turn of the tokenizer's chat template (the
    generation prompt added), as ``lm_eval --apply_chat_template`` asks a zero-shot prompt; unchanged when the
    tokenizer has no chat template."""
    if not getattr(tokenizer, "chat_template", None):
        return requests
    def turn(request):
        context, *rest = request.args
        text = tokenizer.apply_chat_template([{"role": "user", "content": context}], tokenize=False,
                                             add_generation_prompt=True)
        return dataclasses.replace(request, arguments=(text, *rest))
    return [turn(r) for r in requests]
