"""Mixture-of-experts models are checked module by module before any work (issue 54): W8A8-INT8 on
Qwen3-MoE's fused experts is refused before SmoothQuant changes a weight, and a group size is answered
once, naming the largest that fits every quantized linear, the experts' narrower inputs included (the
config's widths alone miss them: ``moe_intermediate_size``)."""
import pytest
import torch

import forgetless
from forgetless.errors import OptionError
from forgetless.quantization.options import check_groups_fit
from forgetless.kinds.causal_lm import meta_model_of
from forgetless.validate import check_modules

from any_decoder import TEXTS, char_tokenizer, tiny_model

torch.set_num_threads(1)


def config(name: str, **options):
    return forgetless.METHODS.make_config(name, {"calibration_examples": 4, **options})


W8A8 = [config("smoothquant", alpha=0.8), config("gptq", bits=8, group_size=-1, activations="int8-token")]


def test_w8a8_on_fused_experts_is_refused_before_smoothquant_runs():
    model = tiny_model("qwen3_moe")
    before = {name: p.clone() for name, p in model.named_parameters()}
    with pytest.raises(OptionError, match=r"^activations=int8-token: model.layers.0.mlp.experts.0.gate_up_proj is one "
                                          r"expert of a fused mixture-of-experts \(ExpertLinear\)"):
        forgetless.apply(model, W8A8, calibration=TEXTS, tokenizer=char_tokenizer())
    assert all(torch.equal(p, before[name]) for name, p in model.named_parameters())  # SmoothQuant folded nothing


def test_the_meta_build_of_a_config_knows_the_experts():
    """What the command line checks before loading: the model built on the meta device from its config."""
    meta = meta_model_of(tiny_model("qwen3_moe").config)
    assert next(meta.parameters()).is_meta
    with pytest.raises(OptionError, match=r"^group_size=64: model.layers.0.mlp.experts.0.down_proj has 32 inputs, "
                                          r"fewer than one group; use at most 32, or -1 .*\(32 fits every"):
        check_modules([config("gptq", group_size=64)], meta)
    with pytest.raises(OptionError, match=r"^then=gptq:activations=int8-token: model.layers.0.mlp.experts"):
        check_modules(W8A8, meta)
    with pytest.raises(OptionError, match=r"^scheme=W8A8-INT8: gptq:activations=int8-token: model.layers.0.mlp.experts"):
        check_modules(W8A8, meta, scheme="W8A8-INT8")
    check_modules([config("gptq", group_size=32)], meta)  # fits every linear, experts included


@pytest.mark.parametrize("group, message", [
    (128, r"group_size=128: model.layers.0.mlp.experts.0.down_proj has 32 inputs, fewer than one group; use at "
          r"most 32, or -1 for one group per output row \(32 fits every quantized layer\)"),
    (48, r"group_size=48: model.layers.0.mlp.experts.0.down_proj has 32 inputs, fewer than one group; use at most "
         r"32")])
def test_one_group_size_error_names_what_fits_the_experts_too(group, message):
    """Qwen3-MoE's attention and dense widths are 64, its experts' down_proj reads 32: one answer, 32."""
    with pytest.raises(OptionError, match=message):
        forgetless.apply(tiny_model("qwen3_moe"), config("gptq", group_size=group), calibration=TEXTS,
                         tokenizer=char_tokenizer())


def test_the_group_size_that_fits_every_width_at_once():
    """A 576-wide model whose experts read 768: 128 fits neither 576 nor the gcd 192; 64 fits all."""
    layers = [("q_proj has", 576), ("down_proj has", 1536), ("experts.0.down_proj has", 768)]
    with pytest.raises(OptionError, match=r"^group_size=128: q_proj has 576 inputs, not a multiple of 128 .*; use 64 "
                                          r"or 32, or -1 for one group per output row \(64 fits every quantized layer\)"):
        check_groups_fit(128, layers)
    with pytest.raises(OptionError, match=r"group_size=72: experts.0.down_proj has 768 inputs.*use 64 or 32"):
        check_groups_fit(72, [("q_proj has", 576), ("experts.0.down_proj has", 768)])  # 576 = 8·72 fits; 768 does not
    check_groups_fit(64, layers)


def test_a_method_after_one_that_removes_layers_keeps_its_width_check_before_any_work():
    """The modules answer for the methods up to the first that removes weights; after it, the config's widths
    (review of issue 54: with the widths blanked, ``--method truncate --then gptq:group_size=24`` on 32-wide
    layers was no longer refused before the run)."""
    from forgetless.registry import METHODS
    from forgetless.validate import check_chain, model_dims, module_checked

    model = tiny_model("llama")
    chain = [METHODS.make_config("truncate", {"layers": 1}), METHODS.make_config("gptq", {"group_size": 24})]
    assert module_checked(chain) == 1
    with pytest.raises(OptionError, match=r"gptq:group_size=24: the model after truncate .*not a multiple of 24"):
        check_chain(chain, model_dims(model), "model", module_checked=module_checked(chain))
    check_chain(chain[1:], model_dims(model), "model", module_checked=1)  # gptq first: the modules' check answers
