"""Wanda and SparseGPT as registered methods, through the one pipeline on tiny-llama (base as-is,
causal-lm, synthetic task): the reached sparsity of every prunable layer equals the solver's exact
zero count (checked on the saved weights reloaded in a fresh process; 2:4 = exactly 2 of every 4
kept), the card validates and claims no meaningful speedup, the CLI runs ``--method wanda
--pattern 2:4``, bad options exit 2 before any work, and a seed makes the weights reproducible. Whole runs of
the command line run in this process (``cli.main``: the import of the stack is paid once); the saved weights are
read back in a fresh process, and the refusals go through ``python -m forgetless``."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from forgetless.cli import main
from forgetless.config import EvalConfig
from forgetless.data.tasks import load_task
from forgetless.metrics.speed import SpeedConfig
from forgetless.config import RunConfig
from forgetless.pipeline import run_and_save
from forgetless.registry import METHODS
from forgetless.report.card_types import Card
from forgetless.training.trainer import TrainConfig

ENV = {**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"}
SMALL = ["--task", "synthetic", "--train-size", "24", "--eval-size", "8", "--calibration-examples", "8",
         "--calibration-batch", "4", "--no-progress", "--bench-batch-size", "2", "--bench-seq-len", "8",
         "--bench-repeats", "1"]

FRESH = """
import json, sys
from safetensors.torch import load_file
out = {}
for key, w in load_file(sys.argv[1]).items():
    if ".layers." in key and key.endswith("proj.weight"):
        groups = (w.reshape(w.shape[0], -1, 4) != 0).sum(dim=2) if w.shape[1] % 4 == 0 else None
        out[key] = {"shape": list(w.shape), "zeros": int((w == 0).sum()),
                    "kept_per_4": sorted(set(groups.flatten().tolist())) if groups is not None else None}
