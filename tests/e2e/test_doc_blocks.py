"""Every Python and shell block of README.md and docs/*.md runs (issue 41; the README's Python blocks
since issue 33), on tiny stand-ins for the models and data the blocks name (``doc_blocks.py`` reads them).

* **Python blocks** run as written in one fresh process, each page in its own folder and namespace, with
  the model names swapped for tiny local folders and a small data folder (WikiText-2, SST-2, AdvGLUE);
  the "Adding a method" block is saved as ``my_module.py``, loaded as a plugin and applied.
* **forgetless commands** run through the real command line (``forgetless.cli.main``) up to its first
  write: every check a command makes before it claims its output folder (or loads a model to time or
  evaluate) runs, then the work is stopped (``Validated``). Paths the commands read (``runs/heads``,
  ``runs/t7/.../recipe.yaml``) are copies of one finished tiny run; ``--model smollm2`` is a small Llama
  with SmolLM2's group-size constraint (width 192: 64 divides it, 128 does not); ``../shared/data`` and
  ``DATA`` are the offline data folder. The quickstart commands (``REAL``) and the commands that load no
  model (``list``, ``recipes``, ``report``, ``compare``, ``--check``, ``--help``) run for real.
* Blocks marked ``<!-- not run: REASON -->`` are listed in ``NOT_RUN``; their forgetless commands are
  parsed by the command line (options, ranges, config), and a benchmark command's flags must be the
  script's own (or, passed on, forgetless's).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import forgetless.cli as cli
from doc_blocks import (NEVER_RUN, ROOT, SHELL, SIMPLE_SHELL, all_blocks, benchmark_script, commands,
                        forgetless_argv, page_folder, save_folder, shared_data, sst2_data, tiny_models, words)

NOT_RUN = sorted([
    "README.md: installs packages", "README.md: installs packages", "README.md: it is the test suite",
    "README.md: needs the Hugging Face hub (lm-eval's own tasks read their data there)",
    "docs/benchmarks.md: a benchmark of hours on SmolLM2", "docs/benchmarks.md: a benchmark of hours on SmolLM2",
    "docs/errors.md: a benchmark of kill -9 on real runs (minutes to hours)",
    "docs/errors.md: a refusal (exit code 2), shown with the reader's own task folder",
    "docs/getting-started.md: installs packages", "docs/getting-started.md: it is the test suite",
    "docs/getting-started.md: needs the Hugging Face hub",
    "docs/llm-evaluation.md: a benchmark of hours on SmolLM2", "docs/llm-quickstart.md: installs packages",
    "docs/llm-evaluation.md: SmolLM2 answers 200 prompts: tens of minutes on two shared cores",
    "docs/llm-tasks.md: installs packages", "docs/llm-tasks.md: needs the Hugging Face hub",
    "docs/llm-tasks.md: lm-eval's own command line, an outline (its model arguments are yours)",
    "docs/llm-tasks.md: SmolLM2 answers the suite: minutes on two cores",
    "docs/models.md: installs packages", "docs/offline-models.md: installs packages",
    "docs/quantization-schemes.md: reads the folder the command above writes (minutes on SmolLM2)",
    "docs/recipes.md: the paper scale needs a GPU and the Hugging Face hub",
    "docs/shipping.md: a 3 GB install of its own environment",
    "docs/shipping.md: needs the Hugging Face hub and a token",
    "docs/shipping.md: needs vLLM (the install below) and a minute or more to start it",
    "docs/shipping.md: reads the folder the command above writes (minutes on SmolLM2)",
    "docs/training.md: several processes (and GPUs) through accelerate launch"])
QUICK = ["--model", "tiny-bert", "--layers", "1", "--train-size", "64", "--eval-size", "32", "--epochs", "1",
         "--speed", "none", "--no-progress"]
QUICK_LLM_TASKS = "arc_easy_offline,arc_challenge_offline,hellaswag_offline,piqa_offline,winogrande_offline,openbookqa_offline"
REAL = {  # quickstart commands run for real: the command as written -> the options given to its stand-in run
    "demo": QUICK,
    "compress --model smollm2 --base as-is --method sparsegpt --sparsity 0.5 --recovery none --task llm-zero-shot "
    "--data-dir ../shared/data --eval-size 500 --out runs/sgpt50":
        ["--data-dir", "{llm_data}", "--eval-size", "3", "--calibration-examples", "4", "--no-progress"],
    # docs/llm-quickstart.md: its 20 items are every item of the stand-in data
    "compress --model smollm2 --base as-is --method gptq --bits 4 --group-size 64 --task lm-eval --lm-eval-tasks "
    f"{QUICK_LLM_TASKS} --data-dir ../shared/data --eval-size 20 --eval-batch-size 16 --out runs/quick-gptq":
        ["--data-dir", "{llm_data}", "--calibration-examples", "4", "--no-progress"],
    "evaluate runs/quick-gptq/model --task lm-eval --data-dir ../shared/data --eval-size 20 --eval-batch-size 16 "
    f"--lm-eval-tasks {QUICK_LLM_TASKS}": ["--data-dir", "{llm_data}"]}
WORK = ("compress", "compress-seq2seq", "demo", "finetune", "sweep", "profile", "evaluate", "bench", "export", "run")
STAND_INS = {  # the text of a Python block -> the stand-in it becomes (replaced in this order)
    '"HuggingFaceTB/SmolLM2-135M-Instruct"': "llama", '"my-bert"': "bert", '"path/to/llama-folder"': "llama",
    '"path/to/phi-3-or-gemma-3"': "smollm2", '"m"': "llama", 'offline_folder("smollm2")': "smollm2",
    '"smollm2"': "smollm2", '"../shared/data"': "llm_data", '"runs/quick-gptq/model"': "quick_gptq"}
CHECKS = {  # after a page's Python blocks ran: what they must have done
    "docs/adding-a-quantization-format.md": "assert (fmt.strategy, fmt.ct_format, fmt.label) == ('group', "
                                            "'pack-quantized', 'int4') and SCHEMES['FP8-DYNAMIC'].algorithm == 'rtn'",
    "docs/any-architecture.md": "assert sum(int((w == 0).sum()) for w in pruned.parameters()) > 0 and "
                                "Path('phi3-gptq', 'config.json').is_file() and reloaded.config.model_type == 'llama'",
    "README.md": "assert sum(int((w == 0).sum()) for w in pruned.parameters()) > 0 and "
                 "set(compared.llm.tasks) == {'arc_easy_offline', 'piqa_offline'} and "
                 "str(compared).splitlines()[-1].endswith('compared.to_dict()')",
    "docs/errors.md": "assert not Path('pruned').exists()  # every call refused before any write",
    "docs/llm-quickstart.md": "import json\nassert compared.llm.tasks == json.loads(Path("
                              "\"runs/quick-gptq/model\").parent.joinpath('report.json').read_text())['llm']['tasks']",
    "docs/python-api.md": "assert run.card.params.ratio < 1 and (Path('bert-heads-50') / 'model' / 'README.md')"
                          ".is_file()\nassert sum(int((w == 0).sum()) for w in pruned.parameters()) > 0 and "
                          "compared.llm.tasks and compared.language_model.base['perplexity'] > 1\n"
                          "assert not any(w.startswith('calibration') for w in compared.warnings)",
    "docs/scaling.md": "assert sum(int((p == 0).sum()) for p in model.parameters()) > 0 and tokenizer is not None",
    "docs/shipping.md": "assert type(model).__name__ == 'BertForSequenceClassification'",
    "docs/report-card.md": "assert card.schema == 'forgetless-report-2' and card.to_json()['kind'] == {'task': "
                           "card.kind.task, 'model': card.kind.model}"}


class Validated(Exception):
    """Raised where a command would make its first write (or load a model to do work): all checks passed."""


def _stop(*args, **kwargs):
    raise Validated


# ----- stand-ins ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory, minilm_tokenizer):
    """Tiny model folders, a small data folder, the LLM test data and one finished tiny run."""
    from forgetless.cli import main
    from llm_data import write_llm_data

    root = tmp_path_factory.mktemp("doc-stand-ins")
    folders = {name: str(save_folder(model, root / name, minilm_tokenizer))
               for name, model in tiny_models(minilm_tokenizer)}
    folders["data"] = str(sst2_data(root / "data"))
    folders["llm_data"] = str(write_llm_data(root / "llm-data"))
    folders["run"] = str(root / "run")
    assert main(["demo", *QUICK, "--out", folders["run"]]) == 0
    return folders


# ----- Python blocks -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quick_gptq(stand_ins, tmp_path_factory):
    """The LLM quickstart's compressed model (docs/llm-quickstart.md, command 2 on the stand-ins), for its
    Python block: its card's numbers are what ``forgetless.evaluate`` must give back."""
    from forgetless.cli import main

    out = tmp_path_factory.mktemp("quick") / "quick-gptq"
    argv = ["compress", "--model", stand_ins["smollm2"], "--base", "as-is", "--method", "gptq", "--bits", "4",
            "--group-size", "64", "--task", "lm-eval", "--lm-eval-tasks", QUICK_LLM_TASKS, "--data-dir",
            stand_ins["llm_data"], "--eval-size", "20", "--eval-batch-size", "16", "--calibration-examples", "4",
            "--threads", "1",  # as the Python blocks' process (OMP_NUM_THREADS=1): its evaluation is this one's
            "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    return str(out / "model")


def test_the_python_blocks_run_as_written(tmp_path, stand_ins, quick_gptq):
    by_page: dict[str, list[str]] = {}
    for block in all_blocks():
        if block.lang == "python" and block.not_run is None and "@METHODS.register" not in block.text:
            by_page.setdefault(block.page, [])
            if not any(block.text in texts for texts in by_page.values()):  # the README's block is a page's too
                by_page[block.page].append(block.text)
    assert set(by_page) == set(CHECKS), "a page with Python blocks needs its CHECKS entry"
    script = ["import os, sys", "from pathlib import Path"]
    for page, texts in by_page.items():
        code = "\n".join(texts) + "\n" + CHECKS[page] + f"\nprint('ran', {page!r})\n"
        for text, folder in STAND_INS.items():
            code = code.replace(text, repr({**stand_ins, "quick_gptq": quick_gptq}[folder]))
        folder = page_folder(tmp_path, page, stand_ins["run"])
        script.append(f"os.chdir({str(folder)!r})\nexec(compile({code!r}, {page!r}, 'exec'), "
                      "{'__name__': '__main__', 'Path': Path})")
    done = subprocess.run([sys.executable, "-c", "\n".join(script)], capture_output=True, text=True, timeout=600,
                          env=_env(tmp_path, FORGETLESS_DATA_DIR=stand_ins["data"]))
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("ran ")] == [f"ran {p}" for p in by_page]


