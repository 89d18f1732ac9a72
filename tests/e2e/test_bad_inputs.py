"""Bad inputs, as a hostile but fair user gives them (issue 9, and the hostile audits of issues 18
and 32): every one is exit code 2 (CLI) or a ``ForgetlessError`` (API) with ONE line naming the
culprit (the flag as typed on the command line, the Python name from Python), before any work starts
(no stage line printed); the output folder is left absent or untouched and every file under the
fixture folder byte-identical (sha256). Output-folder cases live in ``test_output_rule.py``.

``test_tally_of_the_cases_run`` prints and checks the tally of the command-line cases a session ran;
``python tests/e2e/test_bad_inputs.py`` prints the tally of every case of this module, of
``test_output_rule.py`` and of the LLM surfaces (``test_bad_inputs_llm.py``, issue 43: cases whose
right answer is to run are ``correct`` when what they gave is right): tried / clear / correct /
traceback / silent / unclear / destructive, and how many were on the LLM surfaces.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import math
import re
import shutil
import sys
from pathlib import Path

import pytest
import torch
import transformers

from forgetless.cli import main
from forgetless.errors import ForgetlessError

FAST = ["--train-size", "16", "--eval-size", "8", "--epochs", "1", "--no-progress"]
T5 = ["compress", "--model", "tiny-t5", "--task", "synthetic-lookup", "--method", "nash"]
FILES = ["--task", "files", "--train", "{tsv}", "--dev", "{tsv}", "--text-a", "sentence", "--text-b", "",
         "--labels", "neg,pos"]

# (id, argv; '{name}' is replaced by a path of the ``paths`` fixture, {out} by the output folder, pattern)
CASES = [
    # ----- ranges, model folders, output folders, data files (issue 9)
    ("epochs-nan", ["compress", "--epochs", "nan"], r"--epochs: must be a finite number, got nan"),
    ("epochs-inf", ["compress", "--epochs", "inf"], r"--epochs: must be a finite number, got inf"),
    ("epochs-zero", ["compress", "--epochs", "0"], r"--epochs: 0.0 is out of range; valid: > 0"),
    ("as-is-untrained-head", ["compress", "--base", "as-is", "--model", "minilm"],
     r"--base as-is: model 'minilm' has no trained classification head"),
    ("lr-zero", ["compress", "--lr", "0"], r"--lr: 0.0 is out of range"),
    ("lr-nan", ["compress", "--lr", "nan"], r"--lr: must be a finite number"),
    ("threads-zero", ["compress", "--threads", "0"], r"--threads: 0 is out of range; valid: >= 1"),
    ("threads-negative", ["compress", "--threads", "-1"], r"--threads: -1 is out of range"),
    ("save-steps-zero", ["compress", "--save-steps", "0"], r"--save-steps: 0 is out of range; valid: >= 1"),
    ("max-length-huge", ["compress", "--max-length", "100000"], r"--max-length: 100000 is out of range; valid: >= 8 and <= 8192"),
    ("max-length-tiny", ["compress", "--max-length", "4"], r"--max-length: 4 is out of range"),
    ("max-length-over-positions", ["compress", "--model", "tiny-bert", "--method", "magnitude", "--max-length", "1000"],
     r"--max-length 1000: model 'tiny-bert' takes at most 512 tokens"),
    ("bench-seq-len-over-positions", ["compress", "--model", "tiny-bert", "--method", "magnitude", "--bench-seq-len", "600"],
     r"--bench-seq-len 600: model 'tiny-bert' takes at most 512"),
    ("train-size-zero", ["compress", "--train-size", "0"], r"--train-size: 0 is out of range; valid: >= 1"),
    ("eval-size-zero", ["compress", "--eval-size", "0"], r"--eval-size: 0 is out of range"),
    ("batch-size-zero", ["compress", "--batch-size", "0"], r"--batch-size: 0 is out of range"),
    ("seed-negative", ["compress", "--seed", "-1"], r"--seed: -1 is out of range"),
    ("eval-batch-size-zero", ["compress", "--eval-batch-size", "0"], r"--eval-batch-size: 0 is out of range"),
    ("num-beams-zero", ["compress", "--num-beams", "0"], r"--num-beams: 0 is out of range"),
    ("freeze-embeddings-ture", ["compress", "--freeze-embeddings", "ture"], r"expected true or false, got 'ture'"),
    ("recovery-typo", ["compress", "--method", "heads", "--recovery", "nope"], r"--recovery nope: not one of fine-tune, none"),
    ("speed-typo", ["compress", "--method", "wanda", "--speed", "fast"], r"--speed fast: not one of auto, full, none"),
    ("symmetric-renamed", ["compress", "--method", "gptq", "--symmetric"], r"unrecognized arguments: --symmetric"),
    ("epochs-text", ["compress", "--epochs", "three"], r"--epochs: expected a number, got 'three'"),
    ("hard-fraction-over-one", ["compress", "--hard-fraction", "1.5"], r"--hard-fraction: 1.5 is out of range; valid: >= 0 and <= 1"),
    ("teacher-epochs-nan", ["compress", "--teacher-epochs", "nan"], r"--teacher-epochs: must be a finite number"),
    ("out-empty", ["compress", "--out", ""], r"--out '': name a"),
    ("truncate-layers-100", ["compress", "--model", "tiny-bert", "--method", "truncate", "--layers", "100"],
     r"--layers 100: model 'tiny-bert' has 2 layers; keep 1..1"),
    ("truncate-layers-all", ["compress", "--model", "tiny-bert", "--method", "truncate", "--layers", "2"],
     r"--layers 2: model 'tiny-bert' has 2 layers"),
    ("truncate-layers-zero", ["compress", "--method", "truncate", "--layers", "0"], r"--layers: 0 is out of range; valid: >= 1"),
    ("prune-count-1000", ["compress", "--model", "tiny-bert", "--method", "heads", "--prune-count", "1000"],
     r"--prune-count 1000: model 'tiny-bert' has 8 heads \(2 layers × 4\); valid 0..7"),
    ("block-influence-remove", ["compress", "--model", "tiny-bert", "--method", "block-influence", "--remove", "5"],
     r"--remove 5: model 'tiny-bert' has 2 layers; valid 0..1"),
    ("nash-decoder-layers-100", [*T5, "--decoder-layers", "100"], r"--decoder-layers 100: model 'tiny-t5' has 4 decoder layers; valid 1..4"),
    ("nash-decoder-layers-zero", [*T5, "--decoder-layers", "0"], r"--decoder-layers: 0 is out of range; valid: >= 1"),
    ("sparsity-nan", ["compress", "--method", "magnitude", "--sparsity", "nan"], r"--sparsity: must be a finite number, got nan"),
    ("model-missing", ["compress", "--model", "./no/such/model"], r"model folder './no/such/model' does not exist"),
    ("model-not-a-model", ["compress", "--model", "{not_a_model}"], r"not-a-model: not a model folder \(no config.json\)"),
    ("model-pickle-only", ["compress", "--model", "{pickle_only}"], r"pickle-only: only pickle weights .* convert them once with"),
    ("model-empty-safetensors", ["compress", "--model", "{empty_weights}"], r"empty-weights/model.safetensors: empty or truncated"),
    ("model-truncated-safetensors", ["compress", "--model", "{truncated}"], r"truncated/model.safetensors: truncated or corrupt"),
    ("model-corrupt-safetensors", ["compress", "--model", "{corrupt}"], r"corrupt/model.safetensors: corrupt safetensors header"),
    ("model-empty-config", ["compress", "--model", "{empty_config}"], r"empty-config/config.json: unreadable model config"),
    ("teacher-missing", ["compress", "--teacher", "/no/such/teacher"], r"model folder '/no/such/teacher' does not exist"),
    ("teacher-corrupt", ["compress", "--model", "tiny-bert", "--teacher", "{corrupt}"], r"corrupt/model.safetensors: corrupt"),
    ("out-is-file", ["compress", "--out", "{a_file}"], r"--out .*a-file.txt: is an existing file; name a folder"),
    ("out-inside-file", ["compress", "--out", "{a_file}/run"], r"a-file.txt is a file, so nothing can be written inside it"),
    ("out-read-only", ["compress", "--out", "/proc/forgetless-run"], r"--out /proc/forgetless-run: cannot write in /proc"),
    ("out-other-run", ["compress", "--out", "{other_run}"], r"holds the output of a different run .* --overwrite"),
    ("out-user-model", ["compress", "--out", "{user_model}"], r"holds a model \(config.json\), not a forgetless run"),
    ("out-unknown-run", ["compress", "--out", "{old_run}"], r"holds the output of a run this version cannot identify"),
    ("files-no-dev", ["compress", "--task", "files", "--train", "{single_tsv}", "--labels", "neg,pos"],
     r"needs --train FILE and --dev FILE"),
    ("files-duplicate-labels", ["compress", "--task", "files", "--train", "{single_tsv}", "--dev", "{single_tsv}",
                                "--text-a", "sentence", "--text-b", "", "--labels", "0,0"],
     r"--labels 0,0: need at least two distinct"),
    ("files-missing-key-row", ["compress", "--task", "files", "--train", "{missing_key}", "--dev", "{missing_key}",
                               "--text-b", "", "--labels", "0,1"], r"missing-key.jsonl: row 3 lacks the column 'sentence1'"),
    ("files-label-1.7", ["compress", "--task", "files", "--train", "{fraction_label}", "--dev", "{fraction_label}",
                         "--text-b", "", "--labels", "0,1"], r"fraction-label.jsonl: unknown label 1.7 in row 2"),
    ("files-null-text", ["compress", "--task", "files", "--train", "{null_text}", "--dev", "{null_text}",
                         "--text-b", "", "--labels", "0,1"], r"null-text.jsonl: row 1 has no value for 'sentence1'"),
    ("files-json-object", ["compress", "--task", "files", "--train", "{advglue}", "--dev", "{advglue}",
                           "--text-a", "sentence", "--text-b", "", "--labels", "0,1"],
     r"advglue.json: expected a JSON list of records; pick the list with .*:KEY or --json-key \(keys: \['sst2'\]\)"),
    ("files-json-bad-key", ["compress", "--task", "files", "--train", "{advglue}:qqp", "--dev", "{advglue}:qqp",
                            "--text-a", "sentence", "--text-b", "", "--labels", "0,1"], r"advglue.json: no key 'qqp'"),
    ("evaluate-label-order", ["evaluate", "{saved}", "--task", "files", "--dev", "{single_tsv}", "--text-a", "sentence",
                              "--text-b", "", "--labels", "pos,neg"],
     r"--labels pos,neg: .*saved was trained with the labels neg,pos \(in id order\)"),
    ("evaluate-lying-manifest", ["evaluate", "{lying}"], r"lying/forgetless.json: its shape does not fit|weights do not match"),
    ("evaluate-not-a-model", ["evaluate", "{not_a_model}"], r"not a model folder \(no config.json\)"),
    ("evaluate-json-empty", ["evaluate", "{saved}", "--json", ""], r"--json '': name a path"),
    ("evaluate-json-in-file", ["evaluate", "{saved}", "--json", "{a_file}/m.json"], r"--json .*a-file.txt is a file"),
    ("evaluate-json-folder", ["evaluate", "{saved}", "--json", "{not_a_model}"], r"--json .*not-a-model: is a folder"),
    ("bench-corrupt", ["bench", "{corrupt_saved}"], r"corrupt-saved/model.safetensors: truncated or corrupt"),
    # ----- the hostile audit of issue 18: silent wrong results, tracebacks and unclear errors before
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
    ("lr-negative-exponent", ["compress", "--lr", "-1e-4"], r"--lr: -0.0001 is out of range; valid: > 0"),
    ("teacher-is-a-file", ["compress", *FAST, "--teacher", "{tsv}"], r"data.tsv: is a file; a model is a folder"),
    ("profile-classifier", ["profile", "--model", "tiny-bert", "--out", "{out}"],
     r"model 'tiny-bert' is a classifier; an encoder-decoder is needed"),
    ("export-atol-nan", ["export", "{saved}", "--format", "onnx", "--atol", "nan", "--out", "{out}"],
     r"--atol: must be a finite number, got nan"),
    # ----- calibration texts of the one-shot methods (issue 33)
    ("calibration-data-not-read", ["compress", "--method", "truncate", "--calibration-data", "{tsv}"],
     r"--calibration-data: no method of this run calibrates on text \(truncate\)"),
    ("calibration-data-missing", ["compress", "--model", "tiny-llama", "--model-kind", "causal-lm", "--base", "as-is",
                                  "--method", "wanda", "--calibration-data", "/no/such/texts.txt"],
     r"--calibration-data /no/such/texts.txt: not a text file, nor a set of the data folder \(xsum, wikitext2"),
    ("calibration-data-set-without-folder", ["compress", "--model", "tiny-llama", "--model-kind", "causal-lm", "--base",
                                             "as-is", "--method", "gptq", "--calibration-data", "wikitext2"],
     r"--calibration-data wikitext2: a set of the data folder; give --data-dir DIR or set FORGETLESS_DATA_DIR"),
    ("method-option-flag", ["compress", *FAST, "--method", "magnitude", "--prune-every", "0"],
     r"--prune-every: 0 is out of range; valid: >= 1"),
    # ----- the hostile audit of issue 32: tracebacks
    ("no-tokenizer-evaluate", ["evaluate", "{no_tokenizer}", "--eval-size", "4"],
     r"no-tokenizer: no tokenizer files \(tokenizer.json, tokenizer_config.json"),
    ("no-tokenizer-compress", ["compress", "--model", "{no_tokenizer}", "--method", "truncate", "--layers", "1"],
     r"no-tokenizer: no tokenizer files"),
    ("no-tokenizer-teacher", ["compress", "--model", "tiny-bert", "--teacher", "{saved_no_tokenizer}", "--method",
                              "truncate", "--layers", "1"], r"saved-no-tokenizer: no tokenizer files"),
    ("no-tokenizer-finetune", ["finetune", "--model", "{saved_no_tokenizer}", "--out", "{out}", *FAST],
     r"saved-no-tokenizer: no tokenizer files"),
    ("corrupt-tokenizer-evaluate", ["evaluate", "{bad_tokenizer}", "--eval-size", "4"],
     r"bad-tokenizer/tokenizer.json: unreadable tokenizer file"),
    ("corrupt-tokenizer-compress", ["compress", "--model", "{bad_tokenizer}", "--method", "truncate", "--layers", "1"],
     r"bad-tokenizer/tokenizer.json: unreadable tokenizer file"),
    ("lying-quantization", ["evaluate", "{lying_int8}", "--eval-size", "4"],
     r"lying-int8/model.forgetless.safetensors: weights do not match the shape or quantization recorded in "
     r"forgetless.json"),
    ("lying-layer-count", ["evaluate", "{lying_layers}", "--eval-size", "4"],
     r"lying-layers/forgetless.json: its shape does not fit the model's config"),
    ("recipe-no-progress-yes", ["run", "{progress_yes}"],
     r"progress-yes.yaml: key 'no_progress': expected true or false, got 'yes'"),
    ("quantize-then-truncate", ["compress", "--model", "tiny-bert", "--method", "quantize", "--then", "truncate:layers=1"],
     r"--then truncate: comes after quantize, which leaves quantized weights"),
    # ----- silent wrong results
    ("plain-folder-without-head", ["evaluate", "{no_head}", "--eval-size", "4"],
     r"no-head: saved from a trained BertForSequenceClassification, but its weights lack the classification head "
     r"\(classifier.bias, classifier.weight\)"),
    ("plain-folder-without-head-as-is", ["compress", "--model", "{no_head}", "--base", "as-is", "--method", "truncate",
                                         "--layers", "1"], r"no-head: saved from a trained .* lack the classification"),
    ("challenge-name-twice", ["compress", *FILES, "--challenge", "ch={tsv}", "--challenge", "ch={single_tsv}"],
     r"--challenge ch=…: the name 'ch' is given twice"),
    ("train-without-files-task", ["compress", "--train", "{tsv}"], r"--train: applies to --task files, llm-generation, llm-zero-shot, lm-eval, not synthetic"),
    ("dataset-without-hub-task", ["compress", "--dataset", "glue"], r"--dataset: applies to --task fever, hub, not synthetic"),
    ("perplexity-file-on-classifier", ["compress", "--model", "tiny-bert", "--perplexity-file", "{tsv}"],
     r"--perplexity-file: applies to causal-lm models, not to a classifier"),
    ("shots-on-classifier", ["compress", "--model", "tiny-bert", "--shots", "2"], r"--shots: applies to causal-lm"),
    ("runtime-on-seq2seq", [*T5, "--runtime", "onnxruntime"],
     r"--runtime onnxruntime: not available for a seq2seq model \(it runs under: torch\)"),
    ("run-set-command", ["run", "{plain_recipe}", "--set", "command=rm"],
     r"--set command=rm: a recipe's command is compress \(.*plain.yaml\); --set changes its options"),
    ("teacher-empty", ["compress", "--teacher", ""], r"--teacher '': name a model"),
    ("then-key-twice", ["compress", "--model", "tiny-bert", "--method", "truncate", "--layers", "1", "--then",
                        "quantize:dtype=int8,dtype=bf16"],
     r"--then quantize:dtype=int8,dtype=bf16: option 'dtype' is given twice"),
    ("heads-ratio-1", ["compress", "--model", "tiny-bert", "--method", "heads", "--ratio", "1"],
     r"--ratio: 1.0 is out of range; valid: >= 0 and < 1"),
    ("prune-count-and-ratio", ["compress", "--model", "tiny-bert", "--method", "heads", "--ratio", "0.5",
                               "--prune-count", "2"], r"--prune-count 2 and --ratio 0.5: give one"),
    ("sweep-seed-twice", ["sweep", "--model", "tiny-bert", "--objectives", "ce", "--levels", "0.2", "--seeds", "0,0"],
     r"--seeds 0,0: a value is given twice \(0\)"),
    ("sweep-level-twice", ["sweep", "--model", "tiny-bert", "--objectives", "ce", "--levels", "0.2,0.20"],
     r"--levels 0.2,0.20: a value is given twice \(0.2, 0.20\)"),
    # ----- unclear errors
    ("data-dir-is-a-file", ["compress", "--task", "sst2", "--data-dir", "{tsv}"],
     r"--data-dir .*data.tsv: is a file; give the data folder"),
    ("then-truncate-after-truncate", ["compress", "--model", "tiny-bert", "--method", "truncate", "--layers", "1",
                                      "--then", "truncate:layers=1"],
     r"--then truncate:layers=1: the model after truncate has 1 layer; one layer cannot be truncated further"),
    ("then-heads-after-truncate", ["compress", "--model", "tiny-bert", "--method", "truncate", "--layers", "1",
                                   "--then", "heads:prune_count=5"],
     r"--then heads:prune_count=5: the model after truncate has 4 heads \(1 layers × 4\); valid 0..3"),
    ("quantize-twice", ["compress", "--model", "tiny-bert", "--method", "quantize", "--then", "quantize"],
     r"--then quantize: comes after quantize"),
    ("bert-as-causal-lm", ["compress", "--model", "tiny-bert", "--model-kind", "causal-lm", "--base", "as-is",
                           "--method", "wanda"],
     r"--model-kind causal-lm: model 'tiny-bert' is a bert model, not a decoder-only language model"),
    ("truncate-default-layers", ["compress", "--model", "tiny-bert", "--method", "truncate"],
     r"--layers 3 \(the default\): model 'tiny-bert' has 2 layers; keep 1..1"),
    ("model-lying-quantization", ["compress", "--model", "{lying_int8}", "--base", "as-is", "--method", "truncate",
                                  "--layers", "1"],
     r"lying-int8/forgetless.json: its quantization entry names modules the model does not have"),
    ("clever-on-seq2seq", [*T5, "--clever"], r"--clever: CLEVER estimates need a classifier's logits"),
    ("sweep-level-beyond-the-model", ["sweep", "--model", "tiny-bert", "--method", "truncate", "--objectives", "ce",
                                      "--level-option", "layers", "--levels", "1,5"],
     r"--levels 1,5: --layers 5: model 'tiny-bert' has 2 layers"),
    ("challenge-name-breaks-tables", ["compress", *FILES, "--challenge", "a|b={tsv}"],
     r"set a\|b \(.*data.tsv\): the name 'a\|b' holds a line break or '\|', which would break the report's tables"),
    ("label-breaks-tables", ["compress", *FILES[:-1], "neg|x,pos", "--text-a", "sentence"],
     r"--labels neg\|x,pos: the label 'neg\|x' holds a line break or '\|'"),
    ("then-truncate-default-layers", ["compress", "--model", "tiny-bert", "--method", "magnitude", "--then", "truncate"],
     r"--then truncate:layers=3 \(the default\): the model after magnitude has 2 layers"),
]


# ----- fixtures: broken folders and files ----------------------------------------------------------
@pytest.fixture(scope="module")
def paths(tmp_path_factory, tiny_model_dir):
    return build_bad_files(tmp_path_factory.mktemp("bad"), tiny_model_dir)


def build_bad_files(root: Path, tiny_model_dir: str) -> dict:
    """Broken model folders, output folders, data files and recipes under ``root``; {name: path}."""
    from safetensors.torch import load_file, save_file

    from forgetless.data.tasks import load_task
    from forgetless.methods.quantize.method import linear_names
    from forgetless.models.io import save_model
    from forgetless.models.loading import bundled_tokenizer
    from forgetless.models.io import quantize_int8
    from forgetless.models.tiny import tiny_classifier, tiny_seq2seq
    from forgetless.outputs import RUN_FILE

    p = {"root": str(root)}

    def folder(name):
        path = root / name
        path.mkdir()
        p[name.replace("-", "_")] = str(path)
        return path

    (folder("not-a-model") / "notes.txt").write_text("hello")
    pickle = folder("pickle-only")
    shutil.copy(Path(tiny_model_dir) / "config.json", pickle)
    (pickle / "pytorch_model.bin").write_bytes(b"\x80\x02pickle")
    for name, mutate in (("empty-weights", lambda b: b""), ("truncated", lambda b: b[: len(b) // 2]),
                         ("corrupt", lambda b: b"\xff" * 8 + b[8:])):
        path = folder(name)
        shutil.copy(Path(tiny_model_dir) / "config.json", path)
        (path / "model.safetensors").write_bytes(mutate((Path(tiny_model_dir) / "model.safetensors").read_bytes()))
    empty_config = folder("empty-config")
    shutil.copy(Path(tiny_model_dir) / "model.safetensors", empty_config)
    (empty_config / "config.json").write_bytes(b"")
    user_model = folder("user-model")
    shutil.copy(Path(tiny_model_dir) / "config.json", user_model)
    other = folder("other-run")
    (other / RUN_FILE).write_text(json.dumps({"key": "another-run", "config": {}}))
    (other / "report.json").write_text("{}")
    old = folder("old-run")
    (old / "report.json").write_text("{}")
    a_file = root / "a-file.txt"
    a_file.write_text("x")
    p["a_file"] = str(a_file)

    tokenizer = bundled_tokenizer()
    model = tiny_classifier("tiny-bert", len(tokenizer), ["neg", "pos"])
    p["saved"] = str(save_model(model, root / "saved", tokenizer))
    lying = save_model(model, root / "lying", tokenizer)
    manifest = json.loads((lying / "forgetless.json").read_text())
    manifest["shape"]["ffn"] = [[k[0], k[1], 7] for k in manifest["shape"]["ffn"]] if "ffn" in manifest["shape"] \
        else manifest["shape"]
    (lying / "forgetless.json").write_text(json.dumps(manifest))
    p["lying"] = str(lying)
    corrupt_saved = save_model(model, root / "corrupt-saved", tokenizer)
    data = (corrupt_saved / "model.safetensors").read_bytes()
    (corrupt_saved / "model.safetensors").write_bytes(data[:-100])
    p["corrupt_saved"] = str(corrupt_saved)

    rows = [{"sentence": f"text number {i}", "label": ["neg", "pos"][i % 2]} for i in range(8)]
    single = root / "single.tsv"
    single.write_text("sentence\tlabel\n" + "".join(f"{r['sentence']}\t{r['label']}\n" for r in rows))
    p["single_tsv"] = str(single)

    def jsonl(name, items):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in items))
        return str(root / name)

    p["missing_key"] = jsonl("missing-key.jsonl", [{"sentence1": "a", "label": 0}, {"sentence1": "b", "label": 1},
                                                   {"label": 0}])
    p["fraction_label"] = jsonl("fraction-label.jsonl", [{"sentence1": "a", "label": 0}, {"sentence1": "b", "label": 1.7}])
    p["null_text"] = jsonl("null-text.jsonl", [{"sentence1": None, "label": 0}, {"sentence1": "b", "label": 1}])
    advglue = root / "advglue.json"
    advglue.write_text(json.dumps({"sst2": [{"sentence": "a", "label": 0}, {"sentence": "b", "label": 1}]}))
    p["advglue"] = str(advglue)
    labels = load_task("synthetic", train_size=8).label_names  # the task of the audit's compress cases
    p["synthetic_saved"] = str(save_model(tiny_classifier("tiny-bert", len(tokenizer), labels), root / "synthetic-saved",
                                          tokenizer))
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
    no_tokenizer = root / "no-tokenizer"  # a plain classifier folder without tokenizer files
    transformers.BertForSequenceClassification(config).save_pretrained(no_tokenizer)
    p["no_tokenizer"] = str(no_tokenizer)
    p["saved_no_tokenizer"] = str(save_model(tiny_classifier("tiny-bert", len(tokenizer), labels),
                                             root / "saved-no-tokenizer"))
    bad_tokenizer = save_model(model, root / "bad-tokenizer", tokenizer)
    (bad_tokenizer / "tokenizer.json").write_text('{"version": "1.0", "truncation"')
    p["bad_tokenizer"] = str(bad_tokenizer)
    no_head = root / "no-head"  # a trained classifier's folder that lost its head
    transformers.BertForSequenceClassification(config).save_pretrained(no_head)
    tokenizer.save_pretrained(no_head)
    state = {k: v for k, v in load_file(str(no_head / "model.safetensors")).items() if not k.startswith("classifier.")}
    save_file(state, str(no_head / "model.safetensors"), metadata={"format": "pt"})
    p["no_head"] = str(no_head)
    lying_int8 = root / "lying-int8"
    shutil.copytree(p["int8"], lying_int8)
    manifest = json.loads((lying_int8 / "forgetless.json").read_text())
    manifest["quantization"]["modules"] = ["bert.encoder.layer.7.output.dense"]
    (lying_int8 / "forgetless.json").write_text(json.dumps(manifest))
    p["lying_int8"] = str(lying_int8)
    lying_layers = save_model(model, root / "lying-layers", tokenizer)  # more layers than its config.json
    manifest = json.loads((lying_layers / "forgetless.json").read_text())
    manifest["shape"]["layers"]["encoder"] = 5
    (lying_layers / "forgetless.json").write_text(json.dumps(manifest))
    p["lying_layers"] = str(lying_layers)
    tsv = root / "data.tsv"
    tsv.write_text("\ufeffsentence\tlabel\n" + "".join(f"text {i}\t{['neg', 'pos'][i % 2]}\n" for i in range(8)))
    p["tsv"] = str(tsv)
    recipes = {
        "plain": "model: tiny-bert\nepochs: 1\n",
        "progress-yes": "model: tiny-bert\nno_progress: \"yes\"\n",
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


def snapshot(path: Path):
    """Every file under ``path`` with its size and modification time (None: absent)."""
    if not path.exists():
        return None
    if path.is_file():
        return (path.stat().st_size, path.stat().st_mtime_ns)
    return {str(f.relative_to(path)): (f.stat().st_size, f.stat().st_mtime_ns) for f in path.rglob("*")}


def tree_hashes(root: Path) -> dict:
    """sha256 of every file (and the target of every link) under ``root``: inputs and outputs alike."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            out[str(path)] = "link:" + os.readlink(path)
        elif path.is_file():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[str(path)] = "dir"
    return out


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: usage + one error line, exit 2
        code = exc.code
    return code, capsys.readouterr().err


