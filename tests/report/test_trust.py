"""Trust warnings fire on a chance-level fixture and a single-class predictor, not on a healthy one."""
import math

import pytest

from forgetless.errors import ConfigError
from forgetless.report import trust


def healthy_warnings():
    return [w for w in (
        trust.near_chance("dev", 0.86, num_classes=3, majority_share=0.4),
        trust.gap_not_positive(0.2),
        trust.single_class("challenge", trust.predicted_shares(["a"] * 60 + ["b"] * 40)),
        trust.near_constant_generation("dev", [f"answer {i % 30}" for i in range(100)]),
        trust.more_training_than_base(3, 3),
    ) if w]


def test_healthy_fixture_has_no_warning():
    assert healthy_warnings() == []


def test_chance_level_fixture():
    at_chance = trust.near_chance("dev", 0.36, num_classes=3)
    assert at_chance and "chance" in at_chance and "0.333" in at_chance
    at_majority = trust.near_chance("dev", 0.72, num_classes=2, majority_share=0.70)
    assert at_majority and "majority" in at_majority
    # just above the margin: 1/3 + 0.05 + 0.01
    assert trust.near_chance("dev", 1 / 3 + trust.CHANCE_MARGIN + 0.01, num_classes=3) is None
    with pytest.raises(ConfigError):
        trust.near_chance("dev", 0.5, num_classes=1)


def test_the_chance_rule_is_worded_by_what_it_tests():
    """The rule is "at most chance + 0.05": a value below chance is never called "within 0.05 of" it."""
    assert trust.not_above(0.0, 0.25, "chance") == "0.000 is at most 0.05 above chance (0.250): 0.250 below it"
    assert trust.not_above(0.44, 0.5, "chance") == "0.440 is at most 0.05 above chance (0.500): 0.060 below it"
    assert trust.not_above(0.27, 0.25, "chance") == "0.270 is at most 0.05 above chance (0.250): 0.020 above it"
    assert trust.near_chance("dev", 0.5, 2) == ("base model on dev: accuracy 0.500 is at most 0.05 above chance (0.500 "
                                                "for 2 classes): at it; its gaps and F_bias are not meaningful")


def test_single_class_predictor():
    shares = trust.predicted_shares(["entailment"] * 95 + ["contradiction"] * 5)
    assert shares == {"entailment": 0.95, "contradiction": 0.05}
    warning = trust.single_class("hans", shares)
    assert warning and "'entailment'" in warning and "95.0%" in warning
    assert trust.single_class("hans", {"a": 90, "b": 10}) is None  # exactly 90% is not > 90%
    assert trust.single_class("hans", {"a": 91, "b": 9}) is not None  # counts are normalised


def test_gap_generation_and_epochs():
    assert "≤ 0" in trust.gap_not_positive(-0.01)
    assert "undefined" in trust.gap_not_positive(math.nan)
    assert trust.near_constant_generation("dev", ["the answer"] * 95 + [f"x{i}" for i in range(5)]) is not None
    assert trust.near_constant_generation("dev", []) is None
    assert "5 epochs" in trust.more_training_than_base(3, 5)


def test_below_chance_on_a_challenge_set_is_said():
    from forgetless.report.trust import below_chance

    text = below_chance("advglue", 0.358, 2)
    assert text.startswith("base model on advglue: accuracy 0.358 is below chance (0.500)")
    assert below_chance("advglue", 0.49, 2) is None and below_chance("hans", 0.30, 3) is None