def test_the_adding_a_method_block_is_a_working_plugin(tmp_path):
    plugin = next(block.text for block in all_blocks() if "@METHODS.register" in block.text)
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


def _env(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "FORGETLESS_PLUGINS"}
    env.update({"PYTHONPATH": os.pathsep.join([str(ROOT), *extra.pop("path", [])]), "HF_HUB_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "hf-datasets"),
                "FORGETLESS_CACHE": str(tmp_path / "cache"), "TOKENIZERS_PARALLELISM": "false", "MPLBACKEND": "Agg",
                "OMP_NUM_THREADS": "1"})
    env.update(extra)
    return env


# ----- shell blocks --------------------------------------------------------------------------------------
@pytest.fixture
def validate_only(monkeypatch, stand_ins):
    """``--model smollm2`` (and ``gemma3-270m``) is the stand-in; inside the context it returns, the command line stops where a
    command would write or do its work."""
    import forgetless.cli.jobs
    import forgetless.cli.models
    import forgetless.evaluate_saved
    import forgetless.export
    import forgetless.models.loading
    import forgetless.pipeline
    import forgetless.sweep.runner

    monkeypatch.setattr(forgetless.models.loading, "offline_folder", lambda name: stand_ins["smollm2"])
    monkeypatch.delenv("FORGETLESS_DATA_DIR", raising=False)

    @contextlib.contextmanager
    def stopping():
        with monkeypatch.context() as patch:
            for module in (forgetless.pipeline, forgetless.cli.jobs, forgetless.cli.models, forgetless.sweep.runner):
                patch.setattr(module, "claim_output", _stop)
            patch.setattr(forgetless.evaluate_saved, "evaluate_model", _stop)
            patch.setattr(forgetless.cli.models, "compare_speed", _stop)
            patch.setattr(forgetless.export, "load_model", _stop)
            yield

    return stopping


