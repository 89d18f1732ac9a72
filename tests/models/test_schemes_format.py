"""W8A8 int8 and FP8 in memory and on disk (``quantization/inputs.py``, ``fp8.py``, ``compressed_tensors.py``):
the inputs' and weights' quantize-dequantize by hand and against compressed-tensors'
own functions (bit for bit); ``config.json`` and the tensors' names / shapes / dtypes equal to what
llm-compressor 0.14 writes for its presets (``tests/fixtures/llmcompressor_schemes.json``); plain
transformers (with compressed-tensors installed) loads every folder in a fresh process to logits equal,
bit for bit, to forgetless's in-memory model, its inputs quantized the same way."""
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import transformers

from forgetless.errors import OptionError
from forgetless.quantization.inputs import InputQuant, input_quantized
from forgetless.models.checks import tensor_header
from forgetless.quantization.format import QuantFormat
from forgetless.quantization.fp8 import FloatCodes
from forgetless.models.io import save_model
from forgetless.models.stock import stock_loadable
from forgetless.registry import METHODS
from test_compressed_tensors import gptq

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "llmcompressor_schemes.json").read_text())
ENV = {**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"}
W8A8 = {"bits": 8, "group_size": -1, "activations": "int8-token"}
FP8_DYNAMIC = {"bits": 8, "group_size": -1, "weight_type": "fp8", "activations": "fp8-token"}
FP8 = {"bits": 8, "group_size": 0, "weight_type": "fp8", "activations": "fp8-tensor"}
SCHEMES = {  # saved folder → (method, options, the fixture variant it must equal)
    "rtn_w8a8": ("rtn", W8A8, "W8A8"),
    "gptq_w8a8_actorder": ("gptq", {**W8A8, "act_order": True}, "W8A8_smoothquant_gptq"),
    "rtn_fp8_dynamic": ("rtn", FP8_DYNAMIC, "FP8_DYNAMIC"),
    "gptq_fp8_static": ("gptq", FP8, "FP8"),
    "rtn_w8a16": ("rtn", {"bits": 8, "group_size": 128}, "W8A16"),
    "rtn_w4a16": ("rtn", {"bits": 4, "group_size": 128}, "W4A16"),
}


def test_inputs_per_token_by_hand():
    x = torch.tensor([[[0.3, -1.2, 0.6], [0.0, 0.0, 0.0]]])
    s = torch.tensor(1.2) / 127.5  # max |x| / (255 / 2); x / s = 31.875, −127.5, 63.75 → 32, −128 (half to even), 64
    assert torch.equal(InputQuant.named("int8-token")(x)[0, 0], torch.tensor([32.0, -128.0, 64.0]) * s)
    assert torch.equal(InputQuant.named("int8-token")(x)[0, 1], torch.zeros(3))  # an all-zero token stays zero
    y = torch.tensor([[3.0, -0.1, 0.02]])  # s = 3 / 448; −0.1 / s = −14.93 → −15 (e4m3 steps of 1 in [8, 16))
    s = torch.tensor(3.0) / 448                 # 0.02 / s = 2.987 → 3.0 (steps of 0.25 in [2, 4))
    assert torch.equal(InputQuant.named("fp8-token")(y), torch.tensor([[448.0, -15.0, 3.0]]) * s)
    static = InputQuant.named("fp8-tensor", absmax=torch.tensor([0.5, 2.24]).max())
    assert torch.equal(static.scale, torch.tensor([2.24 / 448], dtype=torch.float32))
    assert torch.equal(static(torch.tensor([4.48, -0.01])),  # clamped at 448; −2 is an e4m3 value
                       torch.tensor([448.0, -2.0]) * static.scale)


def test_fp8_weights_by_hand():
    w = torch.tensor([[1.0, -0.5, 0.3], [0.2, 0.0, -0.05]])
    codes = FloatCodes.rounded(w, QuantFormat(8, "fp8", -1))
    assert torch.equal(codes.scales, torch.tensor([[1.0 / 448], [0.2 / 448]]))
    # 0.3 · 448 = 134.4 → 128 (e4m3 steps of 16 in [128, 256)); −0.05 / 0.2 · 448 = −112 (exact)
    assert codes.codes.float().tolist() == [[448.0, -224.0, 128.0], [448.0, 0.0, -112.0]]
    assert torch.equal(codes.dequantize(), codes.codes.float() * codes.scales)
    whole = FloatCodes.rounded(w, QuantFormat(8, "fp8", 0))
    assert whole.scales.shape == (1,) and whole.codes.float()[1].tolist() == [88.0, 0.0, -22.0]  # 89.6 → 88


def test_bit_for_bit_with_compressed_tensors():
    pytest.importorskip("compressed_tensors", reason="the llm extra: pip install -e '.[llm]'")
    from compressed_tensors.quantization import QuantizationArgs
    from compressed_tensors.quantization.lifecycle.forward import fake_quantize
    from compressed_tensors.quantization.utils import calculate_qparams, compute_dynamic_scales_and_zp

    x = torch.randn(3, 7, 64, generator=torch.Generator().manual_seed(0)) * torch.logspace(-2, 2, 64)
    for name in ("int8-token", "fp8-token"):
        quant = InputQuant.named(name)
        args = QuantizationArgs(**quant.args())
        scale, zero = compute_dynamic_scales_and_zp(x, args, None)
        assert torch.equal(quant(x), fake_quantize(x, scale, zero, args)), name
    static = InputQuant.named("fp8-tensor", absmax=x.abs().max())
    args = QuantizationArgs(**static.args())
    scale, zero = calculate_qparams(x.amin().reshape(1), x.amax().reshape(1), args)
    assert torch.equal(static.scale, scale) and torch.equal(static(x), fake_quantize(x, scale, zero, args))
    w = torch.randn(32, 48, generator=torch.Generator().manual_seed(1))
    for strategy in ("channel", "tensor"):
        codes = FloatCodes.rounded(w, QuantFormat(8, "fp8", {"channel": -1, "tensor": 0}[strategy]))
        args = QuantizationArgs(**codes.weights_args())
        low, high = (w.amin(1, keepdim=True), w.amax(1, keepdim=True)) if strategy == "channel" else \
            (w.amin().reshape(1), w.amax().reshape(1))
        scale, zero = calculate_qparams(low, high, args)
        assert torch.equal(codes.scales, scale) and torch.equal(codes.dequantize(), fake_quantize(w, scale, zero, args))


def test_format_options_refused_when_they_do_not_fit():
    for options, flag in (({"activations": "int8-token"}, "bits=8"), ({"weight_type": "fp8"}, "8-bit"),
                          ({"bits": 8, "weight_type": "fp8", "group_size": 64}, "per output row"),
                          ({"bits": 8, "weight_type": "fp8", "activations": "fp8-tensor", "group_size": -1}, "gptq"),
                          ({"activations": "fp8-token", "bits": 8}, "fp8 weights"), ({"group_size": 0}, "fp8")):
        with pytest.raises(OptionError, match=flag):
            METHODS.make_config("rtn", options)


def test_fp8_with_asymmetric_names_only_what_is_wrong():
    """``--weight-type fp8 --bits 8 --asymmetric`` said "give --bits 8 (got 8) without --asymmetric" (issue 54)."""
    options = {"bits": 8, "weight_type": "fp8", "group_size": -1, "asymmetric": True}
    with pytest.raises(OptionError, match=r"8-bit symmetric format; drop asymmetric=True$"):
        METHODS.make_config("rtn", options)
    with pytest.raises(OptionError, match=r"8-bit symmetric format; give bits=8 \(got 4\) and drop asymmetric=True$"):
        METHODS.make_config("rtn", {**options, "bits": 4})


def tiny_llama():
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**FIXTURE["model_config"])).eval()


