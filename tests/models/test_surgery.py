"""Masked (gated) outputs equal physically sliced outputs for heads, FFN units and layers."""
import copy

import pytest
import torch
from conftest import batch, tiny_classifier

from forgetless.errors import ConfigError, UnsupportedModelError
from forgetless.models import surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.gates import Gates

ARCHS = ["bert", "roberta", "distilbert"]
KEEP_HEADS = {("encoder", 0, "self"): [1, 3], ("encoder", 1, "self"): [], ("encoder", 2, "self"): [2]}
KEEP_FFN = {("encoder", 0, "ffn"): [0, 5, 7, 30], ("encoder", 1, "ffn"): [], ("encoder", 2, "ffn"): list(range(20))}


def logits(model, inputs):
    with torch.no_grad():
        return model(**inputs).logits


@pytest.mark.parametrize("arch", ARCHS)
def test_heads_and_ffn_masked_equals_sliced(arch):
    model, inputs = tiny_classifier(arch), batch()
    full = logits(model, inputs)
    with Gates(model) as gates:
        for key, keep in KEEP_HEADS.items():
            gates.set_head_mask(key, keep)
        for key, keep in KEEP_FFN.items():
            gates.set_ffn_mask(key, keep)
        masked = logits(model, inputs)
    sliced_model = surgery.prune_ffn(surgery.prune_heads(copy.deepcopy(model), KEEP_HEADS), KEEP_FFN)
    sliced = logits(sliced_model, inputs)
    assert (masked - full).abs().max() > 1e-3  # the masks really change the model
    torch.testing.assert_close(sliced, masked, atol=1e-5, rtol=0)
    shape = surgery.model_shape(sliced_model)
    assert [h[-1] for h in shape["heads"]] == [2, 0, 1]
    assert [f[-1] for f in shape["ffn"]] == [4, 0, 20]
    # gates on the sliced model start at one per remaining head / unit
    assert [len(g) for g in Gates(sliced_model).heads.values()] == [2, 1]


@pytest.mark.parametrize("arch", ARCHS)
def test_layers_masked_equals_dropped(arch):
    model, inputs = tiny_classifier(arch), batch()
    with Gates(model, heads=False, ffn=False, layers=True) as gates:
        gates.set_layer_mask("encoder", [0, 2])
        masked = logits(model, inputs)
    dropped = surgery.drop_layers(copy.deepcopy(model), "encoder", [0, 2])
    torch.testing.assert_close(logits(dropped, inputs), masked, atol=1e-5, rtol=0)
    adapter = get_adapter(dropped)
    assert len(adapter.stacks(dropped)["encoder"]) == 2
    assert getattr(dropped.config, adapter.layer_count_keys["encoder"]) == 2


def test_sliced_parameter_count_matches_removed_units():
    model = tiny_classifier("bert")
    before = sum(p.numel() for p in model.parameters())
    surgery.prune_heads(model, {("encoder", 0, "self"): [0, 1, 2]})  # one head of 8 dims removed
    surgery.prune_ffn(model, {("encoder", 1, "ffn"): list(range(30))})  # 7 units removed
    after = sum(p.numel() for p in model.parameters())
    head = 3 * (32 * 8 + 8) + 32 * 8  # q, k, v rows with bias + o columns
    unit = (32 + 1) + 32  # intermediate row with bias + output column
    assert before - after == head + 7 * unit


def test_gate_gradients_are_head_importance():
    model, inputs = tiny_classifier("bert"), batch()
    with Gates(model, requires_grad=True) as gates:
        model(**inputs).logits.sum().backward()
        grads = [g.grad for g in gates.heads.values()]
    assert all(g is not None and g.shape == (4,) and g.abs().sum() > 0 for g in grads)


def test_surgery_errors():
    model = tiny_classifier("bert")
    with pytest.raises(ConfigError, match="out of range"):
        surgery.prune_heads(model, {("encoder", 0, "self"): [4]})
    with pytest.raises(ConfigError, match="no attention site"):
        surgery.prune_heads(model, {("decoder", 0, "self"): [0]})
    with pytest.raises(ConfigError, match="every layer"):
        surgery.drop_layers(model, "encoder", [])
    with pytest.raises(ConfigError, match="no layer stack"):
        surgery.drop_layers(model, "decoder", [0])


def test_unsupported_architecture_is_a_clear_error():
    """An encoder family without an adapter is refused; a decoder-only one (OPT) gets the generic
    decoder adapter: its blocks, but head pruning refused, naming the family."""
    import transformers

    config = transformers.AlbertConfig(num_hidden_layers=1, num_attention_heads=2, hidden_size=16, intermediate_size=32,
                                       embedding_size=16, vocab_size=50)
    with pytest.raises(UnsupportedModelError, match="'albert'"):
        get_adapter(transformers.AlbertForSequenceClassification(config))
    config = transformers.OPTConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=16, ffn_dim=32,
                                    word_embed_proj_dim=16, vocab_size=50)
    model = transformers.OPTForSequenceClassification(config)
    assert get_adapter(model).stacks(model)["decoder"] is model.model.decoder.layers
    with pytest.raises(UnsupportedModelError, match="attention-head pruning needs to know where opt's heads"):
        surgery.prune_heads(model, {("decoder", 0, "self"): [0]})
