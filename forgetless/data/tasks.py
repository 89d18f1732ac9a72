"""Task registry for every kind: built-in synthetic tasks, named benchmarks (from a data folder,
else the hub: ``hub.py``), local files, any Hugging Face hub dataset (``hub``), generation tasks
(``generation.py``; a data folder only).
``load_task`` also applies seeded size caps to train / eval sets."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from pathlib import Path

from ..errors import ConfigError
from . import fever, generation, glue, llm_tasks, mnli  # noqa: F401  (register their tasks)
from .registry import TASKS, resolve_data_dir
from .files import check_label_names, example_set_from_rows, infer_file_columns, read_table
from .synthetic import synthetic_shortcut_task
from .task import Task, cap_task, capped  # noqa: F401  (capped: metrics/clever.py)


def load_task(name: str, data_dir: str | None = None, seed: int = 0, train_size: int | None = None,
              eval_size: int | None = None, **options) -> Task:
    """Build task ``name``; ``train_size`` / ``eval_size`` cap the training set and each evaluation
    set (seeded, stratified). Unknown task names or options are errors."""
    builder = TASKS.get(name)
    options = {k: v for k, v in options.items() if v is not None}
    try:
        task = builder(data_dir=data_dir, seed=seed, **options)
    except TypeError as exc:
        raise ConfigError(f"task {name!r}: bad options {sorted(options)} ({exc})") from exc
    return cap_task(task, train_size, eval_size, seed)


@TASKS.register("synthetic")
def _synthetic(data_dir=None, seed: int = 0, n_train: int = 2000, n_dev: int = 500, n_challenge: int = 600,
               hard_fraction: float = 0.1) -> Task:
    return synthetic_shortcut_task(n_train, n_dev, n_challenge, hard_fraction, seed)


@TASKS.register("files")
def _files(data_dir=None, seed: int = 0, train: str | None = None, dev: str | None = None,
           challenge: dict[str, str] | None = None, text_a: str | None = None, text_b: str | None = None,
           label: str = "label", labels: list[str] | None = None, hard: str | None = None,
           json_key: str | None = None) -> Task:
    """Local files: ``train``/``dev`` paths, ``challenge`` {name: path}, column names and label names
    (``text_b`` '': single-sentence files; ``json_key``: the list inside JSON objects). Columns and
    label names not given are inferred from the training file, and the task's protocol says so."""
    if not train or not dev:
        raise ConfigError("task 'files' needs --train FILE and --dev FILE")
    if labels is not None:
        labels = check_label_names(labels)
    text_a, text_b, labels, inferred = infer_file_columns(train, text_a, text_b, label or "label", labels, json_key)
    read = lambda path, name: example_set_from_rows(read_table(path, json_key=json_key), name, str(path),  # noqa: E731
                                                    text_a, label, labels, text_b, hard)
    challenges = {cname: read(path, cname) for cname, path in (challenge or {}).items()}
    task = Task("files", labels, read(train, "train"), read(dev, "dev"), challenges,
                protocol=f"local files: train {train}, dev {dev}, challenge {challenge or {}}"
                + (f"; inferred: {inferred}" if inferred else ""))
    if inferred:  # said once every file is read: a bad file is one error line, nothing before it
        print(f"[forgetless] files task, inferred from {train}: {inferred}", file=sys.stderr, flush=True)
    return task


@TASKS.register("hub")
def _hub(data_dir=None, seed: int = 0, dataset: str | None = None, subset: str | None = None,
         train_split: str = "train", dev_split: str = "validation", challenge: dict[str, str] | None = None,
         text_a: str = "sentence1", text_b: str | None = "sentence2", label: str = "label",
         labels: list[str] | None = None) -> Task:
    """A Hugging Face hub dataset (needs network access); ``challenge`` maps names to splits."""
    if not dataset or not labels:
        raise ConfigError("task 'hub' needs --dataset ID and --labels NAME,NAME,...")
    labels, text_b = check_label_names(labels), text_b or None
    import datasets

    def split(name, split_name):
        rows = [dict(r) for r in datasets.load_dataset(dataset, subset, split=split_name)]
        return example_set_from_rows(rows, name, f"{dataset}:{split_name}", text_a, label, labels, text_b)

    challenges = {name: split(name, s) for name, s in (challenge or {}).items()}
    return Task(dataset, labels, split("train", train_split), split("dev", dev_split), challenges,
                protocol=f"hub dataset {dataset} ({subset or 'default'})")


