"""Model kind ``seq2seq``: an encoder-decoder run by ``generate``.

Generation tasks are scored with ROUGE-1/2/L and METEOR (NASH Tables 1-2). Classification tasks
run *text-to-text* (NASH §5 / Table 11; Raffel et al.'s T5 format): the input is the two texts
joined by the tokenizer's separator token (``"<text_a> [SEP] <text_b>"``), the target is the label word (the label name with ``_`` → space, e.g. "not entailment"); a generated
text is mapped back to a label by exact match after lower-casing and collapsing spaces, and a
text that names no label counts as wrong (reported as ``unknown_share``).
"""
from __future__ import annotations

import numpy as np

from ..data.task import PairSet, Task
from ..metrics.accuracy import pooled_task_accuracy, set_metrics
from ..metrics.generation import score_texts
from ..metrics.predict import generate_texts
from ..metrics.speed import SpeedConfig, compare_speed
from ..models.loading import load_seq2seq
from .base import ModelKind
from .in_memory import adopt, is_in_memory


def label_word(name: str) -> str:
    """The word(s) a seq2seq model generates for a label name (lower case, ``_`` → space, single spaces)."""
    return " ".join(name.replace("_", " ").split()).lower()


def parse_labels(texts: list[str], label_names: list[str]) -> np.ndarray:
    """Label id of each generated text (exact match of the label word, both normalised alike), -1 if none."""
    lookup = {label_word(name): i for i, name in enumerate(label_names)}
    return np.array([lookup.get(label_word(t), -1) for t in texts], dtype=int)


def source_texts(examples, separator: str) -> list[str]:
    if examples.text_b is None:
        return list(examples.text_a)
    return [f"{a} {separator} {b}" for a, b in zip(examples.text_a, examples.text_b)]


def _separator(tokenizer) -> str:
    return getattr(tokenizer, "sep_token", None) or "|"


class Seq2SeqKind(ModelKind):
    name = "seq2seq"
    described = "an encoder-decoder"
    task_kinds = ("classification", "generation")
    seq2seq = True

    def load_model(self, model, task: Task, seed: int = 0, tokenizer=None):
        """An encoder-decoder by name or folder, or a copy of a given model object."""
        if is_in_memory(model):
            return adopt(model, tokenizer, task, self.name)
        return load_seq2seq(model, tokenizer=tokenizer or task.tokenizer, seed=seed)

    def training_set(self, task: Task, tokenizer):
        if task.kind == "generation":
            return task.train
        train = task.train  # source → label-word pairs
        return PairSet(train.name, source_texts(train, _separator(tokenizer)),
                       [[label_word(task.label_names[y])] for y in train.labels], train.source)

    def probe_inputs(self, tokenizer, task: Task, n: int, max_length: int) -> dict:
        sources = self.training_set(task, tokenizer).sources[:n]
        enc = tokenizer(sources, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}

    def evaluate(self, model, tokenizer, task: Task, eval_config, max_length: int, progress: bool = False) -> dict:
        sets, predictions = {}, {}
        separator = _separator(tokenizer)
        max_new = eval_config.max_new_tokens
        if task.kind == "classification":  # the longest label word, plus EOS and one spare step
            max_new = max(len(tokenizer(label_word(n), add_special_tokens=False)["input_ids"])
                          for n in task.label_names) + 2
        for name, examples in task.eval_sets().items():
            sources = examples.sources if task.kind == "generation" else source_texts(examples, separator)
            texts = generate_texts(model, tokenizer, sources, eval_config.batch_size, max_length, max_new,
                                   eval_config.num_beams, progress, f"generate {name}")
            predictions[name] = {"generated": texts}
            if task.kind == "generation":
                sets[name] = score_texts(texts, examples.references, with_meteor=eval_config.meteor)
            else:
                predicted = parse_labels(texts, task.label_names)
                sets[name] = set_metrics(examples, predicted)
                sets[name]["distinct_predictions"] = len(set(texts)) / max(len(texts), 1)
                predictions[name]["predicted"] = predicted.tolist()
        pooled = pooled_task_accuracy(task, sets) if task.kind == "classification" else \
            {"challenge_pooled": None, "pooled_sets": []}
        return {"sets": sets, **pooled, "predictions": predictions}

    def speed(self, base, compressed, config: SpeedConfig) -> dict:
        return compare_speed(base, compressed, config, generate=True)
