"""F_bias (Du et al. eq. 1) and pooled accuracy on hand-computed cases."""
import math

import pytest

from forgetless.errors import ConfigError
from forgetless.metrics.bias import f_bias, pooled_accuracy, relative_gap


def test_relative_gap_and_f_bias_by_hand():
    # base: dev 0.80, adv 0.60 → gap 0.25; compressed: dev 0.78, adv 0.39 → gap 0.5; F_bias 2.0
    assert relative_gap(0.80, 0.60) == pytest.approx(0.25)
    assert f_bias(0.80, 0.60, 0.78, 0.39) == pytest.approx(2.0)


def test_percent_and_fraction_scales_agree():
    assert f_bias(84.0, 60.0, 80.0, 50.0) == pytest.approx(f_bias(0.84, 0.60, 0.80, 0.50))
    # (80-50)/80 = 0.375; (84-60)/84 = 0.285714 → 1.3125
    assert f_bias(84.0, 60.0, 80.0, 50.0) == pytest.approx(0.375 / (24 / 84))


def test_pooled_accuracy_weights_by_size():
    # FEVER-style Sym1 (n=717) + Sym2 (n=712)
    assert pooled_accuracy([(0.60, 717), (0.70, 712)]) == pytest.approx((0.6 * 717 + 0.7 * 712) / 1429)
    assert pooled_accuracy([(50.0, 100), (80.0, 300)]) == pytest.approx(72.5)


def test_degenerate_and_bad_inputs():
    assert math.isnan(f_bias(0.8, 0.8, 0.7, 0.6))  # base has no gap: undefined
    with pytest.raises(ConfigError):
        relative_gap(0.0, 0.1)
    with pytest.raises(ConfigError):
        pooled_accuracy([])
    with pytest.raises(ConfigError):
        pooled_accuracy([(0.5, 0)])