def main_quietly(args: list[str]) -> tuple[int, str]:
    """``main(args)`` in this process with its stdout hidden: (exit code, stderr). An exception
    escapes (the audits count it as a traceback)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


def fill(argv, paths, out):
    args = [a.format(**paths, out=out) for a in argv]
    if args[0] in ("compress", "sweep") and "--out" not in args:
        args += ["--out", out]
    if args[0] == "compress":
        args = args[:1] + FAST + args[1:]  # the case's own options come last and win
    return args


def outcome(code, err, before, after) -> str:
    """'clear', 'traceback' or 'silent' for one bad input."""
    lines = [line for line in err.splitlines() if "error:" in line]
    if code == 2 and len(lines) == 1 and "[forgetless]" not in err and before == after:
        return "clear"
    return "silent" if code == 0 else "unclear"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cli_bad_input(case, paths, tmp_path, capsys, monkeypatch, record_property):
    """Exit code 2, ONE error line naming the culprit, no stage started, the output folder absent or
    untouched and every file under the fixture folder byte-identical (sha256)."""
    torch.set_num_threads(1)
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FORGETLESS_DATA_DIR", raising=False)  # no data folder unless a case names one
    _, argv, pattern = case
    out = tmp_path / "out"
    args = fill(argv, paths, str(out))
    target = Path(args[args.index("--out") + 1]) if "--out" in args else out
    before = snapshot(target) if str(target) not in ("", ".") else snapshot(Path.cwd())
    inputs = tree_hashes(Path(paths["root"]))
    try:
        code, err = run_cli(args, capsys)
    except Exception:
        TALLY[case[0]] = "traceback"
        record_property("bad_input", "cli traceback")
        raise
    after = snapshot(target) if str(target) not in ("", ".") else snapshot(Path.cwd())
    lines = [line for line in err.splitlines() if "error:" in line]
    changed = tree_hashes(Path(paths["root"])) != inputs
    TALLY[case[0]] = "destructive" if changed else outcome(code, err, before, after)
    record_property("bad_input", f"cli {TALLY[case[0]]}")
    assert code == 2, err
    assert len(lines) == 1 and re.search(pattern, lines[0]), err
    assert "[forgetless]" not in err  # no stage started: checked before any work
    assert before == after  # the output folder is absent or untouched
    assert not out.exists()
    assert tree_hashes(Path(paths["root"])) == inputs  # inputs byte-identical, nothing new written


TALLY: dict[str, str] = {}  # case → clear / traceback / silent / unclear / destructive, as the cases ran


def test_tally_of_the_cases_run():
    """The cases above (those this session ran): 0 tracebacks, 0 silent, 0 unclear, 0 destructive."""
    counts = {kind: sum(1 for result in TALLY.values() if result == kind)
              for kind in ("clear", "traceback", "silent", "unclear", "destructive")}
    print(f"\nbad inputs: tried {len(TALLY)}, " + ", ".join(f"{kind} {n}" for kind, n in counts.items()))
    assert counts["clear"] == len(TALLY), {name: result for name, result in TALLY.items() if result != "clear"}


def test_a_run_refused_in_its_first_step_leaves_nothing_behind(tmp_path, capsys, monkeypatch):
    """An input found wrong only when the first step reads it (here: the base model's loading
    raises) is one error line, and the output folder the run created is removed again (no
    ``forgetless-run.json``, lock or ``work/`` stub that would make the corrected rerun "a different
    run"); an empty folder given as ``--out`` is left empty."""
    from forgetless import teacher
    from forgetless.errors import DataError

    def refuse(*args, **kwargs):
        raise DataError("the base model cannot be read (simulated)")

    monkeypatch.setattr(teacher, "train_teacher", refuse)
    monkeypatch.setattr("forgetless.pipeline.train_teacher", refuse)
    out = tmp_path / "out"
    argv = ["compress", *FAST, "--model", "tiny-bert", "--method", "truncate", "--layers", "1", "--out", str(out)]
    code, err = run_cli(argv, capsys)
    assert code == 2 and [line for line in err.splitlines() if "error:" in line] == [
        "forgetless: error: the base model cannot be read (simulated)"], err
    assert not out.exists()
    out.mkdir()
    code, err = run_cli(argv, capsys)
    assert code == 2 and "(simulated)" in err
    assert [p.name for p in out.iterdir() if p.name != ".forgetless.lock"] == []


# ----- the Python API ------------------------------------------------------------------------------
def _api_cases(paths, out):
    from forgetless.data.tasks import load_task
    from forgetless.models.io import load_model
    import forgetless
    from forgetless.config import RunConfig, TaskConfig, TrainConfig
    from forgetless.data.tasks import task_from_config
    from forgetless.methods.nash.config import NashConfig
    from forgetless.methods.truncate.config import TruncateConfig
    from forgetless.pipeline import run_and_save

    task = lambda: load_task("synthetic", train_size=16, eval_size=8)  # noqa: E731
    quick = dict(train=TrainConfig(epochs=1, progress=False), progress=False)
    return [
        ("api-labels-string", lambda: load_task("files", train=paths["single_tsv"], dev=paths["single_tsv"],
                                                text_a="sentence", text_b="", labels="neg,pos"),
         r"^labels: give a list of label names, not the string 'neg,pos'"),
        ("api-epochs-nan", lambda: TrainConfig(epochs=math.nan), r"^epochs: must be a finite number"),
        ("api-save-steps-zero", lambda: TrainConfig(save_steps=0), r"^save_steps: 0 is out of range"),
        ("api-label-fraction", lambda: load_task("files", train=paths["fraction_label"], dev=paths["fraction_label"],
                                                 text_b="", labels=["0", "1"]), r"unknown label 1.7 in row 2"),
        ("api-truncate-layers-100", lambda: run_and_save(task(), RunConfig(model="tiny-bert", method=TruncateConfig(layers=100),
                                                                       **quick), out),
         r"^layers=100: model 'tiny-bert' has 2 layers"),
        ("api-out-empty", lambda: run_and_save(task(), RunConfig(model="tiny-bert", method=TruncateConfig(layers=1), **quick), ""),
         r"^out_dir='': name an output folder"),
        ("api-nash-decoder-layers", lambda: run_and_save(load_task("synthetic-lookup", train_size=16, eval_size=4),
                                                     RunConfig(model="tiny-t5", method=NashConfig(decoder_layers=9), **quick), out),
         r"^decoder_layers=9: model 'tiny-t5' has 4 decoder layers"),
        ("api-lying-manifest", lambda: load_model(paths["lying"]), r"lying/forgetless.json: its shape does not fit|weights do not match"),
        ("api-truncated-model", lambda: load_model(paths["corrupt_saved"]), r"truncated or corrupt safetensors"),
        ("api-teacher-pickle", lambda: run_and_save(task(), RunConfig(model="tiny-bert", teacher=paths["pickle_only"],
                                                                  **quick), out), r"only pickle weights"),
        ("api-teacher-empty", lambda: RunConfig(teacher=""), r"^teacher='': name a model .*; without teacher, one is fine-tuned"),
        ("api-then-after-quantize", lambda: run_and_save(task(), RunConfig(model="tiny-bert", method="quantize",
                                                                          then=[TruncateConfig(layers=1)], **quick), out),
         r"^then=truncate: comes after quantize"),
        ("api-option-of-another-task", lambda: task_from_config(TaskConfig(train_file=paths["tsv"])),
         r"^train: applies to task=files, llm-generation, llm-zero-shot, lm-eval, not synthetic"),
        ("api-other-run-output", lambda: run_and_save(task(), RunConfig(model="tiny-bert", method=TruncateConfig(layers=1),
                                                                        **quick), paths["other_run"]),
         r"^out_dir=.*other-run: holds the output of a different run .* pass overwrite=True to replace it"),
        ("api-no-tokenizer", lambda: forgetless.evaluate(paths["no_tokenizer"], "synthetic"),
         r"no-tokenizer: no tokenizer files"),
    ]


API_IDS = ["api-labels-string", "api-epochs-nan", "api-save-steps-zero", "api-label-fraction",
           "api-truncate-layers-100", "api-out-empty", "api-nash-decoder-layers", "api-lying-manifest",
           "api-truncated-model", "api-teacher-pickle", "api-teacher-empty", "api-then-after-quantize",
           "api-option-of-another-task", "api-other-run-output", "api-no-tokenizer"]


@pytest.mark.parametrize("name", API_IDS)
def test_api_bad_input(name, paths, tmp_path, record_property):
    out = tmp_path / "out"
    cases = {c[0]: c for c in _api_cases(paths, out)}
    _, call, pattern = cases[name]
    record_property("bad_input", "api traceback")  # replaced below unless the call raises another error
    try:
        call()
    except ForgetlessError as exc:
        message = str(exc)
    else:
        record_property("bad_input", "api silent")
        pytest.fail(f"{name}: ran where it should refuse")
    clear = "\n" not in message and re.search(pattern, message) and not out.exists()
    record_property("bad_input", f"api {'clear' if clear else 'unclear'}")
    assert "\n" not in message and re.search(pattern, message), message
    assert not out.exists()


def test_one_error_speaks_flags_on_the_command_line_and_python_names_in_python(paths, tmp_path, capsys):
    """The same refusal, raised at the same place: ``--out '': …`` printed by the command,
    ``out_dir='': …`` read from Python; a command to type (in backticks) keeps its flags."""
    from forgetless.config import RunConfig, TrainConfig
    from forgetless.data.tasks import load_task
    from forgetless.errors import OptionError, command_line
    from forgetless.pipeline import run_and_save

    code, err = run_cli(["compress", "--model", "tiny-bert", "--out", ""], capsys)
    assert code == 2 and "forgetless: error: --out '': name a path" in err
    with pytest.raises(ForgetlessError) as info:
        run_and_save(load_task("synthetic", train_size=8, eval_size=4), RunConfig(model="tiny-bert"), "")
    assert str(info.value).startswith("out_dir='': name an output folder")
    error = OptionError("--lr: 2 is out of range; pass --overwrite, or run `pip install --no-deps x`")
    assert str(error) == "learning_rate: 2 is out of range; pass overwrite=True, or run `pip install --no-deps x`"
    with command_line():
        assert str(error) == error.args[0]
    with pytest.raises(ForgetlessError, match=r"^epochs: must be a finite number"):
        TrainConfig(epochs=math.nan)


def test_every_option_has_its_python_name():
    """Each flag of the config tree reads, from Python, as the field it sets (``--lr`` →
    ``learning_rate``, ``--bench-seq-len`` → ``speed.seq_len``, ``--no-progress`` → ``progress=False``)."""
    from forgetless import tree
    from forgetless.config import RunConfig, SweepConfig
    from forgetless.errors import python_names

    for leaf in [*tree.table(RunConfig), *tree.table(SweepConfig)]:
        if not leaf.cli:
            continue
        spoken = python_names(f"{leaf.flag} 1: x")
        name, _, rest = spoken.partition("=")
        switch = leaf.field.metadata.get("negate") or leaf.field.metadata.get("switch")
        assert rest.startswith(("False 1" if leaf.field.metadata.get("negate") else "True 1") if switch else "1: x")
        assert name.split(".")[-1] == leaf.field.name or leaf.flag in ("--task", "--train", "--dev"), (leaf.flag, spoken)


# ----- fixed during the unification: checked here ----------------------------------------------------
def test_train_size_is_exact_and_text_b_empty_means_single_sentences(paths):
    from forgetless.data.tasks import load_task

    assert len(load_task("synthetic", train_size=64).train) == 64
    task = load_task("files", train=paths["single_tsv"], dev=paths["single_tsv"], text_a="sentence", text_b="",
                     labels=["neg", "pos"])
    assert task.train.text_b is None and task.train.labels == [0, 1] * 4
    keyed = load_task("files", train=paths["advglue"] + ":sst2", dev=paths["advglue"], json_key="sst2",
                      text_a="sentence", text_b="", labels=["0", "1"])
    assert keyed.dev.text_a == ["a", "b"] and keyed.train.labels == [0, 1]


def test_evaluate_files_needs_no_train_and_checks_label_order(paths, capsys):
    code, err = run_cli(["evaluate", paths["saved"], "--task", "files", "--dev", paths["single_tsv"], "--text-a",
                         "sentence", "--text-b", "", "--labels", "neg,pos"], capsys)
    assert code == 0, err


def test_loaders_read_safetensors_only():
    """Every ``from_pretrained`` of a model in the package passes ``use_safetensors=True`` (or reads a GGUF
    file: a tensor container read by the gguf package, never unpickled)."""
    import ast

    package = Path(__file__).resolve().parents[2] / "forgetless"
    calls = 0
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr.startswith("from_") and node.func.attr.endswith("pretrained")):
                continue
            owner = ast.unparse(node.func.value)
            if re.search(r"AutoModel|ForConditionalGeneration|ForSequenceClassification|EncoderDecoderModel", owner):
                calls += 1
                keywords = {k.arg: ast.unparse(k.value) for k in node.keywords}
                assert keywords.get("use_safetensors") == "True" or "gguf_file" in keywords or (
                    keywords.get("encoder_use_safetensors") == keywords.get("decoder_use_safetensors") == "True"), \
                    f"{path.name}:{node.lineno}: {ast.unparse(node)[:100]}"
    assert calls >= 3