def _shell_pages() -> list[str]:
    """The pages with a shell command or a file block (the test below runs each page on its own: one page's
    commands are ~1/20 of the suite's longest test, so two workers share them)."""
    return sorted({block.page for block in all_blocks() if block.file or block.lang in SHELL})


@pytest.mark.timeout(900)  # the quickstart pages run for real: passed at load 4-5, past 300 s at load 7 (2 cores)
@pytest.mark.parametrize("page", _shell_pages())
def test_every_shell_command_runs_or_is_validated(page, tmp_path, stand_ins, validate_only, capsys):
    if shared_data() is None:
        pytest.skip("shared/data (the offline data folder) is not beside the repository")
    failures, cwd = [], os.getcwd()
    try:
        work = page_folder(tmp_path, page, stand_ins["run"])
        os.chdir(work)
        for block in _by_page(all_blocks())[page]:
            if block.file:  # a recipe, a task YAML, data: written before the page's commands run
                (work / block.file).parent.mkdir(parents=True, exist_ok=True)
                (work / block.file).write_text(block.text, encoding="utf-8")
            for command in commands(block.text) if block.lang in SHELL else []:
                problem = _one_command(command, block, stand_ins, validate_only, capsys)
                if problem:
                    failures.append(f"{block.where}: {command}\n    {problem}")
    finally:
        os.chdir(cwd)
    assert not failures, "\n".join(failures)
    if page == "README.md":  # its quickstarts ran for real
        readme = tmp_path / "README.md" / "work"
        assert json.loads((readme / "forgetless-out/demo/report.json").read_text())["kind"]["task"] == "classification"
        assert json.loads((readme / "runs/sgpt50/report.json").read_text())["kind"] == {"task": "lm-eval",
                                                                                       "model": "causal-lm"}
    if page == "docs/llm-quickstart.md":  # its three commands, the last two run
        quick = tmp_path / "docs-llm-quickstart.md" / "work" / "runs/quick-gptq"
        assert len(json.loads((quick / "report.json").read_text())["llm"]["tasks"]) == 6
        assert (quick / "model/README.md").is_file() and (quick / "report.html").is_file()


