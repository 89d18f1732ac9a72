"""GPTQ (Frantar et al. 2022, Algorithm 1) and its packed storage: the solver against hand
computations (H = I is round-to-nearest; a two-column error-feedback step by hand), reconstruction
no worse than round-to-nearest, a packed (compressed-tensors) model folder that is physically
smaller and reloads bit-identical in a fresh process, the card's quantization section,
determinism, and bad options refused before any work (exit 2). The format itself (bit packing,
config, stock transformers loading) is tested in ``test_compressed_tensors.py``."""
import json
import os
import subprocess
import sys

import pytest
import torch
import transformers

from forgetless.errors import ConfigError, ModelFileError, OptionError
from forgetless.methods._shared.hessian import (
    HessianAccumulator,
    relative_reconstruction_error,
)
from forgetless.methods.gptq.solver import gptq_quantize
from forgetless.metrics.size import stored_bits
from forgetless.models.io import load_model, save_model
from forgetless.quantization.ints import GROUPED_BITS, group_grid, round_to_nearest
from forgetless.quantization.layers import grouped_modules
from forgetless.registry import METHODS

ENV = {**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"}


def calibration(in_features=32, tokens=400, seed=0):
    """Correlated, unevenly scaled inputs (as real activations are) and their Hessian."""
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(in_features, in_features, generator=g, dtype=torch.float64)
    x = (torch.randn(tokens, in_features, generator=g, dtype=torch.float64) @ mix) * torch.linspace(0.2, 3, in_features)
    acc = HessianAccumulator(in_features)
    acc.add(x)
    return x, acc.hessian


@pytest.mark.parametrize("bits", GROUPED_BITS)
@pytest.mark.parametrize("symmetric", [False, True])
def test_identity_hessian_is_round_to_nearest(bits, symmetric):
    w = torch.randn(6, 32, generator=torch.Generator().manual_seed(bits))
    for act_order in (False, True):
        q = gptq_quantize(w, torch.eye(32, dtype=torch.float64), bits=bits, group_size=8, symmetric=symmetric,
                          act_order=act_order, block_size=16)
        r = round_to_nearest(w, bits, 8, symmetric)
        assert torch.equal(q.codes, r.codes) and torch.equal(q.scales, r.scales) and torch.equal(q.zeros, r.zeros)
    # the grid by hand: 2 bits, [-0.1, 0.45] → S = 0.55 / 3, Z = round(0.1 / S) = 1; symmetric Z = 2
    scale, zero = group_grid(torch.tensor([[0.45, -0.1]]), 2, symmetric=False)
    assert scale.item() == pytest.approx(0.55 / 3, rel=1e-7) and zero.item() == 1.0
    assert group_grid(torch.tensor([[0.45, -0.1]]), 2, symmetric=True)[1].item() == 2.0


def test_two_column_error_feedback_by_hand():
    """2 bits, one group: S = 0.55/3, Z = 1. Column 0: 0.45 → code 3, ŵ0 = 2S, error e = 0.45 − 2S.
    OBS moves column 1 by −e · [H⁻¹]01 / [H⁻¹]00 = +0.9 e / (1 + λ): −0.1 → −0.025, which rounds to
    code 1 (ŵ1 = 0) where round-to-nearest gives code 0 (ŵ1 = −S)."""
    w = torch.tensor([[0.45, -0.1]])
    h = torch.tensor([[1.0, 0.9], [0.9, 1.0]], dtype=torch.float64)
    damp = 1e-3
    q = gptq_quantize(w, h, bits=2, group_size=-1, damp=damp)
    s = float(q.scales[0, 0])
    e = 0.45 - 2 * s
    moved = -0.1 + 0.9 * e / (1 + damp)  # λ = damp · mean(diag H) = damp
    assert moved == pytest.approx(-0.025, abs=2e-4)
    assert q.codes.tolist() == [[3, round(moved / s) + 1]] == [[3, 1]]
    assert round_to_nearest(w, 2, -1).codes.tolist() == [[3, 0]]
    torch.testing.assert_close(q.dequantize(), torch.tensor([[2 * s, 0.0]]))
    assert relative_reconstruction_error(w, q.dequantize(), h) < relative_reconstruction_error(
        w, round_to_nearest(w, 2, -1).dequantize(), h)


@pytest.mark.parametrize("block_size", [128, 1])
def test_static_and_dynamic_grid_rules_by_hand(block_size):
    """2 bits, group size 2 over 3 columns: groups {0, 1} and a last, smaller group {2}. Column 0 is
    uncoupled (H_0j = 0). Group 0's grid: [0, 0.75], S = 0.25, Z = 0 (both rules: nothing moved yet);
    0.75 → code 3 exactly, 0.3 → code 1 (ŵ1 = 0.25, e = 0.05). OBS moves column 2 by
    −e · [H_F⁻¹]12 / [H_F⁻¹]11 = e · H12 / (H22 + λ) = 0.05 · (−0.505 / 1.01) = −0.025: 0.5 → 0.475.
    Dynamic (the GPTQ authors' rule): group 1's grid from 0.475, S = 0.475/3, so ŵ2 = 0.475; static
    (llm-compressor's rule): from the original 0.5, S = 0.5/3, and 0.475 rounds to code 3, ŵ2 = 0.5."""
    w = torch.tensor([[0.75, 0.3, 0.5]])
    h = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, -0.505], [0.0, -0.505, 1.0]], dtype=torch.float64)
    dynamic = gptq_quantize(w, h, bits=2, group_size=2, block_size=block_size, damp=0.01)
    static = gptq_quantize(w, h, bits=2, group_size=2, static_groups=True, block_size=block_size, damp=0.01)
    f32 = lambda x: float(torch.tensor(x, dtype=torch.float32))
    assert dynamic.codes.tolist() == static.codes.tolist() == [[3, 1, 3]]
    assert dynamic.zeros.tolist() == static.zeros.tolist() == [[0, 0]]
    assert dynamic.scales[0, 0].item() == static.scales[0, 0].item() == 0.25
    assert dynamic.scales[0, 1].item() == pytest.approx(f32(0.475 / 3), rel=1e-6)
    assert static.scales[0, 1].item() == f32(0.5 / 3)
    torch.testing.assert_close(dynamic.dequantize(), torch.tensor([[0.75, 0.25, 0.475]]))
    torch.testing.assert_close(static.dequantize(), torch.tensor([[0.75, 0.25, 0.5]]))
    # act-order always takes its grids up front: the same as static here (the Hessian diagonal is flat)
    assert torch.equal(gptq_quantize(w, h, bits=2, group_size=2, act_order=True, damp=0.01).scales, static.scales)


