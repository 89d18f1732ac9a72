"""Zero-shot (and k-shot) classification with a causal language model by label-word likelihood.

Each example becomes a prompt: the task's instruction and text(s) (``PROMPTS``, stated in the
card), in the model's chat template when its tokenizer has one (``template="auto"``), else as
plain text ending in ``"Answer:"``. Each label's word is scored by ``Σ_t log p(w_t | prompt,
w_<t)`` (``score="sum"``) or its mean over the word's tokens (``score="mean"``, length-normalised).

All label words of an example are scored in **one forward pass**: the sequence is the prompt
followed by every label's tokens side by side; a 4-D attention mask lets each label's tokens see
the prompt and their own earlier tokens only, and position ids restart after the prompt for each
label, so every label is scored exactly as if it followed the prompt alone (``one_pass_scores``).
Examples are batched in order of length (less padding) and a labelled progress bar runs.

Calibration (``calibration``) follows contextual calibration (Zhao et al. 2021, "Calibrate Before
Use", eq. 2 with ``W = diag(p̂_cf)⁻¹, b = 0``): with ``p(y|x)`` the label probabilities (scores
soft-maxed over the labels), the calibrated score is ``log p(y|x) − log p̂(y)`` where

* ``content-free``: ``p̂`` is the mean of ``p(y|x_cf)`` over the content-free inputs
  ``CONTENT_FREE`` ("N/A", "", "[MASK]", Zhao et al.'s choice) put into the same prompt;
* ``set-mean``: ``log p̂(y)`` is the mean of ``log p(y|x)`` over the evaluated set itself
  (centring each label's log-probability by its set mean; uses the set's texts, never its labels).

k-shot prompts (``shots``) hold ``k`` examples of the training split with their label words, drawn
with a generator seeded by ``(seed, example index)`` and never equal to the evaluated example.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch

from ..errors import ConfigError
from ..progress import bar
from .paired import softmax

CALIBRATIONS = ("none", "content-free", "set-mean")
CONTENT_FREE = ("N/A", "", "[MASK]")


@dataclass(frozen=True)
class TaskPrompt:
    """An instruction, how the text(s) are laid out, and one word per label (in label-id order)."""

    instruction: str
    body: str  # format string with {a} (and {b} for pairs)
    words: tuple[str, ...]


PROMPTS = {
    "sst2": TaskPrompt("Is the sentiment of this movie review positive or negative? Answer with one word: "
                       "positive or negative.", "Review: {a}", ("negative", "positive")),
    "mnli-small": TaskPrompt("Does the premise imply the hypothesis? Answer with one word: yes, maybe or no.",
                             "Premise: {a}\nHypothesis: {b}", ("yes", "maybe", "no")),
    "qqp": TaskPrompt("Do these two questions ask the same thing? Answer with one word: yes or no.",
                      "Question 1: {a}\nQuestion 2: {b}", ("no", "yes")),
    "rte": TaskPrompt("Does the first sentence imply the second? Answer with one word: yes or no.",
                      "Sentence 1: {a}\nSentence 2: {b}", ("yes", "no")),
    "qnli": TaskPrompt("Does the sentence answer the question? Answer with one word: yes or no.",
                       "Question: {a}\nSentence: {b}", ("yes", "no")),
}


def prompt_for(task) -> TaskPrompt:
    """The task's prompt; other tasks get a generic one with their label names as words."""
    if task.name in PROMPTS and len(PROMPTS[task.name].words) == len(task.label_names):
        return PROMPTS[task.name]
    words = tuple(" ".join(n.replace("_", " ").split()).lower() for n in task.label_names)
    pair = task.dev.text_b is not None
    return TaskPrompt(f"Classify the {'pair of texts' if pair else 'text'}. Answer with one of: {', '.join(words)}.",
                      "Text 1: {a}\nText 2: {b}" if pair else "Text: {a}", words)


def uses_chat(tokenizer, template: str) -> bool:
    has = bool(getattr(tokenizer, "chat_template", None))
    if template == "chat" and not has:
        raise ConfigError("--prompt-template chat: the model's tokenizer has no chat template")
    return has if template == "auto" else template == "chat"


