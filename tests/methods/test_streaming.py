"""Streamed calibration (``methods/_shared/streamed.py``, ``models/streaming.py``): a tiny Llama
compressed with its weights left on disk, one layer in memory at a time, saves bit for bit the
weights of the fully loaded path (``apply`` + ``save_model``) for wanda, sparsegpt and gptq (same
tensor names, dtypes and values; for GPTQ the same ``quantization_config``); the folder reloads
in a fresh process with ``forgetless.load_model`` and plain transformers; what it cannot stream is
one error before any work; the incremental safetensors writer writes what ``save_file`` reads."""
import dataclasses
import json
import os
import re
import stat
import subprocess
import sys

import pytest
import torch
import transformers
from safetensors.torch import load_file

import forgetless
from forgetless.errors import ForgetlessError
from forgetless.fsutil import usual_mode
from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.sparsegpt.config import SparseGptConfig
from forgetless.methods.wanda.config import WandaConfig
from forgetless.models.io import load_model, save_model
from forgetless.registry import METHODS
from forgetless.schemes import scheme_methods
from forgetless.models.streaming import SafetensorsWriter
from forgetless.models.tiny import tiny_llama_config

ENV = {**os.environ, "PYTHONPATH": os.getcwd(), "HF_HUB_OFFLINE": "1"}
TEXTS = [f"sample text number {i} about {w} and more words to calibrate on" for i, w in
         enumerate(["cats", "dogs", "the weather", "a long road", "music", "small models", "rivers", "bread",
                    "trains", "paper"])]
CALIBRATION = {"calibration_examples": 8, "calibration_length": 24, "calibration_batch": 3}
CONFIGS = {
    "wanda": lambda: WandaConfig(sparsity=0.5, **CALIBRATION),
    "sparsegpt": lambda: SparseGptConfig(pattern="2:4", **CALIBRATION),
    "gptq": lambda: GptqConfig(bits=4, group_size=16, asymmetric=True, **CALIBRATION),
}


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory, minilm_tokenizer):
    """A tiny Llama causal LM (tied embeddings, as SmolLM2) saved as a plain Hugging Face folder."""
    path = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    config = tiny_llama_config(minilm_tokenizer.vocab_size, minilm_tokenizer.pad_token_id, tie_word_embeddings=True)
    transformers.LlamaForCausalLM(config).save_pretrained(path)
    minilm_tokenizer.save_pretrained(path)
    return path


def loaded_then_saved(llama_dir, config, out):
    from forgetless.models.loading import load_causal_lm

    model, tokenizer = load_causal_lm(str(llama_dir))
    compressed = forgetless.apply(model, config, calibration=TEXTS, tokenizer=tokenizer)
    save_model(compressed, out, tokenizer)
    return out


@pytest.mark.parametrize("method", sorted(CONFIGS))
def test_streamed_weights_are_bit_identical_to_the_fully_loaded_path(method, llama_dir, tmp_path):
    full = loaded_then_saved(llama_dir, CONFIGS[method](), tmp_path / "full")
    streamed = forgetless.apply_streamed(str(llama_dir), CONFIGS[method](), calibration=TEXTS, out_dir=tmp_path / "streamed")
    assert streamed == tmp_path / "streamed"
    a, b = load_file(full / "model.safetensors"), load_file(streamed / "model.safetensors")
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and torch.equal(a[name], b[name]), name
    for folder in (full, streamed):  # one mode for every file, the user's umask's (0600 from save_file before)
        assert {stat.S_IMODE(f.stat().st_mode) for f in folder.rglob("*") if f.is_file()} == {usual_mode()}, folder
    configs = [json.loads((folder / "config.json").read_text()) for folder in (full, streamed)]
    assert configs[0].get("quantization_config") == configs[1].get("quantization_config")
    assert ("quantization_config" in configs[1]) == (method == "gptq")
    if method == "gptq":
        assert any(name.endswith(".weight_packed") for name in b)
        assert any(name.endswith(".weight_zero_point") for name in b)  # asymmetric
        entry = json.loads((streamed / "forgetless.json").read_text())["quantization"]
        assert len(entry["modules"]) == 4 * 7 and "model.layers.2.mlp.up_proj" in entry["modules"]
        assert entry["bytes"] == sum(t.numel() * t.element_size() for n, t in b.items() if ".weight_" in n)
    else:  # the method did prune: half the weights of every layer's linears are zero
        weight = b["model.layers.3.mlp.down_proj.weight"]
        assert float((weight == 0).float().mean()) == pytest.approx(0.5, abs=0.02)
    manifests = [json.loads((folder / "forgetless.json").read_text()) for folder in (full, streamed)]
    assert manifests[0].get("quantization") == manifests[1].get("quantization")
    layers = manifests[1]["metadata"]["artifacts"]["layers"]
    assert len(layers) == 4 * 7 and all("reconstruction_error" in entry for entry in layers)
    if method != "gptq":  # measured before each layer was freed, as finalize measures the whole model
        for entry in layers:
            weight = b[f"model.layers.{entry['layer']}.{entry['module']}.weight"]
            assert entry["zeros"] == int((weight == 0).sum()) and entry["weights"] == weight.numel()
            assert entry["nm"] is None if method == "wanda" else entry["nm"]["exactly_n"] == entry["nm"]["groups"]


