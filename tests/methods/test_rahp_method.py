"""The ``heads`` and ``rahp`` methods end to end on a tiny BERT: physical removal of the decided
heads, K = ⌊ρ·L·H⌋, protected heads kept, finalize idempotent, artifacts saved with the model, plots."""
import json

import pytest
import torch
import transformers

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.errors import ConfigError
from forgetless.methods.base import CompressionContext
from forgetless.registry import METHODS
from forgetless.models.io import load_model, save_model
from forgetless.models.surgery import model_shape
from forgetless.training.trainer import TrainConfig


class WordTokenizer:
    """Minimal tokenizer (hashing words) so the test needs no vocabulary files."""

    pad_token_id = 0

    def __call__(self, a, b=None, truncation=True, max_length=16):
        def words(text):
            return [5 + (sum(map(ord, w)) % 90) for w in text.split()]

        ids = []
        for i, text in enumerate(a):
            seq = [2] + words(text) + [3] + (words(b[i]) + [3] if b else [])
            ids.append(seq[:max_length])
        return {"input_ids": ids, "attention_mask": [[1] * len(x) for x in ids]}

    def save_pretrained(self, path):  # save_model calls it; nothing to save
        return ()


def tiny_model():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=24, num_labels=2, max_position_embeddings=40)
    return transformers.BertForSequenceClassification(cfg).eval()


def context(tmp_path, model):
    task = synthetic_shortcut_task(n_train=48, n_dev=16, n_challenge=16, seed=0)
    return CompressionContext(task=task, tokenizer=WordTokenizer(), teacher=model, work_dir=tmp_path,
                              train_config=TrainConfig(epochs=1, batch_size=16, max_length=24, progress=False,
                                                       save_steps=1000))


def heads_of(model):
    return {tuple(h[:3]): h[3] for h in model_shape(model)["heads"]}


def test_rahp_prunes_top_k_keeps_protected_and_saves(tmp_path):
    teacher = tiny_model()
    ctx = context(tmp_path, teacher)
    config = METHODS.make_config("rahp", {"ratio": 0.5, "protect": 0.25, "scoring_examples": 12, "scoring_batch": 6,
                                          "scoring_length": 16, "recovery": "none",
                                          "rows_per_pass": 24})
    method = METHODS.get("rahp")(config)
    model = method.compress(teacher, ctx)
    assert model is not teacher and sum(heads_of(teacher).values()) == 8
    assert sum(heads_of(model).values()) == 8 - 4  # K = ⌊0.5 · 2 · 4⌋
    art = method.artifacts()
    pruned = {tuple(p) for p in art["decision"]["pruned"]}
    protected = {tuple(p) for p in art["decision"]["protected"]}
    assert len(pruned) == 4 and len(protected) == 2 and not pruned & protected
    kept = {(s, l, k, h) for s, l, k, heads in art["kept"] for h in heads}
    assert protected <= kept and not pruned & kept
    assert art["scoring_seconds"] > 0
    assert any("rahp: pruned 4 of 8" in n for n in ctx.notes)
    assert method.finalize(model, ctx) is model and sum(heads_of(model).values()) == 4  # idempotent
    assert json.loads((tmp_path / "rahp-scores.json").read_text())["decision"]["pruned"]
    path = save_model(model, tmp_path / "model", None, {"artifacts": art})
    reloaded, _ = load_model(path, with_tokenizer=False)
    ids = torch.tensor([[2, 7, 9, 3]])
    assert torch.allclose(reloaded(input_ids=ids).logits, model(input_ids=ids).logits, atol=1e-6)
    pngs = method.plots(tmp_path / "plots")
    assert {p.name for p in pngs} == {"rahp_fisher.png", "rahp_delta_clever.png", "rahp_score.png",
                                      "rahp_pruned_per_layer.png"}
    assert all(p.stat().st_size > 1000 for p in pngs)


def test_rahp_finalize_prunes_an_unpruned_copy(tmp_path):
    teacher = tiny_model()
    ctx = context(tmp_path, teacher)
    method = METHODS.get("rahp")(METHODS.make_config("rahp", {
        "ratio": 0.25, "scoring_examples": 8, "scoring_length": 16, "recovery": "none"}))
    pruned = method.compress(teacher, ctx)
    fresh = method.finalize(tiny_model(), ctx)  # same architecture, decisions applied by finalize
    assert heads_of(fresh) == heads_of(pruned)


def test_heads_iterative_prunes_exact_count_and_fine_tunes(tmp_path):
    teacher = tiny_model()
    ctx = context(tmp_path, teacher)
    method = METHODS.get("heads")(METHODS.make_config("heads", {
        "prune_count": 3, "iterations": 3, "scoring_examples": 12, "scoring_length": 16}))
    model = method.compress(teacher, ctx)
    art = method.artifacts()
    assert sum(heads_of(model).values()) == 5 and len(art["pruned"]) == 3
    assert [len(s["pruned"]) for s in art["steps"]] == [1, 1, 1]
    assert len(art["steps"][1]["importance"]) == 7  # re-scored on the pruned model
    assert (tmp_path / "train-heads").is_dir()
    assert [p.name for p in method.plots(tmp_path)] == ["heads_importance.png"]


@pytest.mark.parametrize("name,options", [("rahp", {"ratio": 1.5}), ("rahp", {"ratio": 0.95, "protect": 0.1}),
                                          ("rahp", {"clever_norm": "1"}), ("heads", {"iterations": 0}),
                                          ("heads", {"scoring_examples": 0})])
def test_bad_options_are_config_errors(name, options):
    with pytest.raises(ConfigError):
        METHODS.make_config(name, options)
