"""The README's code runs as written (issues 33, 42), on tiny models: its API blocks in a fresh
process with the model names swapped for tiny local folders (a Llama causal LM, a BERT classifier), a
data folder holding a few lines of the files the blocks name (the LLM tasks' copies, WikiText-2, XSum,
SST-2, AdvGLUE) and the CSV files in the current folder; its "Adding a method" block saved as
``my_module.py``, loaded as a plugin and applied; every command of its shell blocks parsed by the
command line as written (and checked as a run checks it before reading data or a model: SmolLM2's
widths, hub-only task names offline); its LLM quickstart run command by command."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers

from forgetless.cli import main
from forgetless.models.tiny import tiny_llama_config

from llm_data import write_llm_data

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "docs" / "llm-quickstart.md"]  # pages whose commands and Python blocks run here too
STAND_INS = {'"my-bert"': "bert", '"path/to/llama-folder"': "llama",  # what the README names → folder
             "smollm2_folder()": "llama", '"../shared/data"': "data"}
SENTENCES = [("a charming and affecting journey", 1), ("bleak and desperate", 0), ("a great fun film", 1),
             ("dull and tedious", 0), ("wonderful acting", 1), ("an awful mess", 0)]


def blocks() -> list[str]:
    return [body for info, body in fenced((ROOT / "README.md").read_text(encoding="utf-8")) if info == "python"]


def _env(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "FORGETLESS_PLUGINS"}
    env.update({"PYTHONPATH": os.pathsep.join([str(ROOT), *extra.pop("path", [])]), "HF_HUB_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "hf-datasets"),
                "FORGETLESS_CACHE": str(tmp_path / "cache"), "TOKENIZERS_PARALLELISM": "false", "MPLBACKEND": "Agg"})
    env.update(extra)
    return env


def _folders(tmp_path: Path, tokenizer) -> dict:
    torch.manual_seed(0)
    llama = transformers.LlamaForCausalLM(tiny_llama_config(tokenizer.vocab_size))
    bert = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=48, max_position_embeddings=130, num_labels=2, id2label={0: "neg", 1: "pos"},
        label2id={"neg": 0, "pos": 1}))
    for name, model in (("llama", llama), ("bert", bert)):
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
    data = write_llm_data(tmp_path / "data")  # the LLM tasks' copies, WikiText-2, XSum
    for path in ("glue/SST-2", "advglue"):
        (data / path).mkdir(parents=True)
    rows = "sentence\tlabel\n" + "".join(f"{s} \t{y}\n" for s, y in SENTENCES * 2)
    (data / "glue/SST-2/train.tsv").write_text(rows)
    (data / "glue/SST-2/dev.tsv").write_text(rows)
    (data / "advglue/dev.json").write_text(json.dumps({"sst2": [{"idx": i, "sentence": s, "label": y}
                                                                for i, (s, y) in enumerate(SENTENCES)]}))
    return {"llama": str(tmp_path / "llama"), "bert": str(tmp_path / "bert"), "data": str(data)}


def test_the_python_api_blocks_run_as_written(tmp_path, minilm_tokenizer):
    api = [block for block in blocks() if "forgetless.apply" in block or "forgetless.compress" in block]
    assert len(api) == 3  # load, apply, evaluate; the whole job in memory; streamed apply (Scaling)
    folders = _folders(tmp_path, minilm_tokenizer)
    work = tmp_path / "cwd"
    work.mkdir()
    for name in ("train", "dev", "hard"):
        (work / f"{name}.csv").write_text("sentence,label\n" + "".join(f"{s},{['neg', 'pos'][y]}\n"
                                                                      for s, y in SENTENCES))
    code = "\n".join(api)
    for name, folder in STAND_INS.items():
        assert name in code, name
        code = code.replace(name, repr(folders[folder]))
    code += ("\nassert sum(int((w == 0).sum()) for w in pruned.parameters()) > 0 and compared['llm']['tasks']"
             "\nassert compared['language_model']['base']['perplexity'] > 1"
             "\nassert not any(w.startswith('calibration') for w in compared['warnings'])"
             "\nassert run.card['params']['ratio'] < 1 and (Path('bert-heads-50') / 'model' / 'README.md').is_file()"
             "\nassert sum(int((p == 0).sum()) for p in model.parameters()) > 0 and tokenizer is not None"
             "\nprint('README ran')\n")
    done = subprocess.run([sys.executable, "-c", "from pathlib import Path\n" + code], cwd=work, capture_output=True,
                          text=True, env=_env(tmp_path, FORGETLESS_DATA_DIR=folders["data"]), timeout=600)
    assert done.returncode == 0 and "README ran" in done.stdout, done.stderr[-3000:]


def test_the_adding_a_method_block_is_a_working_plugin(tmp_path):
    plugin = next(block for block in blocks() if "@METHODS.register" in block)
    (tmp_path / "my_module.py").write_text(plugin)
    code = ("import forgetless, torch, transformers\n"
            "from forgetless.registry import METHODS\n"
            "from forgetless.models.tiny import tiny_llama_config\n"
            "model = transformers.LlamaForCausalLM(tiny_llama_config(100))\n"
            "model = forgetless.apply(model, METHODS.make_config('drop-last', {'drop': 3, 'recovery': 'none'}))\n"
            "print(len(model.model.layers), 'drop-last' in METHODS.names())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=_env(tmp_path, path=[str(tmp_path)], FORGETLESS_PLUGINS="my_module"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["1", "True"]


def fenced(text: str) -> list[tuple[str, str]]:
    """``(info string, body)`` of every fenced code block of a Markdown text, in order."""
    blocks, info, body = [], None, []
    for line in text.splitlines():
        if info is None and line.startswith("```"):
            info, body = line[3:].strip(), []
        elif info is not None and line.strip() == "```":
            blocks.append((info, "\n".join(body) + "\n"))
            info = None
        elif info is not None:
            body.append(line)
    return blocks


def shell_commands(text: str | None = None) -> list[list[str]]:
    """The commands of the README's shell blocks (```bash and plain ones), as argv lists: continuation lines
    joined, comments dropped, ``&&`` / ``;`` chains split."""
    text = (ROOT / "README.md").read_text(encoding="utf-8") if text is None else text
    commands = []
    for info, block in fenced(text):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines() if info in ("bash", "") else []:
            if info == "" and line.split()[:1] not in (["forgetless"], ["python"], ["pip"]):
                continue  # a plain block is a file tree or output, not commands
            current: list[str] = []
            for token in shlex.split(line, comments=True):
                if token in ("&&", ";"):
                    commands.append(current)
                    current = []
                else:
                    current.append(token)
            commands.append(current)
    return [c for c in commands if c]


SMOLLM2 = tiny_llama_config(49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                            num_key_value_heads=3, max_position_embeddings=8192)  # SmolLM2-135M's config.json


def test_every_readme_command_parses_and_passes_the_checks_before_loading(tmp_path, monkeypatch, capsys):
    """Each ``forgetless`` command parses as written (flags, positional folders), and a ``compress`` command
    passes the checks a run makes before reading data or a model (SmolLM2's widths; lm-eval's own task
    names while the hub is off); ``pip install`` names only this clone's extras (forgetless is not on
    PyPI); a benchmark script exists and takes the flags given."""
    from forgetless.cli import build_parser, check_command_options, config_from_args, help_choices
    from forgetless.errors import ForgetlessError, OptionError
    from forgetless.validate import check_before_loading

    from forgetless import validate

    data = write_llm_data(tmp_path / "data")
    config_of = validate.model_config  # what a run reads of --model smollm2 before loading it: its config.json
    monkeypatch.setattr(validate, "model_config", lambda name: SMOLLM2 if name == "smollm2" else config_of(name))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    extras = re.search(r"\[project.optional-dependencies\](.*?)\n\[", (ROOT / "pyproject.toml").read_text(), re.DOTALL)
    extras = set(re.findall(r"^(\w+) =", extras.group(1), re.MULTILINE))
    checked = 0
    for argv in shell_commands() + [c for page in DOCS for c in shell_commands(page.read_text(encoding="utf-8"))]:
        shown = " ".join(argv)
        if argv[:2] == ["pip", "install"]:
            for spec in argv[2:]:
                assert not spec.startswith("forgetless"), f"{shown}: forgetless is not on PyPI (pip install -e .)"
                if spec.startswith(".["):
                    assert set(spec[2:-1].split(",")) <= extras, shown
        elif argv[0] in ("python", "python3") and argv[1].startswith("benchmarks/"):
            source = (ROOT / argv[1]).read_text()
            own = argv[2:argv.index("--extra")] if "--extra" in argv else argv[2:]  # --extra: compress's flags
            assert all(f'"{flag.split("=")[0]}"' in source for flag in own if flag.startswith("--")), shown
        elif argv[0] == "forgetless" or "forgetless.cli" in argv:
            argv = [str(data) if a == "../shared/data" else a for a in argv[argv.index("forgetless.cli") + 1
                                                                          if "forgetless.cli" in argv else 1:]]
            try:
                args = build_parser(help_choices(argv)).parse_args(argv)
            except SystemExit as exc:
                assert exc.code == 0 and "--help" in argv, f"{shown}: {capsys.readouterr().err}"
                continue
            check_command_options(args)
            config = config_from_args(args)
            checked += 1
            if args.command != "compress":
                continue
            try:
                check_before_loading(config)
            except OptionError as exc:
                pytest.fail(f"{shown}: {exc}")
            except ForgetlessError as exc:  # a placeholder folder (my_yamls/, DATA) of the example is not here
                assert "hub is off" not in str(exc), f"{shown}: {exc}"
    assert checked >= 30


def test_the_llm_quickstart_runs_command_by_command(tmp_path, monkeypatch, capsys, minilm_tokenizer):
    """The quickstart's forgetless commands as written, SmolLM2 and the data folder stood in for by a tiny
    Llama (widths that groups of 64 divide) and a few items of each offline copy: a card, a model card,
    and the saved folder scoring what the card says."""
    quick = (ROOT / "README.md").read_text(encoding="utf-8").split("## LLM quickstart")[1]
    commands = [argv for argv in shell_commands(quick.split("\n## ")[0]) if argv[0] == "forgetless"]
    assert [argv[1] for argv in commands] == ["compress", "evaluate"]
    torch.manual_seed(0)
    llama = tmp_path / "llama"
    transformers.LlamaForCausalLM(tiny_llama_config(minilm_tokenizer.vocab_size, hidden_size=64,
                                                    intermediate_size=128, num_hidden_layers=2)).save_pretrained(llama)
    minilm_tokenizer.save_pretrained(llama)
    stand_in = {"smollm2": str(llama), "../shared/data": str(write_llm_data(tmp_path / "data"))}
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        assert main([stand_in.get(a, a) for a in argv[1:]]) == 0
    card = json.loads((tmp_path / "runs/quick-gptq/report.json").read_text())
    assert len(card["llm"]["tasks"]) == 6 and card["params"]["stored"]["quantized"]["layers"] == 14
    assert (tmp_path / "runs/quick-gptq/model/README.md").is_file() and (tmp_path / "runs/quick-gptq/report.html").is_file()
    printed = capsys.readouterr().out
    for name, entry in card["sets"].items():
        if "accuracy" in entry["compressed"]:
            assert f"{name}: {entry['compressed']['metric']} {100 * entry['compressed']['accuracy']:.2f}%" in printed
    page = DOCS[0].read_text(encoding="utf-8")  # the docs page: the same commands, then its Python block
    assert [argv for argv in shell_commands(page) if argv[0] == "forgetless"] == commands
    (code,) = [body for info, body in fenced(page) if info == "python"]
    for name, value in stand_in.items():
        code = code.replace(f'"{name}"', repr(value))
    scope: dict = {}
    exec(compile(code, str(DOCS[0]), "exec"), scope)  # noqa: S102 - the page's own example
    assert scope["compared"]["llm"]["tasks"] == json.loads(json.dumps(card["llm"]["tasks"]))
