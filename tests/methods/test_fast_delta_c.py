"""Fast ΔC for RAHP (methods/rahp/fast_delta_c.py): the first-order estimate against finite differences
of C in one head gate, the hybrid boundary window on hand-made scores, hybrid vs exact decisions
on tiny BERTs (through the rahp method), and mode validation."""
import pytest
import torch
import transformers

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.errors import ConfigError
from forgetless.methods.rahp.fast_delta_c import (boundary_window, eager_attention, ExactDeltaC,
                                           first_order_delta_c_scores, gated_c_and_gate_grads, heads_to_compute,
                                           hybrid_delta_c, merge_exact, refine_near_cut)
from forgetless.metrics.predict import scoring_mode
from forgetless.methods.rahp.model_scoring import ExampleHeadGates, delta_c_scores, fisher_scores
from forgetless.methods.rahp.scores import margin, rahp_select
from forgetless.methods.base import CompressionContext
from forgetless.registry import METHODS
from forgetless.models.gates import Gates
from forgetless.training.trainer import TrainConfig

from test_rahp_scoring import batch_of  # noqa: E402  (one helper for padded scoring batches)

torch.set_num_threads(1)


def tiny(layers=2, heads=3, hidden=12, labels=3, seed=0, attn="eager"):
    torch.manual_seed(seed)
    cfg = transformers.BertConfig(vocab_size=40, hidden_size=hidden, num_hidden_layers=layers,
                                  num_attention_heads=heads, intermediate_size=16, num_labels=labels,
                                  max_position_embeddings=32, initializer_range=0.3, attn_implementation=attn)
    return transformers.BertForSequenceClassification(cfg).eval()


BATCH = batch_of([[2, 7, 9, 3, 5], [2, 11, 3, 0, 0], [2, 4, 6, 8, 3]], [5, 3, 4], [1, 2, 0])


def reference_c(model, batch):
    """C(x, M) = g / ‖∇_x g‖₂ (ε = 0), written out in float64 without forgetless's scoring code."""
    embeds = model.get_input_embeddings()(batch["input_ids"]).detach().requires_grad_(True)
    g = margin(model(inputs_embeds=embeds, attention_mask=batch["attention_mask"]).logits, batch["labels"])
    (grad,) = torch.autograd.grad(g.sum(), embeds)
    return (g / grad.reshape(grad.shape[0], -1).norm(dim=1)).detach()


def test_first_order_equals_finite_difference_in_each_head_gate():
    model = tiny().double()
    gates = ExampleHeadGates(model)
    with scoring_mode(model, freeze=True):
        c, grads = gated_c_and_gate_grads(model, BATCH, gates, eps=0.0)
    gates.remove()
    assert grads.shape == (3, 6) and grads.dtype == torch.float64
    assert torch.allclose(c, reference_c(model, BATCH), rtol=1e-10)
    step = 2.0 ** -16  # exact in the float32 gates of ``Gates``
    fd = torch.zeros(3, 6, dtype=torch.float64)
    with Gates(model, ffn=False) as shared:
        keys = list(shared.heads)
        for h in range(6):
            key, head = keys[h // 3], h % 3
            values = []
            for sign in (1, -1):
                with torch.no_grad():
                    for gate in shared.heads.values():
                        gate.fill_(1.0)
                    shared.heads[key][head] = 1.0 + sign * step
                values.append(reference_c(model, BATCH))
            fd[:, h] = (values[0] - values[1]) / (2 * step)
    assert fd.abs().max() > 1e-3  # the check is not vacuous
    assert torch.allclose(grads, fd, rtol=1e-3, atol=1e-9 * float(fd.abs().max()))
    delta, baseline = first_order_delta_c_scores(model, [BATCH], eps=0.0)
    assert torch.allclose(delta.double(), -fd.mean(dim=0), rtol=1e-3, atol=1e-6)
    assert torch.allclose(baseline.double(), c, rtol=1e-5)


def test_first_order_restores_sdpa_and_leaves_the_model_as_it_was():
    model = tiny(attn="sdpa")
    before = model(input_ids=BATCH["input_ids"], attention_mask=BATCH["attention_mask"]).logits
    delta, _ = first_order_delta_c_scores(model, [BATCH])
    assert delta.shape == (6,) and torch.isfinite(delta).all()
    assert model.config._attn_implementation == "sdpa"
    assert all(p.requires_grad for p in model.parameters())
    after = model(input_ids=BATCH["input_ids"], attention_mask=BATCH["attention_mask"]).logits
    assert torch.equal(before, after)  # gate hooks removed
    with eager_attention(model):
        assert model.config._attn_implementation == "eager"
    assert model.config._attn_implementation == "sdpa"


def test_boundary_window_and_merge_by_hand():
    score = torch.tensor([0.9, 0.1, 0.5, 0.7, 0.3, 0.8])
    protected = torch.tensor([False, False, False, True, False, False])
    # unprotected order by S: 0, 5, 2, 4, 1; cut K = 2 → last pruned 5, first kept 2
    assert boundary_window(score, protected, 2, 1).nonzero().flatten().tolist() == [2, 5]
    assert boundary_window(score, protected, 2, 2).nonzero().flatten().tolist() == [0, 2, 4, 5]
    assert not boundary_window(score, protected, 2, 0).any()
    assert boundary_window(score, protected, 2, 9).tolist() == [True, True, True, False, True, True]
    assert merge_exact(torch.tensor([1.0, 2.0, 3.0]), {2: -1.0, 0: 5.0}).tolist() == [5.0, 2.0, -1.0]
    with pytest.raises(ConfigError, match="window"):
        boundary_window(score, protected, 2, -1)


def test_heads_to_compute_adds_the_delta_c_extremes():
    delta_c = torch.tensor([0.0, 4.0, 1.0, 2.0, 3.0, -1.0])
    fisher = torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 9.0])  # head 5 protected (γ = 1/6)
    need = heads_to_compute(delta_c, fisher, ratio=0.5, alpha=0.5, beta=1.0, gamma=1 / 6, width=1, extremes=1)
    # S order (Fisher equal among unprotected): 1, 4, 3 | 2, 0; cut after K = 3 → 3 and 2; extremes 1 and 5
    assert need.nonzero().flatten().tolist() == [1, 2, 3, 5]
    need = heads_to_compute(delta_c, fisher, ratio=0.5, alpha=0.5, beta=1.0, gamma=1 / 6, width=0, extremes=2)
    assert need.nonzero().flatten().tolist() == [0, 1, 4, 5]  # ΔC order 5, 0, 2, 3, 4, 1
    with pytest.raises(ConfigError, match="extremes"):
        heads_to_compute(delta_c, fisher, 0.5, 0.5, 1.0, 1 / 6, 1, extremes=0)


