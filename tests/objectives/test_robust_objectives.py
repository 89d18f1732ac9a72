"""RAHP Table 1's robust fine-tuning baselines as objectives: R-Drop, SMART, FreeLB, Child-Tuning_D,
ROSE (first, second, ensemble). Hand-computed math, then one real Trainer step on tiny BERT and
tiny RoBERTa, and an exact checkpoint resume."""
import math
import shutil

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, RobertaConfig, RobertaForSequenceClassification

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.errors import ConfigError
from forgetless.registry import OBJECTIVES
from forgetless.objectives.robust import formulas as rm
from forgetless.objectives.robust.glue import layer_parameters
from forgetless.training.trainer import TrainConfig, fine_tune
from tiny_bert import tiny_tokenizer

torch.set_num_threads(1)
ROBUST = ["rdrop", "smart", "freelb", "child-tuning", "rose-first", "rose-second", "rose-ensemble"]


def tiny_model(kind: str, tokenizer, seed: int = 0):
    torch.manual_seed(seed)
    common = dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, num_labels=2)
    if kind == "bert":
        return BertForSequenceClassification(BertConfig(max_position_embeddings=64, **common)).eval()
    config = RobertaConfig(max_position_embeddings=66, pad_token_id=tokenizer.pad_token_id, type_vocab_size=2, **common)
    return RobertaForSequenceClassification(config).eval()


@pytest.fixture(scope="module")
def data():
    task = synthetic_shortcut_task(n_train=32, n_dev=16, n_challenge=16, hard_fraction=0.25, seed=0)
    return tiny_tokenizer(), task


def train(data, tmp_path, name, kind="bert", steps=1, options=None, seed=0, save_steps=10 ** 6, model=None,
          extras=None):
    tokenizer, task = data
    model = model or tiny_model(kind, tokenizer, seed)
    objective = OBJECTIVES.get(name)(OBJECTIVES.make_config(name, options or {}))
    config = TrainConfig(epochs=1, max_steps=steps, batch_size=8, max_length=32, save_steps=save_steps,
                         logging_steps=1, progress=False, seed=seed)
    return fine_tune(model, tokenizer, task.train, tmp_path / name, config, objective, extras), objective


def snapshot(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


# ----- pure math ---------------------------------------------------------------------------------
def test_rdrop_loss_equals_hand_computed_value():
    logits_1 = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    logits_2 = torch.tensor([[math.log(3.0), 0.0], [1.0, 0.0]])
    labels = torch.tensor([0, 1])
    # row 0: P1 = (.5, .5), P2 = (.75, .25); row 1: identical passes, so no KL
    kl_12 = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    kl_21 = 0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5)
    row0 = -math.log(0.5) - math.log(0.75) + 0.5 * 2.0 * (kl_12 + kl_21)
    p1 = math.exp(0.0) / (math.exp(1.0) + 1.0)
    row1 = -2 * math.log(p1)
    assert rm.rdrop_loss(logits_1, logits_2, labels, 2.0, "mean").item() == pytest.approx((row0 + row1) / 2, abs=1e-6)
    assert rm.symmetric_kl(logits_1, logits_2)[0].item() == pytest.approx(kl_12 + kl_21, abs=1e-6)
    # the authors' reduction: batch-mean cross-entropies, KL summed over the batch (row 1 adds none)
    ce_mean = (-math.log(0.5) - math.log(0.75) - 2 * math.log(p1)) / 2
    authors = ce_mean + 0.5 * 2.0 * (kl_12 + kl_21)
    assert rm.rdrop_loss(logits_1, logits_2, labels, 2.0, "sum").item() == pytest.approx(authors, abs=1e-6)
    with pytest.raises(ValueError, match="reduction"):
        rm.rdrop_loss(logits_1, logits_2, labels, 2.0, "batchmean")
    assert OBJECTIVES.make_config("rdrop", {}).kl_reduction == "sum" and OBJECTIVES.make_config("rdrop", {}).kl_weight == 0.5
    with pytest.raises(ConfigError, match="kl_reduction=batchmean: not one of sum, mean"):
        OBJECTIVES.make_config("rdrop", {"kl_reduction": "batchmean"})


