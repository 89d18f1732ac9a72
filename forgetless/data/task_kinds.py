"""Task kinds, the extension point beside the model kinds (``kinds/``): what a task's sets hold, which
model kind and methods a run on it uses, what a run on it may do (its checks), how two models' results on
it compare (its card section) and how its per-example rows read. Built in: ``classification`` (labelled
texts; challenge sets, F_bias, hard / easy), ``generation`` (source → references), and ``lm-eval`` (an LLM
suite: lm-evaluation-harness tasks scored on a causal LM as it is, ``llm/``).

A kind's behaviour beyond these facts is named as ``"module:function"`` hooks, imported when first called,
so this table imports nothing of the layers that implement them (``validate`` asks the kind, not ``llm``):

* ``check_run(task, config)``: what a run on the task may not do, one ``ConfigError`` before any work;
* ``compare(task, results, predictions, seed)``: the kind's own card section (``card["llm"]``);
* ``prediction_rows(predictions)``: the kind's rows of ``predictions.jsonl``;
* ``warnings(task, predictions)``: the kind's own card warnings, instead of the classification ones.

A new kind: one ``TaskKind(...)`` in ``TASK_KINDS`` and its hooks.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ..errors import DataError


@dataclass(frozen=True)
class TaskKind:
    """One kind of task. ``labelled``: its sets hold labels (accuracy, challenge sets, F_bias, hard / easy);
    ``pairs``: its sets are source → references pairs (``PairSet``), else labelled or plain texts
    (``ExampleSet``); ``methods_see``: the kind of data a method's ``task_types`` must name to run on it;
    ``model_kind``: the model kind its runs use (None: chosen by the method and ``--model-kind``);
    ``calibration_only``: its training split is calibration text, scored as language modelling and
    never trained on; ``suite``: its items are an evaluation suite (``task.suite``), with no dev set."""
    name: str
    labelled: bool
    pairs: bool
    methods_see: str
    model_kind: str | None = None
    calibration_only: bool = False
    suite: bool = False
    hooks: dict[str, str] = field(default_factory=dict)

    def hook(self, name: str):
        """The function of hook ``name``, or None when the kind has none."""
        target = self.hooks.get(name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def check_run(self, task, config) -> None:
        check = self.hook("check_run")
        if check is not None:
            check(task, config)

    def compare(self, task, results: dict, predictions: dict | None, seed: int) -> dict | None:
        compare = self.hook("compare")
        return None if compare is None else compare(task, results, predictions, seed)


TASK_KINDS = {kind.name: kind for kind in (
    TaskKind("classification", labelled=True, pairs=False, methods_see="classification"),
    TaskKind("generation", labelled=False, pairs=True, methods_see="generation", model_kind="seq2seq"),
    TaskKind("lm-eval", labelled=False, pairs=False, methods_see="classification", model_kind="causal-lm",
             calibration_only=True, suite=True,
             hooks={"check_run": "forgetless.llm.suite:check_run",
                    "compare": "forgetless.report.llm_section:llm_section",
                    "prediction_rows": "forgetless.report.honest:llm_rows",
                    "warnings": "forgetless.report.llm_section:near_chance_warnings"}),
)}


def task_kind(task) -> TaskKind:
    """The kind of ``task`` (a ``Task``, or a kind's name)."""
    name = task if isinstance(task, str) else task.kind
    if name not in TASK_KINDS:
        raise DataError(f"task kind must be one of {', '.join(TASK_KINDS)}, got {name!r}")
    return TASK_KINDS[name]