def test_long_texts_are_cut_before_tokenizing(minilm_tokenizer):
    """Bounded memory: 200k-word pairs encode to max_length tokens from clipped texts."""
    from forgetless.data.task import ExampleSet
    from forgetless.training.encode import CHARS_PER_TOKEN, clip_texts, encode

    long = "word " * 200_000
    assert len(clip_texts([long], 32)[0]) == 32 * CHARS_PER_TOKEN
    rows = encode(ExampleSet(name="x", text_a=[long] * 2, text_b=[long] * 2, labels=[0, 1], label_names=["a", "b"]), minilm_tokenizer, max_length=32)
    assert [len(r["input_ids"]) for r in rows] == [32, 32]


# ----- small evaluation sets, a read-only teacher, a rerun that moves the old report aside ------------
def _snapshot_bytes(folder: Path) -> dict:
    import hashlib

    return {str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest() for f in folder.rglob("*")
            if f.is_file()}


def test_small_eval_set_reports_and_teacher_is_only_read(paths, tmp_path, capsys):
    """A tiny evaluation set (empty hard / easy subsets) still gives a report; ``--teacher`` is
    never written to (and one trained for other labels is refused before any work); a rerun with
    other settings is refused, and with --overwrite it first moves the old report aside."""
    from forgetless.data.tasks import load_task
    from forgetless.models.io import save_model
    from forgetless.models.loading import bundled_tokenizer
    from forgetless.models.tiny import tiny_classifier

    torch.set_num_threads(1)
    tokenizer = bundled_tokenizer()
    labels = load_task("synthetic", train_size=8).label_names
    teacher = save_model(tiny_classifier("tiny-bert", len(tokenizer), labels, seed=5), tmp_path / "teacher", tokenizer)
    before = _snapshot_bytes(teacher)
    out = tmp_path / "run"
    argv = ["compress", "--method", "heads", "--model", "tiny-bert", "--teacher", paths["saved"],
            "--train-size", "48", "--eval-size", "3", "--epochs", "1", "--out", str(out), "--no-progress",
            "--bench-repeats", "1", "--bench-seq-len", "16", "--scoring-examples", "8", "--recovery", "none"]
    code, err = run_cli(argv, capsys)
    assert code == 2 and "was trained with the labels neg,pos" in err and not out.exists(), err
    argv[argv.index("--teacher") + 1] = str(teacher)
    code, err = run_cli(argv, capsys)
    assert code == 0, err
    assert _snapshot_bytes(teacher) == before  # read, never written
    card = json.loads((out / "report.json").read_text())
    assert card["sets"]["dev"]["compressed"]["n"] == 3
    code, err = run_cli(argv[:-1] + ["fine-tune"], capsys)  # other settings, same folder
    assert code == 2 and "holds the output of a different run" in err
    assert json.loads((out / "report.json").read_text()) == card  # untouched
    old_key = json.loads((out / "forgetless-run.json").read_text())["key"]
    code, err = run_cli(argv[:-1] + ["fine-tune", "--overwrite"], capsys)
    assert code == 0, err
    assert json.loads((out / "previous-report" / "report.json").read_text()) == card
    assert json.loads((out / "forgetless-run.json").read_text())["key"] != old_key
    assert _snapshot_bytes(teacher) == before


