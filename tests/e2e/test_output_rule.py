"""The one output rule (``forgetless.outputs``, issue 18): every command refuses, before any work,
an output that is an existing foreign file, a model folder, a folder of files forgetless did not
write, an input, a parent of an input, the cache or ``/``; exit code 2, one line naming the flag as
typed, and every file under the test's folder byte-identical afterwards. The destructive cases of
the issue also through the Python API; remote code never runs (a "y" on stdin changes nothing)."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_bad_inputs import outcome, run_cli, tree_hashes  # noqa: E402  (one home for the CLI call and the hashes)
from forgetless.errors import ForgetlessError, OutputFolderError


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_model_dir):
    return build_world(tmp_path_factory.mktemp("world"), tiny_model_dir)


def build_world(root: Path, tiny_model_dir: str) -> dict:
    """A forgetless model, a user's plain model folder, a user's folder of notes, a file, a link."""
    from forgetless.models.io import save_model
    from forgetless.models.loading import bundled_tokenizer
    from forgetless.models.tiny import tiny_classifier

    tokenizer = bundled_tokenizer()
    labels = ["entailment", "non-entailment"]  # the synthetic task's
    saved = save_model(tiny_classifier("tiny-bert", len(tokenizer), labels), root / "runs" / "model", tokenizer)
    (saved / "notes-of-the-user.txt").write_text("mine")
    user_model = root / "user-model"
    shutil.copytree(tiny_model_dir, user_model)
    (user_model / "README.md").write_text("my model")
    notes = root / "notes"
    notes.mkdir()
    (notes / "thesis.tex").write_text("\\section{}")
    (root / "a-file.txt").write_text("keep me")
    os.symlink(root / "nowhere", root / "dangling")
    (root / "cache").mkdir()
    return {"root": root, "model": str(saved), "user_model": str(user_model), "notes": str(notes),
            "file": str(root / "a-file.txt"), "dangling": str(root / "dangling"), "cache": str(root / "cache"),
            "long": str(root / ("x" * 300))}


FAST = ["--train-size", "8", "--eval-size", "4", "--epochs", "1", "--no-progress", "--model", "tiny-bert"]
# (id, argv with {names} of the world, the one error line's pattern)
CASES = [
    ("export-out-is-model", ["export", "{model}", "--format", "onnx", "--out", "{model}"],
     r"--out .*runs/model: is an input of this command \(MODEL_PATH"),
    ("export-out-is-file", ["export", "{model}", "--format", "onnx", "--out", "{file}"], r"a-file.txt: is an existing file"),
    ("export-out-user-model", ["export", "{model}", "--format", "onnx", "--out", "{user_model}"],
     r"user-model: holds a model \(config.json\)"),
    ("export-out-notes", ["export", "{model}", "--format", "onnx", "--out", "{notes}"],
     r"notes: holds 1 file\(s\) forgetless did not write \(e.g. thesis.tex\)"),
    ("export-out-parent", ["export", "{model}", "--format", "onnx", "--out", "{root}/runs"],
     r"runs: contains an input of this command"),
    ("export-out-root", ["export", "{model}", "--format", "onnx", "--out", "/"], r"--out /: is the root folder"),
    ("export-overwrite-user-model", ["export", "{model}", "--format", "onnx", "--out", "{user_model}", "--overwrite"],
     r"holds a model \(config.json\)"),
    ("evaluate-json-config", ["evaluate", "{model}", "--json", "{model}/config.json"],
     r"--json .*config.json: is an existing file forgetless did not write"),
    ("evaluate-json-config-overwrite", ["evaluate", "{model}", "--json", "{model}/config.json", "--overwrite"],
     r"--json .*config.json: is an existing file forgetless did not write"),
    ("evaluate-json-model", ["evaluate", "{model}", "--json", "{model}"], r"--json .*model: is an input"),
    ("finetune-out-user-model", ["finetune", *FAST, "--out", "{user_model}"], r"holds a model \(config.json\)"),
    ("finetune-out-model-input", ["finetune", *FAST[:-2], "--model", "{user_model}", "--out", "{user_model}"],
     r"is an input of this command \(--model"),
    ("compress-teacher-is-out", ["compress", *FAST, "--teacher", "{model}", "--out", "{model}", "--overwrite"],
     r"--out .*model: is an input of this command \(--teacher"),
    ("compress-out-contains-teacher", ["compress", *FAST, "--teacher", "{model}", "--out", "{root}/runs", "--overwrite"],
     r"contains an input of this command \(--teacher"),
    ("compress-out-is-cache", ["compress", *FAST, "--out", "{cache}"], r"is inside the forgetless cache"),
    ("compress-out-parent-of-cache", ["compress", *FAST, "--out", "{root}"], r"is a parent of the forgetless cache"),
    ("compress-out-notes-overwrite", ["compress", *FAST, "--out", "{notes}", "--overwrite"],
     r"holds 1 file\(s\) forgetless did not write"),
    ("compress-out-dangling", ["compress", *FAST, "--out", "{dangling}"], r"dangling: is a dangling symbolic link"),
    ("compress-out-long-name", ["compress", *FAST, "--out", "{long}"], r"is 300 bytes long; file names are limited"),
    ("sweep-out-user-model", ["sweep", *FAST, "--objectives", "ce", "--out", "{user_model}"], r"holds a model"),
    ("profile-out-model", ["profile", "--model", "tiny-t5", "--out", "{model}"], r"holds a model|is an input"),
    ("profile-out-compressed", ["profile", "--model", "tiny-t5", "--compressed", "{model}", "--out", "{model}"],
     r"is an input of this command \(--compressed"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cli_output_rule(case, world, capsys, monkeypatch, record_property):
    monkeypatch.setenv("FORGETLESS_CACHE", world["cache"])
    _, argv, pattern = case
    args = [a.format(**world) for a in argv]
    before = tree_hashes(world["root"])
    record_property("bad_input", "cli traceback")  # replaced below unless the command raises
    code, err = run_cli(args, capsys)
    lines = [line for line in err.splitlines() if "error:" in line]
    kept = tree_hashes(world["root"]) == before
    record_property("bad_input", "cli " + ("destructive" if not kept else outcome(code, err, before, before)))
    assert code == 2, err
    assert len(lines) == 1 and re.search(pattern, lines[0]), err
    assert "[forgetless]" not in err
    assert tree_hashes(world["root"]) == before  # inputs and pre-existing outputs byte-identical


def test_api_output_rule(world, monkeypatch):
    """The destructive cases through the Python API: export_onnx, evaluate_saved, save_model, compress."""
    from forgetless.data.tasks import load_task
    from forgetless.evaluate_saved import evaluate_saved
    from forgetless.export import export_onnx
    from forgetless.models.io import load_model, save_model
    from forgetless.config import RunConfig
    from forgetless.pipeline import run_and_save

    monkeypatch.setenv("FORGETLESS_CACHE", world["cache"])
    model, tokenizer = load_model(world["model"])
    task = load_task("synthetic", train_size=8, eval_size=4)
    before = tree_hashes(world["root"])
    calls = [
        (lambda: export_onnx(world["model"], world["model"]), r"is an input of this command \(MODEL_PATH"),
        (lambda: export_onnx(model, world["user_model"], overwrite=True), r"holds a model"),
        (lambda: export_onnx(world["model"], world["notes"], overwrite=True), r"forgetless did not write"),
        (lambda: evaluate_saved(world["model"], task, Path(world["model"]) / "config.json", overwrite=True),
         r"is an existing file forgetless did not write"),
        (lambda: save_model(model, world["notes"], tokenizer), r"notes: holds files forgetless did not write"),
        (lambda: save_model(model, world["file"], tokenizer), r"a-file.txt: is an existing file"),
        (lambda: run_and_save(task, RunConfig(model="tiny-bert", teacher=world["model"]), world["model"], overwrite=True),
         r"is an input of this command \(teacher="),
        (lambda: run_and_save(task, RunConfig(model=world["user_model"]), world["user_model"], overwrite=True),
         r"is an input of this command \(model="),
    ]
    for call, pattern in calls:
        with pytest.raises(OutputFolderError) as info:
            call()
        assert "\n" not in str(info.value) and re.search(pattern, str(info.value)), str(info.value)
    assert tree_hashes(world["root"]) == before


def test_rerun_replaces_only_its_own_output(world, tmp_path, capsys, monkeypatch):
    """evaluate --json and export write a new path; the same command again needs --overwrite and
    then replaces its own output; another command's folder is never taken."""
    monkeypatch.setenv("FORGETLESS_CACHE", world["cache"])
    out = tmp_path / "eval.json"
    argv = ["evaluate", world["model"], "--json", str(out), "--eval-size", "4"]
    assert run_cli(argv, capsys)[0] == 0
    first = json.loads(out.read_text())
    assert first["written_by"] == "forgetless evaluate" and first["sets"]["dev"]["n"] == 4
    code, err = run_cli(argv, capsys)
    assert code == 2 and "pass --overwrite to replace it" in err
    assert run_cli([*argv, "--overwrite"], capsys)[0] == 0
    from forgetless.outputs import mark_output

    onnx = tmp_path / "onnx"
    mark_output(onnx, "export")  # an earlier export's folder (one real export below keeps the test short)
    (onnx / "model.onnx").write_bytes(b"stale")
    export = ["export", world["model"], "--format", "onnx", "--out", str(onnx)]
    code, err = run_cli(export, capsys)
    assert code == 2 and "holds the output of an earlier `forgetless export`; pass --overwrite" in err
    assert run_cli([*export, "--overwrite"], capsys)[0] == 0
    assert (onnx / "model.onnx").read_bytes() != b"stale"
    assert json.loads((onnx / "forgetless-run.json").read_text())["command"] == "export"
    assert json.loads((onnx / "export.json").read_text())["opset"] == 18  # the opset actually written
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".onnx")]  # the old one moved aside, then gone
    code, err = run_cli(["compress", *FAST, "--out", str(onnx), "--overwrite"], capsys)
    assert code == 2 and "holds the output of `forgetless export`, not of `forgetless compress`" in err


