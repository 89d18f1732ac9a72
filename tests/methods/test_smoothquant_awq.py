"""SmoothQuant and AWQ (``methods/smoothquant``, ``methods/awq``, ``methods/_shared/folding.py``): the
factors of eq. 4 by hand, the folded model equal to the unfolded one before quantization, the producer
found by its test (a norm; v → o only without grouped-query attention; up → down; never gate), AWQ's
search on a toy case whose best α is known and its objective equal to ``‖(Q(Ws)s⁻¹ − W)X‖²`` on the
tokens, and an AWQ model saved as llm-compressor writes W4A16_ASYM, reloaded by plain transformers to
equal logits."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers

from forgetless.methods.awq.config import AwqConfig
from forgetless.methods.awq.search import candidates, quantization_delta, search_scales
from forgetless.methods.smoothquant.method import smoothing_factors
from forgetless.models.checks import tensor_header
from forgetless.models.io import save_model
from forgetless.registry import METHODS

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "llmcompressor_schemes.json").read_text())
ENV = {**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"}
IDS = torch.randint(0, 128, (8, 12), generator=torch.Generator().manual_seed(0))
BATCHES = [{"input_ids": IDS[i:i + 4], "attention_mask": torch.ones(4, 12, dtype=torch.long)} for i in (0, 4)]
TEST = torch.arange(24).reshape(2, 12) % 128


def tiny_llama(kv_heads: int = 2):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**{**FIXTURE["model_config"], "num_key_value_heads": kv_heads})
    return transformers.LlamaForCausalLM(config).eval()


def run(name: str, model, **options):
    method = METHODS.build(METHODS.make_config(name, options))
    method.check_fits(model)
    method.calibrate(model, BATCHES)
    return method.finalize(model, None), method


def test_smoothing_factors_by_hand():
    # s_j = max|X_j|^α / max|W_j|^(1−α): α = 0.5, max|X| = (4, 1, 0), max|W| over both rows = (1, 4, 2)
    weights = [torch.tensor([[1.0, -4.0, 2.0]]), torch.tensor([[-0.5, 3.0, 0.0]])]
    factors = smoothing_factors(torch.tensor([4.0, 1.0, 0.0]), weights, 0.5)
    assert torch.equal(factors, torch.tensor([2.0, 0.5, 1.0]))  # a channel never active keeps 1
    assert torch.equal(smoothing_factors(torch.tensor([4.0, 1.0, 0.0]), weights, 1.0), torch.tensor([4.0, 1.0, 1.0]))


@pytest.mark.parametrize("kv_heads", [2, 4])
def test_smoothquant_folds_into_the_producers_and_keeps_the_function(kv_heads):
    base = tiny_llama(kv_heads)
    with torch.no_grad():
        expected = base(input_ids=TEST).logits
    model, method = run("smoothquant", tiny_llama(kv_heads), alpha=0.8, producers="norms-and-linears")
    with torch.no_grad():
        assert torch.allclose(model(input_ids=TEST).logits, expected, atol=2e-6, rtol=0)
    found = {(e["producer"], tuple(e["linears"])) for e in method.layers if e["layer"] == 0}
    attention, mlp = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), ("mlp.gate_proj", "mlp.up_proj")
    expected_found = {("input_layernorm", attention), ("post_attention_layernorm", mlp),
                      ("mlp.up_proj", ("mlp.down_proj",))}
    if kv_heads == 4:  # v_proj has as many channels as o_proj reads: attention is linear in the values
        expected_found.add(("self_attn.v_proj", ("self_attn.o_proj",)))
    assert found == expected_found
    smoothed = model.model.layers[0].input_layernorm.weight
    assert not torch.equal(smoothed, base.model.layers[0].input_layernorm.weight)
    _, norms_only = run("smoothquant", tiny_llama(kv_heads), alpha=0.5)
    assert {e["producer"] for e in norms_only.layers} == {"input_layernorm", "post_attention_layernorm"}


def test_awq_search_finds_the_alpha_that_makes_the_weights_exact():
    # x̄ = (1, 3): s(α) = (3^(−α/2), 3^(α/2)) after normalisation; at α = 0.5 the scaled row W·s = (3c, 15c) lies on
    # the asymmetric 4-bit grid of one group (S = c, zero point 0), so Q(Ws) = Ws; at α = 0 and 1 it does not
    c = 0.01
    weight = torch.tensor([[3 * c * 3 ** 0.25, 15 * c * 3 ** -0.25]], dtype=torch.float64).float()
    config = AwqConfig(bits=4, group_size=-1, asymmetric=True)
    x = torch.randn(64, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * torch.tensor([1.0, 3.0])
    hessian = (2 * x.T @ x / len(x)).float()
    scales, alpha, errors = search_scales([weight], hessian, torch.tensor([1.0, 3.0]), config, grid=3, duo=False)
    assert alpha == 0.5 and errors["best"] < 1e-9 * errors["initial"]
    assert torch.allclose(scales, torch.tensor([3 ** -0.25, 3 ** 0.25]), rtol=1e-6)
    for alpha, candidate in candidates(torch.tensor([1.0, 3.0]), None, 3):  # the objective is eq. 4 on the tokens
        delta = quantization_delta(weight, candidate, config).double()
        direct = (delta @ x.T).square().sum() * 2 / len(x)
        assert float(direct) == pytest.approx(float(((delta.float() @ hessian) * delta.float()).sum()), rel=1e-4)


def test_awq_saved_as_llm_compressor_writes_and_reloaded_by_plain_transformers(tmp_path):
    pytest.importorskip("compressed_tensors", reason="the llm extra: pip install -e '.[llm]'")
    model, method = run("awq", tiny_llama(), group_size=128, asymmetric=True, grid=5)
    rtn, _ = run("awq", tiny_llama(), group_size=128, asymmetric=True, grid=5, clip=False)
    assert all(e["error_ratio"] <= 1 for e in method.layers if e["producer"])  # never worse than s = 1
    assert {e["module"] for e in method.layers if e["producer"] == "mlp.up_proj"} == {"mlp.down_proj"}
    save_model(model, tmp_path / "awq")
    expected = FIXTURE["variants"]["W4A16_ASYM_awq"]
    config = json.loads((tmp_path / "awq" / "config.json").read_text())["quantization_config"]
    assert config == {**expected["quantization_config"], "version": "0.17.0"}  # the oldest compressed-tensors reader
    header = {n: {"shape": list(s), "dtype": d} for n, (s, d) in tensor_header(tmp_path / "awq" / "model.safetensors").items()}
    assert header == expected["tensors"]
    script = ("import sys, torch, transformers; m = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], "
              "use_safetensors=True, quantization_config=transformers.CompressedTensorsConfig(dequantize=True));"
              "print(m(input_ids=torch.arange(24).reshape(2, 12) % 128).logits.detach().numpy().tobytes().hex())")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "awq")], capture_output=True, text=True,
                            env=ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    with torch.no_grad():
        assert result.stdout.strip().splitlines()[-1] == model(input_ids=TEST).logits.numpy().tobytes().hex()
        assert not torch.equal(model(input_ids=TEST).logits, rtn(input_ids=TEST).logits)  # clipping changed weights


def test_a_post_norm_layernorm_feeding_the_residual_is_no_producer():
    torch.manual_seed(0)  # BERT: attention.output.LayerNorm feeds the FFN and the residual; folding into it is wrong
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64)
    model = transformers.BertForSequenceClassification(config).eval()
    batch = {"input_ids": IDS[:4] % 64, "attention_mask": torch.ones(4, 12, dtype=torch.long)}
    with torch.no_grad():
        expected = model(**batch).logits
    method = METHODS.build(METHODS.make_config("smoothquant", {"producers": "norms-and-linears"}))
    method.calibrate(model, [batch])
    assert {(e["producer"], tuple(e["linears"])) for e in method.layers} == {
        ("attention.self.value", ("attention.output.dense",))}  # values → output projection only
    with torch.no_grad():
        assert torch.allclose(model(**batch).logits, expected, atol=1e-6, rtol=0)