def test_the_pages_show_the_main_commands():
    """What the command test runs, page by page, includes a demo, a compress, a recipe run and a report."""
    seen = {" ".join(words(command)[:2]) for block in all_blocks() if block.lang in SHELL
            for command in commands(block.text)}
    assert {"forgetless demo", "forgetless compress", "forgetless run", "forgetless report"} <= seen
    assert {"README.md", "docs/llm-quickstart.md"} <= set(_shell_pages())


def _by_page(found) -> dict:
    """Blocks per page; file blocks are written first, into the page's folder, when the page starts."""
    pages: dict = {}
    for block in found:
        pages.setdefault(block.page, []).append(block)
    for page_blocks in pages.values():
        page_blocks.sort(key=lambda b: b.file is None)
    return pages


def _one_command(command: str, block, stand_ins, stopping, capsys) -> str | None:
    """Run / validate / parse one command; a one-line problem, or None."""
    argv, program = forgetless_argv(command), words(command)[0]
    if argv is not None:
        return _forgetless(argv, block, stand_ins, stopping, capsys)
    script = benchmark_script(command)
    if script is not None:
        return _benchmark_flags(*script)
    if program in SIMPLE_SHELL and not block.not_run:
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60)
        return None if done.returncode == 0 else done.stderr[-500:]
    if block.not_run and (program in NEVER_RUN or words(command)[:3] in (["python3", "-m", "pytest"],
                                                                          ["python3", "-m", "venv"])):
        return None
    return f"{program}: a command these tests cannot run; mark its block <!-- not run: REASON -->"


def _forgetless(argv: list[str], block, stand_ins, stopping, capsys) -> str | None:
    argv = [str(shared_data()) if word == "DATA" else word for word in argv]
    if block.not_run:  # the command line's own checks, before it imports torch
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(cli, "_run", lambda args, config: 0)
            return _result(cli.main, argv, capsys, expect_work=False)
    real = REAL.get(" ".join(argv))
    if real is not None:
        return _result(cli.main, _with_options(argv, [o.format(**stand_ins) for o in real]), capsys, False)
    if "--help" not in argv:
        _stand_in_inputs(argv, stand_ins["run"])
    with stopping():
        return _result(cli.main, argv, capsys, expect_work=argv[0] in WORK and not {"--check", "--help"} & set(argv))


