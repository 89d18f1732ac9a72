"""`forgetless --help` and `forgetless list` stay fast: building the parser, the config tree and
every registered method / objective config imports neither torch nor transformers (the configs are
the schema; implementations load when a run builds them), and `forgetless evaluate` imports no Trainer."""
import json
import os
import subprocess
import sys

HEAVY = ("transformers.trainer", "transformers", "nltk", "torch", "datasets", "numpy")


def _imported(code: str) -> list[str]:
    code = f"import sys, json; {code}; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_building_the_parser_and_every_config_imports_no_heavy_module():
    assert _imported("from forgetless.cli import build_parser; build_parser()") == []
    assert _imported("from forgetless.registry import METHODS, OBJECTIVES; "
                     "[r.config_class(n) for r in (METHODS, OBJECTIVES) for n in r.names()]") == []
    assert _imported("from forgetless.cli.parser import build_parser, config_from_args; "
                     "config_from_args(build_parser().parse_args(['compress', '--method', 'heads', '--ratio', '0.3']))") == []


def test_each_method_config_module_imports_no_torch():
    from forgetless.registry import METHODS, OBJECTIVES

    modules = sorted({r.config_class(n).__module__ for r in (METHODS, OBJECTIVES) for n in r.names()})
    assert all(m.endswith(".config") for m in modules), modules
    for module in modules:
        assert _imported(f"import {module}") == [], module


def test_list_imports_no_torch_and_names_every_adapter_family():
    from forgetless.models.adapters import _ADAPTERS
    from forgetless.config import MODEL_TYPES

    assert [m for m in _imported("from forgetless.cli import main; main(['list'])") if m != "numpy"] == []
    assert sorted(MODEL_TYPES) == sorted(_ADAPTERS)


def test_evaluate_imports_neither_the_trainer_nor_the_report_stack():
    """`forgetless evaluate` only needs a kind, the data and the metrics (benchmarks/evaluate_vs_plain.py)."""
    code = ("import sys, json; from forgetless.evaluate_saved import evaluate_saved; "
            "from forgetless.data.tasks import load_task; "
            "print(json.dumps([m for m in ('transformers.trainer', 'forgetless.pipeline', 'forgetless.training.trainer', "
            "'forgetless.report.card', 'matplotlib', 'nltk', 'datasets', 'scipy') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_evaluate_of_an_llm_imports_no_trainer_stack(tmp_path, minilm_tokenizer):
    """Issue 54: `forgetless evaluate` on an LLM task imported ``transformers.trainer_callback`` (through the
    CLI's progress-bar switch and the fine-tune command's module), which imports peft: ~10 s of CPU in every
    run of a command that trains nothing. A real run, in a fresh process."""
    from bad_llm_files import ROWS, _jsonl, _llama, _yaml

    folder = _llama(tmp_path / "llama", minilm_tokenizer)
    (tmp_path / "yamls").mkdir()
    _jsonl(tmp_path / "yamls" / "rows.jsonl", ROWS)
    (tmp_path / "yamls" / "t_ok.yaml").write_text(_yaml("t_ok", tmp_path / "yamls" / "rows.jsonl"))
    argv = ["evaluate", str(folder), "--task", "lm-eval", "--lm-eval-tasks", "t_ok", "--lm-eval-include",
            str(tmp_path / "yamls")]
    heavy = ("peft", "transformers.trainer_callback", "transformers.trainer", "forgetless.training.trainer",
             "forgetless.pipeline")
    code = (f"import os, sys, json; from forgetless.cli import main; code = main({argv!r}); "
            f"print(json.dumps([code, [m for m in {heavy!r} if m in sys.modules], os.environ['OMP_WAIT_POLICY']]))")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["FORGETLESS_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    # torch's OpenMP threads told not to spin (set before torch loads): under load they doubled the CPU time
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, [], "PASSIVE"], done.stderr[-2000:]
