"""compressed-tensors output (``quantization/ints.py``): int32 bit packing by hand and against
the compressed-tensors package; ``config.json`` and tensor names / shapes / dtypes equal to what
llm-compressor writes for the same schemes (``tests/fixtures/llmcompressor_w4.json``); plain
transformers (with compressed-tensors installed) loads the folders in a fresh process to logits
and greedy generations equal to forgetless's in-memory model (a bit budget's folder of several config groups
too), and 2:4 zeros survive inside the codes."""
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import transformers
from packaging.version import Version
from safetensors.torch import load_file

from forgetless.config import TrainConfig
from forgetless.kinds import KINDS
from forgetless.methods._shared.sequential import run_layer_by_layer
from forgetless.methods.base import CompressionContext
from forgetless.metrics.size import stored_bits
from forgetless.quantization.ints import GROUPED_BITS, pack_int32, unpack_int32
from forgetless.models.io import load_model, save_model
from forgetless.models.checks import tensor_header
from forgetless.models.stock import stock_loadable
from forgetless.models.transformers_compat import compressed_tensors_misreads, zero_points_refused
from forgetless.quantization.compressed_tensors import DENSE_PACKING
from forgetless.registry import METHODS

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "llmcompressor_w4.json").read_text())
ENV = {**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"}
VARIANTS = {  # fixture variant → the gptq options of the same scheme
    "w4_g32_symmetric": {"bits": 4},  # symmetric: the default
    "w4_g32_asymmetric": {"bits": 4, "asymmetric": True},
    "w8_g32_symmetric": {"bits": 8},
    "w4_g32_symmetric_gptq_actorder_weight": {"bits": 4, "act_order": True},
}


def test_packing_by_hand_and_against_compressed_tensors():
    # code j at bits j·b … j·b + b − 1 of the row's stream, 32 bits a word, two's complement
    assert pack_int32(torch.tensor([[1, 2, 3, 15]]), 4).tolist() == [[0xF321]]
    assert pack_int32(torch.tensor([[5, 3, 7]]), 3).tolist() == [[5 | 3 << 3 | 7 << 6]]
    assert pack_int32(torch.tensor([[3, 0, 2, 1, 3]]), 2).tolist() == [[3 | 2 << 4 | 1 << 6 | 3 << 8]]
    assert pack_int32(torch.tensor([[255, 1, 0, 128]]), 8).tolist() == [[0x800001FF - 2 ** 32]]
    straddling = torch.zeros(1, 11, dtype=torch.long)
    straddling[0, 10] = 7  # 3-bit code 10 covers stream bits 30, 31 | 32
    assert pack_int32(straddling, 3).tolist() == [[-2 ** 31 + 2 ** 30, 1]]
    with pytest.raises(ValueError, match="outside"):
        pack_int32(torch.tensor([[16]]), 4)
    compressed_tensors = pytest.importorskip("compressed_tensors", reason="the llm extra: pip install -e '.[llm]'")
    from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32, unpack_from_int32

    dense = Version(compressed_tensors.__version__) >= Version(DENSE_PACKING)  # 0.17 pads every word
    for bits in GROUPED_BITS:
        for columns in (1, 7, 8, 11, 64, 96):
            codes = torch.randint(0, 2 ** bits, (5, columns), generator=torch.Generator().manual_seed(columns))
            packed = pack_int32(codes, bits)
            assert packed.dtype == torch.int32 and packed.shape == (5, -(-columns * bits // 32))
            assert torch.equal(unpack_int32(packed, bits, columns), codes.to(torch.uint8))
            signed = (codes - 2 ** (bits - 1)).to(torch.int8)  # compressed-tensors' codes are signed
            if 32 % bits and not dense:  # ten 3-bit codes a word, two bits unused: another layout
                assert pack_to_int32(signed, bits).shape == (5, -(-columns // (32 // bits)))
                continue
            assert torch.equal(packed, pack_to_int32(signed, bits))
            assert torch.equal(unpack_from_int32(packed, bits, torch.Size([5, columns])), signed)
            assert torch.equal(pack_int32(codes.T, bits).T, pack_to_int32(signed, bits, packed_dim=0))  # zero points


def tiny_llama():
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**FIXTURE["model_config"])).eval()


def gptq(model, **options):
    """The gptq method's per-layer step over seeded random token batches (no task, no pipeline)."""
    method = METHODS.build(METHODS.make_config("gptq", {"group_size": 32, **options}))
    ids = torch.randint(0, 128, (8, 12), generator=torch.Generator().manual_seed(0))
    batches = [{"input_ids": ids[i:i + 4], "attention_mask": torch.ones(4, 12, dtype=torch.long)} for i in (0, 4)]
    method.check_fits(model)
    method.layers = []
    with torch.no_grad():
        run_layer_by_layer(model, batches, method._compress_layer)
    method.finalize(model, None)
    return model


def budgeted(model):
    """rtn under a 6-bit budget over single linears (``methods/_shared/budget.py``): several formats, one
    config group each, some linears kept in float32."""
    from tiny_bert import tiny_tokenizer

    texts = [f"the {w} cat sat on the {v} mat" for w in ("red", "old", "small") for v in ("big", "new")]
    ctx = CompressionContext(task=None, tokenizer=tiny_tokenizer(), teacher=None, work_dir=None,
                             train_config=TrainConfig(progress=False), seed=0, kind=KINDS["causal-lm"],
                             calibration=texts)
    config = METHODS.make_config("rtn", {"bits_budget": 6.0, "sensitivity": "linears"})
    return METHODS.build(config).compress(model, ctx).eval()


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Every fixture scheme (gptq; rtn), plus 3 bits, one group per row, 2:4 zeros and a bit budget's mix of
    formats, saved by forgetless."""
    root = tmp_path_factory.mktemp("ct")
    options = {**VARIANTS, "w3_g32_symmetric": {"bits": 3},
               "w4_channel_asymmetric": {"bits": 4, "group_size": -1, "asymmetric": True},
               "w4_g32_2of4": {"bits": 4}}
    models = {"rtn_w4_g32_symmetric": tiny_llama()}  # round-to-nearest: llm-compressor's QuantizationModifier
    METHODS.build(METHODS.make_config("rtn", {"bits": 4, "group_size": 32})).compress(
        models["rtn_w4_g32_symmetric"], SimpleNamespace(notes=[]))
    save_model(models["rtn_w4_g32_symmetric"], root / "rtn_w4_g32_symmetric")
    models["budget_6_linears"] = budgeted(tiny_llama())
    save_model(models["budget_6_linears"], root / "budget_6_linears")
    for name, opts in options.items():
        model = tiny_llama()
        if name == "w4_g32_2of4":
            with torch.no_grad():
                for module in model.model.layers.modules():
                    if isinstance(module, torch.nn.Linear):  # zero the two smallest of every four inputs
                        w = module.weight.view(module.out_features, -1, 4)
                        w.scatter_(2, w.abs().argsort(dim=2)[..., :2], 0.0)
        models[name] = gptq(model, **opts)
        save_model(models[name], root / name)
    return root, models


def test_config_and_tensors_are_what_llm_compressor_writes(folders):
    root, _ = folders
    for name in [*VARIANTS, "rtn_w4_g32_symmetric"]:
        expected = FIXTURE["variants"][name.removeprefix("rtn_")]
        config = json.loads((root / name / "config.json").read_text())
        # llm-compressor wrote its compressed-tensors release (0.19); forgetless the oldest that reads the folder
        assert config["quantization_config"] == {**expected["quantization_config"], "version": "0.17.0"}, name
        assert config.get("dtype", "float32") == expected["torch_dtype"] == "float32"  # unset: float32 weights
        header = {n: {"shape": list(shape), "dtype": dtype} for n, (shape, dtype) in
                  tensor_header(root / name / "model.safetensors").items()}
        assert header == expected["tensors"], name


def test_channel_strategy_and_storage(folders):
    root, models = folders
    weights = json.loads((root / "w4_channel_asymmetric" / "config.json").read_text())["quantization_config"]
    args = weights["config_groups"]["group_0"]["weights"]
    assert args["strategy"] == "channel" and args["group_size"] is None and args["symmetric"] is False
    tensors = load_file(root / "w4_channel_asymmetric" / "model.safetensors")
    assert tensors["model.layers.0.mlp.down_proj.weight_scale"].shape == (64, 1)
    assert tensors["model.layers.0.mlp.down_proj.weight_zero_point"].shape == (8, 1)  # 64 rows × 4 bits / 32
    # the oldest compressed-tensors that reads each folder: 0.18 packs 3-bit codes across words as forgetless does
    assert weights["version"] == "0.17.0"
    assert json.loads((root / "w3_g32_symmetric" / "config.json").read_text())["quantization_config"]["version"] == \
        "0.18.0"
    # 8 bits, groups of 32: 8 + 32/32 bits a weight plus each weight_shape; embeddings and lm_head stay float32
    size = stored_bits(root / "w8_g32_symmetric")
    assert size["quantized"]["layers"] == 14 and size["quantized"]["weights"] == 73728
    assert size["quantized"]["bits_per_weight"] == pytest.approx(9 + 14 * 16 * 8 / 73728)
    floats = 2 * 128 * 64 + 5 * 64  # embed_tokens, lm_head, 5 norms
    assert size["overall"]["parameters"] == 73728 + floats
    assert size["overall"]["bytes"] == size["quantized"]["bytes"] + 4 * floats
    saved = json.loads((root / "w8_g32_symmetric" / "forgetless.json").read_text())["quantization"]
    assert saved["bytes"] == size["quantized"]["bytes"] and saved["dtype"] == "compressed-tensors"
    assert stock_loadable(root / "w4_g32_symmetric")[0]
    assert "compressed-tensors package" in stock_loadable(root / "w4_g32_symmetric")[1]


STOCK = """
import json, sys, torch, transformers
from transformers import CompressedTensorsConfig
from forgetless.models.io import load_model
ids = torch.arange(24).reshape(2, 12) % 128
out = {}
for folder in sys.argv[1:]:
    def run(model):
        with torch.no_grad():
            generated = model.generate(ids[:, :5], max_new_tokens=4, do_sample=False, pad_token_id=0)
            return model(input_ids=ids).logits.numpy().tobytes().hex(), generated.tolist()
    entry = {"forgetless": run(load_model(folder, with_tokenizer=False)[0])}
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True)
        entry["plain"] = run(model)
        entry["plain_class"] = type(model.model.layers[0].mlp.down_proj).__name__
        entry["zeros"] = int((model.model.layers[0].mlp.down_proj.weight == 0).sum())
    except Exception as exc:
        entry["plain"] = f"{type(exc).__name__}: {exc}"
    try:
        dense = transformers.AutoModelForCausalLM.from_pretrained(
            folder, use_safetensors=True, quantization_config=CompressedTensorsConfig(dequantize=True))
        entry["dequantize"] = run(dense)
    except Exception as exc:
        entry["dequantize"] = f"{type(exc).__name__}: {exc}"
    out[folder] = entry
print(json.dumps(out))
"""


def test_plain_transformers_loads_every_scheme_in_a_fresh_process(folders):
    pytest.importorskip("compressed_tensors", reason="the llm extra: pip install -e '.[llm]'")
    root, models = folders
    ids = torch.arange(24).reshape(2, 12) % 128
    paths = [str(root / name) for name in models]
    result = subprocess.run([sys.executable, "-c", STOCK, *paths], capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    for name, model in models.items():
        with torch.no_grad():
            expected = [model(input_ids=ids).logits.numpy().tobytes().hex(),
                        model.generate(ids[:, :5], max_new_tokens=4, do_sample=False, pad_token_id=0).tolist()]
        entry = loaded[str(root / name)]
        groups = json.loads((root / name / "config.json").read_text())["quantization_config"]["config_groups"]
        if compressed_tensors_misreads(groups):  # 3 bits with compressed-tensors 0.17: refused on the card
            loadable, why = stock_loadable(root / name)
            assert not loadable and f"pip install 'compressed-tensors>={DENSE_PACKING}'" in why, why
            assert entry["forgetless"] == expected and "shapes cannot be multiplied" in entry["dequantize"], name
            continue
        assert entry["forgetless"] == expected, name  # bit for bit
        # transformers 5.24's dequantize=True decompresses every layer with ONE config group's scheme
        # (get_dense_scheme): right for one group, wrong for a mix; plain loading reads each group's
        assert entry["dequantize"] == expected or name.startswith("budget"), name
        symmetric = "asymmetric" not in name
        if symmetric:  # plain from_pretrained: decompressed to nn.Linear on the first forward, same bits
            assert entry["plain"] == expected and entry["plain_class"] == "Linear", name
        elif zero_points_refused():  # transformers >= 5.23 + compressed-tensors >= 0.18: a loud mismatch
            assert "ignore_mismatched_sizes" in entry["plain"], (name, entry["plain"])
        else:
            assert entry["plain"] == expected, (name, entry["plain"])
        if not symmetric:
            loadable, why = stock_loadable(root / name)
            assert loadable and "CompressedTensorsConfig(dequantize=True)" in why
    down = models["w4_g32_2of4"].model.layers[0].mlp.down_proj.weight
    assert loaded[str(root / "w4_g32_2of4")]["zeros"] == int((down == 0).sum()) >= down.numel() // 2
