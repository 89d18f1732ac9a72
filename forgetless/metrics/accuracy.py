"""Accuracy of a classifier on every set of a task, with n, per-group and hard/easy breakdowns."""
from __future__ import annotations

import numpy as np

from ..data.task import ExampleSet, Task
from .bias import pooled_accuracy
from .predict import predict_logits


def set_metrics(examples: ExampleSet, task_predictions: np.ndarray) -> dict:
    """Accuracy (fraction), n, label distribution of predictions, and breakdowns where known.
    A prediction of -1 (a generated text that names no label) counts as wrong and is reported
    as ``unknown_share``."""
    predictions = examples.map_predictions(task_predictions)
    known = predictions >= 0
    labels = np.asarray(examples.labels)
    correct = predictions == labels
    result = {
        "accuracy": float(correct.mean()),
        "n": int(len(labels)),
        "predicted_share": {name: float((predictions == i).mean()) for i, name in enumerate(examples.label_names)},
        "per_label": {name: _acc(correct[labels == i]) for i, name in enumerate(examples.label_names)},
    }
    if not known.all():
        result["unknown_share"] = float((~known).mean())
    if examples.hard is not None:
        hard = np.asarray(examples.hard, dtype=bool)
        result["hard"] = {"accuracy": _acc(correct[hard]), "n": int(hard.sum())}
        result["easy"] = {"accuracy": _acc(correct[~hard]), "n": int((~hard).sum())}
        if hard.any() and (~hard).any():
            result["easy_hard_gap"] = result["easy"]["accuracy"] - result["hard"]["accuracy"]
    if examples.groups is not None:
        groups = np.asarray(examples.groups)
        result["groups"] = {}
        for g in sorted(set(examples.groups)):
            mask = groups == g
            entry = {"accuracy": _acc(correct[mask]), "n": int(mask.sum())}
            for i, name in enumerate(examples.label_names):  # per group and gold label (HANS style)
                sub = mask & (labels == i)
                if sub.any():
                    entry[name] = _acc(correct[sub])
            result["groups"][g] = entry
    return result


def evaluate_task(model, tokenizer, task: Task, batch_size: int = 64, max_length: int = 128,
                  progress: bool = True) -> dict:
    """Metrics of a classifier for dev and every challenge set, the pooled challenge accuracy, and
    per-example predicted ids and probabilities (``predictions``)."""
    sets, predictions = {}, {}
    for name, examples in task.eval_sets().items():
        logits = predict_logits(model, tokenizer, examples, batch_size, max_length, progress, f"eval {name}")
        sets[name] = set_metrics(examples, logits.argmax(-1))
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        predictions[name] = {"predicted": logits.argmax(-1).tolist(),
                             "probabilities": (probs / probs.sum(-1, keepdims=True)).round(5).tolist()}
    return {"sets": sets, **pooled_task_accuracy(task, sets), "predictions": predictions}


def pooled_task_accuracy(task: Task, sets: dict) -> dict:
    """Size-weighted accuracy over the task's pooled challenge sets (None without any)."""
    pooled = [(sets[name]["accuracy"], sets[name]["n"]) for name in task.pooled if name in sets]
    return {"challenge_pooled": pooled_accuracy(pooled) if pooled else None, "pooled_sets": task.pooled}


def _acc(correct: np.ndarray) -> float | None:
    return float(correct.mean()) if len(correct) else None
