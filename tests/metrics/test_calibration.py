"""Expected calibration error and hard / easy confidence (Du et al. Observation 2), by hand."""
import numpy as np
import pytest

from forgetless.data.task import ExampleSet
from forgetless.metrics.calibration import (calibration_section, expected_calibration_error,
                                             mapped_probabilities, set_calibration)
from forgetless.report.markdown import calibration_markdown
from typed_cards import typed_card


def test_ece_by_hand():
    # bins of width 0.5: {0.3, 0.4} (acc 1/2, conf .35) and {0.9, 1.0} (acc 1, conf .95)
    ece = expected_calibration_error([0.3, 0.4, 0.9, 1.0], [1, 0, 1, 1], bins=2)
    assert ece == pytest.approx(0.5 * abs(0.5 - 0.35) + 0.5 * abs(1.0 - 0.95))
    assert expected_calibration_error([0.8] * 5, [1, 1, 1, 1, 0]) == pytest.approx(0.0)
    assert expected_calibration_error([], []) is None


def test_mapped_probabilities_sum_task_labels():
    probs = np.array([[0.2, 0.5, 0.3]])
    out = mapped_probabilities(probs, {0: 0, 1: 1, 2: 1}, 2)
    assert np.allclose(out, [[0.2, 0.8]])


def test_hard_easy_overconfidence():
    examples = ExampleSet("dev", ["a", "b", "c", "d"], [0, 1, 0, 1], ["x", "y"], hard=[False, False, True, True])
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])  # easy right, hard wrong
    out = set_calibration(probs, examples, bins=10)
    assert out["easy"]["accuracy"] == 1.0 and out["hard"]["accuracy"] == 0.0
    assert out["hard"]["confidence"] == pytest.approx(0.65) and out["hard"]["overconfidence"] == pytest.approx(0.65)
    assert out["easy"]["ece"] == pytest.approx(0.15)


def test_card_section_and_markdown():
    class Task:
        kind = "classification"
        dev = ExampleSet("dev", ["a", "b"], [0, 1], ["x", "y"], hard=[False, True])

        def eval_sets(self):
            return {"dev": self.dev}

    predictions = {role: {"dev": {"predicted": [0, 0], "probabilities": [[0.9, 0.1], [0.7, 0.3]]}}
                   for role in ("base", "compressed")}
    section = calibration_section(Task(), predictions)
    assert section["sets"]["dev"]["compressed"]["hard"]["n"] == 1
    text = "\n".join(calibration_markdown(typed_card({"calibration": section})))
    assert "| dev | hard | 1 |" in text
    no_probs = {role: {"dev": {"predicted": [0, 0]}} for role in ("base", "compressed")}
    assert calibration_section(Task(), no_probs) is None


def test_ece_bins_are_right_closed_at_edge_confidences():
    """Guo et al.'s bins ((m−1)/M, m/M]: 0.5 closes bin (0.4, 0.5], 0.55 is in (0.5, 0.6]."""
    # 0.5 and 0.55 in different bins: ½·|1 − 0.5| + ½·|0 − 0.55|
    assert expected_calibration_error([0.5, 0.55], [1, 0], bins=10) == pytest.approx(0.525)
    # 0.45 and 0.5 share (0.4, 0.5]: |½ − 0.475|
    assert expected_calibration_error([0.45, 0.5], [1, 0], bins=10) == pytest.approx(0.025)
    # 0 joins (0, 0.1] (the first bin), 1.0 closes the last one
    assert expected_calibration_error([0.0, 0.1], [1, 0], bins=10) == pytest.approx(abs(0.5 - 0.05))
    assert expected_calibration_error([0.95, 1.0], [1, 0], bins=10) == pytest.approx(abs(0.5 - 0.975))
    assert expected_calibration_error([0.3, 0.30001], [1, 0], bins=10) == pytest.approx(0.5 * 0.7 + 0.5 * 0.30001)
