"""Two models on the same items, compared item by item (pure numpy; no model code).

* **Flips** (Dutta et al. 2024, "Accuracy is Not All You Need", §3): items correct for the base and
  wrong for the compressed model (correct → wrong) and the reverse. Accuracy sees only their
  difference; the flip rate (c→w + w→c) / n sees both.
* **Exact McNemar test** (McNemar 1947; exact binomial form): under "no change", each of the
  b + c discordant items is a fair coin, so the two-sided p = min(1, 2 · P[Bin(b + c, ½) ≤ min(b, c)]).
* **KL divergence over the choices** (Dutta et al. 2024, §4): per item, p = softmax of each model's
  choice log-likelihoods (its distribution over the choices it is offered), KL(p_base ‖ p_compressed)
  in nats.
* **Margin** of an item under a model: the gold choice's score minus the best wrong choice's
  (> 0: correct); **terciles** of the base's margin split the items into hard / medium / easy *for
  the base* (ranks, ties by position, sizes as equal as possible).
* **Intervals**: percentile bootstrap resampling items (``metrics/intervals.py``), paired: base and
  compressed values of the same resampled items, so a difference's interval is the paired one.
"""
from __future__ import annotations

from math import comb

import numpy as np

from ..bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, percentile_interval, resampled_means
from ..errors import ConfigError

HARD, MEDIUM, EASY = 0, 1, 2
TERCILES = {"hard": HARD, "medium": MEDIUM, "easy": EASY}


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs (1.0 when there are none)."""
    if b < 0 or c < 0:
        raise ConfigError(f"McNemar: counts must be >= 0, got {b}, {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return float(min(1.0, 2 * tail))


def flips(base_correct, compressed_correct) -> dict:
    """``{n, correct_to_wrong, wrong_to_correct, flip_rate, mcnemar_p}`` of two 0/1 arrays of the same items."""
    base, comp = _pair(base_correct, compressed_correct)
    lost = int(np.sum((base == 1) & (comp == 0)))
    gained = int(np.sum((base == 0) & (comp == 1)))
    n = int(base.size)
    return {"n": n, "correct_to_wrong": lost, "wrong_to_correct": gained,
            "flip_rate": (lost + gained) / n if n else None, "mcnemar_p": mcnemar_exact(lost, gained)}


def softmax(scores) -> np.ndarray:
    """The softmax of ``scores`` over its last axis (one item's choices, or one row per item)."""
    scores = np.asarray(scores, dtype=float)
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def choice_kl(base_lls, compressed_lls) -> float:
    """KL(p_base ‖ p_compressed) in nats, p = softmax of one item's choice log-likelihoods."""
    p, q = softmax(base_lls), softmax(compressed_lls)
    if p.shape != q.shape:
        raise ConfigError(f"KL: the two models scored {p.size} and {q.size} choices of one item")
    keep = p > 0
    return max(0.0, float(np.sum(p[keep] * (np.log(p[keep]) - np.log(q[keep])))))  # ≥ 0; rounding aside


def margin(scores, gold: int) -> float:
    """The gold choice's score minus the best wrong choice's."""
    scores = np.asarray(scores, dtype=float)
    wrong = np.delete(scores, gold)
    return float(scores[gold] - wrong.max())


def terciles(margins) -> np.ndarray:
    """HARD / MEDIUM / EASY per item: the lowest, middle and highest third of ``margins`` by rank
    (ties by position; ``np.array_split`` sizes)."""
    margins = np.asarray(margins, dtype=float)
    order = np.argsort(margins, kind="stable")
    labels = np.empty(margins.size, dtype=int)
    for label, part in enumerate(np.array_split(order, 3)):
        labels[part] = label
    return labels


def paired_intervals(base, compressed, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                     confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """``{base, compressed, delta}``, each ``{value, low, high, n}``: the two means and compressed −
    base, resampling the same items for both (the delta's interval is the paired one)."""
    base, comp = _pair(base, compressed)
    if base.size == 0:
        empty = {"value": None, "low": None, "high": None, "n": 0}
        return {"base": empty, "compressed": dict(empty), "delta": dict(empty)}
    means = resampled_means(np.stack([base, comp, comp - base], axis=1), n_resamples, np.random.default_rng(seed))
    out = {}
    for column, (name, values) in enumerate((("base", base), ("compressed", comp), ("delta", comp - base))):
        low, high = percentile_interval(means[:, column], confidence)
        out[name] = {"value": float(values.mean()), "low": low, "high": high, "n": int(values.size)}
    return out


def macro_intervals(pairs: list[tuple], n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                    confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """``{base, compressed, delta}`` of the mean over tasks of each task's mean (``pairs``: one
    ``(base, compressed)`` pair of per-item arrays per task); the interval resamples items within each
    task (a stratified, paired bootstrap)."""
    if not pairs:
        empty = {"value": None, "low": None, "high": None, "n": 0}
        return {"base": empty, "compressed": dict(empty), "delta": dict(empty)}
    rng = np.random.default_rng(seed)
    total, values = np.zeros((n_resamples, 3)), np.zeros(3)
    for base, comp in pairs:
        base, comp = _pair(base, comp)
        columns = np.stack([base, comp, comp - base], axis=1)
        total += resampled_means(columns, n_resamples, rng)
        values += columns.mean(axis=0)
    total, values = total / len(pairs), values / len(pairs)
    n = sum(len(b) for b, _ in pairs)
    out = {}
    for column, name in enumerate(("base", "compressed", "delta")):
        low, high = percentile_interval(total[:, column], confidence)
        out[name] = {"value": float(values[column]), "low": low, "high": high, "n": n}
    return out


def difference_of_deltas(first: tuple, second: tuple, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                         confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """``{value, low, high}`` of (compressed − base on ``second``) − (compressed − base on ``first``),
    two tasks of different items: each task's items resampled on their own (paired within a task)."""
    rng = np.random.default_rng(seed)
    deltas = []
    for base, comp in (first, second):
        base, comp = _pair(base, comp)
        deltas.append((comp - base, resampled_means((comp - base)[:, None], n_resamples, rng)[:, 0]))
    low, high = percentile_interval(deltas[1][1] - deltas[0][1], confidence)
    return {"value": float(deltas[1][0].mean() - deltas[0][0].mean()), "low": low, "high": high}


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ConfigError(f"paired comparison needs two 1-D arrays over the same items, got {a.shape} and {b.shape}")
    return a, b