print(json.dumps(out))
"""


def reload_fresh(folder) -> dict:
    result = subprocess.run([sys.executable, "-c", FRESH, str(folder / "model.safetensors")], capture_output=True,
                            text=True, check=True, env=ENV)
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    """``forgetless ARGV`` run in this process: (exit code, what it wrote to stderr)."""
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def run_python(method: str, out, seed: int = 0, **options) -> dict:
    task = load_task("synthetic", train_size=24, eval_size=8)
    config = METHODS.make_config(method, {"calibration_examples": 8, "calibration_batch": 4, **options})
    run = RunConfig(model="tiny-llama", base="as-is", model_kind="causal-lm", method=config, seed=seed,
                    progress=False, eval=EvalConfig(batch_size=8),
                    train=TrainConfig(max_length=64, progress=False),
                    speed=SpeedConfig(batch_size=2, seq_len=8, repeats=1, warmup=0, new_tokens=2))
    return run_and_save(task, run, out).card.to_json()


@pytest.fixture(scope="module")
def sparsegpt_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sparsegpt")
    return out, run_python("sparsegpt", out, sparsity=0.5, block_size=16)


def test_sparsegpt_reaches_the_target_per_layer_and_the_card_validates(sparsegpt_run):
    out, card = sparsegpt_run
    Card.from_json(card)
    assert card["kind"]["model"] == "causal-lm" and card["speed"]["meaningful"] is False
    assert card["method"]["sections"]["sparsity"]["pattern"] == "unstructured"  # the method's section reaches the card
    saved = reload_fresh(out / "model")
    assert len(saved) == 4 * 7  # tiny-llama: 4 layers × (q, k, v, o, gate, up, down)
    for key, entry in saved.items():
        rows, cols = entry["shape"]
        # SparseGPT's adaptive mask: round(0.5 · rows · width) zeros in every block of 16 columns
        expected = sum(round(0.5 * rows * min(16, cols - start)) for start in range(0, cols, 16))
        assert entry["zeros"] == expected, key
    meta = json.loads((out / "model" / "forgetless.json").read_text())["metadata"]["artifacts"]
    assert meta["pattern"] == "unstructured" and len(meta["layers"]) == 28
    assert all(e["sparsity"] == 0.5 and 0 < e["reconstruction_error"] < 1 for e in meta["layers"])


def test_same_seed_gives_the_same_weights(sparsegpt_run, tmp_path):
    out, _ = sparsegpt_run
    run_python("sparsegpt", tmp_path, sparsity=0.5, block_size=16)
    first = load_file(str(out / "model" / "model.safetensors"))
    second = load_file(str(tmp_path / "model" / "model.safetensors"))
    assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


def test_wanda_2_4_from_the_cli_keeps_exactly_2_of_every_4(tmp_path, capsys):
    out = tmp_path / "wanda"
    code, err = run_cli(["compress", "--model", "tiny-llama", "--base", "as-is", "--model-kind", "causal-lm", "--method",
                         "wanda", "--pattern", "2:4", *SMALL, "--out", str(out)], capsys)
    assert code == 0, err[-2000:]
    saved = reload_fresh(out / "model")
    assert len(saved) == 28 and all(e["kept_per_4"] == [2] for e in saved.values())
    assert all(e["zeros"] * 2 == e["shape"][0] * e["shape"][1] for e in saved.values())
    card = json.loads((out / "report.json").read_text())
    Card.from_json(card)
    assert card["speed"]["meaningful"] is False
    assert any("no speedup on CPU" in note for note in card["notes"])


@pytest.mark.parametrize("flag, value, message", [
    ("--pattern", "3:2", "--pattern 3:2"), ("--sparsity", "1.5", "--sparsity"),
    ("--calibration-examples", "0", "--calibration-examples")])
def test_bad_options_exit_2_before_any_work(tmp_path, flag, value, message):
    out = tmp_path / "never"
    result = subprocess.run([sys.executable, "-m", "forgetless", "compress", "--model", "tiny-llama", "--base",
                             "as-is", "--model-kind", "causal-lm", "--method", "wanda", *SMALL, flag, value,
                             "--out", str(out)], capture_output=True, text=True, env=ENV)
    assert result.returncode == 2 and message in result.stderr and not out.exists()
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1, result.stderr


def test_block_size_must_fit_the_pattern():
    from forgetless.errors import OptionError

    with pytest.raises(OptionError, match="block_size=6: must be a multiple of M = 4"):
        METHODS.make_config("sparsegpt", {"pattern": "2:4", "block_size": 6})
    assert METHODS.make_config("wanda", {"pattern": "4:8"}).target_sparsity == 0.5


def test_n_m_needs_input_widths_divisible_by_m():
    import transformers

    from forgetless.errors import OptionError
    from forgetless.validate import model_dims

    bert = transformers.BertModel(transformers.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2,
                                                          num_attention_heads=4, intermediate_size=36))
    METHODS.build(METHODS.make_config("wanda", {"pattern": "2:4"})).check_fits(bert)  # 32 and 36: multiples of 4
    with pytest.raises(OptionError, match="pattern=4:8: encoder.layer.0.output.dense has 36 inputs, not a "
                                          "multiple of 8; use pattern=unstructured"):
        METHODS.build(METHODS.make_config("wanda", {"pattern": "4:8"})).check_fits(bert)
    # before any work, from the config alone (validate.model_dims → check_model)
    dims = model_dims(bert)
    assert dims["widths"] == [32, 36]
    METHODS.make_config("wanda", {"pattern": "2:4"}).check_model(dims, "model m")
    with pytest.raises(OptionError, match="pattern=4:8: model m has linear layers with 36 inputs, not a multiple "
                                          "of 8; use pattern=unstructured"):
        METHODS.make_config("sparsegpt", {"pattern": "4:8", "block_size": 16}).check_model(dims, "model m")


def _compressed(method: str, tmp_path, **options):
    from forgetless.kinds.causal_lm import CausalLMKind
    from forgetless.methods.base import CompressionContext
    from forgetless.models.loading import load_causal_lm

    task = load_task("synthetic", train_size=24, eval_size=8)
    model, tokenizer = load_causal_lm("tiny-llama", seed=0)
    ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=None, work_dir=tmp_path,
                             train_config=TrainConfig(max_steps=2, batch_size=4, max_length=64, progress=False),
                             kind=CausalLMKind())
    method = METHODS.build(METHODS.make_config(method, {"calibration_examples": 8, "calibration_batch": 4,
                                                        **options}))
    return method.compress(model, ctx), method, ctx


def test_report_section_and_sparsegpt_reconstructs_better_than_wanda(tmp_path):
    _, wanda, _ = _compressed("wanda", tmp_path, pattern="4:8")
    _, sparsegpt, _ = _compressed("sparsegpt", tmp_path, pattern="4:8", block_size=16)
    for method in (wanda, sparsegpt):
        section = method.report_section()["sparsity"]
        assert section["pattern"] == "4:8" and section["reached"] == 0.5 and section["nm_check"]["exact"] is True
        assert 0 < section["reconstruction_error"]["mean"] <= section["reconstruction_error"]["max"] < 1
        assert section["speedup"].startswith("no speedup on CPU")
    # the first layer sees the same calibration inputs in both runs: OBS's update beats no update
    first = lambda m: [e["reconstruction_error"] for e in m.artifacts()["layers"] if e["layer"] == 0]
    assert all(s < w for s, w in zip(first(sparsegpt), first(wanda)))


def test_recovery_fine_tune_holds_the_zeros(tmp_path):
    model, method, ctx = _compressed("wanda", tmp_path, pattern="2:4", recovery="fine-tune")
    assert [run["max_steps"] for run in ctx.fine_tunes] == [2]  # it was trained
    assert method.config.recovers and method.report_section()["sparsity"]["nm_check"]["exact"] is True
    for layer in model.model.layers:
        for linear in (m for m in layer.modules() if isinstance(m, torch.nn.Linear)):
            kept = (linear.weight.reshape(linear.weight.shape[0], -1, 4) != 0).sum(dim=2)
            assert bool((kept == 2).all())


def test_stacked_wanda_gptq_is_named_by_both_sized_in_stored_bits_and_not_timed(tmp_path, capsys):
    """``--speed auto`` (the default) skips timing a model whose dense computation is the base's, with
    the reason on stderr and in the card; the title, model card name, tags and options name both
    methods; the size section states bits per weight; the N:M check and per-layer errors are in
    report.md; the model card has the perplexity, the deployment notes and how stock loads it."""
    out, text = tmp_path / "stacked", tmp_path / "ppl.txt"
    text.write_text("the doctor saw the lawyer\nthe judge helped the senator in the park\n")
    code, err = run_cli(["compress", "--model", "tiny-llama", "--base", "as-is", "--model-kind", "causal-lm", "--method",
                         "wanda", "--pattern", "2:4", "--then",
                         "gptq:bits=4,group_size=16,calibration_examples=8,calibration_batch=4",
                         "--perplexity-file", str(text), *SMALL, "--out", str(out)], capsys)
    assert code == 0, err[-2000:]
    why = ("speed not timed: wanda 2:4 + gptq 4-bit leave the dense fp32 computation unchanged (zeros and dequantized "
           "int4 codes run the same kernels as the base); --speed full times it anyway")
    assert f"[5/5] {why}" in err  # no objective step: nothing trains
    card = json.loads((out / "report.json").read_text())
    Card.from_json(card)
    served = card["speed"].pop("served")  # vLLM's own kernels would run the codes: tried even when not timed here
    # where vLLM is installed, the tiny base built from a config has no folder for vLLM to load
    reason = "the base has no model folder on disk" if importlib.util.find_spec("vllm") else "vLLM is not installed"
    assert served["engine"].startswith("vllm") and not served["measured"] and reason in served["why"], served
    assert card["speed"] == {"timed": False, "why_not_timed": why, "setting": "auto", "runtime": "torch",
                             "meaningful": False}
    report = (out / "report.md").read_text()
    assert report.startswith("# forgetless report card: synthetic · wanda 2:4 + gptq 4-bit\n")
    assert "<title>forgetless report card: synthetic · wanda 2:4 + gptq 4-bit</title>" in \
        (out / "report.html").read_text()
    assert "Speed not timed: wanda 2:4 + gptq 4-bit leave" in report and "×" not in report.split("## Speed")[1][:300]
    # symmetric 4-bit, groups of 16: 4 + 32/16 bits a weight, plus a 2 × int64 weight_shape per quantized layer
    stored = card["params"]["stored"]["quantized"]
    weights = 4 * (2 * 32 * 32 + 2 * 16 * 32 + 3 * 64 * 32)  # tiny-llama: q, o; k, v (2 of 4 heads); gate, up, down
    assert stored["layers"] == 28 and stored["weights"] == weights
    assert stored["bits_per_weight"] == pytest.approx(6 + 28 * 16 * 8 / weights)
    assert f"| bits per weight in the 28 quantized layers (every tensor stored for them) | 32.00 | " \
           f"{stored['bits_per_weight']:.2f} |" in report
    # the size tile: the stored weights against the base's float32 ones (no base file: tiny-llama is built in memory)
    ratio = card["params"]["stored"]["overall"]["bytes"] / (4 * card["params"]["base"]["total"])
    assert ratio < 0.995 and f'size of the stored weights</div><div class="value">{ratio:.2f}×</div>' in \
        (out / "report.html").read_text()
    # the N:M check: every group of 4 inputs keeps exactly 2 (tiny-llama's weights have no zeros of their own)
    assert "| wanda | decoder | 28 | " in report and f"| {weights // 4:,} | {weights // 4:,} | 0 | 0 | 0 |" in report
    assert "| gptq | decoder | 28 | " in report
    model_card = (out / "model" / "README.md").read_text()
    assert "# tiny-llama-wanda-gptq-synthetic" in model_card and "| method | wanda 2:4 + gptq 4-bit |" in model_card
    assert "- wanda\n- gptq\n" in model_card and '"wanda": {' in model_card and '"gptq": {' in model_card
    lm = card["language_model"]
    shown = lambda v: f"{v:.4f}" if v < 1000 else f"{v:,.0f}"  # noqa: E731 - the model card's number format
    assert f"| perplexity: ppl.txt | perplexity | {lm['base']['scored']:,} | " \
           f"{shown(lm['base']['perplexity'])} | {shown(lm['compressed']['perplexity'])} |" in model_card  # n: tokens scored
    assert "| lower is better; n: the tokens scored |" in model_card
    assert "no speedup on CPU and none in current vLLM" in model_card and "vLLM serves it" in model_card
    assert "| why | " + why + " |" in model_card
    # grouped-query attention: tiny-llama's 4 query heads read 2 key/value groups (SmolLM2: 9 and 3)
    assert "| stack | layer | self-attention query heads (key/value groups, 2 query heads each) |" in model_card
    assert "| decoder | 0 | 4 (2) | – | 64 |" in model_card
    assert "quantization_config=transformers.CompressedTensorsConfig" not in model_card  # symmetric: plain loading


def test_speed_auto_times_a_layer_drop_with_the_load_average_and_none_times_nothing(tmp_path, capsys):
    for setting, out in (("auto", tmp_path / "auto"), ("none", tmp_path / "none")):
        code, err = run_cli(["compress", "--model", "tiny-llama", "--base", "as-is", "--model-kind", "causal-lm",
                             "--method", "truncate", "--layers", "2", "--recovery", "none", "--speed", setting,
                             *SMALL[:6], *SMALL[10:], "--bench-new-tokens", "2", "--out", str(out)], capsys)
        assert code == 0, err[-2000:]
        card = json.loads((out / "report.json").read_text())
        Card.from_json(card)
    auto = json.loads((tmp_path / "auto" / "report.json").read_text())["speed"]
    assert auto["timed"] and auto["setting"] == "auto" and auto["meaningful"] and auto["mode"] == "prefill+decode"
    assert len(auto["load_average"]["before"]) == len(auto["load_average"]["after"]) == 3
    assert f"load average {auto['load_average']['before'][0]:.1f} before" in (tmp_path / "auto" / "report.md").read_text()
    assert json.loads((tmp_path / "none" / "report.json").read_text())["speed"]["why_not_timed"] == \
        "speed not timed (--speed none)"