# ----- remote code ---------------------------------------------------------------------------------------
def _remote_code_folder(root: Path, tiny_model_dir: str) -> tuple[Path, Path]:
    folder = root / "needs-code"
    shutil.copytree(tiny_model_dir, folder)
    marker = root / "the-folder-code-ran"
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="evilbert", architectures=["EvilModel"],
                  auto_map={"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel",
                            "AutoModelForSequenceClassification": "evil.EvilModel"})
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                                    "from transformers import BertConfig as EvilConfig, BertModel as EvilModel\n")
    return folder, marker


def test_remote_code_never_runs_even_when_stdin_says_yes(tmp_path, tiny_model_dir, capsys, monkeypatch):
    """``echo y | forgetless evaluate FOLDER`` (a real process, a real stdin) and compress in-process
    with "y" on stdin: one clear error, and the folder's Python never ran."""
    import io

    folder, marker = _remote_code_folder(tmp_path, tiny_model_dir)
    before = tree_hashes(folder)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HF_HUB_OFFLINE": "1",
           "FORGETLESS_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "forgetless", "evaluate", str(folder), "--eval-size", "4"],
                          input="y\ny\n", capture_output=True, text=True, env=env, timeout=300)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\ny\n"))
    code, err = run_cli(["compress", *FAST[:-2], "--model", str(folder), "--out", str(tmp_path / "run")], capsys)
    for returncode, stderr in ((done.returncode, done.stderr), (code, err)):
        lines = [line for line in stderr.splitlines() if "error:" in line]
        assert returncode == 2, stderr
        assert len(lines) == 1 and "needs the folder's own Python code" in lines[0] and "--trust-remote-code" in lines[0]
    assert not marker.exists()
    assert tree_hashes(folder) == before and not (tmp_path / "run").exists()
    config = json.loads((folder / "config.json").read_text())  # a known model_type that also names auto_map:
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "bert", "architectures": ["BertModel"]}))
    code, err = run_cli(["evaluate", str(folder), "--eval-size", "4"], capsys)  # transformers' own BERT code
    assert code == 0 and not marker.exists(), err


def test_every_load_passes_trust_remote_code():
    """Every ``from_pretrained`` of a config, tokenizer or model in the package passes
    ``trust_remote_code`` explicitly (continuation lines included: the AST sees whole calls)."""
    package = Path(__file__).resolve().parents[2] / "forgetless"
    calls = 0
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr.startswith("from_") and node.func.attr.endswith("pretrained"):
                keywords = {k.arg for k in node.keywords}
                calls += 1
                assert "trust_remote_code" in keywords or {"encoder_trust_remote_code", "decoder_trust_remote_code"} \
                    <= keywords, f"{path.name}:{node.lineno}: {ast.unparse(node)[:120]}"
    assert calls >= 8


def test_error_class_is_forgetless_error():
    assert issubclass(OutputFolderError, ForgetlessError)
