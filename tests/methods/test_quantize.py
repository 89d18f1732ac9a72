"""Quantization as a compression method (int8 dynamic, bf16), alone and stacked after a structural
method; safetensors save / reload in a fresh process; runtimes (torch-bf16, onnxruntime) in the card."""
import copy
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from conftest import batch, tiny_classifier
from safetensors.torch import load_file

from forgetless.cli import main
from forgetless.errors import ConfigError
from forgetless.metrics.runtime import agreement, deploy
from forgetless.metrics.size import parameter_counts
from forgetless.kinds import KINDS
from forgetless.registry import METHODS
from forgetless.tree import parse_then
from forgetless.models.io import load_model, save_model
from forgetless.models.io import quantized_modules
from forgetless.models.surgery import drop_layers, prune_heads
from forgetless.config import EvalConfig
from forgetless.report.card_types import Card

pytestmark = pytest.mark.usefixtures("one_thread")


def quantize(model, **options):
    method = METHODS.get("quantize")(METHODS.make_config("quantize", options))
    return method.compress(model, SimpleNamespace(notes=[]))


def variants():
    """int8 and bf16, alone and after layer removal / head pruning."""
    truncated = tiny_classifier()
    drop_layers(truncated, "encoder", [0, 2])
    pruned = tiny_classifier()
    prune_heads(pruned, {("encoder", 0, "self"): [0, 2], ("encoder", 1, "self"): [1]})
    out = {}
    for dtype in ("int8", "bf16"):
        out[f"{dtype}"] = quantize(tiny_classifier(), dtype=dtype)
        out[f"truncate-{dtype}"] = quantize(copy.deepcopy(truncated), dtype=dtype)
        out[f"heads-{dtype}"] = quantize(copy.deepcopy(pruned), dtype=dtype)
    return out


RELOAD = """
import sys, torch
from safetensors.torch import save_file
from forgetless.models.io import load_model
from conftest import batch
logits = {}
for name in sys.argv[2:]:
    model, _ = load_model(sys.argv[1] + "/" + name)
    with torch.no_grad():
        logits[name] = model(**batch()).logits.float().contiguous()
save_file(logits, sys.argv[1] + "/reloaded.safetensors")
"""


def test_quantized_models_reload_in_a_fresh_process_with_identical_outputs(tmp_path):
    models = variants()
    expected = {}
    for name, model in models.items():
        with torch.no_grad():
            expected[name] = model(**batch()).logits.float()
        save_model(model, tmp_path / name)
    manifest = json.loads((tmp_path / "int8" / "forgetless.json").read_text())
    assert manifest["quantization"]["dtype"] == "int8" and len(manifest["quantization"]["modules"]) == 18
    # stock from_pretrained would leave every int8 Linear's weight at random values: kept out of its reach
    assert not (tmp_path / "int8" / "model.safetensors").exists()
    tensors = load_file(tmp_path / "int8" / "model.forgetless.safetensors")
    assert tensors["bert.encoder.layer.0.output.dense.weight.int8"].dtype == torch.int8
    assert tensors["bert.encoder.layer.0.output.dense.weight.scale"].shape == (32,)
    assert load_file(tmp_path / "bf16" / "model.safetensors")["classifier.weight"].dtype == torch.bfloat16
    assert not list(tmp_path.rglob("*.bin")) and not list(tmp_path.rglob("*.pt"))
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/, beside the repository
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(tests), tests])}
    subprocess.run([sys.executable, "-c", RELOAD, str(tmp_path), *models], check=True, env=env)
    reloaded = load_file(tmp_path / "reloaded.safetensors")
    for name in models:
        assert torch.equal(reloaded[name], expected[name]), name
    model, _ = load_model(tmp_path / "truncate-int8")
    assert len(quantized_modules(model)) == 12 and model.config.num_hidden_layers == 2


def test_quantization_changes_outputs_a_little_and_keeps_parameter_counts():
    base = tiny_classifier()
    with torch.no_grad():
        ref = base(**batch()).logits
        for dtype, tol in (("int8", 0.2), ("bf16", 0.1)):
            model = quantize(copy.deepcopy(base), dtype=dtype)
            diff = (model(**batch()).logits.float() - ref).abs().max().item()
            assert 0 < diff < tol, (dtype, diff)
            assert parameter_counts(model)["total"] == parameter_counts(base)["total"]
    everything = quantize(copy.deepcopy(base), dtype="int8", linears="all")
    assert {"classifier", "bert.pooler.dense"} <= set(quantized_modules(everything))


