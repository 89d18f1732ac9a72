"""Eq. 2 normalisation, loss variance, global magnitude masks and the agreement measure."""
import warnings

import numpy as np
import pytest

from forgetless.objectives.rmc.config import DifficultyConfig, default_alpha
from forgetless.objectives.rmc.difficulty import difficulty_degree, loss_variance, per_sample_losses, split_agreement
from forgetless.errors import ConfigError


def test_eq2_hand_values():
    d = difficulty_degree(np.array([0.0, 1.0, 2.0, 4.0]), alpha=0.5)
    assert np.allclose(d, [0.5, 0.625, 0.75, 1.0])
    d = difficulty_degree(np.array([3.0, 5.0]), alpha=0.2)  # min → α, max → 1
    assert np.allclose(d, [0.2, 1.0])


def test_eq2_degenerate_all_equal_is_one_without_division():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = difficulty_degree(np.array([0.3, 0.3, 0.3]), alpha=0.5)
    assert np.array_equal(d, np.ones(3))


def test_eq2_rejects_bad_alpha():
    with pytest.raises(ConfigError):
        difficulty_degree(np.array([0.0, 1.0]), alpha=1.5)


def test_per_sample_losses_and_variance():
    losses = per_sample_losses(np.array([[0.0, 0.0], [np.log(3.0), 0.0]]), [0, 1])
    assert np.allclose(losses, [np.log(2.0), np.log(4.0)])
    assert np.allclose(loss_variance(np.array([[1.0, 2.0], [3.0, 2.0]])), [1.0, 0.0])


def test_agreement_on_known_toy_case():
    v = np.array([0.1, 0.2, 0.9, 0.8])
    perfect = split_agreement(v, [False, False, True, False])  # k=1: top-1 variance is the hard one
    assert perfect["topk"] == 1.0 and perfect["auroc"] == 1.0
    half = split_agreement(v, [False, True, True, False])  # top-2 = {2, 3}: samples 1 and 3 wrong
    assert half["topk"] == 0.5
    assert half["median"] == 0.5  # median .55: {2, 3} hard
    assert half["auroc"] == pytest.approx(0.75)  # hard {.2,.9} vs easy {.1,.8}: 3 of 4 pairs
    assert half["low_variance_easy_precision"] == 0.5
    assert half["n_hard"] == 2 and half["n"] == 4
    assert half["topk_chance"] == 0.5 and perfect["topk_chance"] == pytest.approx(0.625)  # .25² + .75²


def test_difficulty_config_and_alpha_defaults():
    assert default_alpha("mnli-small") == 0.5 and default_alpha("fever") == 0.3 and default_alpha("qqp") == 0.2
    assert DifficultyConfig(sparsities=(0.5, 0.2)).sparsities == (0.2, 0.5)
    with pytest.raises(ConfigError):
        DifficultyConfig(sparsities=(0.5,))
    with pytest.raises(ConfigError):
        DifficultyConfig(schedule="full")
    assert "0.2, 0.35, 0.5, 0.65, 0.85" in DifficultyConfig().describe()
