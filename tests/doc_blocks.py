"""The fenced blocks of README.md and docs/*.md, and what tests/test_doc_blocks.py needs to run them.

A block is read with the HTML comment on the line just before it, if any:

* ``<!-- not run: REASON -->``: the block cannot run here (it installs packages, needs the Hugging Face
  hub, a GPU, several processes, or hours); its ``forgetless`` commands are still parsed by the CLI;
* ``<!-- file: PATH -->``: the block is a file (a recipe, a task YAML, data) written to PATH in the page's
  folder before the page's commands run.

Shell blocks are cut into commands: continuation lines joined, comments and blank lines dropped."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!-- (not run|file): (.+?) -->$")
SHELL = ("bash", "sh", "console", "shell")
SIMPLE_SHELL = ("printf", "cp", "mkdir", "echo", "cat")     # run as they are, with bash, in the page's folder
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
