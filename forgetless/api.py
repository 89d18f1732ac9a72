"""The Python API: objects in, objects out (issue 19; in the spirit of peft's ``get_peft_model`` and
llm-compressor's ``oneshot``)::

    import forgetless
    from forgetless.methods.truncate.config import TruncateConfig
    result = forgetless.compress(model=bert_object_or_name, tokenizer=tok, data=dataset_dict,
                                 method=TruncateConfig(layers=1))
    result.model, result.tokenizer, result.card      # the compressed model object, its report card
    result.save("compressed/")                        # a forgetless model folder
    forgetless.evaluate(result.model, dataset_dict, tokenizer=result.tokenizer)

``model``: a name (``minilm``, ``tiny-bert``), a folder, or a ``PreTrainedModel`` (copied, never
changed; its teacher is trained in the run's work folder, not the shared cache). ``data``: a task
name, a ``Task``, a ``datasets.DatasetDict`` or a dict of ``datasets.Dataset``
(``Task.from_datasets``; ``columns`` names its columns). ``method`` / ``objective``: a name or a
config (``HeadsConfig(ratio=0.5)``, or ``forgetless.METHODS.make_config("heads", {"ratio": 0.5})``). With no ``out_dir`` the run
works in a temporary folder that is deleted afterwards. Every wrong type is one ``ConfigError``
before any work.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, fields
from pathlib import Path

from torch import nn

from .data.task import Task
from .data.tasks import load_task
from .errors import ConfigError, OutputFolderError
from .config import CleverConfig, EvalConfig, RunConfig, SpeedConfig, TaskConfig, TrainConfig
from .evaluate_saved import evaluate_model, evaluate_saved
from .kinds import KINDS, kind_for
from .kinds.in_memory import check_model_object, find_tokenizer, is_in_memory, kind_name_of, label
from .models.io import save_model
from .models.model_card import write_model_card
from .options import build
from .outputs import check_output
from .pipeline import run_compress
from .registry import METHODS, OBJECTIVES
from .report.model_summary import model_card_summary

SECTIONS = {"train": TrainConfig, "speed": SpeedConfig, "eval": EvalConfig, "clever": CleverConfig}
COLUMNS = ("text", "text_pair", "label", "target", "labels", "name", "train_size", "eval_size")
RUN_OPTIONS = tuple(f.name for f in fields(RunConfig) if f.name not in ("model", "method", "objective", "task"))


@dataclass
class Result:
    """A finished compression: the compressed ``model`` object, its ``tokenizer`` and the report
    ``card`` (schema in ``report/card.py``); ``out_dir`` holds the run's files (None: none kept)."""

    model: nn.Module
    tokenizer: object
    card: dict
    out_dir: Path | None = None

    def save(self, path) -> Path:
        """Write the model as a forgetless model folder (``forgetless.load_model`` reloads it) with
        its model card; ``path`` must be new or an empty folder."""
        folder = Path(str(path)).expanduser()
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise OutputFolderError(f"save {path}: exists and is not an empty folder; name a new or empty folder")
        check_output(folder, "save", command="save")  # not the cache, writable, sane name
        card = self.card
        save_model(self.model, folder, self.tokenizer, metadata={
            "method": {k: card["method"][k] for k in ("name", "config")}, "objective": card["method"]["objective"],
            "task": card["task"]["name"], "task_kind": card["kind"]["task"], "kind": card["kind"]["model"],
            "then": card["method"]["then"]})
        write_model_card(folder, model_card_summary(card))
        return folder


