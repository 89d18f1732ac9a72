"""The one pipeline, for every kind of task and model:

task → teacher (fine-tune or load) → objective preparation → compress (method lifecycle) → save
→ evaluate base and compressed → speed side by side → report card.

What differs between a classifier and an encoder-decoder lives in ``forgetless.kinds`` (picked by
``kind_for(task, method)``); methods, objectives, the Trainer and the report card are shared. Each
step is a plain function so it can be called from Python as well as the CLI.
"""
from __future__ import annotations

import copy
import logging
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import transformers

from .data.task import Task
from .errors import ConfigError
from .metrics.calibration import calibration_section
from .metrics.clever import clever_evaluate
from .metrics.perplexity import default_perplexity_file
from .metrics.runtime import agreement, deploy
from .metrics.size import bits_per_parameter, disk_size, parameter_counts
from .fsutil import atomic_write_json, disk_full_guard, remove_leftovers
from .kinds import check_compatible, kind_for
from .config import CleverConfig, RunConfig
from .kinds.in_memory import check_model_object
from .methods.base import CompressionContext
from .recipes.dump import drop_empty, dump_recipe
from .registry import METHODS, OBJECTIVES
from .tree import to_recipe
from .objectives.cache import cache_key
from .models.io import is_forgetless_folder, load_model, read_manifest, save_model
from .models.loading import resolve_model_path
from .models.smollm2 import provenance
from .models.model_card import write_model_card
from . import progress
from .report.card import build_card, write_card
from .report.measurements import Measurements
from .report.honest import prediction_rows, training_section
from .report.model_summary import model_card_summary
from .training.trainer import fine_tune
from .outputs import cache_root, output_lock, teacher_lock
from .validate import run_identity, prepare_output, run_inputs, validate_run

log = logging.getLogger(__name__)


def resolve(config: RunConfig):
    """(method, objective, then) implementation instances of a run's configs."""
    return METHODS.build(config.method), OBJECTIVES.build(config.objective), [METHODS.build(c) for c in config.then]


def teacher_key(task: Task, config: RunConfig, kind) -> str:
    """What a cached teacher was trained for: task content (training set and labels), model (for a
    local folder also its files' names, sizes and modification times), model kind, the training
    settings that decide the weights (``TrainConfig.identity``), seed."""
    train_config = config.teacher_train or config.train
    settings = train_config.identity()  # checkpoint cadence, logging and progress do not change the weights
    local = Path(config.model)
    files = sorted((str(f.relative_to(local)), f.stat().st_size, f.stat().st_mtime_ns)
                   for f in local.rglob("*") if f.is_file()) if local.is_dir() else None  # a changed folder: new key
    return cache_key({"model": config.model, "files": files, "kind": kind.name, "task": task.train.fingerprint(),
                 "labels": task.label_names, "train": settings, "seed": config.seed})


def train_teacher(task: Task, config: RunConfig, work_dir: Path, kind=None, model=None, tokenizer=None):
    """Fine-tune (or load) the uncompressed model on the task. A finished teacher is kept in the
    shared cache (``cache_root()/teachers/<key>``, key: ``teacher_key``) and reused by any run with
    the same key, whatever its output folder; ``config.teacher`` is only read. A model object
    (``model``, with its ``tokenizer``; ``config.model`` then holds its label) is copied, never
    changed; its teacher is trained and kept in ``work_dir/teacher``, not in the shared cache."""
    kind = kind or kind_for(task)
    source = model if model is not None else config.model
    if config.base == "as-is":  # post-training compression: nothing is trained, nothing is written
        _stage(f"base: {config.model} as it is (no fine-tuning)")
        loaded, tokenizer = kind.load_model(source, task, config.seed, tokenizer)
        info = _as_is_info(config.model) if model is None else \
            {"source": config.model, "reused": False, "as_is": True, "path": None}
        return loaded, tokenizer, info
    if config.teacher:
        model, tokenizer = kind.load_model(config.teacher, task, config.seed)
        _stage(f"using the given teacher {config.teacher}")
        return model, tokenizer, {"source": config.teacher, "reused": True, "path": str(config.teacher)}
    train_config = config.teacher_train or config.train
    key = teacher_key(task, config, kind)
    folder = work_dir / "teacher" if model is not None else cache_root() / "teachers" / key
    with teacher_lock(folder):  # a second run needing this teacher waits here, then reuses it
        remove_leftovers(folder.parent, (f".{key}.tmp-*", f".{key}.old-*"))  # of a killed save of this teacher
        if is_forgetless_folder(folder) and read_manifest(folder)["metadata"].get("key") == key:
            loaded, saved_tokenizer = load_model(folder)
            _stage(f"reusing teacher from {folder}")
            return loaded, saved_tokenizer or tokenizer or task.tokenizer, \
                {"source": config.model, "reused": True, "path": str(folder)}
        _stage(f"fine-tuning the teacher ({train_config.epochs:g} epoch(s)); it will be kept in {folder}")
        transformers.set_seed(config.seed)
        loaded, tokenizer = kind.load_model(source, task, config.seed, tokenizer)
        loaded = fine_tune(loaded, tokenizer, kind.training_set(task, tokenizer), work_dir / "train-teacher",
                           train_config)
        save_model(loaded, folder, tokenizer, metadata={"key": key, "role": "teacher", "kind": kind.name,
                                                       "model": config.model, "task": task.name,
                                                       "task_kind": task.kind})
        return loaded, tokenizer, {"source": config.model, "reused": False, "path": str(folder)}