def test_child_tuning_fisher_clips_each_tensor_like_clip_grad_norm():
    grad = torch.tensor([[3.0, 4.0]])  # norm 5
    assert rm.clip_tensor_norm(grad, 1.0).tolist() == [pytest.approx([3 / (5 + 1e-6), 4 / (5 + 1e-6)])]
    assert torch.equal(rm.clip_tensor_norm(grad, 10.0), grad)  # below the bound: factor 1
    assert torch.equal(rm.clip_tensor_norm(grad, None), grad)
    reference = grad.clone().requires_grad_(True)
    reference.grad = grad.clone()
    torch.nn.utils.clip_grad_norm_(reference, 1.0)
    assert torch.allclose(rm.clip_tensor_norm(grad, 1.0), reference.grad, rtol=0, atol=1e-7)


def test_projections_normalisations_and_ema():
    delta = torch.tensor([[[3.0, 4.0]], [[0.3, 0.4]]])  # norms 5 and 0.5
    projected = rm.project_l2(delta, 1.0)
    assert torch.allclose(projected[0], torch.tensor([[0.6, 0.8]])) and torch.equal(projected[1], delta[1])
    assert torch.equal(rm.project_l2(delta, 0.0), torch.zeros_like(delta))
    assert torch.equal(rm.project_linf(delta, 0.5), torch.tensor([[[0.5, 0.5]], [[0.3, 0.4]]]))
    assert torch.allclose(rm.normalize_linf(delta), torch.tensor([[[0.75, 1.0]], [[0.75, 1.0]]]))
    assert torch.allclose(rm.normalize_l2(delta), torch.tensor([[[0.6, 0.8]], [[0.6, 0.8]]]))
    init = rm.freelb_init((2, 3, 4), torch.tensor([[1, 1, 0], [1, 0, 0]]), 0.5, torch.Generator().manual_seed(0))
    assert torch.equal(init[0, 2], torch.zeros(4)) and torch.equal(init[1, 1:], torch.zeros(2, 4))
    assert init[0].abs().max() <= 0.5 / math.sqrt(8) and init[1].abs().max() <= 0.5 / math.sqrt(4)
    average, current = [torch.tensor([1.0, 2.0])], [torch.tensor([3.0, 0.0])]
    rm.ema_update(average, current, 0.9)
    assert torch.allclose(average[0], torch.tensor([1.2, 1.8]))


def test_selection_masks_keep_exact_shares():
    scores = [torch.tensor([[0.1, 0.9], [0.5, 0.3]]), torch.tensor([0.7, 0.2, 0.8, 0.4, 0.6, 0.0])]
    masks = rm.top_share_masks(scores, 0.3)  # round(0.3 * 10) = 3: 0.9, 0.8, 0.7
    assert sum(int(m.sum()) for m in masks) == 3
    assert masks[0].tolist() == [[False, True], [False, False]] and masks[1].tolist() == [True, False, True] + [False] * 3
    risk = torch.tensor([5.0, 1.0, 9.0, 0.0, 7.0, 2.0, 8.0, 3.0, 6.0, 4.0])
    kept = rm.interval_rank_mask(risk, 0.55, 0.95)  # ranks 5..8 of 10: risks 5, 6, 7, 8
    assert kept.tolist() == [1, 0, 0, 0, 1, 0, 1, 0, 1, 0]
    assert rm.interval_rank_mask(torch.arange(20.0), 0.0, 0.4).sum() == 8
    # the reference's rule: torch.quantile bounds, both inclusive; 0…15 at 0.55 / 0.95 → 8.25, 14.25
    assert rm.quantile_interval_mask(torch.arange(16.0), 0.55, 0.95).nonzero().flatten().tolist() == list(range(9, 15))
    assert rm.interval_rank_mask(torch.arange(16.0), 0.55, 0.95).nonzero().flatten().tolist() == list(range(8, 15))
    assert rm.quantile_interval_mask(risk, 0.55, 0.95).tolist() == kept.tolist()  # 10 values: 4.95, 8.55 → same
    assert OBJECTIVES.make_config("rose-first", {}).selection == "quantile"
    with pytest.raises(ConfigError, match="selection=ranks: not one of quantile, rank"):
        OBJECTIVES.make_config("rose-second", {"selection": "ranks"})
    assert rm.second_order_risk(torch.tensor([1.0, 2.0]), torch.tensor([0.2, 0.2]), 0.9).tolist() == \
        pytest.approx([0.5, 0.0])
    first, second = torch.tensor([1.0, 0.0, 1.0, 0.0]), torch.tensor([1.0, 1.0, 0.0, 0.0])
    assert rm.ensemble_mask(first, second, 0.3).tolist() == pytest.approx([1.0, 0.7, 0.3, 0.0])
    assert torch.equal(rm.apply_update_mask(torch.tensor([1.0]), torch.tensor([3.0]), 0.5), torch.tensor([2.0]))


