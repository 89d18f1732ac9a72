"""Calibration of a classifier, base vs compressed, on hard vs easy samples (Du et al. 2023,
Observation 2: compressed models are *overconfident on easy samples* and poor on hard ones).

Expected calibration error (Naeini et al. 2015; Guo et al. 2017, eq. 3): predictions are binned
by confidence ``ĉ_i = max_j p_ij`` into ``M`` equal-width bins ``B_m = ((m−1)/M, m/M]``, m = 1 … M
(right-closed as in Guo et al. §2; a confidence of exactly 0 goes to the first bin), and

    ECE = Σ_m |B_m| / n · | acc(B_m) − conf(B_m) |,

with ``acc`` the share of correct predictions and ``conf`` the mean confidence in the bin. Mean
confidence minus accuracy (> 0: overconfident) is reported beside it. For a set whose labels
differ from the task's (``prediction_map``, e.g. MNLI's 3 classes → HANS's 2), the probability of
a set label is the sum of the task labels mapped to it.

Pure functions on arrays; ``calibration_section`` builds the report card's ``calibration``
section from the per-example probabilities the evaluation already keeps (``report/markdown.py``
renders it).
"""
from __future__ import annotations

import numpy as np

from ..data.task_kinds import task_kind

BINS = 10


def expected_calibration_error(confidence, correct, bins: int = BINS) -> float | None:
    """ECE over ``bins`` equal-width confidence bins (None for an empty set)."""
    confidence, correct = np.asarray(confidence, dtype=float), np.asarray(correct, dtype=float)
    if len(confidence) == 0:
        return None
    # index m-1 holds ((m−1)/M, m/M]: an edge confidence k/M goes to the bin it closes (Guo et al.);
    # the edges are k/M exactly (not k·(1/M)), so a confidence written as 0.3 meets the edge 3/10
    index = np.searchsorted(np.arange(1, bins) / bins, confidence, side="left")
    total = 0.0
    for m in range(bins):
        inside = index == m
        if inside.any():
            total += inside.mean() * abs(correct[inside].mean() - confidence[inside].mean())
    return float(total)


def mapped_probabilities(probs, prediction_map: dict | None, n_labels: int | None = None) -> np.ndarray:
    """Task-label probabilities → the set's label probabilities (sums over mapped task labels)."""
    probs = np.asarray(probs, dtype=float)
    if not prediction_map:
        return probs
    out = np.zeros((len(probs), n_labels or (max(prediction_map.values()) + 1)))
    for task_label, set_label in prediction_map.items():
        out[:, int(set_label)] += probs[:, int(task_label)]
    return out


def calibration_metrics(probs, labels, bins: int = BINS) -> dict:
    """ECE, mean confidence, accuracy and overconfidence (confidence − accuracy) of one set."""
    probs, labels = np.asarray(probs, dtype=float), np.asarray(labels, dtype=int)
    if len(labels) == 0:
        return {"n": 0, "ece": None, "confidence": None, "accuracy": None, "overconfidence": None}
    confidence, correct = probs.max(-1), probs.argmax(-1) == labels
    return {"n": int(len(labels)), "ece": expected_calibration_error(confidence, correct, bins),
            "confidence": float(confidence.mean()), "accuracy": float(correct.mean()),
            "overconfidence": float(confidence.mean() - correct.mean())}


def set_calibration(probs, examples, bins: int = BINS) -> dict:
    """Calibration of one evaluation set, with hard / easy parts where the set has hardness flags."""
    probs = mapped_probabilities(probs, examples.prediction_map, len(examples.label_names))
    out = calibration_metrics(probs, examples.labels, bins)
    if examples.hard is not None:
        hard = np.asarray(examples.hard, dtype=bool)
        labels = np.asarray(examples.labels)
        out["hard"] = calibration_metrics(probs[hard], labels[hard], bins)
        out["easy"] = calibration_metrics(probs[~hard], labels[~hard], bins)
    return out


def calibration_section(task, predictions: dict, bins: int = BINS) -> dict | None:
    """The card's ``calibration`` section: {bins, sets: {set: {base, compressed}}} (classification only)."""
    if not task_kind(task).labelled:
        return None
    sets = {}
    for name, examples in task.eval_sets().items():
        roles = {role: set_calibration(predictions[role][name]["probabilities"], examples, bins)
                 for role in ("base", "compressed")
                 if "probabilities" in predictions.get(role, {}).get(name, {})}  # generated label words: none
        if roles:
            sets[name] = roles
    return {"bins": bins, "sets": sets} if sets else None