def test_the_method_records_which_grid_rule_ran():
    for options, rule in [({}, "dynamic"), ({"static_groups": True}, "static"), ({"act_order": True}, "static")]:
        method = quantize_in_memory(tiny_llama(), **options)
        assert method.describe()["grid_rule"] == rule and method.report_section()["quantization"]["grid_rule"] == rule
        assert ("from the original weights before the sweep" in method.note(8)) == (rule == "static")
        assert ("when the sweep reaches it" in method.note(8)) == (rule == "dynamic")
    assert METHODS.make_config("gptq", {"static_groups": "true"}).static_groups is True  # recipe key = flag


@pytest.mark.parametrize("bits", GROUPED_BITS)
def test_gptq_reconstructs_no_worse_than_rounding(bits):
    x, h = calibration()
    w = torch.randn(16, 32, generator=torch.Generator().manual_seed(3))
    for group_size in (8, 12, -1):  # 12: groups of 12, 12 and a last one of 8
        rtn = round_to_nearest(w, bits, group_size).dequantize().double()
        direct = lambda w_hat: float(((w.double() - w_hat.double()) @ x.T).norm())  # ‖WX − ŴX‖
        for act_order in (False, True):
            q = gptq_quantize(w, h, bits=bits, group_size=group_size, act_order=act_order, block_size=16)
            assert int(q.codes.max()) < 2 ** bits and q.scales.shape == (16, {8: 4, 12: 3, -1: 1}[group_size])
            assert direct(q.dequantize()) <= direct(rtn), (bits, group_size, act_order)


def test_zeros_stay_zero_so_a_2_4_pattern_survives():
    from forgetless.methods._shared.masks import nm_check
    from forgetless.methods.sparsegpt.solver import sparsegpt_prune

    _, h = calibration()
    pruned = sparsegpt_prune(torch.randn(16, 32, generator=torch.Generator().manual_seed(5)), h, nm=(2, 4),
                             block_size=16).weight
    for act_order in (False, True):
        q = gptq_quantize(pruned, h, bits=3, group_size=8, act_order=act_order, block_size=16).dequantize()
        assert (q[pruned == 0] == 0).all() and nm_check(q, 2, 4).at_most_n  # (rounding may add zeros)


def tiny_llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config).eval()


def quantize_in_memory(model, seed=0, **options):
    """The gptq method's per-layer step over seeded random token batches (no task, no pipeline)."""
    method = METHODS.build(METHODS.make_config("gptq", {"group_size": 16, **options}))
    ids = torch.randint(0, 64, (8, 12), generator=torch.Generator().manual_seed(seed))
    batches = [{"input_ids": ids[i:i + 4], "attention_mask": torch.ones(4, 12, dtype=torch.long)} for i in (0, 4)]
    method.check_fits(model)
    method.calibrate(model, batches)
    method.finalize(model, None)
    return method


