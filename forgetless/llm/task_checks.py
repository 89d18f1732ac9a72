"""The lm-eval tasks forgetless can score, checked when they are loaded, before any model is: each
refusal is one error naming the task, its YAML file and what is supported (the hostile audit of
issue 43 found a ``generate_until`` task failing inside lm-eval's tokenizer, a metric forgetless does
not read failing with ``KeyError 'acc'`` after the whole evaluation, items without choices failing
after 34 minutes on SmolLM2, two YAMLs of one task name used one of them silently, and a YAML whose
``include:`` file is missing reported as "task not known").

``load_checked(names, include, data_dir, defaults)`` is how ``suite.build_suite`` loads tasks:

1. the YAML files of the include folders (read as lm-eval reads them, ``!function`` tags kept as
   names): an ``include:`` that names no file, and a requested task name that two YAMLs define
   (before lm-eval's task manager is built);
2. each requested task's YAML with its includes merged: its output type, its metrics and, for a
   generation task, its prompt (``doc_to_text``: lm-eval fails on a YAML without one with a bare ``TypeError``)
   and no ``doc_to_choice`` (a multiple-choice YAML that forgot its ``output_type`` would be generated);
3. ``engine.load_tasks`` (lm-eval builds the tasks and reads their documents);
4. the loaded tasks as lm-eval resolved them (Python-defined tasks, default metrics): output type and
   metrics.

``check_items`` is how ``LMEvalSuite.capped`` checks the items a run will score, once they are chosen
(still before any model is loaded): each has two or more choices and a gold answer among them. Only
those: lm-eval renders every choice through its templates, 8 s for the six offline tasks' 15,000 items.
``check_generation_items`` checks a generation task's chosen items the same way: a prompt and a
target, neither empty.

forgetless scores lm-eval's per-item log-likelihoods and generation metrics (``records.py``): ``SCORED``
lists the output types and the per-item metrics it reads of each (a generation task: any metric with a
per-item number, not one of lm-eval's corpus-level aggregations, ``CORPUS_LEVEL``).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, DataError, ForgetlessError
from . import engine, generation

SCORED = {"multiple_choice": ("acc", "acc_norm"), "loglikelihood": ("acc",),
          "loglikelihood_rolling": ("word_perplexity", "byte_perplexity", "bits_per_byte"),
          "generate_until": None}  # None: any metric with a per-item number (records.item_value)
# lm-eval's corpus-level aggregations: a task's metric aggregated by one of them has no per-item value to pair
CORPUS_LEVEL = ("bleu", "chrf", "ter", "f1_score", "matthews_corrcoef", "perplexity", "weighted_perplexity",
                "bits_per_byte", "brier_score")
REQUIRED = {"multiple_choice": "acc"}  # the metric whose per-item value the paired analysis reads
DEFAULT_OUTPUT = GENERATE = "generate_until"  # lm-eval's TaskConfig default


def load_checked(names: list[str], include, data_dir, defaults: bool | None) -> tuple:
    """``(manager, {name: lm-eval Task})``: ``engine.task_manager`` and ``engine.load_tasks`` of
    ``names``, each task checked as the module docstring says before and after lm-eval builds it
    (the include folders' files first: a missing ``include:`` would otherwise send lm-eval to index
    all its own tasks, a minute, before saying the task is not known)."""
    folders = include if isinstance(include, (list, tuple)) else [include] if include else []
    yamls = _include_yamls([f for f in folders if Path(f).is_dir()])
    _check_twice(names, yamls)
    for name in names:  # the include folders' own tasks, before lm-eval indexes anything
        path = next((path for path, data in yamls.items() if (data or {}).get("task") == name), None)
        if path is not None:
            _check_yaml(name, path)
    manager = engine.task_manager(include, data_dir, defaults, names)
    _check_unknown(names, manager, yamls)
    for name in names:  # lm-eval's own YAML tasks
        path = _indexed_yaml(name, manager, yamls)
        if path is not None:
            _check_yaml(name, path)
    tasks = engine.load_tasks(names, manager)
    for name, task in tasks.items():
        where = engine.yaml_path(manager, name)
        _check_scored(name, where, task.OUTPUT_TYPE, list(task.aggregation()))
        if task.OUTPUT_TYPE == GENERATE:
            _check_aggregations(name, where, task)
            generation.normalized(name, where, task.config.generation_kwargs)  # greedy, at least one new token
    return manager, tasks


# ----- the YAML files ------------------------------------------------------------------------------------
def _include_yamls(include) -> dict[Path, dict | None]:
    """Every YAML under the include folders with its own keys (None: not YAML; ``engine`` names it)."""
    folders = include if isinstance(include, (list, tuple)) else [include] if include else []
    return {path: _read(path) for folder in folders for path in sorted(Path(folder).rglob("*.yaml"))}


def _read(path: Path) -> dict | None:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: f"!{suffix} {getattr(node, 'value', '')}".strip())
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 - SafeLoader subclass
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def _includes(path: Path, data: dict) -> list[Path]:
    value = data.get("include")
    values = value if isinstance(value, list) else [] if value is None else [value]
    return [Path(str(v)).expanduser() if Path(str(v)).is_absolute() else path.parent / str(v) for v in values]


def _resolved(path: Path, seen: tuple = ()) -> dict:
    """The YAML's keys over those of its ``include:`` files (lm-eval's merge: the file's own win)."""
    data = _read(path) or {}
    if path.resolve() in seen:
        raise DataError(f"{seen[0]}: its include: files form a cycle (through {path.name})")
    merged = {}
    for included in _includes(path, data):
        if not included.is_file():
            raise DataError(f"{path}: its include: file {included.name} is missing ({included})")
        merged.update({k: v for k, v in _resolved(included, (*seen, path.resolve())).items() if k != "task_list"})
    merged.update({k: v for k, v in data.items() if k != "include"})
    return merged


