"""Model kind ``causal-lm``: a decoder-only language model with its LM head, no classification head.

Classification tasks are scored *zero-shot by label likelihood*: the prompt is the text (pair)
followed by ``" Answer:"``; each label's verbalised word (``label_word``) is scored by the sum of
its tokens' log-probabilities given the prompt, and the label with the highest score is the
prediction (so a base LM is evaluated without a classification head, and after compression the
same way). Training (teacher fine-tuning, a method's recovery training) maximises the likelihood of
the gold label word after the prompt (loss on the label tokens only). Speed is prefill latency and
per-token decode latency with a KV cache, base vs compressed in the same run. ``perplexity``
(``evaluate/perplexity.py``) gives the language-modelling check on a held-out text file.
"""
from __future__ import annotations

import numpy as np
import torch

from ..data.task import PairSet, Task
from ..errors import ConfigError
from ..evaluate.accuracy import pooled_task_accuracy, set_metrics
from ..evaluate.perplexity import perplexity, read_texts
from ..evaluate.speed import SpeedConfig, compare_speed
from ..models.causal import load_causal_lm
from .seq2seq import label_word

PROMPT_SUFFIX = " Answer:"


def prompts(examples) -> list[str]:
    if examples.text_b is None:
        return [f"{a}{PROMPT_SUFFIX}" for a in examples.text_a]
    return [f"{a} {b}{PROMPT_SUFFIX}" for a, b in zip(examples.text_a, examples.text_b)]


@torch.no_grad()
def label_log_likelihoods(model, tokenizer, texts: list[str], words: list[str], max_length: int,
                          batch_size: int = 32) -> np.ndarray:
    """``(examples, labels)`` array of Σ log p(word tokens | prompt) under ``model``."""
    model.eval()
    device = next(model.parameters()).device
    word_ids = [tokenizer(" " + w, add_special_tokens=False)["input_ids"] for w in words]
    prompt_ids = [ids[-(max_length - max(map(len, word_ids))):] for ids in
                  tokenizer(texts, add_special_tokens=False)["input_ids"]]
    pad = tokenizer.pad_token_id or 0
    scores = np.zeros((len(texts), len(words)))
    for j, w in enumerate(word_ids):
        for start in range(0, len(texts), batch_size):
            rows = [p + w for p in prompt_ids[start:start + batch_size]]
            width = max(map(len, rows))
            ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=device)
            mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
            logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float(), dim=-1)
            for i, r in enumerate(rows):
                first = len(r) - len(w)  # position of the word's first token
                positions = torch.arange(first - 1, len(r) - 1, device=device)
                scores[start + i, j] = float(logp[i, positions, torch.tensor(w, device=device)].sum())
    return scores


class CausalLMKind:
    name = "causal-lm"

    def load_model(self, name: str, task: Task, seed: int = 0):
        return load_causal_lm(name, tokenizer=task.tokenizer, seed=seed)

    def training_set(self, task: Task, tokenizer=None):
        if task.kind != "classification":
            raise ConfigError("the causal-lm model kind scores classification tasks by label likelihood; "
                              "generation tasks need an encoder-decoder")
        words = [label_word(task.label_names[y]) for y in task.train.labels]
        return PairSet(task.train.name, prompts(task.train), [[" " + w] for w in words], task.train.source)

    def probe_inputs(self, tokenizer, task: Task, n: int, max_length: int) -> dict:
        enc = tokenizer(prompts(task.train)[:n], truncation=True, max_length=max_length, padding=True,
                        return_tensors="pt")
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}

    def evaluate(self, model, tokenizer, task: Task, eval_config, max_length: int, progress: bool = False) -> dict:
        words = [label_word(n) for n in task.label_names]
        sets, predictions = {}, {}
        for name, examples in task.eval_sets().items():
            scores = label_log_likelihoods(model, tokenizer, prompts(examples), words, max_length,
                                           eval_config.batch_size)
            predicted = scores.argmax(-1)
            sets[name] = set_metrics(examples, predicted)
            predictions[name] = {"predicted": predicted.tolist(), "label_log_likelihoods": scores.round(4).tolist()}
        result = {"sets": sets, **pooled_task_accuracy(task, sets), "predictions": predictions}
        if getattr(eval_config, "perplexity_file", None):
            result["language_model"] = {"file": str(eval_config.perplexity_file), **perplexity(
                model, tokenizer, read_texts(eval_config.perplexity_file), max_length, eval_config.batch_size)}
        return result

    def speed(self, base, compressed, config: SpeedConfig) -> dict:
        """Prefill: one forward over ``seq_len`` tokens (latency at batch ``latency_batch``,
        throughput at ``batch_size``); decode: ``new_tokens`` greedy steps with a KV cache after
        that prefill, reported per token."""
        prefill = compare_speed(base, compressed, config, generate=False)
        decode = compare_speed(base, compressed, config, generate=True)
        per_token = {role: (decode["latency_ms"][role] - prefill["latency_ms"][role]) / config.new_tokens
                     for role in ("base", "compressed")}
        per_token["speedup"] = per_token["base"] / per_token["compressed"] if per_token["compressed"] > 0 else None
        return {**prefill, "mode": "prefill+decode", "decode_ms_per_token": per_token}