@TASKS.register("synthetic-lookup")
def _synthetic_lookup(data_dir=None, seed: int = 0, n_train: int = 2000, n_dev: int = 200,
                      eval_sets: tuple[str, ...] = ()) -> Task:
    if eval_sets:
        raise ConfigError("synthetic-lookup has its own vocabulary: extra evaluation sets (samsum, xsum) do not apply")
    return generation.synthetic_lookup_task(n_train, n_dev, seed=seed)


def _with_extra_sets(task: Task, data_dir: Path, eval_sets) -> Task:
    for name in eval_sets or ():
        task.challenges[name] = generation.extra_set(name, data_dir)
    return task


@TASKS.register("tweetqa")
def _tweetqa(data_dir=None, seed: int = 0, eval_sets: tuple[str, ...] = ()) -> Task:
    root = resolve_data_dir(data_dir, "task tweetqa")
    return _with_extra_sets(generation.tweetqa_task(root, seed), root, eval_sets)


def _summaries(name: str, data_dir=None, seed: int = 0, eval_sets: tuple[str, ...] = ()) -> Task:
    """SAMSum or XSum as a task: a seeded 80 / 20 split of the evaluation file (``generation.split_task``)."""
    root = resolve_data_dir(data_dir, f"task {name}")
    return _with_extra_sets(generation.split_task(name, root, seed), root, eval_sets)


for _name in generation.EXTRA_SETS:
    TASKS.register(_name)(functools.partial(_summaries, _name))


RESERVED_SETS = ("train", "dev")  # a challenge set of these names would replace the task's own set


FIELDS = {"train_file": "train", "dev_file": "dev", "label_column": "label", "hard_column": "hard"}  # → option
GENERAL = ("name", "data_dir", "train_size", "eval_size", "data_seed")  # options of every task


def task_from_config(config, seed: int = 0) -> Task:
    """The task a ``TaskConfig`` (``forgetless.config``) names, with every option of it that the task's
    builder takes (``FIELDS``: field → option name; ``eval_sets``, when given, goes to any task, which
    refuses it unless it has extra sets); ``seed`` is the run's seed (``config.data_seed`` overrides
    it for splits and caps)."""
    accepted = _options_of(config.name)
    options = {FIELDS.get(f.name, f.name): getattr(config, f.name) for f in dataclasses.fields(config)}
    for f in dataclasses.fields(config):  # an option the task does not read is an error, not ignored
        option = FIELDS.get(f.name, f.name)
        if f.name not in GENERAL and options[option] not in (None, [], False) and option not in accepted:
            takers = [name for name in TASKS.names() if option in _options_of(name)]
            raise ConfigError(f"{config.flag(f.name)}: applies to --task {', '.join(takers) or 'none'}, "
                              f"not {config.name}")
    options = {k: v for k, v in options.items() if k in accepted or (k == "eval_sets" and v)}
    if "challenge" in options:
        pairs = [_challenge_pair(item) for item in config.challenge]
        names = [name for name, _ in pairs]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ConfigError(f"--challenge {twice[0]}=…: the name {twice[0]!r} is given twice; give each challenge "
                              "set its own name")
        options["challenge"] = dict(pairs) or None
    if "labels" in options:
        options["labels"] = config.labels or None
    if options.get("eval_sets"):
        options["eval_sets"] = tuple(config.eval_sets)
    return load_task(config.name, data_dir=config.data_dir, seed=seed if config.data_seed is None else config.data_seed,
                     train_size=config.train_size, eval_size=config.eval_size, **options)


def _options_of(task: str) -> set[str]:
    """The options the builder of ``task`` takes (``eval_sets``: any task, which refuses it unless it has
    extra sets)."""
    return set(inspect.signature(TASKS.get(task)).parameters) - {"data_dir", "seed"} | {"eval_sets"}


def _challenge_pair(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"--challenge {item}: expected NAME=PATH")
    name, value = (x.strip() for x in item.split("=", 1))
    if not name or not value:
        raise ConfigError(f"--challenge {item}: expected NAME=PATH with a name and a path")
    if name.lower() in RESERVED_SETS:
        raise ConfigError(f"--challenge {item}: {name!r} is the task's own {name.lower()} set; give the challenge "
                          "set another name (e.g. adv-dev)")
    return name, value