def test_quantize_declares_its_card_section_and_trains_nothing():
    method = METHODS.build(METHODS.make_config("quantize", {"dtype": "int8"}))
    assert method.report_section() is None and not method.config.recovers
    notes = []
    method.compress(tiny_classifier(), SimpleNamespace(notes=notes))
    section = method.report_section()
    assert list(section) == ["quantization"] and section["quantization"]["dtype"] == "int8"
    assert section["quantization"]["scheme"] == "int8-per-tensor" and "outliers" not in section["quantization"]
    assert section["quantization"]["expected"] is False  # hidden size 32: too small for int8 to pay off
    assert "hidden size 32" in section["quantization"]["why"] and "speedup not expected" in notes[0]


def test_bad_names_are_config_errors():
    with pytest.raises(ConfigError, match="dtype=int3: not one of int8, int8-per-tensor, int8-per-token, bf16"):
        METHODS.make_config("quantize", {"dtype": "int3"})
    with pytest.raises(ConfigError, match="scheme=FP8-DYNAMIC"):
        METHODS.make_config("quantize", {"dtype": "fp8"})
    with pytest.raises(ConfigError, match="runtime=tensorrt: not one of torch, torch-bf16, onnxruntime"):
        EvalConfig(runtime="tensorrt")
    with pytest.raises(ConfigError, match="unknown compression method"):
        parse_then("quantise:dtype=int8")
    with pytest.raises(ConfigError, match="unknown option"):
        parse_then("quantize:bits=8")
    assert parse_then("truncate:layers=2").layers == 2
    with pytest.raises(ConfigError, match="int8-quantized"):
        deploy(quantize(tiny_classifier(), dtype="int8"), "torch-bf16", KINDS["classifier"], "/nonexistent")
    with pytest.raises(ConfigError, match="not available for the seq2seq"):
        deploy(tiny_classifier(), "onnxruntime", KINDS["seq2seq"], "/nonexistent")
    assert main(["compress", "--model", "tiny-bert", "--method", "quantize", "--dtype", "int4"]) == 2
    assert main(["compress", "--model", "tiny-bert", "--runtime", "tvm"]) == 2


def test_agreement_counts_identical_predictions():
    predictions = {"base": {"dev": {"predicted": [0, 1, 2, 1]}, "challenge": {"generated": ["a", "b"]}},
                   "compressed": {"dev": {"predicted": [0, 1, 0, 1]}, "challenge": {"generated": ["a", "c"]}}}
    result = agreement(predictions)
    assert result["sets"] == {"dev": 0.75, "challenge": 0.5} and result["pooled"] == pytest.approx(4 / 6)


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory, tiny_model_dir):
    """A pipeline run (truncate, then int8) whose fine-tuned teacher the other runs reuse."""
    out = tmp_path_factory.mktemp("quantize") / "truncate-int8"
    code = main(["compress", "--model", tiny_model_dir, "--method", "truncate", "--layers", "1",
                 "--then", "quantize:dtype=int8", "--train-size", "96", "--eval-size", "32", "--epochs", "1",
                 "--lr", "1e-3", "--bench-repeats", "1", "--bench-seq-len", "16", "--out", str(out), "--no-progress"])
    assert code == 0
    return out


def _run(tmp_path, teacher_dir, *extra):
    out = tmp_path / "run"
    teacher = json.loads((teacher_dir / "report.json").read_text())["params"]["base"]["source"]["path"]  # cached
    code = main(["compress", "--teacher", teacher, "--eval-size", "32",
                 "--bench-repeats", "1", "--bench-seq-len", "16", "--out", str(out), "--no-progress", *extra])
    assert code == 0
    card = json.loads((out / "report.json").read_text())
    Card.from_json(card)
    return out, card


def test_truncate_then_int8_card_and_reload(teacher_dir):
    card = json.loads((teacher_dir / "report.json").read_text())
    Card.from_json(card)
    assert card["method"]["name"] == "truncate" and card["method"]["then"][0]["config"]["dtype"] == "int8"
    assert card["run"]["then"] == [{"name": "quantize", "dtype": "int8", "linears": "stacks"}]
    dep = card["deployment"]
    assert dep["quantization"][0]["expected"] is False and "hidden size 32" in dep["quantization"][0]["why"]
    assert 0.0 <= dep["agreement"]["pooled"] <= 1.0 and dep["agreement"]["n"] == 64
    assert card["speed"]["meaningful"] and "Deployment" in (teacher_dir / "report.md").read_text()
    model, tokenizer = load_model(teacher_dir / "model")
    assert len(quantized_modules(model)) == 6
    from forgetless.data.tasks import load_task
    from forgetless.metrics.accuracy import evaluate_task

    task = load_task("synthetic", eval_size=32)
    saved = _saved_predictions(teacher_dir, task)
    again = evaluate_task(model, tokenizer, task, 64, 128)["predictions"]
    assert again["dev"]["predicted"] == saved