def _check_twice(names: list[str], yamls: dict) -> None:
    """A requested task name that two YAMLs define."""
    for name in names:
        defined = [path for path, data in yamls.items() if (data or {}).get("task") == name]
        if len(defined) > 1:
            raise ConfigError(f"lm-eval task {name}: defined twice, in {defined[0]} and {defined[1]}; lm-eval would "
                              "use one of them without a word: give each task its own name")


def _check_unknown(names: list[str], manager, yamls: dict) -> None:
    """A name lm-eval does not know, where a YAML without a task name of its own includes a missing
    file (its task name may be in that file): that file is named."""
    unknown = [name for name in names if name not in set(manager.all_tasks)]
    for path, data in yamls.items():
        missing = [p for p in _includes(path, data or {}) if not p.is_file()]
        if unknown and missing and "task" not in (data or {}):
            raise DataError(f"lm-eval task {unknown[0]!r} is not known; {path} may define it, but its include: file "
                            f"{missing[0].name} is missing ({missing[0]})")


def _indexed_yaml(name: str, manager, yamls: dict) -> Path | None:
    """The YAML of lm-eval's index that defines task ``name`` by its ``task:`` key, when it is not one
    of the include folders'; None: a group, a tag or a Python task (checked once loaded)."""
    if any((data or {}).get("task") == name for data in yamls.values()):
        return None
    where = Path(engine.yaml_path(manager, name))
    return where if where.suffix == ".yaml" and where.is_file() and (_read(where) or {}).get("task") == name else None


def _check_yaml(name: str, path: Path) -> None:
    """The output type and metrics of a task's YAML, its ``include:`` files merged (missing: named)."""
    try:
        config = _resolved(path)
    except DataError as exc:
        raise DataError(f"lm-eval task {name}: {exc}") from None
    output_type = config.get("output_type", DEFAULT_OUTPUT)
    _check_scored(name, path, output_type, _yaml_metrics(config))
    if output_type == GENERATE and config.get("doc_to_choice") not in (None, ""):
        default = "" if "output_type" in config else " (lm-eval's default: the YAML names none)"
        raise ConfigError(f"lm-eval task {name} ({path}): output_type generate_until{default} with doc_to_choice: the "
                          "model would write free answers and its choices be ignored; set output_type: "
                          "multiple_choice to score the choices, or drop doc_to_choice")
    if output_type == GENERATE and "class" not in config and config.get("doc_to_text") in (None, ""):
        # lm-eval fails on it with a bare TypeError
        raise ConfigError(f"lm-eval task {name} ({path}): has no prompt (doc_to_text); add doc_to_text: the template "
                          "(or function) that turns each item into the text the model answers")