def test_configs_reject_bad_values():
    for name, options in [("rdrop", {"kl_weight": -1}), ("smart", {"momentum": 1.0}), ("freelb", {"ascent_steps": 0}),
                          ("child-tuning", {"kept_share": 0.0}), ("rose-first", {"lower_quantile": 0.9,
                                                                                 "upper_quantile": 0.5}),
                          ("rose-ensemble", {"first_order_weight": 2.0})]:
        with pytest.raises(ConfigError):
            OBJECTIVES.make_config(name, options)
    rose = OBJECTIVES.make_config("rose-second", {})
    assert 1 - (rose.upper_quantile - rose.lower_quantile) == pytest.approx(0.6)  # RAHP Table 1 drops 60%


# ----- model glue --------------------------------------------------------------------------------
def test_smart_perturbation_in_ball_and_bregman_zero_at_start(data):
    tokenizer, task = data
    model = tiny_model("bert", tokenizer).train()
    enc = tokenizer(task.train.text_a[:4], task.train.text_b[:4], padding=True, return_tensors="pt")
    inputs = {**enc, "labels": torch.tensor(task.train.labels[:4])}
    epsilon = 1e-2
    smart = OBJECTIVES.get("smart")(OBJECTIVES.make_config("smart", {"epsilon": epsilon, "step_size": 1.0,
                                                                     "noise_std": 1.0, "ascent_steps": 2,
                                                                     "perturbation": "alg1_literal"}))
    ce, smoothness, bregman, _ = smart.loss_terms(model, inputs)
    assert bregman.item() == 0.0  # anchor θ̃ == θ, same dropout mask
    assert smart.last_perturbation.abs().max().item() == pytest.approx(epsilon)  # the projection binds ...
    assert smart.last_perturbation.abs().max().item() <= epsilon  # ... and holds
    assert smoothness.item() > 0 and torch.isfinite(ce)
    with torch.no_grad():
        model.classifier.weight.add_(0.5)
    _, _, moved, _ = smart.loss_terms(model, inputs)
    assert moved.item() > 0


def test_mtdnn_step_and_losses_by_hand():
    # two tokens, hidden 2: ν = (1e-5, -2e-5) and (0, 3e-5); g = (1, 0.5) and (-2, 0); η = 1e-5, ε = 1e-6
    noise = torch.tensor([[[1e-5, -2e-5], [0.0, 3e-5]]])
    grad = torch.tensor([[[1.0, 0.5], [-2.0, 0.0]]])
    moved = [[2e-5, -1.5e-5], [-2e-5, 3e-5]]
    expected = [[v / (max(abs(x) for x in row) + 1e-6) for v in row] for row in moved]
    assert rm.mtdnn_step(noise, grad, 1e-5, 1e-6)[0].tolist() == [pytest.approx(r, rel=1e-6) for r in expected]
    # token maxima end at 1/(1 + ε/max): no ε-ball
    assert rm.mtdnn_step(noise, grad, 1e-5, 1e-6).abs().amax(-1).flatten().tolist() == \
        pytest.approx([2e-5 / 2.1e-5, 3e-5 / 3.1e-5], rel=1e-6)
    # MT-DNN stable_kl (reduce=False): 2·Σ p·(r(p) − r(y)), r(x) = −log(1/(x+ε) − 1 + ε), summed over rows
    logits, target = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]]), torch.tensor([[math.log(3.0), 0.0], [0.0, 0.0]])
    r = lambda x: -math.log(1 / (x + 1e-6) - 1 + 1e-6)  # noqa: E731
    rows = [(0.5, 0.5, 0.75, 0.25), (0.75, 0.25, 0.5, 0.5)]
    hand = sum(2 * (p0 * (r(p0) - r(y0)) + p1 * (r(p1) - r(y1))) for p0, p1, y0, y1 in rows)
    assert rm.stable_kl_sum(logits, target).item() == pytest.approx(hand, rel=1e-5)
    # SymKlCriterion: the value of the symmetric KL, each direction's gradient through one side only
    a = torch.tensor([[0.0, 0.0]], requires_grad=True)
    b = torch.tensor([[math.log(3.0), 0.0]], requires_grad=True)
    one_side = rm.symmetric_kl_one_side(a, b)
    assert one_side.item() == pytest.approx(rm.symmetric_kl(a, b).item(), abs=1e-7)
    one_side.sum().backward()
    # d/da KL(Q‖P) through log P only = P − Q; d/db KL(P‖Q) through log Q only = Q − P (P = (.5,.5), Q = (.75,.25))
    assert a.grad[0].tolist() == pytest.approx([0.5 - 0.75, 0.5 - 0.25], abs=1e-6)
    assert b.grad[0].tolist() == pytest.approx([0.75 - 0.5, 0.25 - 0.5], abs=1e-6)


