"""The one pipeline, for every kind of task and model:

task → teacher (fine-tune or load) → objective preparation → compress (method lifecycle) → save
→ evaluate base and compressed → speed side by side → report card.

What differs between a classifier and an encoder-decoder lives in ``forgetless.kinds`` (picked by
``kind_for(task, method)``); methods, objectives, the Trainer and the report card are shared. Each
step is a plain function so it can be called from Python as well as the CLI.
"""
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
from .errors import ConfigError
from .evaluate.clever import CleverConfig, clever_evaluate
from .evaluate.runtime import check_runtime, deploy, deployment_section
from .evaluate.size import disk_size, parameter_counts
from .evaluate.speed import SpeedConfig
from .fsutil import atomic_write_json
from .kinds import KINDS, check_compatible, kind_for
from .methods import METHODS, CompressionContext
from .methods.then import resolve_then
from .models.io import is_forgetless_folder, load_model, read_manifest, save_model
from .objectives import OBJECTIVES
from .report.card import build_card, write_card
from .training.trainer import TrainConfig, fine_tune

log = logging.getLogger(__name__)


@dataclass
class EvalConfig:
    """Evaluation settings: batch size, and for generating models the decoding length / beams."""

    batch_size: int = 64
    max_new_tokens: int = 32
    num_beams: int = 1
    meteor: bool = True  # METEOR on generation tasks (needs nltk; WordNet when available offline)
    perplexity_file: str | None = None  # causal-lm: held-out perplexity on this text file (one text per line)
    runtime: str = "torch"  # compressed model evaluated and timed under: torch | torch-bf16 | onnxruntime

    def __post_init__(self) -> None:
        check_runtime(self.runtime)
        if self.batch_size < 1 or self.max_new_tokens < 1 or self.num_beams < 1:
            raise ConfigError("evaluation batch_size, max_new_tokens and num_beams must be >= 1")