def _yaml_metrics(config: dict) -> list[str] | None:
    """The metric names of a YAML's ``metric_list`` (None: lm-eval's defaults for its output type)."""
    entries = config.get("metric_list")
    if entries is None:
        return None
    return [str(e.get("metric")) if isinstance(e, dict) else str(e) for e in entries]


# ----- what forgetless scores --------------------------------------------------------------------------
def _check_scored(name: str, where, output_type: str, metrics: list[str] | None) -> None:
    """``output_type`` is one forgetless scores and ``metrics`` (None: lm-eval's defaults) are those it reads."""
    supported = "; ".join(f"{kind} ({', '.join(read) if read else 'its per-item metrics'})"
                          for kind, read in SCORED.items())
    if output_type not in SCORED:
        raise ConfigError(f"lm-eval task {name} ({where}): output_type {output_type} is not scored by forgetless, "
                          f"which pairs models item by item: {supported}")
    if metrics is None or SCORED[output_type] is None:
        return
    unread = [m for m in metrics if m not in SCORED[output_type]]
    if unread:
        raise ConfigError(f"lm-eval task {name} ({where}): metric {unread[0]} is not one forgetless reads of a "
                          f"{output_type} task ({', '.join(SCORED[output_type])}); remove it from metric_list")
    needed = REQUIRED.get(output_type)
    if needed and needed not in metrics:
        raise ConfigError(f"lm-eval task {name} ({where}): its metric_list lacks {needed}, the per-item value "
                          f"forgetless compares models on; add - metric: {needed}")


def _check_aggregations(name: str, where, task) -> None:
    """A generation task's metrics are aggregated over items (lm-eval's mean, or the task's own function
    such as IFEval's instruction-level mean), not corpus-level (BLEU: no per-item value to pair)."""
    for metric, aggregate in task.aggregation().items():
        if getattr(aggregate, "__name__", "") in CORPUS_LEVEL:
            raise ConfigError(f"lm-eval task {name} ({where}): metric {metric} is aggregated over the whole corpus "
                              f"({aggregate.__name__}), so it has no per-item value to compare models on; remove it "
                              "from metric_list (exact_match, F1, ROUGE … per item are paired)")


def check_generation_items(name: str, where, task, items: list[int]) -> None:
    """The documents ``items`` of a generation task have a prompt (``doc_to_text``) and an answer to score
    against (``doc_to_target``): neither empty."""
    docs = task.eval_docs
    for index in items:
        doc = docs[index]
        item = f"lm-eval task {name} ({where}), item {index}"
        for part, read in (("prompt", task.doc_to_text), ("target", task.doc_to_target)):
            key = "doc_to_text" if part == "prompt" else "doc_to_target"
            try:
                value = read(doc)
            except Exception as exc:  # noqa: BLE001 - a template lm-eval cannot render: one line naming the item
                raise DataError(f"{item}: its {part} cannot be read ({key}: {type(exc).__name__}: {exc})") from exc
            if _empty(value):
                raise DataError(f"{item}: its {part} is empty ({key} gives {value!r}); every generation item needs "
                                f"a prompt to answer and a target to score the answer against")


def _empty(value) -> bool:
    """None, a blank string, or a list of nothing but those."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple)):
        return all(_empty(v) for v in value)
    return False


def check_items(name: str, where, task, items: list[int]) -> None:
    """The documents ``items`` (indices) of a multiple-choice task have two or more choices and a gold
    answer among them."""
    from .records import gold_choice

    docs = task.eval_docs
    for index in items:
        doc = docs[index]
        item = f"lm-eval task {name} ({where}), item {index}"
        try:
            choices = task.doc_to_choice(doc)
        except Exception as exc:  # noqa: BLE001 - a template lm-eval cannot render: one line naming the item
            raise DataError(f"{item}: its choices cannot be read ({type(exc).__name__}: {exc})") from exc
        if not isinstance(choices, (list, tuple)) or len(choices) < 2:
            got = f"{len(choices)} choice(s)" if isinstance(choices, (list, tuple)) else f"a {type(choices).__name__}"
            raise DataError(f"{item}: has {got}; every multiple-choice item needs two or more (doc_to_choice)")
        try:
            gold_choice(task, doc, [str(c) for c in choices])
        except ForgetlessError as exc:
            raise DataError(f"{item}: {str(exc).split(': ', 1)[-1]}") from exc
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"{item}: its gold answer cannot be read ({type(exc).__name__}: {exc})") from exc