def test_smart_mtdnn_perturbation_step_by_hand_on_the_embedding_output(data):
    """At the defaults, the perturbation is one MT-DNN step from σ·noise on the post-LayerNorm
    embedding output, computed here by hand from the same noise and gradient."""
    from forgetless.objectives.robust.glue import embedding_shape, perturbed_embeddings, rng_state, set_rng_state
    from forgetless.objectives.robust.smart import perturbation

    tokenizer, task = data
    model = tiny_model("bert", tokenizer)  # eval: no dropout
    enc = tokenizer(task.train.text_a[:3], task.train.text_b[:3], padding=True, return_tensors="pt")
    config = OBJECTIVES.make_config("smart", {})
    assert (config.perturbation, config.step_size, config.norm_epsilon, config.noise_std) == ("mt_dnn", 1e-5, 1e-6, 1e-5)
    torch.manual_seed(5)
    noise = torch.randn(embedding_shape(model, enc["input_ids"]))
    clean = model(**enc).logits
    state = rng_state()
    got = perturbation(model, dict(enc), clean, noise, state, config)
    nu = (noise * 1e-5).requires_grad_(True)
    outputs = {}
    hook = model.bert.embeddings.register_forward_hook(lambda m, i, o: o + nu)
    adv = model(**enc).logits
    hook.remove()
    p, y = torch.softmax(adv, -1), torch.softmax(clean.detach(), -1)
    r = lambda x: -torch.log(1 / (x + 1e-6) - 1 + 1e-6).detach()  # noqa: E731
    grad, = torch.autograd.grad((2 * p * (r(p) - r(y))).sum(), nu)
    moved = nu.detach() + 1e-5 * grad
    expected = moved / (moved.abs().amax(-1, keepdim=True) + 1e-6)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-7)
    assert got.abs().amax(-1).min().item() > 0.9  # about 1 per token, not an ε-ball of 1e-5
    set_rng_state(state)
    with perturbed_embeddings(model, got, after_layer_norm=True):
        outputs["adv"] = model(**enc).logits
    assert not torch.allclose(outputs["adv"], clean)


def test_smart_smoothness_is_a_real_share_of_the_loss_at_the_defaults(data):
    """On a tiny BERT whose predictions depend on its input (weights drawn with std 0.2: at BERT's
    0.02 a random tiny BERT's logits are nearly constant and nothing moves them), the authors'
    perturbation gives R_s ≈ 3% of the CE (measured 0.028); the literal Alg. 1 reading ≈ 7e-8."""
    tokenizer, task = data
    torch.manual_seed(0)
    common = dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, num_labels=2, max_position_embeddings=64, initializer_range=0.2)
    model = BertForSequenceClassification(BertConfig(**common)).train()
    enc = tokenizer(task.train.text_a[:8], task.train.text_b[:8], padding=True, return_tensors="pt")
    inputs = {**enc, "labels": torch.tensor(task.train.labels[:8])}
    torch.manual_seed(0)
    ce, smoothness, _, _ = OBJECTIVES.build("smart").loss_terms(model, inputs)
    assert smoothness.item() > 1e-3 * ce.item()
    torch.manual_seed(0)
    literal = OBJECTIVES.get("smart")(OBJECTIVES.make_config("smart", {"perturbation": "alg1_literal"}))
    ce_literal, smoothness_literal, _, _ = literal.loss_terms(model, inputs)
    assert smoothness_literal.item() < 1e-6 * ce_literal.item()  # the literal reading barely smooths
    with pytest.raises(ConfigError, match="perturbation=mtdnn: not one of mt_dnn, alg1_literal"):
        OBJECTIVES.make_config("smart", {"perturbation": "mtdnn"})


def test_freelb_k1_eps0_equals_plain_training(data, tmp_path):
    plain, _ = train(data, tmp_path, "ce")
    free, _ = train(data, tmp_path, "freelb", options={"ascent_steps": 1, "epsilon": 0.0, "init_magnitude": 0.0})
    a, b = snapshot(plain), snapshot(free)
    assert all(torch.equal(a[n], b[n]) for n in a)
    moved, _ = train(data, tmp_path / "other", "freelb", options={"ascent_steps": 2})
    assert any(not torch.equal(a[n], p) for n, p in snapshot(moved).items())


