"""Hand-computed values for the objective math (Du et al. §5, appendix B)."""
import math

import pytest
import torch

from forgetless.objectives.formulas import (focal_loss, focal_weights, jtt_weights, kd_loss, kl_teacher_student,
                                        smooth_probs, weighted_ce)

LN2 = math.log(2.0)


def test_vanilla_and_weighted_ce():
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])  # p = [.5,.5], [.75,.25]
    labels = torch.tensor([0, 1])
    assert weighted_ce(logits, labels).item() == pytest.approx((LN2 + math.log(4.0)) / 2, abs=1e-6)
    assert weighted_ce(logits, labels, torch.tensor([2.0, 0.0])).item() == pytest.approx(LN2, abs=1e-6)


def test_distil_value():
    # p_S = [.5, .5], p_T = [.8, .2], y = 0:
    # CE = ln 2; KL = .8 ln(1.6) + .2 ln(.4) = 0.1927448; L = .1·ln2 + .9·KL
    student = torch.tensor([[0.0, 0.0]])
    teacher = torch.tensor([[0.8, 0.2]])
    kl = 0.8 * math.log(1.6) + 0.2 * math.log(0.4)
    assert kl_teacher_student(student, teacher).item() == pytest.approx(kl, abs=1e-6)
    assert kd_loss(student, torch.tensor([0]), teacher, lam=0.9).item() == pytest.approx(0.1 * LN2 + 0.9 * kl, abs=1e-6)
    assert kd_loss(student, torch.tensor([0]), teacher, lam=0.0).item() == pytest.approx(LN2, abs=1e-6)


def test_kl_ignores_zero_teacher_entries():
    assert kl_teacher_student(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]])).item() == pytest.approx(LN2, abs=1e-6)


def test_smooth_hand_value_and_rmc_loss():
    p = torch.tensor([[0.8, 0.2]])
    s = smooth_probs(p, 0.5)  # sqrt(.8) : sqrt(.2) = 2 : 1
    assert torch.allclose(s, torch.tensor([[2 / 3, 1 / 3]]), atol=1e-6)
    # eq. 4 with the smoothed target: .1·ln2 + .9·(2/3 ln(4/3) + 1/3 ln(2/3))
    expected = 0.1 * LN2 + 0.9 * (2 / 3 * math.log(4 / 3) + 1 / 3 * math.log(2 / 3))
    assert kd_loss(torch.zeros(1, 2), torch.tensor([0]), s, 0.9).item() == pytest.approx(expected, abs=1e-6)


def test_smooth_identity_at_one_and_flattens_as_degree_falls():
    p = torch.tensor([[0.7, 0.2, 0.1], [0.05, 0.9, 0.05]])
    assert torch.allclose(smooth_probs(p, 1.0), p, atol=1e-6)
    entropy = lambda q: -(q * q.log()).sum(-1)  # noqa: E731
    previous = entropy(p)
    for d in (0.9, 0.7, 0.5, 0.2):
        now = entropy(smooth_probs(p, d))
        assert torch.all(now > previous)
        previous = now
    assert torch.allclose(smooth_probs(p, 0.0), torch.full_like(p, 1 / 3), atol=1e-6)


def test_smooth_per_sample_degrees():
    p = torch.tensor([[0.8, 0.2], [0.8, 0.2]])
    s = smooth_probs(p, torch.tensor([1.0, 0.5]))
    assert torch.allclose(s, torch.tensor([[0.8, 0.2], [2 / 3, 1 / 3]]), atol=1e-6)
    with pytest.raises(ValueError):
        smooth_probs(p, torch.tensor([-0.1, 1.0]))


def test_focal_hand_value():
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])  # p_gold = .5, .75
    labels = torch.tensor([0, 0])
    w = focal_weights(torch.tensor([0.5, 0.75]), gamma=2.0)  # (.25, .0625) / .15625
    assert torch.allclose(w, torch.tensor([1.6, 0.4]), atol=1e-6)
    expected = (1.6 * LN2 + 0.4 * math.log(4 / 3)) / 2
    assert focal_loss(logits, labels, 2.0).item() == pytest.approx(expected, abs=1e-6)
    # gamma = 0: every weight 1, plain CE
    assert focal_loss(logits, labels, 0.0).item() == pytest.approx(weighted_ce(logits, labels).item(), abs=1e-6)


def test_focal_weights_average_one():
    torch.manual_seed(0)
    p = torch.rand(37)
    assert focal_weights(p, 2.0).mean().item() == pytest.approx(1.0, abs=1e-6)
    assert torch.equal(focal_weights(torch.ones(4), 2.0), torch.ones(4))  # all certain: no 0/0


def test_jtt_weights():
    w = jtt_weights(torch.tensor([True, False, False, False]), 2.0)  # (2,1,1,1)/1.25
    assert torch.allclose(w, torch.tensor([1.6, 0.8, 0.8, 0.8]))
    torch.manual_seed(1)
    errors = torch.rand(101) < 0.3
    assert jtt_weights(errors, 2.0).mean().item() == pytest.approx(1.0, abs=1e-6)
    assert torch.allclose(jtt_weights(torch.zeros(5, dtype=torch.bool)), torch.ones(5))
    with pytest.raises(ValueError):
        jtt_weights(errors, 0.0)
