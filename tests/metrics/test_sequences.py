"""The confidence sequences of ``metrics/sequences.py`` (Waudby-Smith & Ramdas 2024, PrPl-EB; without
replacement, 2020): their coverage holds at every sample size at once (simulated, fixed seed: the true
mean leaves the interval at some t in at most α of the runs), without replacement they close on the
exact mean, they shrink with n, and bad input is one error."""
import numpy as np
import pytest

from forgetless.errors import ConfigError
from forgetless.metrics.sequences import confidence_sequence, paired_sequence

POPULATION = np.concatenate([np.ones(60), -np.ones(90), np.zeros(250)])  # paired differences, mean -0.075


def _missed(draws, confidence: float, population) -> float:
    """Share of runs in which the true mean falls outside the interval at any t."""
    truth = (POPULATION.mean() + 1) / 2
    misses = 0
    for d in draws:
        low, high = confidence_sequence((d + 1) / 2, confidence, population)
        misses += bool(np.any((low > truth) | (high < truth)))
    return misses / len(draws)


def test_coverage_holds_at_every_n_without_and_with_replacement():
    rng = np.random.default_rng(0)
    without = [rng.permutation(POPULATION) for _ in range(300)]
    with_replacement = [rng.choice(POPULATION, size=POPULATION.size) for _ in range(300)]
    assert _missed(without, 0.9, POPULATION.size) <= 0.1
    assert _missed(with_replacement, 0.9, None) <= 0.1
    # the same streams against a wrong mean are rejected most of the time: the sequences are not vacuous
    low, high = confidence_sequence((without[0] + 1) / 2, 0.9, POPULATION.size)
    assert high[-50] < (0.05 + 1) / 2 and low[-1] == high[-1] == pytest.approx((POPULATION.mean() + 1) / 2)


def test_paired_sequence_shrinks_and_closes_on_the_exact_mean():
    d = np.random.default_rng(1).permutation(POPULATION)
    widths = [paired_sequence(d[:n], 0.95, POPULATION.size)["width"] for n in (50, 100, 200, 300, 400)]
    assert all(a > b for a, b in zip(widths, widths[1:])) and widths[0] < 2
    every = paired_sequence(d, 0.95, POPULATION.size)
    assert every["low"] == every["high"] == pytest.approx(-0.075) and every["value"] == pytest.approx(-0.075)
    iid = paired_sequence(d[:200], 0.95, None)
    assert iid["width"] > paired_sequence(d[:200], 0.95, POPULATION.size)["width"]  # the finite population helps
    assert -1 <= iid["low"] <= iid["value"] <= iid["high"] <= 1 and iid["n"] == 200


def test_one_observation_gives_a_wide_but_valid_interval():
    low, high = confidence_sequence([1.0], 0.95)
    assert 0 <= low[0] < 1 and high[0] == 1.0


@pytest.mark.parametrize("values,confidence,population", [([1.5], 0.95, None), ([], 0.95, None), ([0.5], 1.0, None),
                                                          ([0.5, 0.5], 0.95, 1)])
def test_bad_input_is_one_error(values, confidence, population):
    with pytest.raises(ConfigError, match="confidence sequence"):
        confidence_sequence(values, confidence, population)
    with pytest.raises(ConfigError, match="paired differences"):
        paired_sequence([2.0])