def test_child_tuning_keeps_share_and_freezes_the_rest(data, tmp_path):
    tokenizer, _ = data
    model = tiny_model("bert", tokenizer)
    before = {n: p.detach().clone() for n, p in layer_parameters(model)}
    trained, objective = train(data, tmp_path, "child-tuning", options={"kept_share": 0.3}, model=model)
    total = sum(m.numel() for m in objective.masks)
    assert sum(int(m.sum()) for m in objective.masks) == round(0.3 * total)
    changed, decayed = 0, 0
    for name, param in layer_parameters(trained):
        mask = objective.masks[objective.names.index(name)]
        # frozen entries: no Adam step, but AdamW's weight decay as the reference ChildTuningAdamW
        # (one step at lr 5e-5, decay 0.01, on the matrices; biases and LayerNorms have none)
        factor = 1 - 5e-5 * 0.01 if param.ndim >= 2 else 1.0
        expected = before[name][~mask] * factor
        assert torch.allclose(param[~mask], expected, rtol=1e-7, atol=0), name
        decayed += int((param[~mask] != before[name][~mask]).sum()) if param.ndim >= 2 else 0
        changed += int((param[mask] != before[name][mask]).sum())
    assert changed > 0.5 * round(0.3 * total) and decayed > 0


def test_rose_first_updates_exactly_the_kept_tensors(data, tmp_path):
    tokenizer, _ = data
    model = tiny_model("bert", tokenizer)
    before = {n: p.detach().clone() for n, p in layer_parameters(model, weights_only=True)}
    trained, objective = train(data, tmp_path, "rose-first", model=model, options={"selection": "rank"})
    n = len(before)
    expected = int(0.95 * n) - int(0.55 * n)
    assert int(objective.mask.sum()) == expected
    changed = [name for name, p in layer_parameters(trained, weights_only=True) if not torch.equal(p, before[name])]
    assert len(changed) == expected
    assert {objective.names[i] for i in range(n) if objective.mask[i] == 1} == set(changed)


def test_rose_second_and_ensemble_masks_after_the_first_step(data, tmp_path):
    _, second = train(data, tmp_path, "rose-second", steps=2, options={"selection": "rank"})
    n = len(second.params)
    assert int(second.mask.sum()) == int(0.95 * n) - int(0.55 * n)
    _, ensemble = train(data, tmp_path, "rose-ensemble", steps=2, options={"first_order_weight": 0.3,
                                                                           "selection": "rank"})
    assert all(min(abs(v - c) for c in (0.0, 0.3, 0.7, 1.0)) < 1e-6 for v in ensemble.mask.tolist())
    assert float(ensemble.mask.sum()) == pytest.approx(int(0.95 * n) - int(0.55 * n))  # both masks keep the same count


@pytest.mark.parametrize("kind", ["bert", "roberta"])
@pytest.mark.parametrize("name", ROBUST)
def test_every_robust_objective_trains_one_step(data, tmp_path, name, kind):
    tokenizer, _ = data
    model = tiny_model(kind, tokenizer)
    before = snapshot(model)
    extra_column = {"sample_weight": [1.0] * len(data[1].train)}  # columns an objective does not use are ignored
    trained, _ = train(data, tmp_path, name, kind=kind, extras=extra_column)
    after = snapshot(trained)
    assert all(torch.isfinite(p).all() for p in after.values())
    assert any(not torch.equal(before[n], after[n]) for n in before)


@pytest.mark.parametrize("name", ["smart", "child-tuning"])
def test_resume_from_checkpoint_is_bit_identical(data, tmp_path, name):
    """2 steps with save_steps=1, then the second step again from checkpoint-1 with a fresh model."""
    uninterrupted, first = train(data, tmp_path, name, steps=2, save_steps=1)
    expected = snapshot(uninterrupted)
    folder = tmp_path / name
    assert (folder / "checkpoint-1").is_dir() and (folder / "checkpoint-2").is_dir()
    shutil.rmtree(folder / "checkpoint-2")
    resumed, second = train(data, tmp_path, name, steps=2, save_steps=1)
    got = snapshot(resumed)
    assert all(torch.equal(expected[n], got[n]) for n in expected)
    if name == "smart":
        a, b = dict(first.anchor.named_parameters()), dict(second.anchor.named_parameters())
        assert all(torch.equal(a[n], b[n]) for n in a)
    else:
        assert all(torch.equal(x, y) for x, y in zip(first.masks, second.masks))
