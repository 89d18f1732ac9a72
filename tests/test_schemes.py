"""The quantization schemes (``forgetless/schemes.py``, issue 54): an option given beside ``--scheme`` reaches
every method the scheme runs (``--ignore`` keeps down_proj exactly the base's through SmoothQuant *and* the
int8 quantizer), a flag that contradicts what the scheme's name says is one error naming both, a refining
one is taken, ``--recovery none`` passes where nothing trains, and ``apply`` / ``compress`` take a scheme
by name."""
from __future__ import annotations

import copy
import re

import pytest
import torch
import transformers

import forgetless
from forgetless.api import as_task, run_config
from forgetless.config import RunConfig
from forgetless.errors import ConfigError, command_line
from forgetless.quantization.compressed_tensors import quantized_linears
from forgetless.models.tiny import tiny_llama_config
from forgetless.schemes import SCHEMES
from forgetless.tree import build

TEXTS = [f"the {w} cat sat on the {v} mat and looked at the {w} dog for a while" for w in ("red", "old", "small")
         for v in ("blue", "new", "large", "wet")]
SMALL = {"calibration_examples": "8", "calibration_length": "16", "calibration_batch": "4"}


def flags(**given):
    """A run config built from command-line keys."""
    return build(RunConfig, given)


def refusal(**given) -> str:
    """The error of a run config built from command-line keys, spelled as the command line spells it."""
    with command_line(), pytest.raises(ConfigError) as caught:
        build(RunConfig, given)
    with command_line():
        return str(caught.value)


def test_ignore_and_targets_reach_every_method_of_the_scheme():
    config = flags(scheme="W8A8-INT8", ignore="re:.*down_proj", targets="Linear", **SMALL)
    for method in (config.method, *config.then):
        assert (method.ignore, method.targets, method.calibration_examples) == (["re:.*down_proj"], ["Linear"], 8)
    dotted = build(RunConfig, {"scheme": "W8A8-INT8", "method": {"ignore": ["re:.*down_proj"]}}, "r.yaml")
    assert [m.ignore for m in (dotted.method, *dotted.then)] == [["re:.*down_proj"]] * 2


def test_w8a8_int8_with_ignore_leaves_down_proj_exactly_the_base(minilm_tokenizer, one_thread):
    """The silent result of issue 54: the int8 quantizer got an empty ignore list and rounded down_proj."""
    config = flags(scheme="W8A8-INT8", ignore="re:.*down_proj", **SMALL)
    torch.manual_seed(0)
    base = transformers.LlamaForCausalLM(tiny_llama_config(minilm_tokenizer.vocab_size)).eval()
    compressed = forgetless.apply(copy.deepcopy(base), [config.method, *config.then], calibration=TEXTS,
                                  tokenizer=minilm_tokenizer)
    layers = base.config.num_hidden_layers
    for i in range(layers):
        name = f"model.layers.{i}.mlp.down_proj"
        assert torch.equal(compressed.get_submodule(name).weight, base.get_submodule(name).weight), name
        assert not torch.equal(compressed.get_submodule(f"model.layers.{i}.mlp.up_proj").weight,
                               base.get_submodule(f"model.layers.{i}.mlp.up_proj").weight)
    quantized = sorted(quantized_linears(compressed))  # what the card counts and the folder stores packed
    assert len(quantized) == 6 * layers and not [name for name in quantized if "down_proj" in name], quantized


@pytest.mark.parametrize("given, message", [
    ({"scheme": "W4A16", "bits": "8"},
     r"^--scheme W4A16 --bits 8: W4A16 means bits 4; --scheme W8A16 means bits 8; or give --method gptq with your "
     r"options, without --scheme$"),
    ({"scheme": "FP8", "asymmetric": True}, r"^--scheme FP8 --asymmetric: FP8 means asymmetric false; give --method gptq"),
    ({"scheme": "W4A16", "asymmetric": True}, r"^--scheme W4A16 --asymmetric: .*--scheme W4A16-AWQ means asymmetric true"),
    ({"scheme": "W8A16", "activations": "int8-token"}, r"^--scheme W8A16 --activations int8-token: W8A16 means "
                                                       r"activations none; --scheme W8A8-INT8 means activations int8-token"),
    ({"scheme": "FP8-DYNAMIC", "weight_type": "int"}, r"^--scheme FP8-DYNAMIC --weight-type int: FP8-DYNAMIC means "
                                                      r"weight_type fp8; give --method rtn"),
    ({"scheme": "W8A8-INT8", "bits": "4"}, r"^--scheme W8A8-INT8 --bits 4: W8A8-INT8 means bits 8; give --method "
                                           r"smoothquant --then gptq with your options, without --scheme"),
    ({"scheme": "W8A8-INT8", "then": ["gptq:bits=4"]}, r"^--scheme W8A8-INT8 --then gptq:bits=4: W8A8-INT8 means bits 8"),
    ({"scheme": "W4A16", "sparsity": "0.5"}, r"^--sparsity does not apply to --scheme W4A16 \(it runs gptq; --sparsity "
                                             r"is an option of .*wanda\)"),
    ({"scheme": "FP8-DYNAMIC", "recovery": "fine-tune"}, r"^--recovery fine-tune: rtn trains nothing after "
                                                         r"compressing \(it has no recovery step\); only recovery none"),
    ({"scheme": "W8A8-INT8", "recovery": "fine-tune"}, r"^--recovery fine-tune: gptq stores integer codes"),
])
def test_a_flag_that_contradicts_the_scheme_is_one_error_naming_both(given, message):
    assert re.search(message, refusal(**given)), refusal(**given)


