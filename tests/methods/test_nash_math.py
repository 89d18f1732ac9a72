"""NASH math with hand-computed expectations: uniform layer selection (§4.1), hard-concrete gates
(Louizos et al. 2018), the Lagrangian term and its gradient signs, distillation losses."""
import math

import pytest
import torch

from forgetless.errors import ConfigError
from forgetless.methods.nash import hard_concrete as hc
from forgetless.methods._shared.layer_selection import select_layers
from forgetless.objectives.nash_distil.objective import hidden_mse
from forgetless.objectives.nash_distil.objective import token_kd_loss as kd_loss


@pytest.mark.parametrize("keep, expected_1_indexed", [(2, [1, 12]), (3, [1, 6, 11]), (4, [1, 4, 7, 10]),
                                                      (6, [1, 3, 5, 7, 9, 11])])
def test_uniform_selection_l12(keep, expected_1_indexed):
    # L_s = {floor((L-1)/(d_s-1))*l + 1}: L=12 -> step 11, 5, 3, 2
    assert [i + 1 for i in select_layers(12, keep, "stride")] == expected_1_indexed


def test_selection_edge_cases_and_baselines():
    assert select_layers(12, 1, "stride") == [0]  # d_s = 1: the l = 0 term, layer 1
    assert select_layers(6, 6, "stride") == list(range(6))  # d_s = L: every layer
    assert select_layers(6, 3, "stride") == [0, 2, 4]  # NASH §4.1 "uniform"
    assert select_layers(6, 3, "spread") == [0, 2, 5]  # evenly spread, both ends (truncate)
    assert select_layers(6, 3, "first") == [0, 1, 2]
    assert select_layers(6, 3, "last") == [3, 4, 5]
    assert select_layers(1, 1) == [0]
    for bad in ((6, 0, "stride"), (0, 1, "stride"), (6, 2, "middle"), (6, 9, "stride")):
        with pytest.raises(ConfigError):
            select_layers(*bad)
    with pytest.raises(ConfigError, match="ambiguous.*spread.*stride"):
        select_layers(6, 3, "uniform")


def test_hard_concrete_samples_in_unit_interval_with_exact_zeros_and_ones():
    torch.manual_seed(0)
    z = hc.sample_gates(torch.zeros(20000))
    assert float(z.min()) == 0.0 and float(z.max()) == 1.0
    assert 0.0 <= float(z.min()) and float(z.max()) <= 1.0
    # P(z = 0) at log alpha = 0 is 1 - 0.8318 = 0.168 (eq. 12); sampled fraction close to it
    assert abs(float((z == 0).float().mean()) - (1 - 0.8318222)) < 0.01
    assert float(hc.sample_gates(torch.full((100,), 20.0)).min()) == 1.0
    assert float(hc.sample_gates(torch.full((100,), -20.0)).max()) == 0.0


def test_expected_l0_and_deterministic_values_hand_set():
    log_alpha = torch.tensor([0.0, 2.0, -2.0, 10.0, -10.0])
    p = hc.prob_nonzero(log_alpha)
    # sigmoid(log_alpha - beta * log(-gamma / zeta)), beta = 2/3, gamma = -0.1, zeta = 1.1
    assert p[:3].tolist() == pytest.approx([0.8318222, 0.9733667, 0.4009753], abs=1e-6)
    shift = (2 / 3) * math.log(0.1 / 1.1)
    assert float(p.sum()) == pytest.approx(sum(1 / (1 + math.exp(-(a - shift))) for a in (0, 2, -2, 10, -10)), abs=1e-5)
    z = hc.deterministic_gates(log_alpha)
    # clip(sigmoid(log_alpha) * 1.2 - 0.1, 0, 1)
    expected = [0.5, min(1.0, 1.2 / (1 + math.exp(-2)) - 0.1), max(0.0, 1.2 / (1 + math.exp(2)) - 0.1), 1.0, 0.0]
    assert z.tolist() == pytest.approx(expected, abs=1e-6)