FRESH = """
import sys, torch
from forgetless.models.io import load_model
model, _ = load_model(sys.argv[1], with_tokenizer=False)
ids = torch.arange(24).reshape(2, 12) % 64
with torch.no_grad():
    print(model(input_ids=ids).logits.numpy().tobytes().hex())
"""


def test_packed_model_is_smaller_and_reloads_bit_identical_in_a_fresh_process(tmp_path):
    dense = save_model(tiny_llama(), tmp_path / "dense")
    model = tiny_llama()
    method = quantize_in_memory(model)
    assert len(grouped_modules(model)) == len(method.layers) == 14  # 7 linears a layer
    folder = save_model(model, tmp_path / "gptq")
    entry = json.loads((folder / "forgetless.json").read_text())["quantization"]
    weights = sum(m.weight.numel() for name, m in model.named_modules() if ".layers." in name
                  and isinstance(m, torch.nn.Linear))
    # symmetric (the default): 4-bit codes + a float32 scale per 16 weights = 4 + 32/16 bits a weight (no zero
    # points), plus each of the 14 modules' weight_shape (2 × int64)
    assert entry["dtype"] == "compressed-tensors" and entry["weights"] == weights == 73728
    assert entry["bits_per_weight"] == pytest.approx(6.0 + 14 * 16 * 8 / weights, abs=1e-12)
    assert stored_bits(folder)["quantized"] == {"layers": 14, "weights": weights, "bytes": entry["bytes"],
                                                "bits_per_weight": entry["bits_per_weight"]}
    data = lambda f: f.stat().st_size - 8 - int.from_bytes(f.read_bytes()[:8], "little")  # noqa: E731 - no header
    saved = data(dense / "model.safetensors") - data(folder / "model.safetensors")
    assert saved == weights * 4 - entry["bytes"]  # exactly the float32 weights replaced by the packed tensors
    ids = torch.arange(24).reshape(2, 12) % 64
    with torch.no_grad():
        expected = model(input_ids=ids).logits.numpy().tobytes().hex()
    out = subprocess.run([sys.executable, "-c", FRESH, str(folder)], capture_output=True, text=True, env=ENV,
                         check=True).stdout.strip().splitlines()[-1]
    assert out == expected
    reloaded, _ = load_model(folder, with_tokenizer=False)  # reloaded codes re-save to the same bytes
    again = save_model(reloaded, tmp_path / "again")
    assert (again / "model.safetensors").read_bytes() == (folder / "model.safetensors").read_bytes()