def compress(model, data, method="truncate", *, tokenizer=None, objective=None, out_dir=None,
             columns: dict | None = None, overwrite: bool = False, **run_options) -> Result:
    """Compress ``model`` on ``data`` with ``method`` (module docstring); ``run_options`` are the
    other ``RunConfig`` fields (``base``, ``train``, ``speed``, ``eval``, ``seed``, ``then`` …)."""
    _check_model(model)
    task = as_task(data, columns, run_options.get("seed", 0))
    config = run_config(model, method, objective, task, run_options)
    given = model if is_in_memory(model) else None
    if given is not None:  # no tokenizer, or a model that does not fit the run: one error now
        tokenizer = find_tokenizer(given, tokenizer, task)
    elif tokenizer is not None:
        raise ConfigError(f"tokenizer: model {str(model)!r} is loaded with its own tokenizer (the task's for "
                          "tiny models); pass a model object to use another one")
    if out_dir is not None:
        output = run_compress(task, config, str(out_dir), overwrite=overwrite, model=given, tokenizer=tokenizer)
        return Result(output.model, output.tokenizer, output.card, Path(out_dir))
    with tempfile.TemporaryDirectory(prefix="forgetless-") as work:
        output = run_compress(task, config, Path(work) / "run", model=given, tokenizer=tokenizer)
    return Result(output.model, output.tokenizer, output.card)


def evaluate(model, data, *, tokenizer=None, batch_size: int = 64, max_length: int = 128,
             columns: dict | None = None, model_kind: str = "auto") -> dict:
    """Scores of ``model`` (a folder, or a model object with its tokenizer) on every set of ``data``:
    ``{sets, challenge_pooled, ..., params}``; nothing is written."""
    _check_model(model)
    task = as_task(data, columns)
    if not is_in_memory(model):
        if tokenizer is not None:
            raise ConfigError("tokenizer: a saved model is evaluated with the tokenizer saved beside it; drop tokenizer=")
        return evaluate_saved(str(model), task, batch_size=batch_size, max_length=max_length)
    kind = KINDS[kind_name_of(model)] if model_kind == "auto" else kind_for(task, None, model_kind)
    return evaluate_model(model, task, kind, tokenizer, batch_size, max_length)


def run_config(model, method, objective, task: Task, run_options: dict) -> RunConfig:
    """The ``RunConfig`` of the API's arguments: ``method`` / ``objective`` a name or a config,
    ``train`` / ``eval`` / ``speed`` / ``clever`` a config or a dict of its fields."""
    unknown = sorted(set(run_options) - set(RUN_OPTIONS))
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}; compress accepts: {', '.join(RUN_OPTIONS)}")
    options = dict(run_options)
    if is_in_memory(model) and options.get("model_kind", "auto") == "auto":
        options["model_kind"] = kind_name_of(model)
    for name, cls in SECTIONS.items():  # train={"epochs": 1} as well as train=TrainConfig(epochs=1)
        if isinstance(options.get(name), dict):
            options[name] = build(cls, options[name], name)
    return RunConfig(model=label(model) if is_in_memory(model) else str(model), method=METHODS.config(method),
                     objective=None if objective is None else OBJECTIVES.config(objective),
                     task=TaskConfig(name=task.name), **options)


def _check_model(model) -> None:
    """A name, a folder or a model object (its tokenizer: ``kinds.in_memory.find_tokenizer``)."""
    if not isinstance(model, (str, Path)):
        check_model_object(model, "any")


def as_task(data, columns: dict | None = None, seed: int = 0) -> Task:
    """A ``Task`` from a task name, a ``Task``, a ``DatasetDict`` or a dict of datasets."""
    if columns is not None and not isinstance(columns, dict):
        raise ConfigError(f"columns: expected a dict such as {{'text': 'sentence', 'label': 'label'}}, "
                          f"got {type(columns).__name__}")
    unknown = sorted(set(columns or {}) - set(COLUMNS))
    if unknown:
        raise ConfigError(f"columns: unknown key(s) {', '.join(unknown)}; valid: {', '.join(COLUMNS)}")
    if isinstance(data, Task):
        return data
    if isinstance(data, str):
        return load_task(data, seed=seed)
    if isinstance(data, dict):
        return Task.from_datasets(data, seed=seed, **(columns or {}))
    raise ConfigError(f"data: expected a task name, a forgetless Task, a datasets.DatasetDict or a dict of "
                      f"datasets.Dataset; got {type(data).__name__}")
