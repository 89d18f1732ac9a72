"""Per-unit sensitivity (``methods/_shared/sensitivity.py``): a unit the quantized model leaves equal to
the base has KL exactly 0 and the changed one takes the whole share; a SmoothQuant-folded linear put
alone into the base runs in the base's basis (KL ≈ 0 before quantization, large without the unfolding);
the mixed recipe's ``ignore:`` names the most sensitive unit's linears; ``--sensitivity`` without a base
model is one error; the card shows the ranking."""
import copy
from types import SimpleNamespace

import pytest
import torch
import transformers

import forgetless

from forgetless.errors import ConfigError
from forgetless.methods._shared.sensitivity import Unfolded, measure, mixed_advice, mixed_ignore, run_sensitivity
from forgetless.registry import METHODS
from forgetless.report.sections import method_sections
from typed_cards import typed_card

IDS = torch.randint(0, 64, (4, 10), generator=torch.Generator().manual_seed(0))
BATCHES = [{"input_ids": IDS[i:i + 2], "attention_mask": torch.ones(2, 10, dtype=torch.long)} for i in (0, 2)]


def sensitivity_lines(card) -> list[str]:
    """The card's sensitivity section as ``report.md`` renders it (read through the card's one reader)."""
    return method_sections(card).sensitivity.markdown()


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



def test_a_block_unit_runs_from_its_block_on():
    """Issue 52's speed: the blocks before a block unit replay the base's outputs instead of running again (block
    0's MLP runs only for the base's predictions: 2 batches, not 2 per unit after it), and the unit's KL is
    the one a whole forward of the base with that block swapped gives."""
    base, calls = llama(), []
    changed = copy.deepcopy(base)
    with torch.no_grad():
        changed.model.layers[2].mlp.down_proj.weight.mul_(50.0)
    for index, layer in enumerate(base.model.layers):
        layer.mlp.register_forward_hook(lambda *_args, index=index: calls.append(index))
    blocks = measure(base, changed, BATCHES, "blocks")
    assert calls.count(0) == 2 and calls.count(2) == 2 + 2 * 2  # block 2: the base's, then units 0 and 1
    whole = copy.deepcopy(base)
    whole.model.layers[2] = changed.model.layers[2]
    with torch.no_grad():
        p = [torch.log_softmax(base(**b).logits.double(), -1) for b in BATCHES]
        q = [torch.log_softmax(whole(**b).logits.double(), -1) for b in BATCHES]
    kl = sum(float((a.exp() * (a - b)).sum()) for a, b in zip(p, q)) / 40
    by_unit = {row["unit"]: row["kl"] for row in blocks["ranking"]}
    assert kl > 1e-3 and by_unit["decoder.2"] == pytest.approx(kl, rel=1e-4) and by_unit["decoder.0"] == by_unit["decoder.1"] == 0.0

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
    advice = {"keep": ["mlp.up_proj"], "ignore": "--ignore re:.*\\.mlp\\.up_proj$", "modules": ["a.b"]}
    rows = "\n".join(sensitivity_lines(typed_card({"method": {"sections": {"sensitivity": {**types, "mixed": advice}}}})))
    assert "| 1 |" in rows and "`--ignore re:.*\\.mlp\\.up_proj$` keeps the 1 most" in rows and "kind of linear" in rows


def test_sensitivity_needs_the_base_model():
    config = METHODS.make_config("rtn", {"group_size": 16, "sensitivity": "blocks"})
    with pytest.raises(ConfigError, match="sensitivity=blocks: compares each quantized unit with the base model"):
        METHODS.build(config).compress(llama(), SimpleNamespace(notes=[]))
    assert run_sensitivity(llama(), None, METHODS.make_config("rtn", {"group_size": 16})) is None


# ----- issue 54: the advice, the experts, reproducibility and cost, a classifier ---------------------------------
TEXTS = ["The quick brown fox jumps over the lazy dog.", "Pack my box with five dozen liquor jugs!",
         "How vexingly quick daft zebras jump.", "Sphinx of black quartz, judge my vow.",
         "A wizard's job is to vex chumps quickly in fog.", "Five quacking zephyrs jolt my wax bed."]


def ranked(base, kind: str, seed: int = 0, **options):
    """The sensitivity section ``run_sensitivity`` gives for ``base`` quantized by rtn (``options``)."""
    from any_decoder import char_tokenizer

    config = METHODS.make_config("rtn", {"group_size": 16, **options})
    quantized = forgetless.apply(copy.deepcopy(base), config)
    ctx = SimpleNamespace(teacher=base, notes=[], calibration=TEXTS, tokenizer=char_tokenizer(), seed=seed,
                          kind=None, task=None)
    return run_sensitivity(quantized, ctx, METHODS.make_config("rtn", {"group_size": 16, "sensitivity": kind,
                                                                         **options})), ctx


def char_llama(layers: int):
    from any_decoder import tiny_model

    return tiny_model("llama", num_hidden_layers=layers)


def advised_ignore(section) -> list[str]:
    """The patterns of the advice's ``--ignore`` option, as the command line splits them."""
    flag, _, value = section["mixed"]["ignore"].partition(" ")
    assert flag == "--ignore"
    return value.split(",")


