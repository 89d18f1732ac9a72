"""The README's Python code runs as written (issue 33), on tiny models: its API blocks in a fresh
process with the two model names swapped for tiny local folders (a Llama causal LM, a BERT
classifier), a data folder holding a few lines of the files the blocks name (WikiText-2, SST-2,
AdvGLUE) and the CSV files in the current folder; its "Adding a method" block saved as
``my_module.py``, loaded as a plugin and applied."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import torch
import transformers

from forgetless.models.tiny import tiny_llama_config

ROOT = Path(__file__).resolve().parents[1]
STAND_INS = {"HuggingFaceTB/SmolLM2-135M-Instruct": "llama", "my-bert": "bert",  # name in the README → folder
             "path/to/llama-folder": "llama"}
SENTENCES = [("a charming and affecting journey", 1), ("bleak and desperate", 0), ("a great fun film", 1),
             ("dull and tedious", 0), ("wonderful acting", 1), ("an awful mess", 0)]


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)


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
    data = tmp_path / "data"
    for path in ("llm/wikitext2", "glue/SST-2", "advglue"):
        (data / path).mkdir(parents=True)
    (data / "llm/wikitext2/wiki.test.raw").write_text("\r\n".join(f" = {s} = " for s, _ in SENTENCES * 3) + "\r\n")
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
        assert f'"{name}"' in code
        code = code.replace(f'"{name}"', repr(folders[folder]))
    code += ("\nassert sum(int((w == 0).sum()) for w in pruned.parameters()) > 0 and compared['sets']['dev']['base']"
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
