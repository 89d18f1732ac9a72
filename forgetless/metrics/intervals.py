"""Honest numbers: bootstrap intervals for accuracy, relative bias and speedup; timing spread.

Pure numpy, seeded, no model code; every interval is a percentile bootstrap (``forgetless/bootstrap.py``).

Relative bias follows Du et al. (2023), "What do Compressed Large Language Models Forget?", eq. 1:
``gap = (acc_dev − acc_challenge) / acc_dev`` and ``F_bias = gap_compressed / gap_base``.
"""
from __future__ import annotations

import numpy as np

from ..bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, mean_interval, percentile_interval, resampled_means
from ..errors import ConfigError


def _check(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ConfigError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")


def _as_correct(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ConfigError(f"{name}: expected a 1-D array of per-example correctness, got shape {array.shape}")
    if array.dtype != bool and array.size and not np.isin(array, (0, 1)).all():
        raise ConfigError(f"{name}: per-example correctness must be booleans or 0/1")
    return array.astype(np.float64)


def bootstrap_accuracy(correct, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                       confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """Accuracy of a set with its percentile bootstrap interval.

    Returns ``{"accuracy", "low", "high", "n"}``; an empty set gives ``accuracy``, ``low`` and
    ``high`` None (no interval can be computed from zero examples).
    """
    _check(n_resamples, confidence)
    values = _as_correct(correct, "correct")
    mean = mean_interval(values, n_resamples, seed, confidence)
    return {"accuracy": mean["value"], "low": mean["low"], "high": mean["high"], "n": mean["n"]}


def relative_gaps(acc_dev: np.ndarray, acc_challenge: np.ndarray) -> np.ndarray:
    """Du et al. (2023) eq. 1, elementwise: ``(acc_dev − acc_challenge) / acc_dev``; NaN where
    ``acc_dev`` is 0 (the gap is undefined there)."""
    acc_dev = np.asarray(acc_dev, dtype=np.float64)
    acc_challenge = np.asarray(acc_challenge, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(acc_dev > 0, (acc_dev - acc_challenge) / acc_dev, np.nan)


def f_bias_values(base_gap: np.ndarray, compressed_gap: np.ndarray) -> np.ndarray:
    """Du et al. (2023) eq. 1, elementwise: ``F_bias = gap_compressed / gap_base``; NaN where the
    base gap is ≤ 0 or undefined (the ratio does not measure added reliance on shortcuts then)."""
    base_gap = np.asarray(base_gap, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(base_gap > 0, np.asarray(compressed_gap, dtype=np.float64) / base_gap, np.nan)


def bootstrap_f_bias(base_dev_correct, base_ch_correct, comp_dev_correct, comp_ch_correct,
                     n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                     confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """F_bias (Du et al. 2023, eq. 1) with a paired percentile bootstrap interval.

    Base and compressed predictions of the same set must be aligned (example i of
    ``base_dev_correct`` is example i of ``comp_dev_correct``). Each resample draws dev indices and,
    independently, challenge indices, and uses the same indices for base and compressed, so the
    interval reflects the sampling of examples, not a mismatch between the two models' samples.

    Returns ``f_bias`` (point estimate, None when the base gap is ≤ 0 or undefined), ``low`` /
    ``high`` (interval over the resamples where F_bias is defined, None when there are none),
    ``base_gap`` / ``compressed_gap`` (point estimates), ``base_gap_nonpositive_share`` (share of
    resamples whose base gap is ≤ 0 or undefined: F_bias is not meaningful there; a share above
    ``(1 − confidence)/2`` means the interval should not be trusted), ``n_dev``, ``n_challenge``
    and ``n_resamples``.
    """
    _check(n_resamples, confidence)
    base_dev, comp_dev = _as_correct(base_dev_correct, "base_dev_correct"), _as_correct(comp_dev_correct, "comp_dev_correct")
    base_ch, comp_ch = _as_correct(base_ch_correct, "base_ch_correct"), _as_correct(comp_ch_correct, "comp_ch_correct")
    if base_dev.size != comp_dev.size or base_ch.size != comp_ch.size:
        raise ConfigError(f"base and compressed correctness must be aligned per set: dev {base_dev.size} vs "
                          f"{comp_dev.size}, challenge {base_ch.size} vs {comp_ch.size}")
    if base_dev.size == 0 or base_ch.size == 0:
        raise ConfigError(f"F_bias needs non-empty dev and challenge sets (dev n={base_dev.size}, "
                          f"challenge n={base_ch.size})")
    rng = np.random.default_rng(seed)
    dev = resampled_means(np.stack([base_dev, comp_dev], axis=1), n_resamples, rng)
    challenge = resampled_means(np.stack([base_ch, comp_ch], axis=1), n_resamples, rng)
    base_gaps = relative_gaps(dev[:, 0], challenge[:, 0])
    ratios = f_bias_values(base_gaps, relative_gaps(dev[:, 1], challenge[:, 1]))
    defined = ratios[~np.isnan(ratios)]
    low, high = percentile_interval(defined, confidence) if defined.size else (None, None)
    base_gap = float(relative_gaps(base_dev.mean(), base_ch.mean()))
    comp_gap = float(relative_gaps(comp_dev.mean(), comp_ch.mean()))
    point = float(f_bias_values(base_gap, comp_gap))
    return {
        "f_bias": None if np.isnan(point) else point, "low": low, "high": high,
        "base_gap": None if np.isnan(base_gap) else base_gap,
        "compressed_gap": None if np.isnan(comp_gap) else comp_gap,
        "base_gap_nonpositive_share": float(np.mean(~(base_gaps > 0))),
        "n_dev": int(base_dev.size), "n_challenge": int(base_ch.size), "n_resamples": n_resamples,
    }


def timing_summary(times) -> dict:
    """Median, first and third quartile and interquartile range of repeated timings (seconds)."""
    values = np.asarray(times, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ConfigError("timing_summary needs a non-empty 1-D list of timings")
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return {"median": float(median), "q1": float(q1), "q3": float(q3), "iqr": float(q3 - q1), "n": int(values.size)}


def speedup_interval(base_times, comp_times, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                     confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """Speedup ``median(base_times) / median(comp_times)`` with a percentile bootstrap interval
    (each list resampled independently, the ratio of medians computed per resample).

    ``measurable`` is True when the interval excludes 1: the timings show a difference that the
    repeat-to-repeat spread cannot explain. With few repeats (< 5 each) the interval is coarse.
    """
    _check(n_resamples, confidence)
    base = np.asarray(base_times, dtype=np.float64)
    comp = np.asarray(comp_times, dtype=np.float64)
    if base.ndim != 1 or comp.ndim != 1 or base.size == 0 or comp.size == 0:
        raise ConfigError("speedup_interval needs two non-empty 1-D lists of timings")
    if (base <= 0).any() or (comp <= 0).any():
        raise ConfigError("timings must be positive (seconds)")
    rng = np.random.default_rng(seed)
    base_medians = np.median(base[rng.integers(0, base.size, size=(n_resamples, base.size))], axis=1)
    comp_medians = np.median(comp[rng.integers(0, comp.size, size=(n_resamples, comp.size))], axis=1)
    low, high = percentile_interval(base_medians / comp_medians, confidence)
    return {"speedup": float(np.median(base) / np.median(comp)), "low": low, "high": high,
            "measurable": bool(low > 1 or high < 1), "n_base": int(base.size), "n_compressed": int(comp.size),
            "n_resamples": n_resamples}
