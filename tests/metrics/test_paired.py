"""Paired, item-by-item comparison (metrics/paired.py) and the card's LLM section built from per-item
records (report/llm_section.py), against hand-computed values."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from forgetless.errors import ConfigError
from forgetless.metrics.paired import (EASY, HARD, MEDIUM, choice_kl, difference_of_deltas, flips, macro_intervals,
                                       margin, mcnemar_exact, paired_intervals, terciles)
from forgetless.report.llm_section import llm_section, near_chance_warnings


def test_exact_mcnemar_by_hand():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 0) == pytest.approx(2 * 1 / 8)                    # 2 · P[Bin(3, ½) ≤ 0]
    assert mcnemar_exact(5, 1) == pytest.approx(2 * (1 + 6) / 64)             # 2 · (C(6,0) + C(6,1)) / 2⁶
    assert mcnemar_exact(1, 5) == mcnemar_exact(5, 1)
    assert mcnemar_exact(10, 2) == pytest.approx(2 * (1 + 12 + 66) / 4096)
    assert mcnemar_exact(2, 1) == 1.0                                        # 2 · 4/8 capped at 1
    with pytest.raises(ConfigError):
        mcnemar_exact(-1, 2)


def test_flips_count_both_directions():
    out = flips([1, 1, 0, 0, 1], [1, 0, 1, 0, 0])
    assert (out["correct_to_wrong"], out["wrong_to_correct"], out["n"]) == (2, 1, 5)
    assert out["flip_rate"] == pytest.approx(3 / 5) and out["mcnemar_p"] == 1.0
    with pytest.raises(ConfigError):
        flips([1, 0], [1, 0, 1])


def test_choice_kl_by_hand():
    # p = softmax(0, 0) = (½, ½); q = (¾, ¼): KL = ½ ln(½ / ¾) + ½ ln(½ / ¼) = ½ ln(4/3)
    assert choice_kl([0.0, 0.0], [math.log(0.75), math.log(0.25)]) == pytest.approx(0.5 * math.log(4 / 3))
    assert choice_kl([-3.0, -3.0], [math.log(0.75) - 7, math.log(0.25) - 7]) == pytest.approx(0.5 * math.log(4 / 3))
    assert choice_kl([-1.0, -2.0, -5.0], [-1.0, -2.0, -5.0]) == 0.0


def test_margin_and_terciles_by_hand():
    assert margin([-1.0, -3.0, -2.0], 0) == 1.0 and margin([-1.0, -3.0, -2.0], 1) == -2.0
    # ranks: -2 (item 5), -1 (1) | 0 (3), 0.5 (0) | 2 (2), 3 (4)
    assert terciles([0.5, -1, 2, 0, 3, -2]).tolist() == [MEDIUM, HARD, EASY, MEDIUM, EASY, HARD]
    assert np.bincount(terciles(np.arange(7.0)), minlength=3).tolist() == [3, 2, 2]


def test_paired_and_macro_intervals():
    base, comp = np.array([1, 1, 0, 0, 1, 1, 0, 1.0]), np.array([1, 0, 0, 0, 1, 1, 1, 0.0])
    out = paired_intervals(base, comp, n_resamples=500, seed=3)
    assert out["base"]["value"] == 0.625 and out["compressed"]["value"] == 0.5 and out["delta"]["value"] == -0.125
    assert out["delta"]["low"] <= -0.125 <= out["delta"]["high"] and out["delta"]["n"] == 8
    same = paired_intervals(base, base, n_resamples=200)
    assert same["delta"]["low"] == same["delta"]["high"] == 0.0  # paired: the same items every resample
    macro = macro_intervals([([1, 1, 0, 0], [1, 0, 0, 0]), ([1, 1, 1], [1, 1, 1])], n_resamples=300)
    assert macro["base"]["value"] == pytest.approx(0.75) and macro["compressed"]["value"] == pytest.approx(0.625)
    assert macro["delta"]["value"] == pytest.approx(-0.125) and macro["base"]["n"] == 7
    diff = difference_of_deltas(([1, 1, 1, 1], [1, 1, 1, 0]), ([1, 1, 0, 0], [0, 0, 0, 0]), n_resamples=300)
    assert diff["value"] == pytest.approx(-0.5 - -0.25) and diff["low"] <= diff["value"] <= diff["high"]


def _items(rows):
    """Multiple-choice records: (gold, base lls, compressed lls) per item, 4 characters per choice."""
    out = {"base": [], "compressed": []}
    for doc, (gold, b, c) in enumerate(rows):
        for role, lls in (("base", b), ("compressed", c)):
            best = int(np.argmax(lls))
            out[role].append({"doc": doc, "gold": gold, "ll": lls, "greedy": [False] * len(lls),
                              "chars": [4] * len(lls), "acc": int(best == gold), "acc_norm": int(best == gold)})
    return out


def test_llm_section_from_records_by_hand():
    rows = [(0, [-1.0, -3.0], [-1.0, -3.0]),  # both right, margin 2
            (0, [-1.0, -1.5], [-2.0, -1.0]),  # flips correct → wrong
            (1, [-1.0, -4.0], [-1.0, -4.0]),  # both wrong, margin -3
            (1, [-2.0, -1.0], [-2.0, -1.0]),  # both right, margin 1
            (0, [-4.0, -1.0], [-1.0, -3.0]),  # flips wrong → correct
            (0, [-1.0, -5.0], [-1.0, -5.0])]  # both right, margin 4
    good = _items(rows)
    chance = _items([(0, [-3.0, -1.0], [-3.0, -1.0]), (1, [-1.0, -2.0], [-1.0, -2.0])])  # base 0 of 2: at chance
    predictions = {role: {"good": {"output_type": "multiple_choice", "primary": "acc_norm", "items": good[role]},
                          "coin": {"output_type": "multiple_choice", "primary": "acc", "items": chance[role]}}
                   for role in ("base", "compressed")}
    sets = {"good": SimpleNamespace(size=10, source="good.yaml"), "coin": SimpleNamespace(size=2, source="coin.yaml")}
    task = SimpleNamespace(suite=SimpleNamespace(sets=sets))
    results = {role: {"zero_shot": {"engine": "lm-evaluation-harness"}, "sets": {}} for role in ("base", "compressed")}
    section = llm_section(task, results, predictions, seed=0, n_resamples=200)
    t = section["tasks"]["good"]
    assert (t["flips"]["correct_to_wrong"], t["flips"]["wrong_to_correct"], t["n"]) == (1, 1, 6)
    assert t["acc_norm"]["base"]["value"] == pytest.approx(4 / 6) and t["acc_norm"]["delta"]["value"] == 0.0
    kl_flip = choice_kl([-1.0, -1.5], [-2.0, -1.0])
    kl_back = choice_kl([-4.0, -1.0], [-1.0, -3.0])
    assert t["kl"]["value"] == pytest.approx((kl_flip + kl_back) / 6)
    # base margins (acc_norm: per character, 4 each): 0.5, 0.125, -0.75, 0.25, -0.75, 1.0 → hard: items 2, 4
    hard = t["hard_easy"]["hard"]
    assert hard["n"] == 2 and hard["flips"]["wrong_to_correct"] == 1 and hard["margin_range"] == [-0.75, -0.75]
    assert t["hard_easy"]["easy"]["n"] == 2 and t["hard_easy"]["easy"]["flips"]["correct_to_wrong"] == 0
    coin = section["tasks"]["coin"]
    assert coin["near_chance"] and not coin["in_headline"] and coin["chance"] == 0.5
    assert section["headline_tasks"] == ["good"] and section["pooled"]["tasks"] == ["good"]
    assert section["headline"]["base"]["value"] == pytest.approx(4 / 6)
    warnings = near_chance_warnings(task, predictions)
    assert warnings == ["base model on coin: acc 0.000 is at most 0.05 above chance (0.500): 0.500 below it; the task is kept "
                        "out of the headline and the pooled numbers"]


def test_llm_section_refuses_items_that_differ():
    records = _items([(0, [-1.0, -2.0], [-1.0, -2.0])])
    records["compressed"][0]["doc"] = 7
    predictions = {role: {"t": {"output_type": "multiple_choice", "primary": "acc", "items": records[role]}}
                   for role in ("base", "compressed")}
    task = SimpleNamespace(suite=SimpleNamespace(sets={"t": SimpleNamespace(size=1, source="t.yaml")}))
    with pytest.raises(ValueError, match="different items"):
        llm_section(task, {r: {"zero_shot": {}, "sets": {}} for r in ("base", "compressed")}, predictions)


def test_prediction_rows_probabilities_follow_the_metric_picked():
    """acc_norm picks by log-likelihood per character: the row's probabilities are the softmax of those
    scores, so the picked choice is the most probable one (raw log-likelihoods would favour choice 0)."""
    from forgetless.report.honest import llm_rows

    item = {"doc": 0, "gold": 1, "ll": [-4.0, -5.0], "chars": [2, 10], "acc": 0, "acc_norm": 1}
    records = {"output_type": "multiple_choice", "primary": "acc_norm", "items": [item], "predicted": [1]}
    row = llm_rows({"base": {"t": records}, "compressed": {"t": records}})[0]
    e = math.exp(-0.5 + 2.0)  # softmax(-2.0, -0.5)
    assert row["predicted"] == 1 and row["probabilities"] == pytest.approx([1 / (1 + e), e / (1 + e)], abs=1e-6)
    assert row["log_likelihoods"] == [-4.0, -5.0] and row["choice_lengths"] == [2, 10]


def test_two_other_models_are_pooled_over_the_base_headline():
    """A bit budget's uniform check compares two compressed models on the run's items: their pooled numbers cover
    the tasks the BASE is above chance on, even where the first of them is at chance (it once used the uniform
    model's own headline, which dropped a task the base answers)."""
    from forgetless.report.llm_section import headline_and_pooled, headline_names

    base = _items([(0, [-1.0, -2.0], [-1.0, -2.0]), (1, [-2.0, -1.0], [-2.0, -1.0]), (0, [-1.0, -3.0], [-1.0, -3.0])])
    uniform = _items([(0, [-2.0, -1.0], [-1.0, -2.0]), (1, [-1.0, -2.0], [-2.0, -1.0]), (0, [-1.0, -3.0], [-3.0, -1.0])])
    task = SimpleNamespace(suite=SimpleNamespace(sets={"t": SimpleNamespace(size=3, source="t.yaml")}))
    records = {role: {"t": {"output_type": "multiple_choice", "primary": "acc", "items": uniform[role]}}
               for role in ("base", "compressed")}  # "base": the uniform model (1 of 3: at chance), "compressed": the mix
    names = headline_names(task, {"t": {"output_type": "multiple_choice", "primary": "acc", "items": base["base"]}})
    assert names == ["t"]  # the base answers 3 of 3
    headline, pooled = headline_and_pooled(records, names, seed=0, n_resamples=100)
    assert pooled["tasks"] == ["t"] and headline["base"]["value"] == pytest.approx(1 / 3)
    assert pooled["accuracy"]["delta"]["value"] == pytest.approx(1 / 3)  # the mix 2 of 3
