"""Block Influence (ShortGPT): hand-computed BI, identity layers score 0, padding is left out,
exact layers removed by the method on tiny models (decoder-only and encoder)."""
import math

import pytest
import torch
import transformers
from conftest import tiny_classifier

from forgetless.data.tasks import load_task
from forgetless.errors import ConfigError
from forgetless.registry import METHODS
from forgetless.methods.base import CompressionContext
from forgetless.methods.block_influence.config import BlockInfluenceConfig
from forgetless.methods.block_influence.influence import (block_influence, layer_block_influence, lowest_influence,
                                                          token_cosines)
from forgetless.models.adapters import get_adapter
from forgetless.training.trainer import TrainConfig

torch.set_num_threads(1)


def test_block_influence_by_hand():
    x_in = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [3.0, 4.0]]])
    x_out = torch.tensor([[[2.0, 0.0], [1.0, 1.0], [-3.0, -4.0]]])
    # cosines: 1 (scaled copy), 1/√2, -1 (reversed; a padding token below)
    torch.testing.assert_close(token_cosines(x_in, x_out), torch.tensor([1.0, 1 / math.sqrt(2), -1.0]))
    assert block_influence(x_in, x_out) == pytest.approx(1 - (1 + 1 / math.sqrt(2) - 1) / 3)
    assert block_influence(x_in, x_out, torch.tensor([[1, 1, 0]])) == pytest.approx(1 - (1 + 1 / math.sqrt(2)) / 2)
    assert block_influence(x_in, x_in) == pytest.approx(0.0, abs=1e-7)  # identity layer


def test_lowest_influence_ties_take_the_lower_index():
    assert lowest_influence([0.3, 0.1, 0.1, 0.5], 2) == [1, 2]
    assert lowest_influence([0.3, 0.1, 0.1, 0.05], 2) == [1, 3]
    assert lowest_influence([0.2, 0.2, 0.2], 1) == [0]


def test_config_validation():
    for bad in ({}, {"layers": 2, "remove": 1}, {"remove": -1}, {"layers": 2, "calibration_examples": 0}):
        with pytest.raises(ConfigError):
            BlockInfluenceConfig(**bad)
    assert BlockInfluenceConfig(layers=3).removed_count(4) == 1
    assert BlockInfluenceConfig(remove=2).removed_count(4) == 2
    with pytest.raises(ConfigError, match="keep between 1 and 3"):
        BlockInfluenceConfig(layers=4).removed_count(4)
    with pytest.raises(ConfigError, match="keep between 1 and 3"):
        BlockInfluenceConfig(remove=4).removed_count(4)


def tiny_llama(vocab_size=120, layers=4, identity=()):
    """Tiny Llama classifier; layers in ``identity`` get zero attention-output and MLP-down weights,
    so with the residual stream they return their input exactly."""
    config = transformers.LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=48,
                                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                                      pad_token_id=0, num_labels=2, initializer_range=0.2)
    torch.manual_seed(0)
    model = transformers.LlamaForSequenceClassification(config).eval()
    with torch.no_grad():
        for i in identity:
            model.model.layers[i].self_attn.o_proj.weight.zero_()
            model.model.layers[i].mlp.down_proj.weight.zero_()
    return model


def padded_batch(vocab_size=120):
    ids = torch.randint(1, vocab_size, (2, 9), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    ids[1, 5:], mask[1, 5:] = 0, 0
    return {"input_ids": ids, "attention_mask": mask}


def test_identity_layers_score_zero():
    scores = layer_block_influence(tiny_llama(identity=(1, 3)), [padded_batch()], "decoder")
    assert scores[1] == pytest.approx(0.0, abs=1e-6) and scores[3] == pytest.approx(0.0, abs=1e-6)
    assert min(scores[0], scores[2]) > 1e-3


@pytest.mark.parametrize("arch", ["llama", "bert"])
def test_hooked_scores_equal_hidden_state_formula_without_padding(arch):
    model = tiny_llama() if arch == "llama" else tiny_classifier("bert")
    stack = "decoder" if arch == "llama" else "encoder"
    batches = [padded_batch(), {k: v[:1] for k, v in padded_batch().items()}]
    scores = layer_block_influence(model, batches, stack)
    with torch.no_grad():
        runs = [model(**b, output_hidden_states=True).hidden_states for b in batches]
    # hidden_states[i] enters layer i; hidden_states[i + 1] leaves it (Llama: not for the last layer,
    # whose output is followed by the final norm)
    for i in range(len(get_adapter(model).stacks(model)[stack]) - 1):
        cos = torch.cat([token_cosines(hs[i], hs[i + 1], b["attention_mask"])
                         for hs, b in zip(runs, batches)])
        assert cos.numel() == 14 + 9  # 9 + 5 real tokens, then 9 again
        assert scores[i] == pytest.approx(1 - float(cos.double().mean()), abs=1e-6)


@pytest.fixture(scope="module")
def synthetic_task():
    return load_task("synthetic", seed=0, train_size=64, eval_size=32)


def run_method(model, tokenizer, task, tmp_path, **options):
    config = METHODS.make_config("block-influence", {"calibration_examples": 24, "calibration_batch": 8,
                                                     "recovery": "none", **options})
    ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=model, work_dir=tmp_path,
                             train_config=TrainConfig(epochs=1, progress=False))
    method = METHODS.get("block-influence")(config)
    return method.compress(model, ctx), method, ctx


def test_method_removes_exactly_the_identity_layers(tmp_path, minilm_tokenizer, synthetic_task):
    model = tiny_llama(vocab_size=minilm_tokenizer.vocab_size, layers=5, identity=(1, 3))
    reference = tiny_llama(vocab_size=minilm_tokenizer.vocab_size, layers=5, identity=(1, 3))
    compressed, method, ctx = run_method(model, minilm_tokenizer, synthetic_task, tmp_path, remove=2)
    assert method.record["removed"] == [1, 3] and method.record["kept"] == [0, 2, 4]
    assert compressed.config.num_hidden_layers == 3
    assert (tmp_path / "block-influence-scores.json").is_file() and "removed layers [1, 3]" in ctx.notes[0]
    batch = padded_batch(minilm_tokenizer.vocab_size)
    with torch.no_grad():  # the removed layers were identities: outputs unchanged
        torch.testing.assert_close(compressed(**batch).logits, reference(**batch).logits, atol=1e-5, rtol=0)


def test_method_on_an_encoder_keeps_the_requested_count(tmp_path, minilm_tokenizer, synthetic_task):
    model = tiny_classifier("bert", num_labels=2, vocab_size=minilm_tokenizer.vocab_size)
    compressed, method, _ = run_method(model, minilm_tokenizer, synthetic_task, tmp_path, layers=2)
    scores = method.record["block_influence"]
    assert len(scores) == 3 and method.record["removed"] == [min(range(3), key=lambda i: scores[i])]
    assert len(get_adapter(compressed).stacks(compressed)["encoder"]) == 2
