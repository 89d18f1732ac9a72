"""The main job: task → teacher → (objective preparation) → compress → save → evaluate → speed →
report card. Each step is a plain function so it can be called from Python as well as the CLI."""
from __future__ import annotations

import copy
import hashlib
import json
import logging
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import transformers

from .data.task import Task
from .evaluate.accuracy import evaluate_task
from .evaluate.clever import CleverConfig, clever_evaluate
from .evaluate.size import disk_size, parameter_counts
from .evaluate.speed import SpeedConfig, compare_speed
from .fsutil import atomic_write_json
from .methods import METHODS, CompressionContext
from .models.io import is_forgetless_folder, load_model, save_model
from .models.loading import load_classifier
from .objectives import OBJECTIVES
from .report.card import build_card, write_card
from .training.trainer import TrainConfig, fine_tune

log = logging.getLogger(__name__)


@dataclass
class RunConfig:
    """Everything that defines one compression run (recorded in the report card)."""

    model: str = "minilm"
    method: str = "truncate"
    method_options: dict = field(default_factory=dict)
    objective: str = "ce"
    objective_options: dict = field(default_factory=dict)
    teacher: str | None = None  # a forgetless folder holding an already fine-tuned teacher
    student_init: str = "teacher"  # "teacher": start from the fine-tuned teacher; "pretrained": from the base model
    train: TrainConfig = field(default_factory=TrainConfig)
    teacher_train: TrainConfig | None = None
    speed: SpeedConfig = field(default_factory=SpeedConfig)
    clever: CleverConfig | None = None  # CLEVER estimates of both models on a fixed dev subset
    eval_batch_size: int = 64
    seed: int = 0
    progress: bool = True


def train_teacher(task: Task, config: RunConfig, work_dir: Path):
    """Fine-tune (or reload) the uncompressed model on the task. A finished teacher is kept in
    ``work_dir/teacher`` under a key of task content, model and training config, and reused."""
    if config.teacher:
        model, tokenizer = load_classifier(config.teacher, task.label_names)
        return model, tokenizer, {"source": config.teacher, "reused": True}
    train_config = config.teacher_train or config.train
    key = _key({"model": config.model, "task": task.train.fingerprint(), "labels": task.label_names,
                "train": asdict(train_config)})
    folder = work_dir / "teacher"
    if is_forgetless_folder(folder) and json.loads((folder / "forgetless.json").read_text())["metadata"].get("key") == key:
        model, tokenizer = load_model(folder)
        return model, tokenizer, {"source": config.model, "reused": True, "path": str(folder)}
    transformers.set_seed(config.seed)
    model, tokenizer = load_classifier(config.model, task.label_names, seed=config.seed)
    model = fine_tune(model, tokenizer, task.train, work_dir / "train-teacher", train_config)
    save_model(model, folder, tokenizer, metadata={"key": key, "role": "teacher"})
    return model, tokenizer, {"source": config.model, "reused": False, "path": str(folder)}


def compress(task: Task, config: RunConfig, out_dir: str | Path) -> dict:
    """Run the whole job and write ``out_dir/{model/, report.json, report.md, *.png}``;
    returns the report card."""
    out_dir = Path(out_dir)
    work_dir = out_dir / "work"
    work_dir.mkdir(parents=True, exist_ok=True)
    transformers.set_seed(config.seed)
    method = METHODS.get(config.method)(METHODS.make_config(config.method, config.method_options))
    objective = OBJECTIVES.get(config.objective)(OBJECTIVES.make_config(config.objective, config.objective_options))

    _stage("teacher")
    teacher, tokenizer, teacher_info = train_teacher(task, config, work_dir)
    ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=teacher, work_dir=work_dir,
                             train_config=config.train, objective=objective, seed=config.seed,
                             base_model=config.model)
    _stage(f"objective {config.objective}")
    ctx.objective_extras = objective.prepare(ctx) or None

    _stage(f"compress with {config.method}")
    transformers.set_seed(config.seed)
    if config.student_init == "teacher":
        student = copy.deepcopy(teacher)
    else:
        student, _ = load_classifier(config.model, task.label_names, seed=config.seed)
    compressed = method.compress(student, ctx).eval()
    artifacts = method.artifacts() if hasattr(method, "artifacts") else {}
    model_dir = save_model(compressed, out_dir / "model", tokenizer, metadata={
        "method": method.describe(), "objective": config.objective, "task": task.name, "artifacts": artifacts})

    _stage("evaluate")
    results = {
        "base": evaluate_task(teacher, tokenizer, task, config.eval_batch_size, config.train.max_length, config.progress),
        "compressed": evaluate_task(compressed, tokenizer, task, config.eval_batch_size, config.train.max_length,
                                    config.progress),
    }
    robustness = None
    if config.clever is not None:
        _stage("CLEVER robustness estimates")
        robustness = {"clever": {role: _clever_summary(model, tokenizer, task, config.clever, work_dir, role)
                                 for role, model in (("base", teacher), ("compressed", compressed))}}
    _stage("speed")
    speed = compare_speed(teacher, compressed, config.speed)
    sizes = {"base": {**parameter_counts(teacher), "disk_bytes": disk_size(work_dir / "teacher")
                      if (work_dir / "teacher").exists() else None, "source": teacher_info},
             "compressed": {**parameter_counts(compressed), "disk_bytes": disk_size(model_dir), "path": str(model_dir)}}
    card = build_card(task=task, run=config, method=method, results=results, sizes=sizes, speed=speed,
                      notes=ctx.notes, command=" ".join(sys.argv), robustness=robustness)
    plots = method.plots(out_dir) if hasattr(method, "plots") else []
    write_card(card, out_dir, extra_plots=plots)
    return card


def evaluate_saved(model_path: str, task: Task, out: str | Path | None = None, batch_size: int = 64,
                   max_length: int = 128) -> dict:
    """Accuracy of a saved model (forgetless folder or HF folder) on every set of ``task``."""
    model, tokenizer = load_classifier(model_path, task.label_names)
    result = evaluate_task(model, tokenizer, task, batch_size, max_length)
    result["params"] = parameter_counts(model)
    if out:
        atomic_write_json(out, result)
    return result


def _clever_summary(model, tokenizer, task: Task, config: CleverConfig, work_dir: Path, role: str) -> dict:
    """CLEVER summary for the card; per-example details go to ``work_dir/clever-<role>.json``."""
    result = clever_evaluate(model, tokenizer, task.dev, config)
    atomic_write_json(work_dir / f"clever-{role}.json", result)
    return {k: v for k, v in result.items() if k != "per_example"}


def _key(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _stage(name: str) -> None:
    print(f"[forgetless] {name}", file=sys.stderr, flush=True)