def shot_indices(train, text: tuple, k: int, seed: int, index: int) -> list[int]:
    """``k`` training indices for evaluated example ``index`` (seeded by ``(seed, index)``), none of
    them with the same text(s) as the evaluated example."""
    if k == 0:
        return []
    order = np.random.default_rng((seed, index)).permutation(len(train))
    chosen = []
    for i in order:
        if (train.text_a[i], train.text_b[i] if train.text_b is not None else None) != text:
            chosen.append(int(i))
            if len(chosen) == k:
                return chosen
    raise ConfigError(f"--shots {k}: the training split has only {len(chosen)} other examples")


def render(tokenizer, prompt: TaskPrompt, a: str, b: str | None, shots: list[tuple], chat: bool) -> str:
    """The prompt text up to where the label word starts; ``shots``: (a, b, word) triples."""
    body = lambda x, y: prompt.body.format(a=x, b=y)  # noqa: E731
    if chat:
        messages = []
        for i, (sa, sb, word) in enumerate(shots):
            head = prompt.instruction + "\n" if i == 0 else ""
            messages += [{"role": "user", "content": head + body(sa, sb)}, {"role": "assistant", "content": word}]
        messages.append({"role": "user", "content": ("" if shots else prompt.instruction + "\n") + body(a, b)})
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    blocks = [f"{body(sa, sb)}\nAnswer: {word}" for sa, sb, word in shots]
    return "\n\n".join([prompt.instruction, *blocks, f"{body(a, b)}\nAnswer:"])


def build_prompts(tokenizer, prompt: TaskPrompt, examples, chat: bool, shots: int = 0, train=None,
                  seed: int = 0) -> list[str]:
    texts = []
    for i, a in enumerate(examples.text_a):
        b = examples.text_b[i] if examples.text_b is not None else None
        chosen = shot_indices(train, (a, b), shots, seed, i) if shots else []
        triples = [(train.text_a[j], train.text_b[j] if train.text_b is not None else None,
                    prompt.words[train.labels[j]]) for j in chosen]
        texts.append(render(tokenizer, prompt, a, b, triples, chat))
    return texts


def label_token_ids(tokenizer, words, chat: bool) -> list[list[int]]:
    """Token ids of each label word as it follows the prompt (a leading space after "Answer:")."""
    ids = [tokenizer(w if chat else " " + w, add_special_tokens=False)["input_ids"] for w in words]
    if any(not x for x in ids):
        raise ConfigError(f"a label word tokenizes to nothing: {words}")
    return ids