def quantized_names(base, model) -> set[str]:
    """The linears whose weights the quantizing changed."""
    before = dict(base.named_parameters())
    return {n.rpartition(".")[0] for n, p in model.named_parameters() if not torch.equal(p, before[n])}


def test_no_advice_keeps_every_unit_of_a_two_block_model():
    section, ctx = ranked(char_llama(2), "blocks")
    assert len(section["ranking"]) == 2 and section["mixed_ignore"] == []
    assert "strict majority" in section["mixed"]["none"]
    text = "\n".join(sensitivity_lines(typed_card({"method": {"sections": {"sensitivity": section}}})))
    assert "No mixed-precision advice: 2 units" in text and "--ignore" not in text


@pytest.mark.parametrize("kind, kept", [("blocks", 1), ("linear-types", 3)])
def test_the_advice_is_a_strict_minority_forgetless_accepts(kind, kept):
    base = char_llama(3)
    section, _ = ranked(base, kind)
    assert len(section["mixed"]["keep"]) == kept == len(section["ranking"][:kept])
    assert section["mixed"]["keep"] == [row["unit"] for row in section["ranking"][:kept]]
    patterns = advised_ignore(section)
    mixed = forgetless.apply(copy.deepcopy(base), METHODS.make_config("rtn", {"group_size": 16, "ignore": patterns}))
    whole = forgetless.apply(copy.deepcopy(base), METHODS.make_config("rtn", {"group_size": 16}))
    everything = quantized_names(base, whole)
    left = everything - quantized_names(base, mixed)
    assert sorted(left) == section["mixed_ignore"] and 0 < len(left) < len(everything) / 2


def test_the_experts_are_ranked_with_the_other_linears():
    from any_decoder import tiny_model

    base = tiny_model("mixtral")
    section, _ = ranked(base, "linear-types")
    by_unit = {row["unit"]: row for row in section["ranking"]}
    assert {"mlp.experts.gate_up_proj", "mlp.experts.down_proj", "self_attn.q_proj"} <= set(by_unit)
    assert by_unit["mlp.experts.down_proj"]["modules"] == [f"model.layers.{i}.mlp.experts.down_proj" for i in range(3)]
    assert by_unit["mlp.experts.gate_up_proj"]["kl"] > 0 and by_unit["mlp.experts.down_proj"]["kl"] > 0
    experts_first = {**section, "ranking": sorted(section["ranking"], key=lambda row: "experts" not in row["unit"])}
    advice = mixed_advice(experts_first, base, [])  # as if the experts ranked first: their advice is accepted too
    assert advice["keep"] == ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
    assert len(advice["modules"]) == 3 * 4 * 2 and "model.layers.2.mlp.experts.3.down_proj" in advice["modules"]
    flag, _, patterns = advice["ignore"].partition(" ")
    mixed = forgetless.apply(copy.deepcopy(base), METHODS.make_config("rtn", {"group_size": 16,
                                                                            "ignore": patterns.split(",")}))
    for i in range(3):
        for parameter in ("gate_up_proj", "down_proj"):
            name = f"model.layers.{i}.mlp.experts.{parameter}"
            assert torch.equal(mixed.get_parameter(name), base.get_parameter(name))
        assert not torch.equal(mixed.get_parameter(f"model.layers.{i}.self_attn.o_proj.weight"),
                               base.get_parameter(f"model.layers.{i}.self_attn.o_proj.weight"))


def test_the_ranking_is_reproducible_and_costed():
    base = char_llama(3)
    first, ctx = ranked(base, "linear-types", seed=3)
    again, _ = ranked(base, "linear-types", seed=3)
    assert [r["unit"] for r in first["ranking"]] == [r["unit"] for r in again["ranking"]]
    assert [r["kl"] for r in first["ranking"]] == [r["kl"] for r in again["ranking"]]
    assert first["seconds"] > 0 and f"{first['seconds']:g} s" in ctx.notes[-1]
    text = "\n".join(sensitivity_lines(typed_card({"method": {"sections": {"sensitivity": first}}})))
    assert f"Measured in {first['seconds']:g} s." in text


def test_ties_rank_in_the_models_order():
    base = llama()
    blocks = measure(base, copy.deepcopy(base), BATCHES, "blocks")  # nothing changed: every KL 0, a tie
    assert [row["unit"] for row in blocks["ranking"]] == ["decoder.0", "decoder.1", "decoder.2"]


def test_a_classifier_is_ranked_on_its_class_probabilities():
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                                     intermediate_size=64, num_labels=2)
    base = transformers.BertForSequenceClassification(config).eval()
    changed = copy.deepcopy(base)
    with torch.no_grad():
        changed.bert.encoder.layer[2].attention.self.query.weight.add_(torch.randn(32, 32))
    section = measure(base, changed, BATCHES, "blocks")
    assert section["per"] == "text" and section["ranking"][0]["unit"].endswith(".2")
    assert section["ranking"][0]["kl_share"] == 1.0 and section["texts"] == 4
