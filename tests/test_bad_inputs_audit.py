"""The hostile audit of issue 18 that ``test_bad_inputs.py`` (issue 9) and ``test_output_rule.py``
do not already hold: silent wrong results, tracebacks and unclear errors. Every case is exit code 2
with ONE error line naming the culprit (the flag as typed), no stage started, and every file under
the fixture folder byte-identical afterwards (sha256).

``python tests/test_bad_inputs_audit.py`` prints the tally of this module and of
``test_output_rule.py``: tried / clear / traceback / silent / destructive.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import torch
import transformers

from test_bad_inputs import main_quietly, run_cli  # noqa: E402  (one home for the in-process CLI call)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_output_rule import tree_hashes  # noqa: E402

FAST = ["--train-size", "16", "--eval-size", "8", "--epochs", "1", "--no-progress"]
FILES = ["--task", "files", "--train", "{tsv}", "--dev", "{tsv}", "--text-a", "sentence", "--text-b", "",
         "--labels", "neg,pos"]
CASES = [
    # silent wrong results before
    ("nan-weights", ["evaluate", "{nan_model}", "--eval-size", "4"], r"nan-model: tensor .* holds NaN or infinite"),
    ("missing-tensor", ["evaluate", "{missing_tensor}", "--eval-size", "4"],
     r"missing-tensor: the checkpoint lacks 1 tensor\(s\) of the model \(bert.encoder.layer.0.attention.self.query.weight\)"),
    ("teacher-other-family", ["compress", *FAST, "--model", "tiny-bert", "--teacher", "{llama}"],
     r"--teacher .*llama: is a llama model, --model tiny-bert a bert"),
    ("challenge-shadows-dev", ["compress", *FAST, *FILES, "--challenge", "dev={tsv}"],
     r"--challenge dev=.*: 'dev' is the task's own dev set"),
    ("export-opset-5", ["export", "{saved}", "--format", "onnx", "--opset", "5", "--out", "{out}"],
     r"--opset: 5 is out of range; valid: >= 18"),
    ("run-scale-without-scales", ["run", "{plain_recipe}", "--scale", "paper"], r"--scale paper: .*plain.yaml has no scales"),
    ("epochs-1e-9", ["compress", *FAST, "--model", "tiny-bert", "--epochs", "1e-9"],
     r"--epochs 1e-09: less than one training step \(16 examples in batches of 32: 1 step\(s\) per epoch\)"),
    ("evaluate-generation-model-on-classification", ["evaluate", "{t5}", "--eval-size", "4"],
     r"MODEL_PATH .*t5: trained on the generation task 'synthetic-lookup'; its scores on the classification task"),
    ("recipe-duplicate-key", ["run", "{duplicate_recipe}"], r"duplicate.yaml: key 'lr' appears twice \(line 3\)"),
    # tracebacks before
    ("freeze-embeddings-1", ["compress", "--freeze-embeddings", "1"], r"--freeze-embeddings: expected true or false, got '1'"),
    ("teacher-t5-on-bert", ["compress", *FAST, "--model", "tiny-bert", "--teacher", "{t5}"],
     r"--teacher .*t5: is a t5 model, --model tiny-bert a bert"),
    ("teacher-int8", ["compress", *FAST, "--model", "tiny-bert", "--teacher", "{int8}"],
     r"--teacher .*int8: is a quantized model"),
    ("run-binary-file", ["run", "{binary}"], r"binary.yaml: not a UTF-8 text file"),
    ("sweep-levels-empty", ["run", "{levels_empty}"], r"levels-empty.yaml: --levels: an empty list; give at least one value"),
    ("recipe-alias-bomb", ["run", "{bomb}"], r"bomb.yaml: more than 10000 values once its aliases"),
    ("bench-base-other-kind", ["bench", "{saved}", "--base", "tiny-t5"], r"--base tiny-t5: is a t5 model, MODEL_PATH .* a bert"),
    ("bench-seq-len-600", ["bench", "{saved}", "--base", "tiny-bert", "--seq-len", "600"],
     r"--seq-len 600: MODEL_PATH .*saved takes at most 512 tokens"),
    ("export-int8", ["export", "{int8}", "--format", "onnx", "--out", "{out}"], r"int8: an int8-quantized model"),
    # unclear before
    ("lr-negative-exponent", ["compress", "--lr", "-1e-4"], r"--lr: -0.0001 is out of range; valid: > 0"),
    ("teacher-is-a-file", ["compress", *FAST, "--teacher", "{tsv}"], r"data.tsv: is a file; a model is a folder"),
    ("profile-classifier", ["profile", "--model", "tiny-bert", "--out", "{out}"],
     r"model 'tiny-bert' is a classifier; an encoder-decoder is needed"),
    ("export-atol-nan", ["export", "{saved}", "--format", "onnx", "--atol", "nan", "--out", "{out}"],
     r"--atol: must be a finite number, got nan"),
    ("method-option-flag", ["compress", *FAST, "--method", "magnitude", "--prune-every", "0"],
     r"--prune-every: 0 is out of range; valid: >= 1"),
]


@pytest.fixture(scope="module")
def bad(tmp_path_factory, tiny_model_dir):
    return build(tmp_path_factory.mktemp("audit"), tiny_model_dir)


def build(root: Path, tiny_model_dir: str) -> dict:
    from safetensors.torch import load_file, save_file

    from forgetless.data.tasks import load_task
    from forgetless.methods.quantize.method import linear_names
    from forgetless.models.io import save_model
    from forgetless.models.loading import bundled_tokenizer
    from forgetless.models.quantized_io import quantize_int8
    from forgetless.models.tiny import tiny_classifier, tiny_seq2seq

    tokenizer = bundled_tokenizer()
    labels = load_task("synthetic", train_size=8).label_names
    p = {"root": str(root), "out": str(root / "new-out")}
    model = tiny_classifier("tiny-bert", len(tokenizer), labels)
    p["saved"] = str(save_model(model, root / "saved", tokenizer))
    nan = tiny_classifier("tiny-bert", len(tokenizer), labels)
    with torch.no_grad():
        nan.classifier.weight.fill_(float("nan"))
    p["nan_model"] = str(save_model(nan, root / "nan-model", tokenizer))
    p["llama"] = str(save_model(tiny_classifier("tiny-llama", len(tokenizer), labels), root / "llama", tokenizer))
    p["t5"] = str(save_model(tiny_seq2seq("tiny-t5", len(tokenizer)), root / "t5", tokenizer, metadata={
        "kind": "seq2seq", "task": "synthetic-lookup", "task_kind": "generation"}))
    int8 = tiny_classifier("tiny-bert", len(tokenizer), labels)
    quantize_int8(int8, linear_names(int8, "stacks"))
    p["int8"] = str(save_model(int8, root / "int8", tokenizer))
    missing = root / "missing-tensor"  # a plain Hugging Face classifier folder lacking one tensor
    config = transformers.BertConfig.from_pretrained(tiny_model_dir, num_labels=2,
                                                     id2label=dict(enumerate(labels)))
    transformers.BertForSequenceClassification(config).save_pretrained(missing)
    tokenizer.save_pretrained(missing)
    state = load_file(str(missing / "model.safetensors"))
    del state["bert.encoder.layer.0.attention.self.query.weight"]
    save_file(state, str(missing / "model.safetensors"), metadata={"format": "pt"})
    p["missing_tensor"] = str(missing)
    tsv = root / "data.tsv"
    tsv.write_text("\ufeffsentence\tlabel\n" + "".join(f"text {i}\t{['neg', 'pos'][i % 2]}\n" for i in range(8)))
    p["tsv"] = str(tsv)
    recipes = {
        "plain": "model: tiny-bert\nepochs: 1\n",
        "duplicate": "model: tiny-bert\nlr: 1.0e-4\nlr: 1.0e-3\n",
        "levels-empty": "command: sweep\nmodel: tiny-bert\nlevels: []\n",
        "bomb": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{c}: &{c} [{', '.join(['*' + prev] * 10)}]\n" for prev, c in zip("abcdefg", "bcdefgh")) + "model: *h\n",
    }
    for name, text in recipes.items():
        (root / f"{name}.yaml").write_text(text)
        p[f"{name.replace('-', '_')}_recipe" if name in ("plain", "duplicate") else name.replace("-", "_")] = \
            str(root / f"{name}.yaml")
    (root / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    p["binary"] = str(root / "binary.yaml")
    return p


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_audit_case(case, bad, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    _, argv, pattern = case
    args = [a.format(**bad) for a in argv]
    if args[0] in ("compress", "sweep") and "--out" not in args:
        args += ["--out", bad["out"]]
    before = tree_hashes(Path(bad["root"]))
    code, err = run_cli(args, capsys)
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code == 2, err
    assert len(lines) == 1 and re.search(pattern, lines[0]), err
    assert "[forgetless]" not in err
    assert tree_hashes(Path(bad["root"])) == before  # inputs byte-identical, nothing new written


def test_bom_in_a_tsv_header_is_stripped(bad):
    from forgetless.data.tasks import load_task

    task = load_task("files", train=bad["tsv"], dev=bad["tsv"], text_a="sentence", text_b="", labels=["neg", "pos"])
    assert task.train.text_a[:2] == ["text 0", "text 1"] and task.train.labels[:2] == [0, 1]


def test_freeze_embeddings_works_for_an_encoder_classifier():
    """``--freeze-embeddings true`` raised AttributeError on a BERT classifier (v5's get_encoder())."""
    from forgetless.models.loading import bundled_tokenizer
    from forgetless.models.tiny import tiny_classifier
    from forgetless.training.trainer import freeze_embeddings

    model = tiny_classifier("tiny-bert", len(bundled_tokenizer()), ["a", "b"])
    freeze_embeddings(model)
    assert not model.get_input_embeddings().weight.requires_grad
    assert model.classifier.weight.requires_grad


def test_card_model_is_what_was_compressed(bad, tmp_path, monkeypatch, capsys):
    """With ``--teacher`` (student from the teacher) the card says which model was compressed."""
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, err = run_cli(["compress", *FAST, "--model", "tiny-bert", "--teacher", bad["saved"], "--method",
                         "truncate", "--layers", "1", "--bench-repeats", "1", "--bench-seq-len", "16",
                         "--out", str(out)], capsys)
    assert code == 0, err
    card = json.loads((out / "report.json").read_text())
    assert card["model"] == {"compressed": bad["saved"], "model_type": "bert"}


def tally(root: Path) -> dict:
    """Every case of this module and of test_output_rule: tried / clear / traceback / silent / destructive."""
    import os
    import tempfile

    import test_output_rule as rule

    from forgetless.models.loading import resolve_model_path

    counts = dict(tried=0, clear=0, traceback=0, silent=0, destructive=0, unclear=0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    model_dir = root / "tiny-bert"
    config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    (root / "audit").mkdir()
    (root / "world").mkdir()
    bad = build(root / "audit", str(model_dir))
    world = rule.build_world(root / "world", str(model_dir))
    suites = [(CASES, bad, Path(bad["root"])), (rule.CASES, world, Path(world["root"]))]
    for cases, paths, watched in suites:
        for name, argv, _ in cases:
            args = [a.format(**paths) for a in argv]
            if args[0] in ("compress", "sweep") and "--out" not in args:
                args += ["--out", str(root / "out")]
            os.environ["FORGETLESS_CACHE"] = paths.get("cache") or tempfile.mkdtemp()
            before = tree_hashes(watched)
            counts["tried"] += 1
            try:
                code, err = main_quietly(args)
            except Exception:  # noqa: BLE001
                counts["traceback"] += 1
                print(f"TRACEBACK {name}")
                continue
            lines = [line for line in err.splitlines() if "error:" in line]
            if tree_hashes(watched) != before:
                result = "destructive"
            elif code == 0:
                result = "silent"
            else:
                result = "clear" if code == 2 and len(lines) == 1 and "[forgetless]" not in err else "unclear"
            counts[result] += 1
            if result != "clear":
                print(f"{result.upper()} {name}: {err.strip()[-200:]}")
    return counts


if __name__ == "__main__":
    import tempfile

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(tally(Path(folder)), indent=1))