def test_lagrangian_value_and_gradient_signs():
    s_hat = torch.tensor(0.2, requires_grad=True)
    lam1 = hc.ascent(torch.nn.Parameter(torch.tensor(2.0)))
    lam2 = hc.ascent(torch.nn.Parameter(torch.tensor(3.0)))
    r = hc.lagrangian_term(s_hat, 0.3, lam1, lam2)
    assert float(r.detach()) == pytest.approx(2 * (-0.1) + 3 * 0.01)  # -0.17
    r.backward()
    # dR/dlambda1 = s - t = -0.1, negated for ascent; dR/dlambda2 = (s - t)^2 = 0.01, negated
    assert float(lam1.grad) == pytest.approx(0.1) and float(lam2.grad) == pytest.approx(-0.01)
    # the gates are *minimised*: dR/ds = lambda1 + 2 lambda2 (s - t) = 2 - 0.6
    assert float(s_hat.grad) == pytest.approx(1.4)
    # a descent step on lambda1 (lr 1) moves it towards -inf while the model is below target
    with torch.no_grad():
        lam1 -= lam1.grad
    assert float(lam1) == pytest.approx(1.9)


def test_target_warmup_and_budget_mask():
    assert [hc.target_at(s, 0.3, 10) for s in (0, 5, 10, 20)] == pytest.approx([0.0, 0.15, 0.3, 0.3])
    assert hc.target_at(3, 0.3, 0) == 0.3
    keep = hc.budget_mask(torch.tensor([3.0, 1.0, 2.0, 0.0]), torch.tensor([10.0, 10.0, 5.0, 1.0]), 16.0)
    assert keep.tolist() == [True, False, True, True]  # 10 + 5 + 1 fit, the second 10 does not


def test_kd_loss_hand_computed():
    student = torch.log(torch.tensor([[[0.5, 0.5], [0.9, 0.1]]]))
    teacher = torch.log(torch.tensor([[[0.9, 0.1], [0.9, 0.1]]]))
    mask = torch.tensor([[True, False]])
    kl_ts = 0.9 * math.log(0.9 / 0.5) + 0.1 * math.log(0.1 / 0.5)  # KL(p_t || p_s), first token only
    kl_st = 0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1)
    assert float(kd_loss(student, teacher, mask)) == pytest.approx(kl_ts, abs=1e-6)
    assert float(kd_loss(student, teacher, mask, direction="reverse")) == pytest.approx(kl_st, abs=1e-6)
    assert float(kd_loss(student, teacher, torch.tensor([[True, True]]))) == pytest.approx(kl_ts / 2, abs=1e-6)
    # batchmean (CoFi-style): the per-sequence sum over target tokens, averaged over 2 sequences
    two = (torch.cat([student, student]), torch.cat([teacher, teacher]), torch.tensor([[True, False], [True, True]]))
    assert float(kd_loss(*two, reduction="batchmean")) == pytest.approx((kl_ts + kl_ts) / 2, abs=1e-6)
    assert float(kd_loss(*two, reduction="token")) == pytest.approx(2 * kl_ts / 3, abs=1e-6)
    with pytest.raises(ConfigError, match="kl_reduction"):
        kd_loss(*two, reduction="sum")


def test_hidden_mse_pairs_and_mask():
    s = [torch.zeros(1, 2, 2), torch.ones(1, 2, 2)]
    t = [torch.ones(1, 2, 2) * 2, torch.ones(1, 2, 2) * 3, torch.ones(1, 2, 2)]
    assert float(hidden_mse(s, t, [(0, 0), (1, 2)])) == pytest.approx(4.0 + 0.0)
    t2 = [torch.tensor([[[1.0, 1.0], [5.0, 5.0]]])]
    assert float(hidden_mse(s[:1], t2, [(0, 0)], torch.tensor([[1, 0]]))) == pytest.approx(1.0)