def one_pass_inputs(prefix: list[int], labels: list[list[int]], width: int, pad: int, dtype) -> tuple:
    """``(ids, positions, additive 4-D mask row, label starts)`` for one example, right-padded to
    ``width``: prompt then each label's tokens, label tokens seeing the prompt and their own label."""
    ids, positions, owner = list(prefix), list(range(len(prefix))), [-1] * len(prefix)
    starts = []
    for j, word in enumerate(labels):
        starts.append(len(ids))
        ids += word
        positions += range(len(prefix), len(prefix) + len(word))
        owner += [j] * len(word)
    n = len(ids)
    ids, positions = ids + [pad] * (width - n), positions + [0] * (width - n)
    q = torch.arange(width)
    own = torch.tensor(owner + [-2] * (width - n))
    allowed = (q[None, :] <= q[:, None]) & ((own[None, :] == -1) | (own[None, :] == own[:, None]))
    allowed[n:] = False
    allowed[torch.arange(width), torch.arange(width)] = True  # padding rows see themselves (no NaN)
    mask = torch.zeros(width, width, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    return ids, positions, mask, starts


@torch.no_grad()
def one_pass_scores(model, prefixes: list[list[int]], labels: list[list[int]], pad: int, batch_size: int,
                    desc: str = "zero-shot scoring") -> np.ndarray:
    """``(examples, labels)`` Σ log p(label tokens | prefix), every label of an example in one
    forward pass; batches of examples sorted by length."""
    model.eval()
    device = next(model.parameters()).device
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    extra = sum(map(len, labels))
    keeps_logits = "logits_to_keep" in inspect.signature(model.forward).parameters
    order = sorted(range(len(prefixes)), key=lambda i: len(prefixes[i]))
    scores = np.zeros((len(prefixes), len(labels)))
    for start in bar(range(0, len(order), batch_size), desc, total=(len(order) + batch_size - 1) // batch_size):
        rows = order[start:start + batch_size]
        width = max(len(prefixes[i]) for i in rows) + extra
        built = [one_pass_inputs(prefixes[i], labels, width, pad, dtype) for i in rows]
        ids = torch.tensor([b[0] for b in built], device=device)
        positions = torch.tensor([b[1] for b in built], device=device)
        mask = torch.stack([b[2] for b in built])[:, None].to(device)
        first = min(len(prefixes[i]) for i in rows) - 1  # earliest position whose logits are needed
        kwargs = {"logits_to_keep": width - first} if keeps_logits else {}  # the LM head only where scored
        logits = model(input_ids=ids, position_ids=positions, attention_mask=mask, **kwargs).logits
        offset = width - logits.shape[1]
        logp = torch.log_softmax(logits.float(), -1)
        for r, i in enumerate(rows):
            p = len(prefixes[i])
            for j, (word, s) in enumerate(zip(labels, built[r][3])):
                before = torch.tensor([p - 1] + list(range(s, s + len(word) - 1)), device=device) - offset
                scores[i, j] = float(logp[r, before, torch.tensor(word, device=device)].sum())
    return scores


def calibrate(scores: np.ndarray, mode: str, content_free: np.ndarray | None = None) -> np.ndarray:
    """``log p(y|x) − log p̂(y)`` (module docstring); ``scores`` are per-label log-likelihoods."""
    logp = scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)
    if mode == "none":
        return logp
    if mode == "set-mean":
        return logp - logp.mean(axis=0, keepdims=True)
    if mode == "content-free":
        cf = content_free - np.logaddexp.reduce(content_free, axis=1, keepdims=True)
        return logp - np.log(np.exp(cf).mean(axis=0, keepdims=True))
    raise ConfigError(f"--score-calibration: {mode!r} is not one of {', '.join(CALIBRATIONS)}")


def score_set(model, tokenizer, task, examples, options, max_length: int, batch_size: int,
              desc: str = "zero-shot") -> dict:
    """Predictions of one evaluation set: ``predicted`` (argmax of the calibrated scores),
    ``probabilities`` (their softmax), raw ``label_log_likelihoods``, and prompt truncation count."""
    prompt, chat = prompt_for(task), uses_chat(tokenizer, options.prompt_template)
    words = label_token_ids(tokenizer, prompt.words, chat)
    room = max_length - sum(map(len, words))
    if room < 8:
        raise ConfigError(f"--max-length {max_length}: too short for the label words ({sum(map(len, words))} tokens)")

    def encode(texts):
        ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
        return [x[-room:] for x in ids], sum(len(x) > room for x in ids)  # keep the end: it holds "Answer:"

    train = task.train if options.shots else None
    prefixes, truncated = encode(build_prompts(tokenizer, prompt, examples, chat, options.shots, train, options.shot_seed))
    pad = tokenizer.pad_token_id or 0
    raw = one_pass_scores(model, prefixes, words, pad, batch_size, f"{desc} ({len(examples)} examples)")
    lengths = np.array([len(w) for w in words], dtype=float)
    scores = raw / lengths if options.label_score == "mean" else raw
    content_free = None
    if options.score_calibration == "content-free":
        cf = _content_free_examples(examples)
        cf_prefixes, _ = encode(build_prompts(tokenizer, prompt, cf, chat, options.shots, train, options.shot_seed))
        content_free = one_pass_scores(model, cf_prefixes, words, pad, batch_size, "content-free inputs")
        content_free = content_free / lengths if options.label_score == "mean" else content_free
    calibrated = calibrate(scores, options.score_calibration, content_free)
    return {"predicted": calibrated.argmax(-1), "probabilities": softmax(calibrated), "label_log_likelihoods": raw,
            "truncated": int(truncated)}


def describe(task, tokenizer, options) -> dict:
    """The prompt and scoring settings, for the report card."""
    prompt, chat = prompt_for(task), uses_chat(tokenizer, options.prompt_template)
    return {"template": "chat" if chat else "plain", "instruction": prompt.instruction, "body": prompt.body,
            "label_words": list(prompt.words), "shots": options.shots, "shot_seed": options.shot_seed,
            "label_score": options.label_score, "score_calibration": options.score_calibration,
            "content_free_inputs": list(CONTENT_FREE) if options.score_calibration == "content-free" else None}


def _content_free_examples(examples):
    pair = examples.text_b is not None
    return SimpleNamespace(text_a=list(CONTENT_FREE), text_b=list(CONTENT_FREE) if pair else None)
