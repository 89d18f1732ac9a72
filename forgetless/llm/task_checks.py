"""The lm-eval tasks forgetless can score, checked when they are loaded, before any model is: each
refusal is one error naming the task, its YAML file and what is supported (the hostile audit of
issue 43 found a ``generate_until`` task failing inside lm-eval's tokenizer, a metric forgetless does
not read failing with ``KeyError 'acc'`` after the whole evaluation, items without choices failing
after 34 minutes on SmolLM2, two YAMLs of one task name used one of them silently, and a YAML whose
``include:`` file is missing reported as "task not known").

``load_checked(names, manager)`` is how ``suite.build_suite`` loads tasks:

1. the YAML files of the include folders (read as lm-eval reads them, ``!function`` tags kept as
   names): an ``include:`` that names no file, and a requested task name that two YAMLs define;
2. each requested task's YAML with its includes merged: its output type and its metrics;
3. ``engine.load_tasks`` (lm-eval builds the tasks and reads their documents);
4. the loaded tasks as lm-eval resolved them (Python-defined tasks, default metrics): output type,
   metrics, and every item's choices (two or more) and gold answer (one of them).

forgetless scores lm-eval's per-item log-likelihoods (``records.py``): ``SCORED`` lists the output
types and the per-item metrics it reads of each.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, DataError, ForgetlessError
from . import engine

SCORED = {"multiple_choice": ("acc", "acc_norm"), "loglikelihood": ("acc",),
          "loglikelihood_rolling": ("word_perplexity", "byte_perplexity", "bits_per_byte")}
REQUIRED = {"multiple_choice": "acc"}  # the metric whose per-item value the paired analysis reads
DEFAULT_OUTPUT = "generate_until"  # lm-eval's TaskConfig default


def load_checked(names: list[str], manager) -> dict:
    """``{name: lm-eval Task}`` of ``names`` (``engine.load_tasks``), each checked as the module
    docstring says before and after lm-eval builds it."""
    yamls = _include_yamls(getattr(manager, "include_path", None))
    _check_files(names, manager, yamls)
    for name in names:
        path = _defined_in(name, manager, yamls)
        if path is not None:
            config = _resolved(path)
            _check_scored(name, path, config.get("output_type", DEFAULT_OUTPUT), _yaml_metrics(config))
    tasks = engine.load_tasks(names, manager)
    for name, task in tasks.items():
        where = engine.yaml_path(manager, name)
        _check_scored(name, where, task.OUTPUT_TYPE, list(task.aggregation()))
        if task.OUTPUT_TYPE == "multiple_choice":
            _check_items(name, where, task)
    return tasks


# ----- the YAML files ------------------------------------------------------------------------------------
def _include_yamls(include) -> dict[Path, dict | None]:
    """Every YAML under the include folders with its own keys (None: not YAML; ``engine`` names it)."""
    folders = include if isinstance(include, (list, tuple)) else [include] if include else []
    return {path: _read(path) for folder in folders for path in sorted(Path(folder).rglob("*.yaml"))}


def _read(path: Path) -> dict | None:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: f"!{suffix}")  # a Python function: a name
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
        raise DataError(f"{seen[0]}: include cycle through {path}")
    merged = {}
    for included in _includes(path, data):
        if not included.is_file():
            raise DataError(f"{path}: include: {included.name} is missing ({included})")
        merged.update({k: v for k, v in _resolved(included, (*seen, path.resolve())).items() if k != "task_list"})
    merged.update({k: v for k, v in data.items() if k != "include"})
    return merged


def _check_files(names: list[str], manager, yamls: dict) -> None:
    """A missing ``include:`` file (of a requested task, or the likely reason a name is not known) and
    a requested name that two YAMLs define are errors naming the files."""
    known = set(manager.all_tasks)
    for path, data in yamls.items():
        missing = [p for p in _includes(path, data or {}) if not p.is_file()]
        own = (data or {}).get("task")
        if missing and (own in names or (own is None and not known.issuperset(names))):
            task = f"lm-eval task {own} ({path})" if own in names else f"lm-eval task {_unknown(names, known)!r} is not " \
                f"known; {path}"
            raise DataError(f"{task}: its include: file {missing[0].name} is missing ({missing[0]})")
    for name in names:
        defined = [path for path, data in yamls.items() if (data or {}).get("task") == name]
        if len(defined) > 1:
            raise ConfigError(f"lm-eval task {name}: defined twice, in {defined[0]} and {defined[1]}; lm-eval would "
                              "use one of them without a word: give each task its own name")


def _unknown(names: list[str], known: set) -> str:
    return next(name for name in names if name not in known)


def _defined_in(name: str, manager, yamls: dict) -> Path | None:
    """The YAML that defines task ``name`` (include folders, else lm-eval's index); None: a Python task."""
    found = next((path for path, data in yamls.items() if (data or {}).get("task") == name), None)
    if found is not None:
        return found
    where = Path(engine.yaml_path(manager, name))
    return where if where.suffix == ".yaml" and where.is_file() else None


def _yaml_metrics(config: dict) -> list[str] | None:
    """The metric names of a YAML's ``metric_list`` (None: lm-eval's defaults for its output type)."""
    entries = config.get("metric_list")
    if entries is None:
        return None
    return [str(e.get("metric")) if isinstance(e, dict) else str(e) for e in entries]


# ----- what forgetless scores --------------------------------------------------------------------------
def _check_scored(name: str, where, output_type: str, metrics: list[str] | None) -> None:
    """``output_type`` is one forgetless scores and ``metrics`` (None: lm-eval's defaults) are those it reads."""
    supported = "; ".join(f"{kind} ({', '.join(read)})" for kind, read in SCORED.items())
    if output_type not in SCORED:
        raise ConfigError(f"lm-eval task {name} ({where}): output_type {output_type} is not scored by forgetless, "
                          f"which pairs models item by item on log-likelihoods: {supported}")
    if metrics is None:
        return
    unread = [m for m in metrics if m not in SCORED[output_type]]
    if unread:
        raise ConfigError(f"lm-eval task {name} ({where}): metric {unread[0]} is not one forgetless reads of a "
                          f"{output_type} task ({', '.join(SCORED[output_type])}); remove it from metric_list")
    needed = REQUIRED.get(output_type)
    if needed and needed not in metrics:
        raise ConfigError(f"lm-eval task {name} ({where}): its metric_list lacks {needed}, the per-item value "
                          f"forgetless compares models on; add - metric: {needed}")


def _check_items(name: str, where, task) -> None:
    """Every document of a multiple-choice task has two or more choices and a gold answer among them."""
    from .records import gold_choice

    for index, doc in enumerate(task.eval_docs):
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