def _result(main, argv, capsys, expect_work: bool) -> str | None:
    try:
        code = main(argv)
    except Validated:
        capsys.readouterr()
        return None
    except SystemExit as exc:  # --help
        code = exc.code
    err = capsys.readouterr().err
    if code != 0:
        return f"exit code {code}: {err.strip().splitlines()[-1] if err.strip() else ''}"
    return "ran to the end instead of stopping before its work" if expect_work else None


def _with_options(argv: list[str], options: list[str]) -> list[str]:
    """``argv`` with each ``--flag value`` of ``options`` replaced (or added)."""
    argv = list(argv)
    for flag, value in zip(options[::2], options[1::2]):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    return argv


def _stand_in_inputs(argv: list[str], run: str) -> None:
    """Folders the command reads (a model, a run, a saved recipe) that no earlier command wrote: copies of
    the finished tiny run."""
    args = cli.build_parser(cli.help_choices(argv)).parse_args(argv)
    paths = [getattr(args, name, None) for name in ("model_path", "run", "recipe")] + list(getattr(args, "runs", []) or [])
    for given in (Path(p) for p in paths if p and "/" in str(p) and not Path(p).exists()):
        if given.name == "recipe.yaml":
            given = given.parent.parent
        elif given.name == "model":
            given = given.parent
        shutil.copytree(run, given)


def _benchmark_flags(script: Path, flags: list[str]) -> str | None:
    """A benchmark command names an existing script and flags it defines (or, passed on, forgetless's)."""
    if not script.is_file():
        return f"{script.relative_to(ROOT)} does not exist"
    source = script.read_text(encoding="utf-8")
    known = set(cli.build_parser()._subparsers._group_actions[0].choices["compress"]._option_string_actions)
    unknown = [f for f in flags if f'"{f}"' not in source and f"'{f}'" not in source and f not in known]
    return f"flags not defined by {script.name}: {unknown}" if unknown else None


# ----- every block is accounted for ------------------------------------------------------------------------
def test_every_block_is_run_or_marked_not_run_with_a_reason():
    found = all_blocks()
    assert sorted(f"{b.page}: {b.not_run}" for b in found if b.not_run) == NOT_RUN
    for block in found:
        assert block.lang in ("python", "bash", "text", "yaml", "json"), f"{block.where}: fence language {block.lang!r}"
        if block.lang == "text":  # output and layouts: never a command hidden from these tests
            assert not any(line.startswith(("forgetless ", "$ ", "python")) for line in block.text.splitlines()), \
                block.where
        if block.lang == "yaml":
            yaml.safe_load(block.text)
        if block.lang == "json":
            for line in block.text.splitlines():
                json.loads(line)
        if block.file:
            assert block.lang in ("yaml", "json", "text"), f"{block.where}: a file block holds data"
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def test_pip_installs_name_this_clones_extras():
    """``pip install`` in the pages installs forgetless from the clone (it is not on PyPI: ``-e ".[x]"``)
    with extras ``pyproject.toml`` defines (issue 42: ``pip install "forgetless[llm]"`` did not install)."""
    section = re.search(r"\[project.optional-dependencies\](.*?)\n\[", (ROOT / "pyproject.toml").read_text(), re.DOTALL)
    extras = set(re.findall(r"^(\w+) =", section.group(1), re.MULTILINE))
    seen = 0
    for block in all_blocks():
        for command in commands(block.text) if block.lang in SHELL else []:
            for part in command.split("&&"):
                argv = words(part)
                if argv[:2] != ["pip", "install"]:
                    continue
                seen += 1
                for spec in argv[2:]:
                    assert not spec.startswith("forgetless"), f"{block.where}: {part.strip()}: forgetless is not on PyPI"
                    if spec.startswith(".["):
                        assert set(spec[2:-1].split(",")) <= extras, f"{block.where}: {part.strip()}"
    assert seen >= 3
