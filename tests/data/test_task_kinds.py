"""Task kinds as an extension point (``data/task_kinds.py``): each kind's facts and hooks (registered by the
layer implementing them), a new kind added without touching the code that asks, and no code outside the kinds
asking for ``"lm-eval"`` by name."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from forgetless.data.llm_tasks import check_run
from forgetless.data.task_kinds import TASK_KINDS, TaskKind, task_kind
from forgetless.errors import ConfigError, DataError
from forgetless.kinds import check_compatible, kind_for
from forgetless.registry import METHODS, OBJECTIVES
from forgetless.report.honest import llm_rows  # importing it registers the lm-eval kind's report hooks
from forgetless.report.llm_section import llm_section, near_chance_warnings

PACKAGE = Path(__file__).resolve().parents[2] / "forgetless"


class _Task:
    """What the kinds read of a task: its kind and name."""
    def __init__(self, kind: str):
        self.kind, self.name = kind, f"a {kind} task"


def refuse_everything(task, config):
    raise ConfigError(f"task {task.name}: refused by its kind")


def test_each_built_in_kind_says_what_its_runs_use():
    llm = task_kind("lm-eval")
    assert (llm.model_kind, llm.suite, llm.calibration_only, llm.labelled) == ("causal-lm", True, True, False)
    assert kind_for(_Task("lm-eval")).name == "causal-lm" and kind_for(_Task("generation")).name == "seq2seq"
    assert kind_for(_Task("classification")).name == "classifier"
    assert {name: llm.hook(name) for name in llm.hooks} == {
        "check_run": check_run, "compare": llm_section, "prediction_rows": llm_rows, "warnings": near_chance_warnings}
    assert task_kind("classification").hook("compare") is None
    assert task_kind("classification").compare(_Task("classification"), {}, None, 0) is None
    with pytest.raises(DataError, match="task kind must be one of classification, generation, lm-eval, got 'tables'"):
        task_kind("tables")


def test_a_new_kind_is_one_entry_and_its_hooks(monkeypatch):
    monkeypatch.setitem(TASK_KINDS, "summaries", TaskKind(
        "summaries", labelled=False, pairs=True, methods_see="generation", model_kind="seq2seq",
        hooks=("check_run", "compare")))
    task = _Task("summaries")
    with pytest.raises(RuntimeError, match="task kind summaries: its 'check_run' hook is not registered"):
        task_kind(task).check_run(task, None)  # a hook the kind has is never skipped for want of its module
    task_kind(task).register(check_run=refuse_everything)
    with pytest.raises(ValueError, match=r"summaries: has no hook 'warnings' \(its hooks: check_run, compare\)"):
        task_kind(task).register(warnings=refuse_everything)
    assert kind_for(task, METHODS.config("magnitude")).name == "seq2seq"  # the kind, not the method, picks
    check_compatible(task, METHODS.config("magnitude"), OBJECTIVES.config("ce"))
    with pytest.raises(ConfigError, match="method 'heads' does not apply to summaries tasks"):
        check_compatible(task, METHODS.config("heads"), OBJECTIVES.config("ce"))
    with pytest.raises(ConfigError, match="task a summaries task: refused by its kind"):
        task_kind(task).check_run(task, None)


def test_no_code_outside_the_task_kinds_asks_for_lm_eval_by_name():
    """A comparison with the string "lm-eval" is a task-kind branch (benchmarks/structure.py counts them): none
    in the package (offline.py's hub check asks whether ``--lm-eval-tasks`` is given, not the task's name)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
                values += [e for v in values if isinstance(v, (ast.Tuple, ast.List, ast.Set)) for e in v.elts]
                if any(isinstance(v, ast.Constant) and v.value == "lm-eval" for v in values):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
    imports = [node for node in ast.walk(ast.parse((PACKAGE / "validate.py").read_text(encoding="utf-8")))
               if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llm")]
    assert not imports, "validate asks the task kind (data/task_kinds.py), it does not import llm"
