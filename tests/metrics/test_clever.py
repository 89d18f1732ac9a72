"""CLEVER (Weng et al. 2018): reverse-Weibull fit, ball sampling, score, and a run on a tiny BERT."""
import pytest
import torch
import transformers
from scipy import stats

from forgetless.data.task import ExampleSet
from forgetless.errors import ConfigError
from forgetless.metrics.clever import (CleverConfig, choose_fit, clever_evaluate, clever_example, clever_score,
                                        fit_reverse_weibull, sample_ball, summarise)

from typed_cards import typed_card


@pytest.mark.parametrize("shape,loc,scale", [(2.0, 3.0, 0.5), (5.0, 10.0, 2.0), (3.0, 0.7, 0.1)])
def test_reverse_weibull_fit_recovers_location(shape, loc, scale):
    x = stats.weibull_max.rvs(shape, loc=loc, scale=scale, size=500, random_state=0)
    fit = fit_reverse_weibull(x)
    assert not fit["fallback"]
    assert abs(fit["location"] - loc) < 0.15 * scale  # the location is the hardest parameter to pin down
    assert fit["location"] >= x.max()
    assert abs(fit["shape"] - shape) / shape < 0.25
    assert fit["ks_pvalue"] > 0.05


def test_reverse_weibull_fit_degenerate_and_errors():
    assert fit_reverse_weibull([2.0, 2.0, 2.0])["location"] == 2.0
    with pytest.raises(ConfigError):
        fit_reverse_weibull([1.0, 2.0])
    with pytest.raises(ConfigError):
        fit_reverse_weibull([1.0, float("nan"), 2.0])


def test_divergent_best_fit_is_flagged_and_the_card_shows_both_means():
    # maxima in [1, 2]: a location above 2 + 5·1 = 7 diverged. The best KS fit (p 0.9) is at 40.
    candidates = [(0.9, 0.3, 40.0, 30.0), (0.6, 2.0, 2.2, 0.8), (0.2, 5.0, 2.05, 1.0)]
    fit = choose_fit(candidates, top=2.0, spread=1.0)
    assert fit["fallback"] and fit["fallback_reason"] == "diverged" and fit["reference_location"] == 40.0
    assert (fit["location"], fit["shape"], fit["ks_pvalue"]) == (2.2, 2.0, 0.6)  # the best fit that holds
    every = choose_fit([(0.9, 0.3, 40.0, 30.0), (0.5, 0.2, 9.0, 9.0)], top=2.0, spread=1.0)
    assert every["fallback"] and every["location"] == 2.0 and every["reference_location"] == 40.0
    plain = choose_fit([(0.4, 0.3, 40.0, 30.0), (0.6, 2.0, 2.2, 0.8)], top=2.0, spread=1.0)
    assert not plain["fallback"] and plain["reference_location"] is None and plain["location"] == 2.2
    assert choose_fit([], top=2.0, spread=1.0)["fallback_reason"] == "no fit"
    details = [{"margin": 1.0, "score": 0.5, "uncapped": 0.5, "fit": fit},
               {"margin": 1.0, "score": 0.1, "uncapped": 0.1, "fit": plain},
               {"margin": -1.0, "score": 0.0, "uncapped": 0.0, "fit": None}]
    summary = summarise(details)
    assert summary["fallbacks"] == 1 and summary["examples"] == 3
    assert summary["mean"] == pytest.approx(0.2) and summary["mean_without_fallbacks"] == pytest.approx(0.05)
    from forgetless.report.markdown import _robustness

    params = {"examples": 3, "batches": 3, "samples": 2, "norm": "2", "radius": 1.0}
    side = {**summary, "set": "dev", "seconds": 1.0, "params": params}
    text = "\n".join(_robustness(typed_card({"robustness": {"clever": {"base": side, "compressed": side}}})))
    assert "| fallback Weibull fits (best-KS fit diverged) | 1/3 | 1/3 | |" in text
    assert "| mean CLEVER score without those examples | 0.05 | 0.05 | |" in text


def test_sample_ball_radius_and_uniformity():
    g = torch.Generator().manual_seed(0)
    x = sample_ball(4000, (3,), 2.0, "2", g)
    norms = x.norm(dim=1)
    assert norms.max() <= 2.0 + 1e-6
    # uniform in a 3-ball: P(‖x‖ ≤ r) = (r/R)³
    assert abs(float((norms <= 1.0).float().mean()) - 1 / 8) < 0.02
    y = sample_ball(1000, (2, 5), 0.3, "inf", g)
    assert y.shape == (1000, 2, 5) and y.abs().max() <= 0.3


def test_clever_score_cap_and_misclassified():
    assert clever_score(2.0, 4.0, radius=1.0) == (0.5, 0.5)
    assert clever_score(2.0, 0.5, radius=1.0) == (1.0, 4.0)
    assert clever_score(-1.0, 4.0, radius=1.0) == (0.0, 0.0)


def test_config_validation():
    with pytest.raises(ConfigError):
        CleverConfig(norm="1")
    with pytest.raises(ConfigError):
        CleverConfig(batches=2)
    with pytest.raises(ConfigError):
        CleverConfig(radius=0.0)


class FakeTokenizer:
    pad_token_id = 0

    def __call__(self, a, b=None, truncation=True, max_length=16):
        ids = [[2] + [5 + (sum(map(ord, w)) % 30) for w in text.split()][: max_length - 2] + [3] for text in a]
        return {"input_ids": ids, "attention_mask": [[1] * len(i) for i in ids]}


def tiny_model():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=40, hidden_size=12, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=16, num_labels=2, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0, max_position_embeddings=32)
    return transformers.BertForSequenceClassification(cfg).eval()


def test_clever_lipschitz_bounds_center_gradient_and_score():
    model = tiny_model()
    for p in model.parameters():
        p.requires_grad_(False)
    tok = FakeTokenizer()
    enc = tok(["a b c d"])
    with torch.no_grad():
        label = int(model(input_ids=torch.tensor(enc["input_ids"])).logits.argmax())
    row = {"input_ids": enc["input_ids"][0], "attention_mask": enc["attention_mask"][0], "labels": label}
    cfg = CleverConfig(batches=8, samples=8, radius=0.5)
    out = clever_example(model, row, cfg, torch.Generator().manual_seed(0))
    ids = torch.tensor([row["input_ids"]])
    embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    logits = model(inputs_embeds=embeds).logits[0]
    g = logits[label] - logits[1 - label]
    (grad,) = torch.autograd.grad(g, embeds)
    assert out["margin"] == pytest.approx(g.item(), rel=1e-5)
    assert out["lipschitz"] >= 0.5 * float(grad.norm())  # sampled maxima are near the centre gradient
    assert out["score"] == pytest.approx(min(out["margin"] / out["lipschitz"], 0.5))


def test_clever_evaluate_is_seeded_and_reports_params():
    model = tiny_model()
    examples = ExampleSet("dev", ["a b", "c d e", "f", "g h i j"], [0, 1, 0, 1], ["x", "y"])
    cfg = CleverConfig(examples=3, batches=4, samples=4, radius=1.0, max_length=16)
    first = clever_evaluate(model, FakeTokenizer(), examples, cfg)
    second = clever_evaluate(model, FakeTokenizer(), examples, cfg)
    assert first["mean"] == second["mean"] and first["examples"] == 3
    assert first["params"]["batches"] == 4 and first["params"]["norm"] == "2"
    assert all(d["score"] >= 0 for d in first["per_example"])
    assert all(p.requires_grad for p in model.parameters())