STACKS = {  # the W8A8-INT8 scheme's methods (smoothquant α 0.8, then gptq int8 per row, int8 inputs per token)
    "W8A8-INT8": lambda: [dataclasses.replace(c, **CALIBRATION) for c in scheme_methods("W8A8-INT8")],
    "sparsegpt+gptq": lambda: [CONFIGS["sparsegpt"](), CONFIGS["gptq"]()],
}


def in_memory_stack(llama_dir, stack, out, monkeypatch):
    """``forgetless.apply`` of ``stack`` on the loaded model + ``save_model``, with the manifest's metadata
    ``save_run`` writes for the methods ``apply`` ran (``method``, its ``artifacts``, ``then``)."""
    from forgetless.models.loading import load_causal_lm

    built, build = [], METHODS.build
    monkeypatch.setattr(METHODS, "build", lambda config: built.append(build(config)) or built[-1])
    model, tokenizer = load_causal_lm(str(llama_dir))
    compressed = forgetless.apply(model, stack, calibration=TEXTS, tokenizer=tokenizer)
    ran = [method for method in built if getattr(method, "layers", None) is not None]  # not the checks' copies
    monkeypatch.undo()
    assert [m.config.name for m in ran] == [c.name for c in stack]
    save_model(compressed, out, tokenizer, metadata={"method": ran[0].describe(), "artifacts": ran[0].artifacts(),
                                                     "then": [m.describe() for m in ran[1:]]})
    return out


