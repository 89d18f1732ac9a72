"""Pure head-scoring math (Michel et al. 2019; RAHP eq. 1-5) on hand-made tensors."""
import math

import pytest
import torch

from forgetless.errors import ConfigError
from forgetless.methods._shared.head_layout import HeadLayout
from forgetless.methods.rahp.scores import (composite_score, count_from_ratio, head_sq_norms, log_fisher,
                                     margin, minmax, normalize_per_layer, protected_heads, rahp_select,
                                     robustness_ratio, select_lowest, select_top_k)

LAYOUT = HeadLayout(((("encoder", 0, "self"), 3), (("encoder", 1, "self"), 3)))


def test_margin_by_hand():
    logits = torch.tensor([[2.0, 0.5, 1.0], [0.0, 3.0, -1.0], [1.0, 1.0, 4.0]])
    labels = torch.tensor([0, 2, 1])
    assert margin(logits, labels).tolist() == [1.0, -4.0, -3.0]


def test_robustness_ratio():
    c = robustness_ratio(torch.tensor([1.0, -2.0]), torch.tensor([4.0, 0.5]), eps=0.0)
    assert c.tolist() == [0.25, -4.0]
    assert robustness_ratio(torch.tensor([1.0]), torch.tensor([0.0]), eps=0.5).item() == 2.0


def test_head_sq_norms_rows_and_columns():
    grad = torch.arange(12.0).reshape(4, 3)  # 2 heads of dim 2 along rows
    rows = head_sq_norms(grad, 0, 2)
    assert rows.tolist() == [float((grad[:2] ** 2).sum()), float((grad[2:] ** 2).sum())]
    cols = head_sq_norms(grad.T, 1, 2)
    assert torch.equal(rows, cols)
    bias = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert head_sq_norms(bias, 0, 2).tolist() == [5.0, 25.0]
    with pytest.raises(ConfigError):
        head_sq_norms(grad, 0, 3)


def test_minmax_and_constant():
    assert minmax(torch.tensor([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert minmax(torch.tensor([5.0, 5.0])).tolist() == [0.0, 0.0]


def test_composite_score_eq5():
    delta_c = torch.tensor([0.0, 1.0, 2.0])
    info = torch.tensor([10.0, 30.0, 20.0])
    s = composite_score(delta_c, info, alpha=0.5, beta=1.0)
    assert torch.allclose(s, torch.tensor([0.0 - 0.0, 0.5 - 0.5, 1.0 - 0.25]))


def test_count_from_ratio_floor_and_range():
    assert count_from_ratio(0.6, 144) == 86  # ⌊0.6·144⌋
    assert count_from_ratio(0.6, 72) == 43
    assert count_from_ratio(0.5, 6) == 3
    for bad in (-0.1, 1.5):
        with pytest.raises(ConfigError):
            count_from_ratio(bad, 10)


def test_protection_top_gamma_by_fisher():
    fisher = torch.tensor([1.0, 9.0, 3.0, 7.0, 5.0, 2.0, 8.0, 4.0, 6.0, 0.5])
    assert protected_heads(fisher, 0.2).nonzero().flatten().tolist() == [1, 6]
    assert not protected_heads(fisher, 0.0).any()


def test_rahp_select_hand_matrix():
    # 2 layers x 3 heads; ΔC favours pruning heads 0, 1, 2; head 1 has the top Fisher score
    delta_c = torch.tensor([5.0, 4.0, 3.0, 0.0, 1.0, 2.0])
    fisher = torch.tensor([1.0, 100.0, 1.0, 1.0, 1.0, 1.0])
    out = rahp_select(delta_c, fisher, ratio=0.5, alpha=0.5, beta=1.0, gamma=0.2)
    # K = ⌊0.5·6⌋ = 3; γ: ⌊0.2·6⌋ = 1 protected (head 1), never pruned despite high ΔC
    assert out["protected"].tolist() == [False, True, False, False, False, False]
    assert int(out["pruned"].sum()) == 3
    assert out["pruned"].tolist() == [True, False, True, False, False, True]
    assert not (out["pruned"] & out["protected"]).any()
    info = log_fisher(fisher)
    assert torch.allclose(out["score"], minmax(delta_c) - 0.5 * minmax(info))


def test_rahp_select_rejects_impossible_ratio():
    with pytest.raises(ConfigError):
        rahp_select(torch.zeros(10), torch.arange(10.0), ratio=0.95, gamma=0.2)  # K = 9 > 10 − 2 protected


def test_select_top_k_and_lowest():
    scores = torch.tensor([0.3, 0.9, 0.1, 0.9, 0.5])
    assert select_top_k(scores, 2).nonzero().flatten().tolist() == [1, 3]  # tie: lower index first
    assert select_top_k(scores, 2, exclude=torch.tensor([0, 1, 0, 0, 0]).bool()).nonzero().flatten().tolist() == [3, 4]
    assert select_lowest(scores, 2).nonzero().flatten().tolist() == [0, 2]
    with pytest.raises(ConfigError):
        select_top_k(scores, 5, exclude=torch.tensor([1, 0, 0, 0, 0]).bool())


def test_layout_flatten_keep_matrix():
    flat = torch.arange(6.0)
    assert LAYOUT.total == 6
    assert LAYOUT.entries()[4] == (("encoder", 1, "self"), 1)
    keep = LAYOUT.keep_dict(torch.tensor([1, 0, 0, 1, 1, 1]).bool())
    assert keep == {("encoder", 0, "self"): [1, 2], ("encoder", 1, "self"): []}
    uneven = HeadLayout(((("encoder", 0, "self"), 2), (("encoder", 1, "self"), 1)))
    m = uneven.matrix(torch.tensor([1.0, 2.0, 3.0]))
    assert m[0].tolist() == [1.0, 2.0] and m[1, 0] == 3.0 and math.isnan(m[1, 1])
    assert torch.equal(LAYOUT.flatten(LAYOUT.unflatten(flat)), flat)


def test_normalize_per_layer_l2():
    values = torch.tensor([3.0, 4.0, 0.0, 1.0, 0.0, 0.0])
    out = normalize_per_layer(values, LAYOUT)
    assert torch.allclose(out, torch.tensor([0.6, 0.8, 0.0, 1.0, 0.0, 0.0]))


def test_scoring_subset_seeded_stratified():
    from forgetless.data.task import ExampleSet
    from forgetless.methods._shared.calibration import scoring_subset

    examples = ExampleSet("train", [f"t{i}" for i in range(100)], [0] * 70 + [1] * 30, ["a", "b"])
    first = scoring_subset(examples, 20, seed=1)
    assert len(first) == 20 and sum(first.labels) == 6
    assert first.text_a == scoring_subset(examples, 20, seed=1).text_a
    assert len(scoring_subset(examples, 500, seed=1)) == 100
    with pytest.raises(ConfigError):
        scoring_subset(examples, 0, seed=1)