def test_heads_then_bf16_equals_heads_under_the_bf16_runtime(tmp_path, teacher_dir):
    heads = ["--method", "heads", "--ratio", "0.5", "--recovery", "none", "--scoring-examples", "16"]
    out, card = _run(tmp_path / "then", teacher_dir, *heads, "--then", "quantize:dtype=bf16")
    assert card["method"]["then"][0]["config"]["dtype"] == "bf16" and card["deployment"]["runtime"] == "torch"
    assert card["params"]["compressed"]["total"] < card["params"]["base"]["total"]
    assert json.loads((out / "model" / "forgetless.json").read_text())["quantization"]["dtype"] == "bf16"
    runtime_out, runtime_card = _run(tmp_path / "runtime", teacher_dir, *heads, "--runtime", "torch-bf16")
    assert runtime_card["speed"]["runtime"] == "torch-bf16" and runtime_card["deployment"]["quantization"] == []
    assert "quantization" not in json.loads((runtime_out / "model" / "forgetless.json").read_text())
    # the same pruned model cast to bf16, whether by the method or by the runtime: same predictions
    assert runtime_card["deployment"]["agreement"] == card["deployment"]["agreement"]
    assert 0.5 <= card["deployment"]["agreement"]["pooled"] <= 1.0


def test_onnxruntime_runtime_agrees_with_torch(tmp_path, teacher_dir):
    out, card = _run(tmp_path, teacher_dir, "--method", "heads", "--ratio", "0.5", "--recovery", "none",
                     "--scoring-examples", "16", "--runtime", "onnxruntime")
    assert card["speed"]["runtime"] == "onnxruntime" and (out / "work" / "onnx" / "model.onnx").is_file()
    # the same pruned model under torch gives the same predictions as under onnxruntime
    model, tokenizer = load_model(out / "model")
    from forgetless.data.tasks import load_task
    from forgetless.metrics.accuracy import evaluate_task

    task = load_task("synthetic", eval_size=32)
    torch_run = evaluate_task(model, tokenizer, task, 64, 128)["predictions"]
    assert torch_run["dev"]["predicted"] == _saved_predictions(out, task)
    assert card["deployment"]["agreement"]["n"] == 64


def _saved_predictions(out, task) -> list[int]:
    """The compressed model's dev predictions (label ids) from the run's ``predictions.jsonl``."""
    from forgetless.report.predictions import read_predictions

    rows = [r for r in read_predictions(out / "predictions.jsonl") if r["role"] == "compressed" and r["set"] == "dev"]
    return [task.label_names.index(r["predicted"]) for r in sorted(rows, key=lambda r: r["id"])]


def test_int8_on_a_decoder_llm_is_per_token_and_per_tensor_warns_of_outliers(tmp_path):
    import transformers

    from forgetless.quantization.inputs import input_quantized

    def llama():
        torch.manual_seed(0)
        config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2)
        model = transformers.LlamaForCausalLM(config).eval()
        with torch.no_grad():  # an outlier feature: one channel of the attention inputs 1,000× the others
            model.model.layers[0].input_layernorm.weight[3] = 1000.0
        return model

    ids = torch.randint(0, 64, (4, 10), generator=torch.Generator().manual_seed(0))
    tokenizer = lambda texts, **kw: {"input_ids": ids[:len(texts)], "attention_mask": torch.ones_like(ids[:len(texts)])}
    ctx = SimpleNamespace(notes=[], calibration=["a", "b", "c", "d"], tokenizer=tokenizer, kind=None, task=None)
    per_token = METHODS.build(METHODS.make_config("quantize", {"dtype": "int8"}))
    model = per_token.compress(llama(), ctx)
    assert per_token.report_section()["quantization"]["scheme"] == "int8-per-token" and "decoder LLM" in ctx.notes[0]
    assert len(input_quantized(model)) == 14 and not quantized_modules(model)  # W8A8 hooks, no torch.ao modules
    save_model(model, tmp_path / "w8a8")
    assert json.loads((tmp_path / "w8a8" / "config.json").read_text())["quantization_config"]["format"] == "int-quantized"
    per_tensor = METHODS.build(METHODS.make_config("quantize", {"dtype": "int8-per-tensor"}))
    ctx.notes = []
    per_tensor.compress(llama(), ctx)
    outliers = per_tensor.report_section()["quantization"]["outliers"]
    assert outliers["warn"] and outliers["worst"]["module"] == "model.layers.0.self_attn.q_proj"
    assert outliers["worst"]["zero_share"] > 0.9 and outliers["worst"]["absmax"] > 100 * outliers["worst"]["median"]
    assert any("int8-per-token" in note and "round to 0" in note for note in ctx.notes)
