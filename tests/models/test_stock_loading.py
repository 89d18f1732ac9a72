"""Stock-loading honesty: whatever forgetless writes, plain ``transformers`` ``from_pretrained`` (the
class named in ``forgetless.json``, nothing else) either loads the right weights (logits equal to
``forgetless.load_model``'s) or raises; never random weights without an error. Every kind of output
folder is loaded in ONE fresh process; ``stock.stock_loadable`` must say which it is."""
import copy
import importlib.util
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
import transformers
from conftest import batch, tiny_classifier

from forgetless.methods._shared.magnitude import MagnitudePruner
from forgetless.models.io import save_model
from forgetless.models.stock import stock_fit, stock_loadable
from forgetless.models.surgery import drop_layers, prune_heads
from forgetless.models.transformers_compat import zero_points_refused
from forgetless.registry import METHODS
from forgetless.report.model_card import write_model_card

pytestmark = pytest.mark.usefixtures("one_thread")
LLAMA_IDS = torch.arange(24).reshape(2, 12) % 128
WITH_CT = importlib.util.find_spec("compressed_tensors") is not None  # without it, stock raises an ImportError


def quantize(model, **options):
    method = METHODS.get("quantize")(METHODS.make_config("quantize", options))
    return method.compress(model, SimpleNamespace(notes=[]))


def gptq(symmetric: bool):
    from test_compressed_tensors import gptq as quantize_layers, tiny_llama

    return quantize_layers(tiny_llama(), bits=4, asymmetric=not symmetric)


def folders_of_every_kind():
    """{kind: (model, what stock from_pretrained must do: "exact" or "raises")}."""
    magnitude = tiny_classifier()
    MagnitudePruner(magnitude).prune_to(0.4)
    heads = tiny_classifier()
    prune_heads(heads, {("encoder", 0, "self"): [0, 2], ("encoder", 2, "self"): [1]})  # uneven head counts
    return {"magnitude": (magnitude, "exact"),
            "truncate": (drop_layers(tiny_classifier(), "encoder", [0, 2]), "exact"),
            "heads": (heads, "raises"),
            "int8": (quantize(tiny_classifier(), dtype="int8"), "raises"),
            "truncate-int8": (quantize(drop_layers(tiny_classifier(), "encoder", [1]), dtype="int8"), "raises"),
            "bf16": (quantize(tiny_classifier(), dtype="bf16"), "exact"),
            "heads-bf16": (quantize(copy.deepcopy(heads), dtype="bf16"), "raises"),
            "gptq": (gptq(symmetric=True), "exact" if WITH_CT else "raises"),
            "gptq-asymmetric": (gptq(symmetric=False), "raises" if zero_points_refused() else "exact")}


FRESH = """
import json, sys, torch, transformers
sys.path.insert(0, sys.argv[1])
from conftest import batch
from forgetless.models.io import load_model
LLAMA_IDS = torch.arange(24).reshape(2, 12) % 128
out = {}
for folder in sys.argv[2:]:
    manifest = json.load(open(folder + "/forgetless.json"))
    inputs = {"input_ids": LLAMA_IDS} if manifest["model_class"].endswith("CausalLM") else batch()
    logits = lambda m: m(**inputs).logits.float().numpy().tobytes().hex()
    with torch.no_grad():
        entry = {"forgetless": logits(load_model(folder, with_tokenizer=False)[0].eval())}
        try:
            stock = getattr(transformers, manifest["model_class"]).from_pretrained(folder, use_safetensors=True)
            entry["stock"] = logits(stock.eval())
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    out[folder] = entry
print(json.dumps(out))
"""