@pytest.mark.parametrize("name", sorted(STACKS))
def test_a_streamed_stack_is_bit_identical_to_the_in_memory_stack(name, llama_dir, tmp_path, monkeypatch):
    """Each method a streamed pass reading the folder the one before wrote (float32: exact), so the saved
    tensors, ``quantization_config`` and manifest are those of ``apply`` + ``save_model``; the intermediate
    folder is gone (only the output folder, holding what the in-memory save holds)."""
    from forgetless.models.streaming import LayerStream

    full = in_memory_stack(llama_dir, STACKS[name](), tmp_path / "full", monkeypatch)
    written, start = [], LayerStream.start
    monkeypatch.setattr(LayerStream, "start", lambda self, out: written.append(out) or start(self, out))
    streamed = forgetless.apply_streamed(str(llama_dir), STACKS[name](), calibration=TEXTS, out_dir=tmp_path / "s")
    assert written[0].parent == written[1] and written[1].parent == tmp_path  # inside the output's temporary folder
    assert written[1].name.startswith(".s.tmp-") and not written[1].exists()
    a, b = load_file(full / "model.safetensors"), load_file(streamed / "model.safetensors")
    assert sorted(a) == sorted(b)
    for tensor in a:
        assert a[tensor].dtype == b[tensor].dtype and torch.equal(a[tensor], b[tensor]), tensor
    configs = [json.loads((folder / "config.json").read_text())["quantization_config"] for folder in (full, streamed)]
    assert configs[0] == configs[1]
    group = configs[1]["config_groups"]["group_0"]
    if name == "W8A8-INT8":  # int8 weights stored int-quantized, inputs int8 per token
        assert configs[1]["format"] == "int-quantized" and group["input_activations"]["strategy"] == "token"
        assert b["model.layers.1.mlp.up_proj.weight"].dtype == torch.int8
        assert not torch.equal(b["model.layers.1.input_layernorm.weight"], torch.ones(32))  # smoothquant's fold
    else:
        assert configs[1]["format"] == "pack-quantized" and group["input_activations"] is None
    manifests = [json.loads((folder / "forgetless.json").read_text()) for folder in (full, streamed)]
    streamed_meta = manifests[1]["metadata"]
    assert streamed_meta.pop("streamed")["calibration_texts"] == [8, 8]
    assert streamed_meta == manifests[0]["metadata"]
    assert [streamed_meta["method"]["name"], *(m["name"] for m in streamed_meta["then"])] == \
        [c.name for c in STACKS[name]()]
    assert manifests[1]["quantization"] == manifests[0]["quantization"]
    assert sorted(p.name for p in streamed.rglob("*")) == sorted(p.name for p in full.rglob("*"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "s"]


def test_a_stack_failing_in_its_last_pass_leaves_nothing(llama_dir, tmp_path, monkeypatch):
    """An error in the second pass: no output folder, no intermediate folder, no temporary folder."""
    from forgetless.methods.gptq.method import Gptq

    def fails(self, modules, stats):
        raise RuntimeError("solver failed")

    monkeypatch.setattr(Gptq, "compress_linears", fails)
    with pytest.raises(RuntimeError, match="solver failed"):
        forgetless.apply_streamed(str(llama_dir), STACKS["sparsegpt+gptq"](), calibration=TEXTS,
                                  out_dir=tmp_path / "out")
    assert not list(tmp_path.iterdir())


def test_a_disk_too_small_for_the_stacks_copies_is_refused_before_any_work(llama_dir, tmp_path, monkeypatch):
    """The intermediate folder is one more copy of the weights: 3 × their bytes free, else one error naming
    the output folder and the bytes."""
    from forgetless import fsutil
    from forgetless.models.memory_fit import weight_bytes

    weights = weight_bytes(llama_dir)
    usage = type("Usage", (), {"free": 2 * weights, "total": 10 ** 12, "used": 0})
    monkeypatch.setattr(fsutil.shutil, "disk_usage", lambda path: usage)
    out = tmp_path / "out"
    with pytest.raises(ForgetlessError, match=rf"out_dir={re.escape(str(out))}: streaming smoothquant, gptq "
                                              rf"\(2 passes\) needs {3 * weights / 1e9:.2f} GB free in "):
        forgetless.apply_streamed(str(llama_dir), STACKS["W8A8-INT8"](), calibration=TEXTS, out_dir=out)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("scheme, then, advice", [
    ("W8A8-INT8", None, "'W8A8-INT8'"), (None, ["gptq"], "['sparsegpt', 'gptq']"), (None, [], "'sparsegpt'")])
def test_a_model_too_large_for_memory_is_told_to_stream_the_runs_whole_stack(scheme, then, advice, llama_dir,
                                                                                 monkeypatch):
    """The advice names what the run runs (its scheme, or every method of its stack), which ``apply_streamed``
    now streams, not its first method alone."""
    from types import SimpleNamespace

    from forgetless.kinds.causal_lm import CausalLMKind
    from forgetless.models import memory_fit

    monkeypatch.setattr(memory_fit, "available_memory", lambda: 10 ** 5)
    methods = scheme_methods(scheme) if scheme else [SparseGptConfig(), *(METHODS.config(name) for name in then)]
    config = SimpleNamespace(method=methods[0], then=methods[1:], scheme=scheme)
    with pytest.raises(ForgetlessError, match=re.escape(f"forgetless.apply_streamed({str(llama_dir)!r}, {advice}, "
                                                        "calibration=..., out_dir=...)")):
        CausalLMKind().check_run(None, config, None, str(llama_dir))


@pytest.mark.parametrize("tied", [True, False])
def test_embeddings_and_head_are_not_held_while_layers_compress(tied, llama_dir, tmp_path, minilm_tokenizer,
                                                                  monkeypatch):
    """The capture pass runs the input embeddings (an untied head is never read); once every layer's inputs
    are captured they go back to the meta device, and ``close`` copies both from the folder: the same
    tensors as the loaded path, for a tied model (SmolLM2) and an untied one (Qwen2.5 1.5B)."""
    from forgetless.models.streaming import LayerStream

    folder = llama_dir
    if not tied:
        folder = tmp_path / "untied"
        torch.manual_seed(1)
        config = tiny_llama_config(minilm_tokenizer.vocab_size, minilm_tokenizer.pad_token_id, tie_word_embeddings=False)
        transformers.LlamaForCausalLM(config).save_pretrained(folder)
        minilm_tokenizer.save_pretrained(folder)
    seen = []
    load = LayerStream.load

    def watched(self, stack, index, layer):
        seen.append((index, self.model.get_input_embeddings().weight.is_meta,
                     self.model.get_output_embeddings().weight.is_meta))
        load(self, stack, index, layer)

    monkeypatch.setattr(LayerStream, "load", watched)
    streamed = forgetless.apply_streamed(str(folder), CONFIGS["wanda"](), calibration=TEXTS, out_dir=tmp_path / "s")
    assert seen[0] == (0, False, True)  # the capture pass: the embeddings read, the head not (tied or not)
    assert [state for state in seen[1:]] == [(i, True, True) for i in range(1, 4)]
    full = loaded_then_saved(folder, CONFIGS["wanda"](), tmp_path / "full")
    a, b = load_file(full / "model.safetensors"), load_file(streamed / "model.safetensors")
    assert sorted(a) == sorted(b) and ("lm_head.weight" in b) == (not tied)
    assert all(torch.equal(a[name], b[name]) for name in a)


def test_a_sharded_folder_and_a_forgetless_folder_stream_to_the_same_weights(llama_dir, tmp_path, minilm_tokenizer):
    model = transformers.AutoModelForCausalLM.from_pretrained(llama_dir, use_safetensors=True)
    model.save_pretrained(tmp_path / "sharded", max_shard_size="100KB")
    minilm_tokenizer.save_pretrained(tmp_path / "sharded")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").is_file()
    save_model(model, tmp_path / "ours", minilm_tokenizer)
    outs = [forgetless.apply_streamed(str(folder), CONFIGS["wanda"](), calibration=TEXTS, out_dir=tmp_path / f"out-{i}")
            for i, folder in enumerate((llama_dir, tmp_path / "sharded", tmp_path / "ours"))]
    first = load_file(outs[0] / "model.safetensors")
    for out in outs[1:]:
        other = load_file(out / "model.safetensors")
        assert sorted(other) == sorted(first) and all(torch.equal(first[n], other[n]) for n in first)


def test_the_streamed_folder_reloads_in_a_fresh_process(llama_dir, tmp_path):
    out = forgetless.apply_streamed(str(llama_dir), CONFIGS["gptq"](), calibration=TEXTS, out_dir=tmp_path / "gptq")
    model, tokenizer = load_model(out)
    ids = tokenizer(["a cat sat on the mat"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = model(input_ids=ids).logits
    torch.save(ids, tmp_path / "ids.pt")  # noqa: the test's own tensor, read back with weights_only
    script = f"""
import torch, transformers
from forgetless.models.io import load_model
ids = torch.load({str(tmp_path / 'ids.pt')!r}, weights_only=True)
ours, _ = load_model({str(out)!r})
stock = transformers.AutoModelForCausalLM.from_pretrained({str(out)!r}, use_safetensors=True,
    quantization_config=transformers.CompressedTensorsConfig(dequantize=True)).float().eval()
with torch.no_grad():
    a, b = ours(input_ids=ids).logits, stock(input_ids=ids).logits
torch.save({{"ours": a, "stock": b}}, {str(tmp_path / 'logits.pt')!r})
"""
    subprocess.run([sys.executable, "-c", script], env=ENV, check=True, timeout=300)
    logits = torch.load(tmp_path / "logits.pt", weights_only=True)
    assert torch.equal(logits["ours"], expected)
    torch.testing.assert_close(logits["stock"], expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("methods, options, culprit", [
    (["gptq", "sparsegpt"], {}, "sparsegpt comes after gptq, which leaves quantized weights .* put the quantizing "
                                "method last"),
    (["wanda", "magnitude"], {}, "'magnitude' does not calibrate layer by layer"),
    ("magnitude", {}, "does not calibrate layer by layer"),
    ([SparseGptConfig(recovery="fine-tune"), "gptq"], {}, "recovery"),
    (["smoothquant", "awq"], {}, "'awq': streamed calibration runs wanda, sparsegpt, gptq and smoothquant"),
    ("FP8", {}, "pass a model object for fp8 weights"),
    (SparseGptConfig(recovery="fine-tune"), {}, "recovery"),
    ("wanda", {"out_dir": None}, "out_dir"),
    ("wanda", {"calibration": None}, "calibration"),
])
def test_what_cannot_stream_is_one_error_before_any_work(methods, options, culprit, llama_dir, tmp_path):
    kwargs = {"calibration": TEXTS, "out_dir": tmp_path / "out", **options}
    with pytest.raises(ForgetlessError, match=culprit):
        forgetless.apply_streamed(str(llama_dir), methods, **kwargs)
    assert not (tmp_path / "out").exists()


def test_an_encoder_folder_is_refused_before_any_work(tiny_model_dir, tmp_path):
    with pytest.raises(ForgetlessError, match="decoder-only causal LM"):
        forgetless.apply_streamed(tiny_model_dir, "wanda", calibration=TEXTS, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_incremental_writer_writes_what_safetensors_reads(tmp_path):
    tensors = {"b": torch.arange(5, dtype=torch.int8), "a": torch.randn(3, 4),
               "c": torch.tensor([7], dtype=torch.int64),
               "d": torch.randn(2, 3).to(torch.bfloat16), "e": torch.zeros(0, 3), "f": torch.tensor([True, False])}
    writer = SafetensorsWriter(tmp_path / "x.safetensors", metadata={"format": "pt"})
    for name, tensor in tensors.items():
        writer.add(name, tensor)
    writer.close()
    read = load_file(tmp_path / "x.safetensors")
    assert sorted(read) == sorted(tensors)
    for name, tensor in tensors.items():
        assert read[name].dtype == tensor.dtype and torch.equal(read[name], tensor)
    assert [p.name for p in tmp_path.iterdir()] == ["x.safetensors"]  # no side file left
    again = SafetensorsWriter(tmp_path / "y.safetensors")
    again.add("a", tensors["a"])
    with pytest.raises(ValueError, match="twice"):
        again.add("a", tensors["a"])
    again.abort()
    assert [p.name for p in tmp_path.iterdir()] == ["x.safetensors"]


def test_peak_memory_is_the_steps_own_not_the_processs_earlier_high_water_mark(tmp_path):
    script = """
import json, torch
from forgetless.metrics.memory import PeakMemory
earlier = torch.ones(96 * 2 ** 20 // 4)  # 96 MiB touched, then freed: the process's mark stays up
del earlier
with PeakMemory() as small:
    kept = torch.ones(8 * 2 ** 20 // 4)
with PeakMemory() as large:
    block = torch.ones(48 * 2 ** 20 // 4)
    del block
print(json.dumps([small.result, large.result]))
"""  # a fresh process: what earlier tests freed cannot be reused by the blocks measured here
    done = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True, check=True)
    small, large = json.loads(done.stdout.strip().splitlines()[-1])
    if small is None:
        pytest.skip("no /proc/self/status (not Linux)")
    assert small["since_start_of_step"] and large["since_start_of_step"]
    assert 7 <= small["added_mib"] < 40  # not the 96 MiB of before the step
    assert 47 <= large["added_mib"] < 90
    assert large["peak_rss_mib"] >= large["start_rss_mib"] + 47


def test_a_compress_run_records_its_compression_steps_peak_memory(two_runs):
    card = json.loads((two_runs[1] / "report.json").read_text())
    memory = card["environment"]["compress_memory"]
    assert memory["since_start_of_step"] is True
    assert memory["peak_rss_mib"] >= memory["start_rss_mib"] > 50  # torch and transformers are loaded
    assert memory["added_mib"] == pytest.approx(memory["peak_rss_mib"] - memory["start_rss_mib"], abs=0.11)
    shown = f"compression step's peak memory: {memory['peak_rss_mib']:.0f} MiB resident ({memory['added_mib']:+.0f} MiB"
    assert shown in (two_runs[1] / "report.md").read_text()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU on this machine")
@pytest.mark.parametrize("methods", [lambda: CONFIGS["gptq"](), STACKS["W8A8-INT8"]], ids=["gptq", "W8A8-INT8"])
def test_streamed_on_a_gpu_writes_the_same_tensors_and_reloads(llama_dir, tmp_path, methods):
    # not run where this was written (no GPU): GPU arithmetic differs from the CPU's, so the check is
    # the layout (names, dtypes, shapes), the quantization config and a reload, not bit identity; W8A8-INT8's
    # SmoothQuant probes its folds with factors drawn on the CPU (folding.find_producers)
    cpu = forgetless.apply_streamed(str(llama_dir), methods(), calibration=TEXTS, out_dir=tmp_path / "cpu")
    gpu = forgetless.apply_streamed(str(llama_dir), methods(), calibration=TEXTS, out_dir=tmp_path / "gpu",
                                    device="cuda")
    a, b = load_file(cpu / "model.safetensors"), load_file(gpu / "model.safetensors")
    assert {n: (t.dtype, t.shape) for n, t in a.items()} == {n: (t.dtype, t.shape) for n, t in b.items()}
    configs = [json.loads((folder / "config.json").read_text())["quantization_config"] for folder in (cpu, gpu)]
    assert configs[0] == configs[1]
    load_model(gpu)


RACER = """import json, sys
import forgetless
from forgetless.errors import ForgetlessError
from forgetless.methods.sparsegpt.config import SparseGptConfig
from forgetless.methods.wanda.config import WandaConfig
config = {"wanda": WandaConfig, "sparsegpt": SparseGptConfig}[sys.argv[3]](sparsity=0.5, calibration_examples=8,
                                                                          calibration_length=24, calibration_batch=3)
texts = json.loads(sys.argv[4])
try:
    forgetless.apply_streamed(sys.argv[1], config, calibration=texts, out_dir=sys.argv[2])
    print("ok")
except ForgetlessError as exc:
    print("refused:", exc)
"""


def test_two_calls_into_one_out_dir_one_wins_the_other_is_refused(llama_dir, tmp_path):
    """Two processes stream into one ``out_dir`` at once (wanda and sparsegpt): one writes its model, the other
    is refused (the lock while the first runs, or the output rule once it is done); the folder holds the
    winner's model and no lock file is left."""
    out = tmp_path / "out"
    racers = {name: subprocess.Popen([sys.executable, "-c", RACER, str(llama_dir), str(out), name, json.dumps(TEXTS)],
                                     env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for name in ("wanda", "sparsegpt")}
    said = {name: racer.communicate(timeout=600) for name, racer in racers.items()}
    assert all(racer.returncode == 0 for racer in racers.values()), {n: err[-2000:] for n, (_, err) in said.items()}
    lines = {name: out_text.strip().splitlines()[-1] for name, (out_text, _) in said.items()}
    winners = [name for name, line in lines.items() if line == "ok"]
    assert len(winners) == 1, lines
    loser = next(name for name in lines if name not in winners)
    assert re.match(rf"refused: out_dir={re.escape(str(out))}: (another forgetless run is writing this model folder|"
                    r"holds the model of an earlier `forgetless.apply`; pass overwrite=True)", lines[loser]), lines
    manifest = json.loads((out / "forgetless.json").read_text())
    assert manifest["metadata"]["method"]["name"] == winners[0], manifest["metadata"]["method"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no lock, no temporary folder


def test_a_call_into_a_folder_being_written_is_refused_before_any_work(llama_dir, tmp_path):
    """While another call holds ``out_dir`` (its lock beside the folder), a second one is refused and writes nothing."""
    from forgetless.outputs import model_folder_lock

    out = tmp_path / "out"
    with model_folder_lock(out):
        with pytest.raises(ForgetlessError, match=r"another forgetless run is writing this model folder"):
            forgetless.apply_streamed(str(llama_dir), CONFIGS["wanda"](), calibration=TEXTS, out_dir=out)
        assert not out.exists()
    assert not list(tmp_path.iterdir())  # the lock is removed with its release
