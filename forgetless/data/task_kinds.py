"""Task kinds, the extension point beside the model kinds (``kinds/``): what a task's sets hold, which
model kind and methods a run on it uses, what a run on it may do (its checks), how two models' results on
it compare (its card section) and how its per-example rows read. Built in: ``classification`` (labelled
texts; challenge sets, F_bias, hard / easy), ``generation`` (source → references), and ``lm-eval`` (an LLM
suite: lm-evaluation-harness tasks scored on a causal LM as it is, ``llm/``).

A kind's behaviour beyond these facts is its *hooks*: the kind names the hooks it has, and the layer that
implements them registers them when it is imported (``TaskKind.register``), so this table imports nothing of
the layers above it (``validate`` asks the kind, not ``llm``):

* ``check_run(task, config)``: what a run on the task may not do, one ``ConfigError`` before any work
  (the ``lm-eval`` kind's: ``data/llm_tasks.py``);
* ``compare(task, results, predictions, seed)``: the kind's own card section (``card["llm"]``);
* ``prediction_rows(predictions)``: the kind's rows of ``predictions.jsonl``;
* ``warnings(task, predictions)``: the kind's own card warnings, instead of the classification ones
  (the last three: ``report/honest.py``).

A new kind: one ``TaskKind(...)`` in ``TASK_KINDS`` and its hooks registered.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import DataError

HOOKS = ("check_run", "compare", "prediction_rows", "warnings")


@dataclass(frozen=True)
class TaskKind:
    """One kind of task. ``labelled``: its sets hold labels (accuracy, challenge sets, F_bias, hard / easy);
    ``pairs``: its sets are source → references pairs (``PairSet``), else labelled or plain texts
    (``ExampleSet``); ``methods_see``: the kind of data a method's ``task_types`` must name to run on it;
    ``model_kind``: the model kind its runs use (None: chosen by the method and ``--model-kind``);
    ``calibration_only``: its training split is calibration text, scored as language modelling and
    never trained on; ``suite``: its items are an evaluation suite (``task.suite``), with no dev set;
    ``hooks``: the names of the hooks it has (``HOOKS``), their functions given by ``register``."""
    name: str
    labelled: bool
    pairs: bool
    methods_see: str
    model_kind: str | None = None
    calibration_only: bool = False
    suite: bool = False
    hooks: tuple[str, ...] = ()
    registered: dict = field(default_factory=dict, compare=False, repr=False)

    def register(self, **functions) -> None:
        """Give the kind the functions of its hooks (by name); the layer implementing them calls this when it
        is imported."""
        unknown = sorted(set(functions) - set(self.hooks))
        if unknown:
            raise ValueError(f"task kind {self.name}: has no hook {unknown[0]!r} (its hooks: "
                             f"{', '.join(self.hooks) or 'none'})")
        self.registered.update(functions)

    def hook(self, name: str):
        """The function of hook ``name``, or None when the kind has none; a hook the kind has but nothing
        registered is an error (the layer implementing it was not imported), never silently skipped."""
        if name not in self.hooks:
            return None
        if name not in self.registered:
            raise RuntimeError(f"task kind {self.name}: its {name!r} hook is not registered (the module "
                               "implementing it registers it when imported)")
        return self.registered[name]

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
             calibration_only=True, suite=True, hooks=HOOKS),
)}


def task_kind(task) -> TaskKind:
    """The kind of ``task`` (a ``Task``, or a kind's name)."""
    name = task if isinstance(task, str) else task.kind
    if name not in TASK_KINDS:
        raise DataError(f"task kind must be one of {', '.join(TASK_KINDS)}, got {name!r}")
    return TASK_KINDS[name]