def test_stock_from_pretrained_loads_exactly_or_raises_for_every_kind_of_folder(tmp_path):
    kinds = folders_of_every_kind()
    for kind, (model, _) in kinds.items():
        save_model(model, tmp_path / kind)
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/, beside the repository
    env = {**os.environ, "PYTHONPATH": os.path.dirname(tests), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", FRESH, tests, *(str(tmp_path / k) for k in kinds)],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    for kind, (model, outcome) in kinds.items():
        entry = loaded[str(tmp_path / kind)]
        inputs = {"input_ids": LLAMA_IDS} if kind.startswith("gptq") else batch()
        with torch.no_grad():
            assert entry["forgetless"] == model(**inputs).logits.float().numpy().tobytes().hex(), kind
        if outcome == "exact":
            assert entry.get("stock") == entry["forgetless"], (kind, entry.get("error"))
        else:
            assert "stock" not in entry and entry["error"], kind
        loadable, why = stock_loadable(tmp_path / kind)
        assert loadable == (outcome == "exact" or kind.startswith("gptq")), (kind, why)
        if kind == "gptq-asymmetric":  # stock transformers loads it exactly with dequantize=True (test_compressed_tensors)
            assert "CompressedTensorsConfig(dequantize=True)" in why
        card = write_model_card(tmp_path / kind).read_text()  # the model card says which, with the reason
        assert why[1:] in card, kind  # (its first letter capitalized after a full stop)
        if kind == "gptq-asymmetric":
            assert "quantization_config=transformers.CompressedTensorsConfig(dequantize=True))" in card
        elif loadable:
            assert "from_pretrained(\"path/to/this/folder\", use_safetensors=True, trust_remote_code=False)" in card
        else:
            assert "cannot rebuild this model" in card and "forgetless.load_model" in card, kind
            assert ("fails with size mismatches" in card) == kind.startswith("heads"), kind  # int8: no such claim
    assert "no file named model.safetensors" in stock_loadable(tmp_path / "int8")[1]
    assert "int8 dynamic quantization" in stock_loadable(tmp_path / "int8")[1]
    assert "model.safetensors" in loaded[str(tmp_path / "int8")]["error"]  # found no weights: stopped
    assert "mismatch" in loaded[str(tmp_path / "heads")]["error"].lower()
    assert sorted(p.name for p in (tmp_path / "int8").glob("*.safetensors")) == ["model.forgetless.safetensors"]


def test_stock_fit_tells_exact_from_refused_from_silent():
    """The three outcomes from a header alone: a tensor of another shape makes stock raise; a missing,
    unknown or other-dtype tensor would be loaded silently wrong."""
    model = tiny_classifier()
    config = model.config.to_dict()
    header = {name: (tuple(t.shape), "F32") for name, t in model.state_dict().items()
              if name != "bert.embeddings.position_ids"}
    cls = transformers.BertForSequenceClassification
    assert stock_fit(cls, config, header) == ("exact", "config.json describes every layer exactly")
    name = "bert.encoder.layer.0.intermediate.dense.weight"
    fit, why = stock_fit(cls, config, {**header, name: ((36, 32), "F32")})
    assert fit == "refused" and why.startswith(f"{name} has shape [36, 32], config.json describes [37, 32]")
    missing = {k: v for k, v in header.items() if k != name}
    assert stock_fit(cls, config, missing) == ("silent", f"1 tensors stock needs are not in the file (e.g. {name})")
    assert stock_fit(cls, config, {**header, name + ".int8": ((37, 32), "I8")})[0] == "silent"
    assert stock_fit(cls, config, {**header, name: ((37, 32), "BF16")}) == (
        "silent", f"{name} is BF16, stock loads it as F32")


def test_an_uncompressed_folder_of_every_architecture_stays_stock_loadable(tmp_path):
    """The check after saving never moves the weights of a folder stock loading reads exactly (tied
    embeddings, encoder-decoders, GPT-2's Conv1D included)."""
    from architectures import CLASSIFIER_CONFIGS

    from forgetless.models.tiny import TINY_SEQ2SEQ, tiny_seq2seq

    models = {arch: transformers.AutoModelForSequenceClassification.from_config(make(64))
              for arch, make in CLASSIFIER_CONFIGS.items()}
    models.update({kind: tiny_seq2seq(kind, 64) for kind in TINY_SEQ2SEQ})
    models["llama-causal-lm-tied"] = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, tie_word_embeddings=True))
    for arch, model in models.items():
        folder = save_model(model.eval(), tmp_path / arch)
        assert (folder / "model.safetensors").is_file(), arch
        assert stock_loadable(folder) == (True, "config.json describes every layer exactly"), arch