def _as_is_info(model: str) -> dict:
    """Where an as-is base came from; a converted base (``--model smollm2``) adds its provenance."""
    path = Path(resolve_model_path(model))
    info = {"source": model, "reused": False, "as_is": True, "path": str(path) if path.is_dir() else None}
    recorded = provenance(path) if path.is_dir() else None
    if recorded:
        info["provenance"] = recorded
    return info


def clean_work(work_dir: Path) -> int:
    """Delete training checkpoints (``checkpoint-*`` folders, stale checkpoint folders) under
    ``work_dir`` after a successful run; returns the bytes freed. Logs, caches and scores stay."""
    freed = 0
    for path in sorted(work_dir.rglob("*")):
        if path.is_dir() and (path.name.startswith("checkpoint-") or ".stale-" in path.name) and path.exists():
            freed += disk_size(path)
            shutil.rmtree(path, ignore_errors=True)
    return freed


@dataclass
class RunOutput:
    """What a compress run gives back: its report card, the compressed model and its tokenizer."""

    card: dict
    model: object
    tokenizer: object


def compress(task: Task, config: RunConfig, out_dir: str | Path, meta: dict | None = None,
             overwrite: bool = False) -> dict:
    """Run the whole job and write ``out_dir/{model/, report.json, report.md, *.png}``;
    returns the report card. Everything is checked before the first write (``validate.validate_run``);
    an ``out_dir`` holding another run's output is refused unless ``overwrite``. The resolved recipe
    (``meta``: name, paper, scale … of a recipe file, then the config tree) is saved as
    ``model/recipe.yaml`` and in the card."""
    return run_compress(task, config, out_dir, meta, overwrite).card


def run_compress(task: Task, config: RunConfig, out_dir: str | Path, meta: dict | None = None,
                 overwrite: bool = False, model=None, tokenizer=None) -> RunOutput:
    """``compress`` that also returns the compressed model object; ``model`` (with ``tokenizer``) is
    a model object to compress instead of loading ``config.model`` (which then only labels it)."""
    method, objective, then = resolve(config)  # then: e.g. quantize after a structural method
    key = validate_run(task, config, out_dir, overwrite, model)
    if model is not None:
        check_model_object(model, kind_for(task, config.method, config.model_kind).name, task)
    recipe = {"command": "compress", **(meta or {}), **to_recipe(config)}  # `forgetless run` on it reruns it
    with output_lock(out_dir), disk_full_guard(out_dir):  # a second run on the same folder stops here
        prepare_output(out_dir, key, overwrite, run_identity(config), run_inputs(task, config))
        remove_leftovers(out_dir)  # .model.tmp-* of a killed save (we hold the folder's lock)
        return _compress(task, config, Path(out_dir), method, objective, then, recipe, model, tokenizer)