def quantize(method: str, options: dict):
    """rtn, or gptq's per-layer step over seeded random token batches (``test_compressed_tensors.gptq``)."""
    if method == "rtn":
        return METHODS.build(METHODS.make_config("rtn", options)).compress(tiny_llama(), SimpleNamespace(notes=[]))
    return gptq(tiny_llama(), **options)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("schemes")
    models = {name: quantize(method, options) for name, (method, options, _) in SCHEMES.items()}
    for name, model in models.items():
        save_model(model, root / name)
    return root, models


def _alias(config: dict) -> dict:
    """compressed-tensors reads actorder "static" as an alias of "weight" (what forgetless writes)."""
    text = json.dumps(config).replace('"actorder": "static"', '"actorder": "weight"')
    return json.loads(text)


def test_config_and_tensors_are_what_llm_compressor_writes(folders):
    root, models = folders
    for name, (_, options, variant) in SCHEMES.items():
        expected = FIXTURE["variants"][variant]
        config = json.loads((root / name / "config.json").read_text())["quantization_config"]
        assert config == _alias({**expected["quantization_config"], "version": "0.17.0"}), name  # oldest reader
        header = {n: {"shape": list(shape), "dtype": dtype} for n, (shape, dtype) in
                  tensor_header(root / name / "model.safetensors").items()}
        assert header == expected["tensors"], name
        assert stock_loadable(root / name)[0], name
    quantized = input_quantized(models["gptq_fp8_static"])
    assert len(quantized) == 14 and all(q.strategy == "tensor" and q.scale.shape == (1,) for q in quantized.values())
    assert not input_quantized(models["rtn_w8a16"])


STOCK = """
import json, sys, torch, transformers
from forgetless.models.io import load_model
ids = torch.arange(24).reshape(2, 12) % 128
out = {}
for folder in sys.argv[1:]:
    run = lambda model: model(input_ids=ids).logits.numpy().tobytes().hex()
    with torch.no_grad():
        plain = transformers.AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True)
        quantized = [n for n, m in plain.named_modules() if getattr(m, "quantization_scheme", None) is not None
                     and m.quantization_scheme.input_activations is not None]
        out[folder] = {"plain": run(plain), "forgetless": run(load_model(folder, with_tokenizer=False)[0]),
                       "inputs_quantized": len(quantized)}
print(json.dumps(out))
"""


def test_plain_transformers_runs_the_same_numbers_in_a_fresh_process(folders):
    pytest.importorskip("compressed_tensors", reason="the llm extra: pip install -e '.[llm]'")
    root, models = folders
    ids = torch.arange(24).reshape(2, 12) % 128
    result = subprocess.run([sys.executable, "-c", STOCK, *(str(root / name) for name in SCHEMES)],
                            capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    for name, model in models.items():
        with torch.no_grad():
            expected = model(input_ids=ids).logits.numpy().tobytes().hex()
        entry = loaded[str(root / name)]
        assert entry["plain"] == expected and entry["forgetless"] == expected, name  # bit for bit
        assert entry["inputs_quantized"] == (0 if SCHEMES[name][1].get("activations", "none") == "none" else 14), name