def test_same_seed_same_codes_and_a_changed_weight_is_saved_dense(tmp_path):
    a, b = tiny_llama(), tiny_llama()
    quantize_in_memory(a, seed=1, bits=3, act_order=True)
    quantize_in_memory(b, seed=1, bits=3, act_order=True)
    assert all(torch.equal(a.get_submodule(n).weight, b.get_submodule(n).weight) for n in grouped_modules(a))
    first = next(iter(grouped_modules(a)))
    with torch.no_grad():
        a.get_submodule(first).weight.mul_(0.5)  # a later change: its codes no longer describe it
    folder = save_model(a, tmp_path / "m")
    entry = json.loads((folder / "forgetless.json").read_text())["quantization"]
    assert first not in entry["modules"] and len(entry["modules"]) == 13
    assert first in json.loads((folder / "config.json").read_text())["quantization_config"]["ignore"]
    reloaded, _ = load_model(tmp_path / "m", with_tokenizer=False)
    assert torch.equal(reloaded.get_submodule(first).weight, a.get_submodule(first).weight)
    manifest = json.loads((folder / "forgetless.json").read_text())  # the earlier private layout: a clear error
    manifest["quantization"]["dtype"] = "grouped"
    (folder / "forgetless.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFileError, match="private 'grouped' GPTQ format, which is no longer read; rerun gptq"):
        load_model(folder, with_tokenizer=False)


def test_options_checked_against_the_config_and_the_modules():
    with pytest.raises(OptionError, match="recovery=fine-tune: gptq stores integer codes"):
        METHODS.make_config("gptq", {"recovery": "fine-tune"})
    with pytest.raises(OptionError, match="group_size=0"):
        METHODS.make_config("gptq", {"group_size": 0})
    with pytest.raises(ConfigError, match="bits=5: not one of 2, 3, 4, 8"):
        METHODS.make_config("gptq", {"bits": 5})
    dims = {"layers": 2, "decoder_layers": None, "heads": 4, "max_positions": 64, "widths": [64, 128]}
    METHODS.make_config("gptq", {"group_size": 32}).check_model(dims, "model m")
    METHODS.make_config("gptq", {"group_size": -1}).check_model(dims, "model m")
    with pytest.raises(OptionError, match=r"group_size=48: model m has linear layers with 64 inputs, not a multiple "
                                          r"of 48 \(the saved compressed-tensors format has no partial last group\); "
                                          "use 32, or -1"):
        METHODS.make_config("gptq", {"group_size": 48}).check_model(dims, "model m")
    with pytest.raises(OptionError, match="group_size=96: model m has linear layers with 64 inputs, fewer than "
                                          "one group; use at most 64, or -1"):
        METHODS.make_config("gptq", {"group_size": 96}).check_model(dims, "model m")
    with pytest.raises(OptionError, match="group_size=96: model.layers.0.self_attn.q_proj has 64 inputs"):
        METHODS.build(METHODS.make_config("gptq", {"group_size": 96})).check_fits(tiny_llama())


SMALL = ["compress", "--model", "tiny-llama", "--base", "as-is", "--model-kind", "causal-lm", "--method", "gptq",
         "--task", "synthetic", "--train-size", "24", "--eval-size", "8", "--calibration-examples", "8",
         "--calibration-batch", "4", "--no-progress", "--bench-batch-size", "2", "--bench-seq-len", "8",
         "--bench-repeats", "1"]


@pytest.mark.parametrize("flag, value, message", [
    ("--group-size", "48", "--group-size 48: model.layers.0.self_attn.q_proj has 32 inputs, fewer than one"),
    ("--group-size", "24", "--group-size 24: model.layers.0.self_attn.q_proj has 32 inputs, not a multiple of "
                           "24 (the saved compressed-tensors format has no partial last group); use 16, or -1"),
    ("--bits", "5", "--bits"), ("--recovery", "fine-tune", "--recovery fine-tune")])
def test_bad_options_exit_2_before_any_work(tmp_path, flag, value, message, capsys):
    """The command line in this process (``python -m forgetless`` refusing: ``test_oneshot_methods.py``)."""
    from forgetless.cli import main

    out = tmp_path / "never"
    try:
        code = main([*SMALL, flag, value, "--out", str(out)])
    except SystemExit as exc:  # argparse's refusals
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and not out.exists(), err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err


def test_sparsegpt_2_4_then_gptq_from_the_cli_card_and_packed_reload(tmp_path, capsys):
    from forgetless.cli import main  # the whole run in this process

    out = tmp_path / "run"
    args = [a if a != "gptq" else "sparsegpt" for a in SMALL]
    code = main([*args, "--pattern", "2:4", "--block-size", "16", "--then", "gptq:group_size=16", "--out", str(out)])
    assert code == 0, capsys.readouterr().err[-2000:]
    card = json.loads((out / "report.json").read_text())
    section = card["method"]["sections"]["quantization"]
    assert section["bits"] == 4 and section["group_size"] == 16
    assert section["bits_per_weight"] == stored_bits(out / "model")["quantized"]["bits_per_weight"]
    assert 6.0 < section["bits_per_weight"] < 6.25  # symmetric (the default): 4 + 32/16, plus each weight_shape
    assert f"{section['bits_per_weight']:.3f} bits per weight in the quantized layers" in " ".join(card["notes"])
    assert section["layers"] == 28 and 0 < section["reconstruction_error"]["max"] < 1 and section["expected"] is False
    assert card["deployment"]["quantization"] == [section] and card["method"]["sections"]["sparsity"]["nm_check"]["exact"]
    manifest = json.loads((out / "model" / "forgetless.json").read_text())
    assert manifest["quantization"]["bytes"] == section["bytes"] and len(manifest["quantization"]["modules"]) == 28
    compressed = card["params"]["compressed"]
    weights_file = (out / "model" / "model.safetensors").stat().st_size
    assert compressed["bits_per_parameter"] == pytest.approx(8 * weights_file / compressed["total"])
    assert compressed["bits_per_parameter"] < 32 and compressed["disk_bytes"] > weights_file
    assert "| bits per parameter stored (whole weights file) |" in (out / "report.md").read_text()
    from forgetless.methods._shared.masks import nm_check

    model, _ = load_model(out / "model", with_tokenizer=False)  # the 2:4 zeros survive packing and reloading
    linears = [m for name, m in model.named_modules() if ".layers." in name and isinstance(m, torch.nn.Linear)]
    assert len(linears) == 28 and all(nm_check(m.weight, 2, 4).at_most_n for m in linears)