def test_refine_near_cut_fixes_a_misranked_boundary_head_asking_only_for_needed_heads():
    exact = torch.tensor([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    first_order = torch.tensor([5.0, 4.0, 1.5, 2.0, 1.0, 0.0])  # head 2 estimated below head 3
    fisher = torch.ones(6)  # equal Fisher, γ = 0: S orders heads by ΔC; K = ⌊0.5·6⌋ = 3
    pruned = lambda dc: rahp_select(dc, fisher, 0.5, 0.5, 1.0, 0.0)["pruned"].nonzero().flatten().tolist()  # noqa: E731
    assert pruned(first_order) == [0, 1, 3] and pruned(exact) == [0, 1, 2]
    calls = []

    def exact_fn(heads):
        calls.append(sorted(heads))
        return {h: float(exact[h]) for h in heads}

    out = refine_near_cut(first_order, fisher, 0.5, 0.5, 1.0, 0.0, 1, exact_fn, extremes=1)
    # round 1: window around the cut (heads 3, 2) and the ΔC extremes (0, 5); round 2 asks nothing new
    assert calls == [[0, 2, 3, 5]] and out["iterations"] == 1
    assert pruned(out["delta_c"]) == [0, 1, 2]
    assert out["delta_c"].tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]

def test_hybrid_values_are_exact_where_computed_and_first_order_elsewhere():
    model = tiny(layers=3, heads=4, hidden=16, labels=2)
    batches = [batch_of([[2, 5, 6, 3], [2, 8, 3, 0], [2, 9, 10, 3]], [4, 3, 4], [0, 1, 0]),
               batch_of([[2, 4, 7, 3], [2, 12, 3, 0]], [4, 3], [1, 1])]
    exact, _ = delta_c_scores(model, batches)
    fisher = fisher_scores(model, batches)
    exact_for = ExactDeltaC(model, batches)
    subset = exact_for([7, 2, 7])
    assert sorted(subset) == [2, 7]
    assert torch.allclose(torch.tensor([subset[2], subset[7]]), exact[[2, 7]], rtol=1e-4, atol=1e-7)
    later = exact_for([4])  # a second round reuses the baseline C of the first: same values as a full run
    assert exact_for.baseline is not None and abs(later[4] - float(exact[4])) <= 1e-4 * abs(float(exact[4])) + 1e-7
    shifted, _ = delta_c_scores(model, batches, heads=[4], baseline=exact_for.baseline + 1.0)  # the given one is used
    assert abs(float(shifted[0]) - (later[4] - 1.0)) < 1e-5
    with pytest.raises(ConfigError, match="baseline"):
        delta_c_scores(model, batches, heads=[4], baseline=torch.cat([exact_for.baseline, exact_for.baseline]))
    out = hybrid_delta_c(model, batches, fisher, ratio=0.5, alpha=0.5, beta=1.0, gamma=0.1, window=1, extremes=2)
    computed = sorted(out["exact"])
    assert 0 < len(computed) < 12 and out["iterations"] >= 1
    others = [i for i in range(12) if i not in out["exact"]]
    assert torch.allclose(out["delta_c"][computed], exact[computed], rtol=1e-4, atol=1e-7)
    assert torch.equal(out["delta_c"][others], out["first_order"][others])
    # fixed point: the heads next to the cut and the extremes of the final ΔC are exact
    need = heads_to_compute(out["delta_c"], fisher, 0.5, 0.5, 1.0, 0.1, 1, extremes=2)
    assert set(need.nonzero().flatten().tolist()) <= set(computed)


class WordTokenizer:
    """Hashing word tokenizer (no vocabulary files)."""

    pad_token_id = 0

    def __call__(self, a, b=None, truncation=True, max_length=16):
        def words(text):
            return [5 + (sum(map(ord, w)) % 90) for w in text.split()]

        ids = [([2] + words(t) + [3] + (words(b[i]) + [3] if b else []))[:max_length] for i, t in enumerate(a)]
        return {"input_ids": ids, "attention_mask": [[1] * len(x) for x in ids]}


def tiny_classifier():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=24, num_labels=2, max_position_embeddings=40,
                                  initializer_range=0.3)
    return transformers.BertForSequenceClassification(cfg).eval()