def _compress(task: Task, config: RunConfig, out_dir: Path, method, objective, then, recipe,
              model=None, given_tokenizer=None) -> RunOutput:
    work_dir = out_dir / "work"
    kind = kind_for(task, config.method, config.model_kind)
    for extra in config.then:  # validate_run checked the main method
        check_compatible(task, extra, config.objective, config.model_kind)
    work_dir.mkdir(parents=True, exist_ok=True)
    transformers.set_seed(config.seed)

    progress.enabled = config.progress  # one switch for every progress bar of the run (tqdm, stderr)
    steps = 5 + len(config.then) + int(config.robustness)  # teacher, objective, compress, then…, evaluate, CLEVER, speed
    numbers = iter(range(1, steps + 1))

    def step(name: str) -> None:  # a numbered stage line: ``[forgetless] [3/7] compress with heads``
        _stage(f"[{next(numbers)}/{steps}] {name}")

    step("teacher")
    teacher, tokenizer, teacher_info = train_teacher(task, config, work_dir, kind, model, given_tokenizer)
    source = model if model is not None else config.model
    ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=teacher, work_dir=work_dir,
                             train_config=config.train, objective=objective, seed=config.seed,
                             base_model=source, kind=kind,
                             cache_dir=Path(config.cache_dir) if config.cache_dir else work_dir / "cache")
    step(f"objective {config.objective.name}")
    ctx.objective_extras = objective.prepare(ctx) or None

    step(f"compress with {config.method.name}" + ("" if config.method.recovers else " (post-training: no recovery)"))
    transformers.set_seed(config.seed)
    if config.student_init == "teacher":
        student = copy.deepcopy(teacher)
    else:
        student, _ = kind.load_model(source, task, config.seed, tokenizer)
    compressed = method.compress(student, ctx).eval()
    for extra in then:
        step(f"then {extra.config.name}")
        compressed = extra.compress(compressed, ctx).eval()
    artifacts = method.artifacts()
    model_dir = save_model(compressed, out_dir / "model", tokenizer, metadata={
        "method": method.describe(), "objective": config.objective.name, "task": task.name, "task_kind": task.kind,
        "kind": kind.name,
        "artifacts": artifacts, "then": [m.describe() for m in then]})

    step("evaluate base and compressed on " + ", ".join(task.eval_sets()))
    deployed = deploy(compressed, config.eval.runtime, kind, work_dir)  # as it will run (metrics/runtime.py)
    eval_config = config.eval if config.eval.perplexity_file else replace(
        config.eval, perplexity_file=default_perplexity_file(config.task.data_dir))
    results = {role: kind.evaluate(model, tokenizer, task, eval_config, config.train.max_length, config.progress)
               for role, model in (("base", teacher), ("compressed", deployed))}
    predictions = {role: results[role].pop("predictions") for role in results}
    robustness = None
    if config.robustness:
        if kind.name != "classifier":
            raise ConfigError("CLEVER estimates need a classifier's logits; they do not apply to seq2seq models")
        step(f"CLEVER robustness estimates ({config.clever.examples} dev examples per model)")
        robustness = {"clever": {role: _clever_summary(model, tokenizer, task, config.clever, work_dir, role)
                                 for role, model in (("base", teacher), ("compressed", compressed))}}
    step(f"speed: base vs compressed, {config.speed.repeats} interleaved repeats")
    speed = kind.speed(teacher, deployed, config.speed)
    teacher_dir = Path(teacher_info.get("path") or work_dir / "teacher")
    sizes = {"base": {**parameter_counts(teacher), "disk_bytes": disk_size(teacher_dir) if teacher_dir.exists()
                      else None, "source": teacher_info},
             "compressed": {**parameter_counts(compressed), "disk_bytes": disk_size(model_dir), "path": str(model_dir)}}
    for role, folder in (("base", teacher_dir), ("compressed", model_dir)):
        sizes[role]["bits_per_parameter"] = bits_per_parameter(folder, sizes[role]["total"])
    started = config.teacher if (config.teacher and config.student_init == "teacher") else config.model
    card = build_card(Measurements(
        task=task, run=config, method=method, then=then, objective=objective, kind=kind, results=results,
        predictions=predictions, sizes=sizes, speed=speed, notes=ctx.notes, command=" ".join(sys.argv),
        robustness=robustness, training=_training(config, teacher_info, ctx.fine_tunes),
        calibration=calibration_section(task, predictions),  # ECE, confidence: hard vs easy, base vs compressed
        agreement=agreement(predictions), recipe=drop_empty(recipe), provenance=teacher_info.get("provenance"),
        model={"compressed": started, "model_type": getattr(compressed.config, "model_type", None)}))
    dump_recipe(recipe, model_dir / "recipe.yaml")  # beside the model and in the card: `forgetless run` reruns it
    plots = method.plots(out_dir)
    write_card(card, out_dir, extra_plots=plots, prediction_rows=prediction_rows(task, predictions))
    write_model_card(model_dir, model_card_summary(card))
    if not config.keep_work:
        freed = clean_work(work_dir)
        if freed:
            _stage(f"deleted {freed / 1e6:.0f} MB of training checkpoints in {work_dir} (keep them with --keep-work)")
    return RunOutput(card, compressed, tokenizer)


def _clever_summary(model, tokenizer, task: Task, config: CleverConfig, work_dir: Path, role: str) -> dict:
    """CLEVER summary for the card; per-example details go to ``work_dir/clever-<role>.json``."""
    result = clever_evaluate(model, tokenizer, task.dev, config)
    atomic_write_json(work_dir / f"clever-{role}.json", result)
    return {k: v for k, v in result.items() if k != "per_example"}


def _training(config: RunConfig, teacher_info: dict, fine_tunes: list[dict]) -> dict:
    """Epochs of the base and the compressed model (base unknown when ``--teacher`` was given)."""
    teacher_train = config.teacher_train or config.train
    base = None if config.teacher or teacher_train.max_steps > 0 else float(teacher_train.epochs)
    if config.base == "as-is":
        base = 0.0
    if any(run["epochs"] is None for run in fine_tunes):  # max_steps runs: epochs not comparable
        base = None
    runs = [{"name": r["name"], "epochs": r["epochs"] or 0.0} for r in fine_tunes]
    return {**training_section(base, config.student_init, runs), "base": config.base}


def _stage(name: str) -> None:
    print(f"[forgetless] {name}", file=sys.stderr, flush=True)
