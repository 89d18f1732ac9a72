"""Per-unit sensitivity (``methods/quantize/sensitivity.py``): a unit the quantized model leaves equal to
the base has KL exactly 0 and the changed one takes the whole share; a SmoothQuant-folded linear put
alone into the base runs in the base's basis (KL ≈ 0 before quantization, large without the unfolding);
the mixed recipe's ``ignore:`` names the most sensitive unit's linears; ``--sensitivity`` without a base
model is one error; the card shows the ranking."""
import copy
from types import SimpleNamespace

import pytest
import torch
import transformers

from forgetless.errors import ConfigError
from forgetless.methods.quantize.sensitivity import Unfolded, measure, mixed_ignore, run_sensitivity
from forgetless.registry import METHODS
from forgetless.report.sensitivity import sensitivity_markdown

IDS = torch.randint(0, 64, (4, 10), generator=torch.Generator().manual_seed(0))
BATCHES = [{"input_ids": IDS[i:i + 2], "attention_mask": torch.ones(2, 10, dtype=torch.long)} for i in (0, 2)]


def llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=4)
    return transformers.LlamaForCausalLM(config).eval()


def test_only_the_changed_unit_has_kl():
    base = llama()
    changed = copy.deepcopy(base)
    with torch.no_grad():
        changed.model.layers[1].mlp.down_proj.weight.mul_(1.5)
    blocks = measure(base, changed, BATCHES, "blocks")
    by_unit = {row["unit"]: row for row in blocks["ranking"]}
    assert blocks["ranking"][0]["unit"] == "decoder.1" and by_unit["decoder.1"]["kl_share"] == 1.0
    assert by_unit["decoder.0"]["kl"] == 0.0 and by_unit["decoder.2"]["flips"] == 0.0  # identical blocks: exactly 0
    assert blocks["whole_model"]["kl"] == pytest.approx(by_unit["decoder.1"]["kl"], rel=1e-6)
    assert blocks["tokens"] == 40 and blocks["texts"] == 4
    types = measure(base, changed, BATCHES, "linear-types")
    assert types["ranking"][0]["unit"] == "mlp.down_proj" and types["ranking"][0]["kl_share"] == 1.0
    assert len(types["ranking"]) == 7 and all(row["kl"] == 0.0 for row in types["ranking"][1:])
    assert mixed_ignore(types, changed, keep=1) == [f"model.layers.{i}.mlp.down_proj" for i in range(3)]
    assert mixed_ignore(blocks, changed, keep=1) == sorted(f"model.layers.1.{n}" for n in (
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
        "mlp.up_proj", "mlp.down_proj"))


def test_folded_linears_run_in_the_base_basis():
    base = llama()
    smoothed = copy.deepcopy(base)
    method = METHODS.build(METHODS.make_config("smoothquant", {"alpha": 0.8, "producers": "norms-and-linears"}))
    method.calibrate(smoothed, BATCHES)
    assert {e["producer"] for e in method.layers} == {"input_layernorm", "post_attention_layernorm",
                                                       "self_attn.v_proj", "mlp.up_proj"}
    types = measure(base, smoothed, BATCHES, "linear-types")
    assert max(row["kl"] for row in types["ranking"]) < 1e-6  # every unit equals the base's layer (float rounding)
    q = smoothed.model.layers[0].self_attn.q_proj
    raw = Unfolded(q)
    raw.c = None  # without the unfolding the smoothed q_proj reads unsmoothed inputs: a different model
    work = copy.deepcopy(base)
    work.model.layers[0].self_attn.q_proj = raw
    with torch.no_grad():
        assert not torch.allclose(work(**BATCHES[0]).logits, base(**BATCHES[0]).logits, atol=1e-3)
    rows = "\n".join(sensitivity_markdown({"method": {"sections": {"sensitivity": {**types, "mixed_ignore": ["a.b"]}}}}))
    assert "| 1 |" in rows and "ignore: [a.b]" in rows and "kind of linear layer" in rows


def test_sensitivity_needs_the_base_model():
    config = METHODS.make_config("rtn", {"group_size": 16, "sensitivity": "blocks"})
    with pytest.raises(ConfigError, match="sensitivity=blocks: compares each quantized unit with the base model"):
        METHODS.build(config).compress(llama(), SimpleNamespace(notes=[]))
    assert run_sensitivity(llama(), None, METHODS.make_config("rtn", {"group_size": 16})) is None
