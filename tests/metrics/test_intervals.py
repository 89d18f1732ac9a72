"""Bootstrap intervals (accuracy, F_bias, speedup) and timing summaries: hand-computed values."""
import numpy as np
import pytest

from forgetless.bootstrap import resampled_means
from forgetless.errors import ConfigError
from forgetless.metrics.intervals import (bootstrap_accuracy, bootstrap_f_bias, relative_gaps, speedup_interval,
                                           timing_summary)


def fixed_accuracy(n, accuracy):
    correct = np.zeros(n, dtype=bool)
    correct[: round(n * accuracy)] = True
    return correct


def test_accuracy_interval_contains_estimate_and_shrinks_with_n():
    small = bootstrap_accuracy(fixed_accuracy(50, 0.8), seed=0)
    large = bootstrap_accuracy(fixed_accuracy(5000, 0.8), seed=0)
    for result in (small, large):
        assert result["accuracy"] == pytest.approx(0.8)
        assert result["low"] < 0.8 < result["high"]
    assert (small["n"], large["n"]) == (50, 5000)
    # the width scales like 1/sqrt(n): 2·1.96·sqrt(0.8·0.2/n) ≈ 0.222 (n=50), 0.0222 (n=5000)
    assert small["high"] - small["low"] == pytest.approx(0.222, abs=0.04)
    assert large["high"] - large["low"] == pytest.approx(0.0222, abs=0.004)
    assert bootstrap_accuracy(fixed_accuracy(50, 0.8), seed=0) == small  # seeded


def test_accuracy_of_empty_set_and_bad_input():
    assert bootstrap_accuracy(np.array([], dtype=bool)) == {"accuracy": None, "low": None, "high": None, "n": 0}
    assert bootstrap_accuracy([True] * 7)["low"] == 1.0  # no spread when every example is right
    with pytest.raises(ConfigError, match="0/1"):
        bootstrap_accuracy([0, 2, 1])
    with pytest.raises(ConfigError, match="n_resamples"):
        bootstrap_accuracy([1, 0], n_resamples=0)


def test_paired_resampling_uses_same_indices():
    values = np.arange(10, dtype=float)
    means = resampled_means(np.stack([values, values * 2], axis=1), 200, np.random.default_rng(3))
    np.testing.assert_allclose(means[:, 1], 2 * means[:, 0])


def test_f_bias_interval_on_constructed_case():
    # base: dev 0.9, challenge 0.6 → gap 1/3; compressed: dev 0.8, challenge 0.4 → gap 0.5; F_bias = 1.5
    result = bootstrap_f_bias(fixed_accuracy(1000, 0.9), fixed_accuracy(1000, 0.6),
                              fixed_accuracy(1000, 0.8), fixed_accuracy(1000, 0.4), seed=0)
    assert result["base_gap"] == pytest.approx(1 / 3)
    assert result["compressed_gap"] == pytest.approx(0.5)
    assert result["f_bias"] == pytest.approx(1.5)
    assert result["low"] < 1.5 < result["high"]
    assert result["low"] > 1.2 and result["high"] < 1.9
    assert result["base_gap_nonpositive_share"] == 0.0
    assert (result["n_dev"], result["n_challenge"], result["n_resamples"]) == (1000, 1000, 1000)


def test_f_bias_without_base_gap_is_flagged():
    # the base model is as good on the challenge set as on dev: gap 0, F_bias undefined
    result = bootstrap_f_bias(fixed_accuracy(200, 0.7), fixed_accuracy(200, 0.7),
                              fixed_accuracy(200, 0.7), fixed_accuracy(200, 0.5), seed=1)
    assert result["f_bias"] is None and result["base_gap"] == 0.0
    assert 0.3 < result["base_gap_nonpositive_share"] < 0.7
    with pytest.raises(ConfigError, match="aligned"):
        bootstrap_f_bias([1, 0], [1], [1], [1])


def test_relative_gap_matches_eq1():
    np.testing.assert_allclose(relative_gaps([0.9, 0.5, 0.0], [0.6, 0.6, 0.1]), [1 / 3, -0.2, np.nan])


def test_timing_summary_quartiles():
    assert timing_summary([4.0, 1.0, 3.0, 2.0, 5.0]) == {"median": 3.0, "q1": 2.0, "q3": 4.0, "iqr": 2.0, "n": 5}


def test_speedup_interval():
    rng = np.random.default_rng(0)
    base, fast = 2.0 + 0.05 * rng.random(9), 1.0 + 0.05 * rng.random(9)
    result = speedup_interval(base, fast, seed=0)
    assert result["speedup"] == pytest.approx(np.median(base) / np.median(fast))
    assert result["low"] <= result["speedup"] <= result["high"] and result["measurable"]
    same = speedup_interval(base, base[::-1], seed=0)
    assert same["speedup"] == 1.0 and not same["measurable"]
    with pytest.raises(ConfigError, match="positive"):
        speedup_interval([1.0, 0.0], [1.0])