@dataclass
class RunConfig:
    """Everything that defines one compression run (recorded in the report card)."""

    model: str = "minilm"
    method: str = "truncate"
    method_options: dict = field(default_factory=dict)
    then: list[str] = field(default_factory=list)  # methods applied after `method`: METHOD[:OPTION=VALUE,...]
    objective: str | None = None  # None: the method's default objective (ce; nash-distil for nash / cofi)
    objective_options: dict = field(default_factory=dict)
    teacher: str | None = None  # a forgetless folder holding an already fine-tuned teacher (read only)
    student_init: str = "teacher"  # "teacher": start from the fine-tuned teacher; "pretrained": from the base model
    train: TrainConfig = field(default_factory=TrainConfig)
    teacher_train: TrainConfig | None = None
    speed: SpeedConfig = field(default_factory=SpeedConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    clever: CleverConfig | None = None  # CLEVER estimates of both models on a fixed dev subset
    cache_dir: str | None = None  # shared cache for objectives (default: OUT/work/cache)
    model_kind: str = "auto"  # classifier | seq2seq | causal-lm (zero-shot label likelihood); auto: by task and method
    seed: int = 0
    progress: bool = True

    def __post_init__(self) -> None:
        if self.student_init not in ("teacher", "pretrained"):
            raise ConfigError(f"student_init must be 'teacher' or 'pretrained', got {self.student_init!r}")


def resolve(config: RunConfig):
    """(method, objective) instances for a run; unknown names and options are errors."""
    method = METHODS.get(config.method)(METHODS.make_config(config.method, config.method_options))
    name = config.objective or method.default_objective
    objective = OBJECTIVES.get(name)(OBJECTIVES.make_config(name, config.objective_options))
    return method, objective


def train_teacher(task: Task, config: RunConfig, work_dir: Path, kind=None):
    """Fine-tune (or load) the uncompressed model on the task. A finished teacher is kept in
    ``work_dir/teacher`` under a key of task content, model kind, model and training config, and
    reused; ``config.teacher`` is only read."""
    kind = kind or kind_for(task)
    if config.teacher:
        model, tokenizer = kind.load_model(config.teacher, task, config.seed)
        return model, tokenizer, {"source": config.teacher, "reused": True}
    train_config = config.teacher_train or config.train
    key = _key({"model": config.model, "kind": kind.name, "task": task.train.fingerprint(),
                "labels": task.label_names, "train": asdict(train_config), "seed": config.seed})
    folder = work_dir / "teacher"
    if is_forgetless_folder(folder) and read_manifest(folder)["metadata"].get("key") == key:
        model, tokenizer = load_model(folder)
        _stage(f"reusing the fine-tuned teacher in {folder}")
        return model, tokenizer or task.tokenizer, {"source": config.model, "reused": True, "path": str(folder)}
    transformers.set_seed(config.seed)
    model, tokenizer = kind.load_model(config.model, task, config.seed)
    model = fine_tune(model, tokenizer, kind.training_set(task, tokenizer), work_dir / "train-teacher", train_config)
    save_model(model, folder, tokenizer, metadata={"key": key, "role": "teacher", "kind": kind.name})
    return model, tokenizer, {"source": config.model, "reused": False, "path": str(folder)}


def compress(task: Task, config: RunConfig, out_dir: str | Path) -> dict:
    """Run the whole job and write ``out_dir/{model/, report.json, report.md, *.png}``;
    returns the report card."""
    out_dir = Path(out_dir)
    work_dir = out_dir / "work"
    method, objective = resolve(config)
    then = resolve_then(config.then)  # e.g. quantize:dtype=int8 after a structural method (methods/then.py)
    kind = kind_for(task, method, config.model_kind)
    for checked in (method, *then):
        check_compatible(task, checked, objective, config.model_kind)
    work_dir.mkdir(parents=True, exist_ok=True)
    transformers.set_seed(config.seed)

    _stage("teacher")
    teacher, tokenizer, teacher_info = train_teacher(task, config, work_dir, kind)
    ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=teacher, work_dir=work_dir,
                             train_config=config.train, objective=objective, seed=config.seed,
                             base_model=config.model, kind=kind,
                             cache_dir=Path(config.cache_dir) if config.cache_dir else work_dir / "cache")
    _stage(f"objective {objective.name}")
    ctx.objective_extras = objective.prepare(ctx) or None

    _stage(f"compress with {method.name}")
    transformers.set_seed(config.seed)
    if config.student_init == "teacher":
        student = copy.deepcopy(teacher)
    else:
        student, _ = kind.load_model(config.model, task, config.seed)
    compressed = method.compress(student, ctx).eval()
    for extra in then:
        _stage(f"then {extra.name}")
        compressed = extra.compress(compressed, ctx).eval()
    artifacts = method.artifacts() if hasattr(method, "artifacts") else {}
    model_dir = save_model(compressed, out_dir / "model", tokenizer, metadata={
        "method": method.describe(), "objective": objective.name, "task": task.name, "kind": kind.name,
        "artifacts": artifacts, "then": [m.describe() for m in then]})

    _stage("evaluate")
    deployed = deploy(compressed, config.eval.runtime, kind, work_dir)  # as it will run (evaluate/runtime.py)
    results = {role: kind.evaluate(model, tokenizer, task, config.eval, config.train.max_length, config.progress)
               for role, model in (("base", teacher), ("compressed", deployed))}
    predictions = {role: results[role].pop("predictions") for role in results}
    atomic_write_json(work_dir / "predictions.json", predictions)
    robustness = None
    if config.clever is not None:
        if kind.name != "classifier":
            raise ConfigError("CLEVER estimates need a classifier's logits; they do not apply to seq2seq models")
        _stage("CLEVER robustness estimates")
        robustness = {"clever": {role: _clever_summary(model, tokenizer, task, config.clever, work_dir, role)
                                 for role, model in (("base", teacher), ("compressed", compressed))}}
    _stage("speed")
    speed = kind.speed(teacher, deployed, config.speed)
    teacher_dir = work_dir / "teacher"
    sizes = {"base": {**parameter_counts(teacher), "disk_bytes": disk_size(teacher_dir) if teacher_dir.exists()
                      else None, "source": teacher_info},
             "compressed": {**parameter_counts(compressed), "disk_bytes": disk_size(model_dir), "path": str(model_dir)}}
    card = build_card(task=task, run=config, method=method, objective=objective, kind=kind, results=results,
                      sizes=sizes, speed=speed, notes=ctx.notes, command=" ".join(sys.argv), robustness=robustness)
    card["method"]["then"] = [{**m.describe(), "structured": m.structured} for m in then]
    deployment_section(card, config.eval.runtime, [method, *then], predictions)
    plots = method.plots(out_dir) if hasattr(method, "plots") else []
    write_card(card, out_dir, extra_plots=plots)
    return card


def evaluate_saved(model_path: str, task: Task, out: str | Path | None = None, batch_size: int = 64,
                   max_length: int = 128) -> dict:
    """Scores of a saved model (forgetless folder or HF folder) on every set of ``task``."""
    kind = kind_for(task)
    if is_forgetless_folder(model_path) and read_manifest(model_path)["metadata"].get("kind") == "seq2seq":
        kind = KINDS["seq2seq"]
    model, tokenizer = kind.load_model(model_path, task)
    result = kind.evaluate(model, tokenizer, task, EvalConfig(batch_size=batch_size), max_length)
    result.pop("predictions")
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
