"""The percentile bootstrap (Efron & Tibshirani 1993, ch. 13) every interval of forgetless is drawn with
(``metrics/intervals.py``, ``metrics/paired.py``, ``llm/divergence.py``): ``n_resamples`` seeded resamples of
the items with replacement (default ``DEFAULT_RESAMPLES`` = 1000), the statistic on each, and the
``(1 − confidence)/2`` and ``(1 + confidence)/2`` quantiles (default 95%). Pure numpy; a leaf module."""
from __future__ import annotations

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
# Resamples are drawn in chunks so that (chunk × n) indices stay below this many elements.
_MAX_INDICES_PER_CHUNK = 4_000_000


def resampled_means(columns: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of the columns of ``columns`` (shape ``(n, k)``) over ``n_resamples`` bootstrap
    resamples of its rows; the same row indices are used for every column (paired resampling).
    Returns shape ``(n_resamples, k)``."""
    n = columns.shape[0]
    out = np.empty((n_resamples, columns.shape[1]))
    chunk = max(1, _MAX_INDICES_PER_CHUNK // max(n, 1))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        index = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = columns[index].mean(axis=1)
    return out


def percentile_interval(samples: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """``(low, high)``: the central ``confidence`` share of ``samples`` (percentile bootstrap interval)."""
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def mean_interval(values, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                  confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """``{value, low, high, n}``: the mean of ``values`` with its percentile bootstrap interval (None
    for no items)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return {"value": None, "low": None, "high": None, "n": 0}
    means = resampled_means(values[:, None], n_resamples, np.random.default_rng(seed))[:, 0]
    low, high = percentile_interval(means, confidence)
    return {"value": float(values.mean()), "low": low, "high": high, "n": int(values.size)}
