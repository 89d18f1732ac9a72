"""The format object and the codes' contract (``forgetless/quantization``, issue 53): the format answers what
the methods, the card and the folder ask (words checked by hand against what a117818 wrote), and every
registered codes' class keeps the contract "Adding a quantization format" states: rounded codes stored,
read back and laid out as the folder holds them."""
from __future__ import annotations

import pytest
import torch

from forgetless.errors import OptionError
from forgetless.quantization.compressed_tensors import module_scheme, stored_layout
from forgetless.quantization.format import QuantFormat
from forgetless.quantization.inputs import quantize_inputs
from forgetless.quantization.ints import GroupedInts
from forgetless.quantization.registry import CODES, codes_class
from forgetless.registry import METHODS
from forgetless.schemes import SCHEMES

EXAMPLES = {  # one format per registered codes' type, with and without quantized inputs
    "int": [QuantFormat(4, "int", 16), QuantFormat(3, "int", -1, symmetric=False),
            QuantFormat(8, "int", -1, activations="int8-token")],
    "fp8": [QuantFormat(8, "fp8", -1, activations="fp8-token"), QuantFormat(8, "fp8", 0, activations="fp8-tensor")],
}
DTYPES = {"I32": torch.int32, "I64": torch.int64, "I8": torch.int8, "F32": torch.float32, "U8": torch.uint8,
          "F8_E4M3": torch.float8_e4m3fn}


@pytest.mark.parametrize("scheme, label, words, ct_format", [
    ("W4A16", "int4", "int4 weights, groups of 128, symmetric, weight-only", "pack-quantized"),
    ("W4A16-AWQ", "int4", "int4 weights, groups of 128, asymmetric, weight-only", "pack-quantized"),
    ("W8A8-INT8", "W8A8 int8", "int8 weights, one scale per output row, symmetric, int8 inputs per token (dynamic)",
     "int-quantized"),
    ("FP8-DYNAMIC", "W8A8 fp8 dynamic", "fp8 (e4m3) weights, one scale per output row, fp8 inputs per token (dynamic)",
     "float-quantized"),
    ("FP8", "W8A8 fp8 static", "fp8 (e4m3) weights, one scale per matrix, fp8 inputs per tensor (static, calibrated)",
     "float-quantized"),
])
def test_a_scheme_is_a_format_that_answers_for_itself(scheme, label, words, ct_format):
    fmt = SCHEMES[scheme].format
    assert (fmt.label, fmt.describe(), fmt.ct_format) == (label, words, ct_format)
    algorithm, options = SCHEMES[scheme].chain()[-1]
    assert METHODS.make_config(algorithm, options).format == fmt  # the preset's options give back its format


def test_every_registered_format_has_an_example():
    assert sorted(EXAMPLES) == sorted(CODES)


@pytest.mark.parametrize("fmt", [f for formats in EXAMPLES.values() for f in formats], ids=repr)
def test_codes_round_store_read_back_and_lay_out_as_the_folder_holds_them(fmt):
    fmt.check(calibrates=True, method="test")
    weight = torch.randn(8, 32, generator=torch.Generator().manual_seed(0))
    linear = torch.nn.Linear(32, 8, bias=False)
    codes = fmt.round(weight)
    quantize_inputs(linear, fmt.input_quant(torch.full((32,), 3.0)))
    scheme = module_scheme(linear, codes)
    assert scheme["format"] == fmt.ct_format
    tensors = codes.stored("m", scheme["format"])
    layout = stored_layout("m", scheme, 8, 32, "F32")
    assert {n: (tuple(t.shape), t.dtype) for n, t in tensors.items()} == \
        {n: (shape, DTYPES[kind]) for n, (shape, kind) in layout.items() if n != "m.input_scale"}
    again = codes_class(fmt.type).from_stored(dict(tensors), "m", scheme["weights"], scheme["format"])
    assert torch.equal(again.dequantize(), codes.dequantize())
    assert (codes.dequantize() - weight).norm() < 0.25 * weight.norm()  # the codes encode the weight


def test_gptq_refuses_codes_without_a_column_rule_before_any_work(monkeypatch):
    monkeypatch.setattr(GroupedInts, "gptq_rule", None)
    with pytest.raises(OptionError, match=r"^weight_type=int: these codes have no GPTQ column rule"):
        METHODS.make_config("gptq", {"bits": 4, "group_size": 16})
    METHODS.make_config("rtn", {"bits": 4, "group_size": 16})  # round-to-nearest needs none


@pytest.mark.parametrize("fmt", [f for formats in EXAMPLES.values() for f in formats], ids=repr)
def test_the_torch_free_words_agree_with_the_codes(fmt):
    """What a saved card's pages ask without the codes' file (``forgetless report`` imports no torch) agrees
    with what the codes answer: the format read back from a card's config, stored ``pack-quantized`` or not."""
    config = {"bits": fmt.bits, "weight_type": fmt.type, "group_size": fmt.group_size,
              "asymmetric": not fmt.symmetric, "activations": fmt.activations}
    assert QuantFormat.from_config(config) == fmt and QuantFormat.from_config({"dtype": "int8"}) is None
    assert fmt.packed == (fmt.ct_format == "pack-quantized")
    assert fmt.name_word == {"int": f"{fmt.bits}-bit", "fp8": "fp8"}[fmt.type]