def test_a_contradiction_read_from_a_recipe_or_python_names_it_so():
    with pytest.raises(ConfigError, match=r"^r.yaml: key 'scheme' W4A16 key 'method.bits' 8: W4A16 means bits 4"):
        build(RunConfig, {"scheme": "W4A16", "method": {"bits": 8}}, "r.yaml")
    with pytest.raises(ConfigError, match=r"^scheme=W4A16 bits=8: W4A16 means bits 4; scheme=W8A16"):
        build(RunConfig, {"scheme": "W4A16", "bits": "8"})


@pytest.mark.parametrize("given, expected", [
    ({"scheme": "W4A16", "group_size": "64"}, [("gptq", "group_size", 64), ("gptq", "bits", 4)]),
    ({"scheme": "W4A16", "bits": "4"}, [("gptq", "bits", 4)]),  # the scheme's own value: no contradiction
    ({"scheme": "W8A8-INT8", "damp": "0.05", "alpha": "0.5"}, [("smoothquant", "alpha", 0.5), ("gptq", "damp", 0.05)]),
    ({"scheme": "W8A8-INT8", "calibration_examples": "16"},
     [("smoothquant", "calibration_examples", 16), ("gptq", "calibration_examples", 16)]),
    ({"scheme": "W8A8-INT8", "then": ["gptq:damp=0.1"]}, [("gptq", "damp", 0.1), ("gptq", "bits", 8)]),
])
def test_a_flag_that_refines_the_scheme_reaches_the_methods_that_have_it(given, expected):
    config = flags(**given)
    methods = {method.name: method for method in (config.method, *config.then)}
    assert [(name, field, getattr(methods[name], field)) for name, field, _ in expected] == expected


@pytest.mark.parametrize("given", [
    {"scheme": "W8A8-INT8", "recovery": "none"}, {"scheme": "FP8-DYNAMIC", "recovery": "none"},
    {"scheme": "W4A16-AWQ", "recovery": "none"}, {"scheme": "W4A16", "recovery": "none"},
    {"method": "rtn", "recovery": "none"}, {"method": "smoothquant", "recovery": "none", "then": ["rtn:recovery=none"]},
])
def test_recovery_none_is_taken_wherever_nothing_trains(given):
    config = flags(**given)
    assert not any(method.recovers for method in (config.method, *config.then))


@pytest.mark.parametrize("given, message", [
    ({"method": "nash", "recovery": "none"}, r"^--recovery none: nash always trains as it compresses"),
    ({"method": "rtn", "recovery": "fine-tune"}, r"^--recovery fine-tune: rtn trains nothing after compressing"),
    ({"method": "smoothquant", "then": ["rtn:recovery=fine-tune"]}, r"^--then rtn:recovery=fine-tune: rtn trains nothing"),
])
def test_a_real_recovery_where_it_cannot_run_is_still_refused(given, message):
    assert re.search(message, refusal(**given)), refusal(**given)


def test_every_scheme_survives_its_saved_recipe():
    """A run's recipe (the scheme and every option of its methods, as saved) rebuilds the same methods."""
    from forgetless.tree import to_recipe

    for name in SCHEMES:
        config = flags(scheme=name, ignore="re:.*down_proj")
        again = build(RunConfig, to_recipe(config), "saved.yaml")
        assert (again.method, again.then) == (config.method, config.then), name


def test_apply_takes_a_scheme_by_name_and_points_to_near_misses():
    assert [m.name for m in forgetless.api.method_stack("W8A8-INT8")] == ["smoothquant", "gptq"]
    fp8 = forgetless.api.method_stack("FP8-DYNAMIC")
    assert [(m.name, m.weight_type, m.activations) for m in fp8] == [("rtn", "fp8", "fp8-token")]
    with pytest.raises(ConfigError, match=r"did you mean the scheme 'FP8-DYNAMIC'\?"):
        forgetless.api.method_stack("FP8-DYNAMC")
    with pytest.raises(ConfigError, match=r"did you mean the recipe 'fp8-dynamic'\?"):
        forgetless.api.method_stack("fp8-dynamc")


def test_compress_with_a_scheme_runs_its_methods():
    """``compress(..., scheme="W8A8-INT8")`` ran the default method (truncate) and said W8A8-INT8."""
    config = run_config("tiny-llama", None, None, as_task("synthetic"), {"scheme": "W8A8-INT8"})
    assert (config.method.name, [m.name for m in config.then], config.then[0].activations) == \
        ("smoothquant", ["gptq"], "int8-token")
    with pytest.raises(ConfigError, match=r"^scheme=W4A16: a scheme names its methods; give scheme alone"):
        run_config("tiny-llama", "gptq", None, as_task("synthetic"), {"scheme": "W4A16"})
    with pytest.raises(ConfigError, match=r"^scheme=W9: not one of W4A16"):
        run_config("tiny-llama", None, None, as_task("synthetic"), {"scheme": "W9"})


@pytest.mark.parametrize("given, message", [
    ({"method": "FP8-DYNAMIC"}, r"^--method FP8-DYNAMIC: a quantization scheme, not a method; give --scheme FP8-DYNAMIC$"),
    ({"scheme": "fp8-dynamic"}, r"^--scheme fp8-dynamic: not one of W4A16, .*\(did you mean FP8-DYNAMIC\?\)$"),
    ({"scheme": "W4A61"}, r"^--scheme W4A61: not one of .*\(did you mean W4A16\?\)$"),
])
def test_a_scheme_named_where_a_method_is_or_misspelt_gets_a_pointer(given, message):
    assert re.search(message, refusal(**given)), refusal(**given)
