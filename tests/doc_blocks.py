"""The fenced blocks of README.md and docs/*.md, and the stand-ins tests/e2e/test_doc_blocks.py runs them on
(tiny model folders, a small data folder, one folder per page).

A block is read with the HTML comment on the line just before it, if any:

* ``<!-- not run: REASON -->``: the block cannot run here (it installs packages, needs the Hugging Face
  hub, a GPU, several processes, or hours); its ``forgetless`` commands are still parsed by the CLI;
* ``<!-- file: PATH -->``: the block is a file (a recipe, a task YAML, data) written to PATH in the page's
  folder before the page's commands run.

Shell blocks are cut into commands: continuation lines joined, comments and blank lines dropped."""
from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
import transformers

from forgetless.models.tiny import tiny_llama_config

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!-- (not run|file): (.+?) -->$")
SHELL = ("bash", "sh", "console", "shell")
SIMPLE_SHELL = ("printf", "cp", "mkdir", "echo", "cat")     # run as they are, with bash, in the page's folder
SENTENCES = [("a charming and affecting journey", 1), ("bleak and desperate", 0), ("a great fun film", 1),
             ("dull and tedious", 0), ("wonderful acting", 1), ("an awful mess", 0)]
NEVER_RUN = ("pip", "apt-get", "lm_eval", "accelerate")     # allowed only in blocks marked "not run"


@dataclass(frozen=True)
class Block:
    page: str           # path relative to the repository root
    line: int           # line of the opening fence (1-based)
    lang: str
    text: str
    not_run: str | None = None
    file: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of docs/ (the benchmark results files are not pages of their own)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        mark = MARK.match(lines[i - 1].strip()) if i > 0 else None
        kind, value = mark.groups() if mark else (None, None)
        found.append(Block(str(path.relative_to(ROOT)), i + 1, fence.group(1), "\n".join(lines[i + 1:end]) + "\n",
                           not_run=value if kind == "not run" else None, file=value if kind == "file" else None))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks(path)]


def commands(text: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.split("\n") if line.strip() and not line.strip().startswith("#")]


def words(command: str) -> list[str]:
    """A command's words without its trailing comment."""
    return shlex.split(command, comments=True)


def forgetless_argv(command: str) -> list[str] | None:
    """The arguments of the ``forgetless`` command in ``command`` (also inside ``accelerate launch ... -m
    forgetless.cli``), or None."""
    argv = words(command)
    if argv[:1] == ["forgetless"]:
        return argv[1:]
    if "forgetless.cli" in argv and argv[argv.index("forgetless.cli") - 1] == "-m":
        return argv[argv.index("forgetless.cli") + 1:]
    return None


def benchmark_script(command: str) -> tuple[Path, list[str]] | None:
    """``python benchmarks/X.py --flag …``: the script and the flags the command gives it."""
    argv = words(command)
    if len(argv) < 2 or argv[0] not in ("python", "python3") or not argv[1].startswith("benchmarks/"):
        return None
    return ROOT / argv[1], [word.split("=")[0] for word in argv[2:] if word.startswith("--")]


def shared_data() -> Path | None:
    """The offline data folder: ``shared/data`` beside the clone (CI) or beside the worktrees' folder."""
    for candidate in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data"):
        if candidate.is_dir():
            return candidate.resolve()
    return None


# ----- stand-ins for the models, data and folders the blocks name ------------------------------------
def tiny_models(tokenizer):
    torch.manual_seed(0)
    yield "llama", transformers.LlamaForCausalLM(tiny_llama_config(tokenizer.vocab_size))
    yield "smollm2", transformers.LlamaForCausalLM(tiny_llama_config(  # SmolLM2's widths refuse groups of 128
        tokenizer.vocab_size, hidden_size=192, intermediate_size=512, num_hidden_layers=8, num_attention_heads=6,
        num_key_value_heads=3, tie_word_embeddings=True))
    yield "bert", transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=48, max_position_embeddings=130, num_labels=2, id2label={0: "neg", 1: "pos"},
        label2id={"neg": 0, "pos": 1}))


def save_folder(model, path: Path, tokenizer) -> Path:
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def sst2_data(data: Path) -> Path:
    for path in ("llm/wikitext2", "glue/SST-2", "advglue"):
        (data / path).mkdir(parents=True)
    (data / "llm/wikitext2/wiki.test.raw").write_text("\r\n".join(f" = {s} = " for s, _ in SENTENCES * 3) + "\r\n")
    rows = "sentence\tlabel\n" + "".join(f"{s} \t{y}\n" for s, y in SENTENCES * 2)
    (data / "glue/SST-2/train.tsv").write_text(rows)
    (data / "glue/SST-2/dev.tsv").write_text(rows)
    (data / "xsum").mkdir()  # calibration text by name (calibration="xsum")
    (data / "xsum/test_1000_llm_decoding.jsonl").write_text("".join(
        json.dumps({"document": f"{s}, said the reviewer.", "summary": s, "id": str(i)}) + "\n"
        for i, (s, _) in enumerate(SENTENCES * 2)))
    (data / "advglue/dev.json").write_text(json.dumps({"sst2": [{"idx": i, "sentence": s, "label": y}
                                                                for i, (s, y) in enumerate(SENTENCES)]}))
    return data


def page_folder(tmp_path: Path, page: str, run: str) -> Path:
    """A folder for one page: ``../shared/data`` beside it, the CSV files and ``runs/heads`` of the examples."""
    base = tmp_path / page.replace("/", "-")
    work = base / "work"
    work.mkdir(parents=True)
    data = shared_data()
    if data is not None:
        (base / "shared").mkdir()
        (base / "shared" / "data").symlink_to(data)
    for name in ("train", "dev", "hard"):
        (work / f"{name}.csv").write_text("sentence,label\n" + "".join(f"{s},{['neg', 'pos'][y]}\n"
                                                                      for s, y in SENTENCES))
    shutil.copytree(run, work / "runs" / "heads")
    return work
