"""The contract of every registered method on every architecture it claims, through the one
pipeline on tiny models built from configs: compress → report card validates against the schema →
the saved model reloads in a FRESH process with outputs equal to the in-memory model (logits to
1e-5, greedy generation token for token). The matrix comes from the registry: the task types and
model kinds each method's config declares, run with the config's small ``smoke`` options."""
import dataclasses
import json
import subprocess
import sys

import pytest
import torch
import transformers

from forgetless.data.tasks import load_task
from forgetless.errors import OptionError
from forgetless.metrics.speed import SpeedConfig
from forgetless.registry import METHODS
from forgetless.models.io import load_model
from forgetless.config import EvalConfig
from forgetless.config import RunConfig
from forgetless.pipeline import run_and_save
from forgetless.report.card_types import Card
from forgetless.training.trainer import TrainConfig
from architectures import CLASSIFIER_CONFIGS

SEQ2SEQ_MODELS = ("tiny-t5", "tiny-bart", "tiny-bert2bert")
CAUSAL_LM = "tiny-llama (causal-lm)"  # a decoder-only LM scored by label likelihood


def _claims():
    """(method, architecture) for every architecture each registered config declares it handles."""
    cases = []
    for name in METHODS.names():
        config = METHODS.config_class(name)
        if "classification" in config.task_types and not config.seq2seq_only:
            cases += [(name, arch) for arch in CLASSIFIER_CONFIGS]
        if "generation" in config.task_types:
            cases += [(name, arch) for arch in SEQ2SEQ_MODELS]
        if "causal-lm" in config.model_kinds:
            cases.append((name, CAUSAL_LM))
    return cases


def test_every_method_declares_a_valid_smoke_config():
    for name in METHODS.names():
        config = METHODS.make_config(name, METHODS.config_class(name).smoke)
        assert config.name == name and METHODS.build(config).config is config


def test_configs_import_no_torch_and_document_every_option():
    code = ("import sys, json; from forgetless.registry import METHODS; "
            "print(json.dumps([METHODS.names(), [m for m in ('torch', 'transformers', 'numpy') if m in sys.modules]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    names, heavy = json.loads(out.strip().splitlines()[-1])
    assert heavy == [] and names == METHODS.names() and len(names) >= 8
    for name in names:
        cls = METHODS.config_class(name)
        assert all(f.metadata.get("help") for f in dataclasses.fields(cls)), name


@pytest.mark.parametrize("name, options, message", [
    ("truncate", {"layers": 3}, r"layers=3 \(the default\): model m has 3 layers; keep 1..2"),
    ("block-influence", {"remove": 3}, "remove=3: model m has 3 layers; valid 0..2"),
    ("heads", {"prune_count": 12}, r"prune_count=12: model m has 12 heads \(3 layers × 4\); valid 0..11"),
    ("nash", {"decoder_layers": 3}, "decoder_layers=3: model m has 2 decoder layers; valid 1..2")])
def test_configs_check_options_against_the_model_shape(name, options, message):
    dims = {"layers": 3, "decoder_layers": 2, "heads": 4, "max_positions": 128}
    with pytest.raises(OptionError, match=message):
        METHODS.make_config(name, options).check_model(dims, "model m")
    for entry in METHODS.names():  # every smoke config fits this shape
        METHODS.make_config(entry, METHODS.config_class(entry).smoke).check_model(dims, "model m")


@pytest.fixture(scope="module")
def tiny_folders(tmp_path_factory, minilm_tokenizer):
    root = tmp_path_factory.mktemp("archs")
    folders = {}
    for arch, make in CLASSIFIER_CONFIGS.items():
        torch.manual_seed(0)
        model = transformers.AutoModel.from_config(make(minilm_tokenizer.vocab_size))
        model.save_pretrained(root / arch)
        minilm_tokenizer.save_pretrained(root / arch)
        folders[arch] = str(root / arch)
    return folders


FRESH_PROCESS = """
import json, sys, torch
from forgetless.models.io import load_model
for line in sys.stdin:  # one saved model per line: (folder, generation, inputs, expected) -> its check
    folder, generation, inputs, expected = json.loads(line)
    model, _ = load_model(folder)
    x = {k: torch.tensor(v) for k, v in inputs.items()}
    with torch.no_grad():
        if generation:
            same = model.generate(**x, max_new_tokens=5, min_new_tokens=5, do_sample=False).tolist() == expected
            result = {"worst": 0.0 if same else float("inf")}
        else:
            result = {"worst": float((model(**x).logits - torch.tensor(expected)).abs().max())}
    print(json.dumps(result), flush=True)
"""


@pytest.fixture(scope="module")
def fresh_process():
    """A separate Python process that reloads each saved model from its folder alone (nothing of the saving
    process in memory) and checks it against the saving process's outputs, case by case; one per worker."""
    child = subprocess.Popen([sys.executable, "-c", FRESH_PROCESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)

    def check(folder, generation, inputs, expected) -> float:
        child.stdin.write(json.dumps([str(folder), generation, inputs, expected]) + "\n")
        child.stdin.flush()
        line = child.stdout.readline()
        assert line, f"the fresh process ended while reloading {folder}"
        return json.loads(line)["worst"]

    yield check
    child.stdin.close()
    child.wait(timeout=60)


@pytest.mark.parametrize("method, arch", _claims())
def test_method_on_architecture(method, arch, tiny_folders, tmp_path_factory, one_thread, fresh_process):
    generation = arch in SEQ2SEQ_MODELS
    task = load_task("synthetic-lookup" if generation else "synthetic", train_size=24, eval_size=8)
    out = tmp_path_factory.mktemp(f"{method}-{arch.split()[0]}")
    model = arch if generation else "tiny-llama" if arch == CAUSAL_LM else tiny_folders[arch]
    run = RunConfig(model=model, method=METHODS.make_config(method, METHODS.config_class(method).smoke), model_kind="causal-lm" if arch == CAUSAL_LM else "auto",
                    progress=False, eval=EvalConfig(max_new_tokens=4) if generation else EvalConfig(),
                    train=TrainConfig(epochs=1, batch_size=8, max_length=64, learning_rate=1e-3, progress=False),
                    speed=SpeedConfig(batch_size=2, seq_len=8, repeats=1, warmup=0, new_tokens=2))
    card = run_and_save(task, run, out).card.to_json()
    Card.from_json(card)
    assert card["kind"]["model"] == ("seq2seq" if generation else "causal-lm" if arch == CAUSAL_LM else "classifier")
    assert card["params"]["compressed"]["total"] <= card["params"]["base"]["total"]
    model, tokenizer = load_model(out / "model")
    if generation:
        enc = tokenizer(task.dev.sources[:3], padding=True, return_tensors="pt")
        inputs = {"input_ids": enc["input_ids"].tolist(), "attention_mask": enc["attention_mask"].tolist()}
        with torch.no_grad():
            expected = model.generate(**{k: torch.tensor(v) for k, v in inputs.items()}, max_new_tokens=5,
                                      min_new_tokens=5, do_sample=False).tolist()
    else:
        enc = tokenizer(task.dev.text_a[:3], task.dev.text_b[:3], padding=True, return_tensors="pt")
        inputs = {k: v.tolist() for k, v in enc.items()}
        with torch.no_grad():
            expected = model(**{k: torch.tensor(v) for k, v in inputs.items()}).logits.tolist()
    assert fresh_process(out / "model", generation, inputs, expected) < 1e-5  # reloaded in another process