def test_hybrid_prunes_the_same_heads_as_exact_through_the_method(tmp_path):
    task = synthetic_shortcut_task(n_train=48, n_dev=16, n_challenge=16, seed=0)
    decisions, records, notes = {}, {}, {}
    for mode in ("exact", "hybrid", "first-order"):
        teacher = tiny_classifier()
        ctx = CompressionContext(task=task, tokenizer=WordTokenizer(), teacher=teacher, work_dir=tmp_path / mode,
                                 train_config=TrainConfig(epochs=1, batch_size=16, max_length=24, progress=False))
        # ρ = 0.5 of 8 heads, γ = 0: K = 4, a window of 4 covers every head, so hybrid must equal exact
        config = METHODS.make_config("rahp", {"ratio": 0.5, "protect": 0.0, "scoring_examples": 12,
                                              "scoring_batch": 6, "scoring_length": 16, "recovery": "none",
                                              "delta_c_mode": mode, "hybrid_window": 4})
        method = METHODS.get("rahp")(config)
        method.compress(teacher, ctx)
        art = method.artifacts()
        decisions[mode], records[mode] = art["decision"]["pruned"], art["scores"]
        notes[mode] = [n for n in ctx.notes if n.startswith("rahp:")][0]
    assert len(decisions["exact"]) == 4 and decisions["hybrid"] == decisions["exact"]
    assert records["hybrid"]["hybrid"]["exact_head_indices"] == list(range(8))
    assert torch.allclose(torch.tensor(records["hybrid"]["delta_c"]), torch.tensor(records["exact"]["delta_c"]),
                          rtol=1e-4, atol=1e-7)
    assert records["exact"]["delta_c_mode"] == "exact" and records["exact"]["masked_passes"] == 8 * 12
    assert records["first-order"]["masked_passes"] == 0 and "hybrid" not in records["first-order"]
    assert set(records["hybrid"]["seconds"]) >= {"delta_c_first_order", "delta_c_exact", "fisher", "total"}
    assert "hybrid, exact for 8 heads near the cut" in notes["hybrid"] and "first-order;" in notes["first-order"]
    # the card says how many pruned heads first-order ΔC decided alone: none here for exact and hybrid
    assert "0 of the 4 pruned heads were decided by first-order ΔC alone" in notes["exact"]
    assert "0 of the 4 pruned heads were decided by first-order ΔC alone (exact mode" in notes["hybrid"]
    assert "4 of the 4 pruned heads were decided by first-order ΔC alone (exact mode" in notes["first-order"]


def test_bad_modes_and_windows_are_config_errors():
    with pytest.raises(ConfigError, match="delta_c_mode=firstorder: not one of exact, first-order, hybrid"):
        METHODS.make_config("rahp", {"delta_c_mode": "firstorder"})
    with pytest.raises(ConfigError, match="hybrid_window: -1 is out of range; valid: >= 0"):
        METHODS.make_config("rahp", {"hybrid_window": -1})
    with pytest.raises(ConfigError, match="hybrid_extremes: 0 is out of range; valid: >= 1"):
        METHODS.make_config("rahp", {"hybrid_extremes": 0})
    with pytest.raises(ConfigError, match="head indices"):
        delta_c_scores(tiny(), [BATCH], heads=[6])