def test_bom_in_a_tsv_header_is_stripped(paths):
    from forgetless.data.tasks import load_task

    task = load_task("files", train=paths["tsv"], dev=paths["tsv"], text_a="sentence", text_b="", labels=["neg", "pos"])
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


def test_card_model_is_what_was_compressed(paths, tmp_path, monkeypatch, capsys):
    """With ``--teacher`` (student from the teacher) the card says which model was compressed."""
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, err = run_cli(["compress", *FAST, "--model", "tiny-bert", "--teacher", paths["synthetic_saved"], "--method",
                         "truncate", "--layers", "1", "--bench-repeats", "1", "--bench-seq-len", "16",
                         "--out", str(out)], capsys)
    assert code == 0, err
    card = json.loads((out / "report.json").read_text())
    assert card["model"] == {"compressed": paths["synthetic_saved"], "model_type": "bert"}


def tally(root: Path) -> dict:
    """Every bad input of this module, of ``test_output_rule.py`` and of the LLM surfaces' modules
    (``test_bad_inputs_llm.py``, ``_schemes``, ``_sensitivity``, ``_moe``, ``_report``):
    tried / clear / correct / traceback / silent / unclear / destructive (a file under the fixture
    folder changed), and ``llm_surface``: how many of them were on the LLM surfaces."""
    import os
    import tempfile

    import test_bad_inputs_llm
    import test_bad_inputs_moe
    import test_bad_inputs_report
    import test_bad_inputs_schemes
    import test_bad_inputs_sensitivity
    import test_output_rule as rule

    LLM_SURFACES = (test_bad_inputs_llm, test_bad_inputs_schemes, test_bad_inputs_sensitivity, test_bad_inputs_moe,
                    test_bad_inputs_report)

    from forgetless.models.loading import resolve_model_path

    counts = dict(tried=0, clear=0, correct=0, traceback=0, silent=0, unclear=0, destructive=0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    model_dir = root / "tiny-bert"
    config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    (root / "bad").mkdir()
    (root / "world").mkdir()
    bad = build_bad_files(root / "bad", str(model_dir))
    world = rule.build_world(root / "world", str(model_dir))
    suites = [*((c, bad, True) for c in CASES), *((c, world, False) for c in rule.CASES)]  # rule: --out / too
    for i, ((name, argv, _), paths, watch_out) in enumerate(suites):
        out = root / f"out-{i}"
        args = fill(argv, paths, str(out))
        target = Path(args[args.index("--out") + 1]) if "--out" in args and args[args.index("--out") + 1] else out
        target = target if watch_out else out
        os.environ["FORGETLESS_CACHE"] = paths.get("cache") or tempfile.mkdtemp()
        before, inputs = snapshot(target), tree_hashes(Path(paths["root"]))
        counts["tried"] += 1
        try:
            code, err = main_quietly(args)
        except Exception:  # noqa: BLE001
            counts["traceback"] += 1
            print(f"TRACEBACK {name}")
            continue
        result = "destructive" if tree_hashes(Path(paths["root"])) != inputs else outcome(code, err, before,
                                                                                           snapshot(target))
        counts[result] += 1
        if result != "clear":
            print(f"{result.upper()} {name}: {err.strip()[-200:]}")
    for name, call, _ in _api_cases(bad, root / "api-out"):
        counts["tried"] += 1
        try:
            call()
        except ForgetlessError as exc:
            counts["clear" if "\n" not in str(exc) and not (root / "api-out").exists() else "unclear"] += 1
        except Exception:  # noqa: BLE001
            counts["traceback"] += 1
            print(f"TRACEBACK {name}")
        else:
            counts["silent"] += 1
            print(f"SILENT {name}")
    llm = dict.fromkeys(counts, 0)
    for module in LLM_SURFACES:
        done = module.tally(root / module.__name__) if module is test_bad_inputs_llm else \
            test_bad_inputs_llm.tally(root / module.__name__, module.cases, getattr(module, "moe_paths", None))
        llm = {kind: llm[kind] + done[kind] for kind in llm}
    counts = {kind: counts[kind] + llm[kind] for kind in counts}
    counts["llm_surface"] = llm["tried"]
    return counts


if __name__ == "__main__":
    import tempfile

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(tally(Path(folder)), indent=1))
    sys.exit(0)
