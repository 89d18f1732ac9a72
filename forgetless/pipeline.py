"""The one pipeline, for every kind of task and model, computed in memory:

task → base (``teacher.py``: fine-tune, load, or as it is) → objective preparation → method (and the
``--then`` methods) → evaluate base and compressed → CLEVER → speed side by side → ``Run`` (model,
tokenizer, measurements).

``run`` writes nothing but its work folder (training checkpoints, caches, scores): the one given,
else a temporary folder removed at the end when something is trained, else none at all.
``save.save_run`` (``Run.save``) writes the outputs. ``run_and_save`` is what ``forgetless
compress``, recipes and sweeps call: the output rule (validate before the first write, lock, resume,
the previous report moved aside), ``run`` into ``OUT/work``, ``save_run`` into ``OUT``, training
checkpoints removed.

What differs between a classifier, an encoder-decoder and a causal LM lives in ``forgetless.kinds``
(``kind_for(task, method)``); methods, objectives, the Trainer and the report card are shared.
"""
from __future__ import annotations

import contextlib
import copy
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import transformers
from torch import nn

from . import progress
from .arguments import run_device
from .progress import stage
from .config import CleverConfig, RunConfig
from .data.llm_tasks import with_calibration, within_model_window
from .data.task import Task
from .errors import OutputFolderError
from .fsutil import atomic_write_json, disk_full_guard, remove_leftovers
from .kinds import kind_for
from .llm.cache import digests_kept
from .methods._shared.calibration import calibration_texts
from .methods.base import CompressionContext
from .methods._shared.uniform_check import budgeted_method, run_uniform_check
from .metrics.calibration import calibration_section
from .metrics.clever import clever_evaluate
from .metrics.memory import PeakMemory
from .metrics.perplexity import default_perplexity_file
from .metrics.runtime import agreement, deploy
from .metrics.size import bits_per_parameter, disk_size, parameter_counts, started_from
from .metrics.speed import in_process_engine, not_timed, timed, unchanged_reason, untimed_reason
from .outputs import check_output, claim_output, mark_output, output_lock
from .recipes.dump import drop_empty
from .registry import METHODS, OBJECTIVES
from .report.card import build_card
from .report.card_types import Card
from .report.honest import training_section
from .report.measurements import Measurements
from .report.naming import chain_name
from .save import save_run
from .teacher import train_teacher
from .tree import to_recipe
from .validate import check_run_output, model_dims, prepare_output, run_identity, run_inputs, run_key, validate_run


@dataclass
class Run:
    """A finished compression run, in memory: the compressed ``model``, its ``tokenizer`` and its
    ``measurements`` (``report/measurements.py``); ``card`` is the typed report card built from them
    (``report/card_types.Card``; after ``save``, the card as written, with the saved folder's sizes),
    ``save`` writes every output (``save.save_run``)."""

    model: nn.Module
    tokenizer: object
    measurements: Measurements
    _card: Card | None = field(default=None, repr=False)

    @property
    def card(self) -> Card:
        if self._card is None:
            self._card = build_card(self.measurements)
        return self._card

    def save(self, out_dir) -> Path:
        """Write every output of the run into ``out_dir`` (a new or empty folder), as ``forgetless
        compress`` would (``model/`` reloads with ``forgetless.load_model(out_dir / "model")``)."""
        folder = Path(str(out_dir)).expanduser()
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise OutputFolderError(f"save {out_dir}: exists and is not an empty folder; name a new or empty folder")
        task, config = self.measurements.task, self.measurements.run
        check_output(folder, "save", command="compress", inputs=run_inputs(task, config))
        with output_lock(folder, "save"):
            mark_output(folder, "compress", key=run_key(task, config), config=run_identity(config))
            self._card = save_run(self, folder)
            return folder


def run(task: Task, config: RunConfig, *, model=None, tokenizer=None, work_dir: str | Path | None = None,
        checked: bool = False) -> Run:
    """Compress as ``config`` says on ``task`` and measure base and compressed; returns the ``Run``.
    ``model`` (with ``tokenizer``): a model object compressed instead of loading ``config.model``
    (which then only labels it; the object is copied, never changed). ``work_dir``: the run's work
    folder (default: a temporary one when something is trained, else none). Everything is checked
    first (``validate.validate_run``) unless the caller did (``checked``)."""
    if not checked:
        validate_run(task, config, model)
    task = with_calibration(task, config)  # an LLM task's protocol names the calibration texts used
    task = within_model_window(task, (model_dims(model if model is not None else config.model) or {}).get("max_positions"))
    given = Path(work_dir) if work_dir is not None else None
    with _work_folder(given, trains(config)) as work:
        return _steps(task, config, work, model, tokenizer)


def trains(config: RunConfig) -> bool:
    """Whether a run trains anything (a teacher, a method's recovery) or exports a graph: it needs a
    work folder."""
    teacher = config.base == "fine-tune" and not config.teacher
    return teacher or any(m.recovers for m in (config.method, *config.then)) or config.eval.runtime == "onnxruntime"


@contextlib.contextmanager
def _work_folder(given: Path | None, needed: bool):
    if given is not None or not needed:
        if given is not None:
            given.mkdir(parents=True, exist_ok=True)
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="forgetless-work-") as folder:
        yield Path(folder)


def run_and_save(task: Task, config: RunConfig, out_dir: str | Path, meta: dict | None = None,
                 overwrite: bool = False, model=None, tokenizer=None) -> Run:
    """``run`` into ``out_dir/work`` and ``save_run`` into ``out_dir``, under the output rule: the
    folder and the run are checked before anything is written (another run's output only with
    ``overwrite``), the folder is locked, a rerun of the same run resumes from its checkpoints and
    first moves the old report aside; training checkpoints are removed after success (unless
    ``keep_work``). ``meta``: name, paper, scale … of a recipe file, saved in the resolved recipe."""
    key = check_run_output(task, config, out_dir, overwrite)
    validate_run(task, config, model)
    with claim_output(out_dir), disk_full_guard(out_dir):  # a second run on the same folder stops here
        prepare_output(out_dir, key, overwrite, run_identity(config), run_inputs(task, config))
        remove_leftovers(out_dir)  # .model.tmp-* of a killed save (we hold the folder's lock)
        work_dir = Path(out_dir) / "work"
        result = run(task, config, model=model, tokenizer=tokenizer, work_dir=work_dir, checked=True)
        result._card = save_run(result, out_dir, meta)  # the card as written: with the saved folder's sizes
        if not config.keep_work:
            freed = clean_work(work_dir)
            if freed:
                stage(f"deleted {freed / 1e6:.0f} MB of training checkpoints in {work_dir} (keep them with --keep-work)")
        return result


def resolve(config: RunConfig):
    """(method, objective, then) implementation instances of a run's configs."""
    return METHODS.build(config.method), OBJECTIVES.build(config.objective), [METHODS.build(c) for c in config.then]


def _steps(task: Task, config: RunConfig, work_dir: Path | None, model, given_tokenizer) -> Run:
    """The run's steps, each announced by a numbered stage line (``[forgetless] [3/7] compress …``) in the
    words of the run: ``base`` for a model taken as it is, ``teacher`` for one fine-tuned; the objective
    only when something trains."""
    method, objective, then = resolve(config)  # then: e.g. quantize after a structural method
    kind = kind_for(task, config.method, config.model_kind)
    transformers.set_seed(config.seed)
    progress.enabled = config.progress  # one switch for every progress bar of the run (tqdm, stderr)
    students_train = any(m.config.recovers for m in (method, *then))
    # base, objective (when trained), compress, then…, evaluate, CLEVER, speed
    steps = 4 + int(students_train) + len(config.then) + int(config.robustness)
    numbers = iter(range(1, steps + 1))

    def step(name: str) -> None:
        stage(f"[{next(numbers)}/{steps}] {name}")

    step("base" if config.base == "as-is" else "teacher")
    device = run_device(config.train.device)  # one device for every step: each model is moved there
    teacher, tokenizer, teacher_info = train_teacher(task, config, work_dir, kind, model, given_tokenizer)
    teacher = teacher.to(device)
    ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=teacher, work_dir=work_dir,
                             train_config=config.train, objective=objective, seed=config.seed, device=device,
                             base_model=model if model is not None else config.model, kind=kind,
                             cache_dir=Path(config.cache_dir) if config.cache_dir else
                             work_dir / "cache" if work_dir is not None else None,
                             calibration=calibration_texts(config.calibration_data, config.task.data_dir,
                                                           "--calibration-data") if config.calibration_data else None)
    with PeakMemory() as peak:  # the compression step's own peak (metrics/memory.py)
        compressed = compress_student(ctx, config, method, then, step)
    sizes = _sizes(teacher, compressed, teacher_info, work_dir)  # before measure, which may release the base
    measured = replace(measure(ctx, config, teacher, compressed, method, then, step),
                       sizes=sizes, training=_training(config, teacher_info, ctx.fine_tunes),
                       provenance=teacher_info.get("provenance"), compress_memory=peak.result)
    return Run(compressed, tokenizer, measured)


def compress_student(ctx: CompressionContext, config: RunConfig, method, then: list, step):
    """The objective prepared (only when a method trains: an objective is how it trains), the
    student (a copy of the teacher, or the pretrained model) compressed by the method, then by each
    ``--then`` method; returns the compressed model."""
    students_train = any(m.config.recovers for m in (method, *then))
    if students_train:  # post-training methods have no objective: no step for it
        step(f"objective {config.objective.name}")
        ctx.objective_extras = ctx.objective.prepare(ctx) or None
    step(f"compress with {config.method.name}" + ("" if config.method.recovers else " (post-training: no recovery)"))
    transformers.set_seed(config.seed)
    student = copy.deepcopy(ctx.teacher) if config.student_init == "teacher" else \
        ctx.kind.load_model(ctx.base_model, ctx.task, config.seed, ctx.tokenizer)[0]
    compressed = method.compress(student.to(ctx.device), ctx).eval()
    for extra in then:
        step(f"then {extra.config.name}")
        compressed = extra.compress(compressed, ctx).eval()
    return compressed


def measure(ctx: CompressionContext, config: RunConfig, teacher, compressed, method, then: list,
            step) -> Measurements:
    """Base and compressed evaluated on every set of the task (the compressed model as it will run:
    ``--runtime``), CLEVER when asked, speed side by side; the measurements of the run."""
    task, kind, tokenizer = ctx.task, ctx.kind, ctx.tokenizer
    step("evaluate base and compressed on " + ", ".join(task.eval_sets()))
    deployed = deploy(compressed, config.eval.runtime, kind, ctx.work_dir)  # as it will run (metrics/runtime.py)
    eval_config = config.eval if config.eval.perplexity_file else replace(
        config.eval, perplexity_file=default_perplexity_file(config.task.data_dir))
    models = {"base": teacher, "compressed": deployed}
    unchanged = unchanged_reason([method, *then], deployed, config.eval.runtime,
                                 chain_name([m.describe() for m in (method, *then)]))
    why_not = untimed_reason(config.speed.mode, unchanged)
    budgeted = budgeted_method([method, *then])
    base_needed = why_not is None or config.robustness or budgeted is not None
    with digests_kept():  # the cache keys of the answers, the rounds and the evaluations: each model hashed once
        divergence = compare_answers_of(task, models, tokenizer, config.eval.batch_size, config.seed)
        if getattr(task.suite, "until_interval", None) is not None:  # both together, round by round (stopping.py)
            stage(f"base and compressed, round by round: {evaluation_words(task)}")
            results = kind.evaluate_pair(models, tokenizer, task, eval_config, config.progress)
        else:
            results = {}
            for role, m in models.items():
                with progress.scope(role):  # "base: lm-eval …", "compressed: lm-eval …" (progress.py)
                    stage(f"{role}: {evaluation_words(task)}")
                    results[role] = kind.evaluate(m, tokenizer, task, eval_config, config.train.max_length,
                                                  config.progress)
                if role == "base" and not base_needed:
                    release(teacher)
    predictions = {role: results[role].pop("predictions") for role in results}
    if budgeted is not None:  # a bit budget's mix against the uniform format of its size, on the same items
        stage(f"uniform check: {budgeted.config.name}'s mix against one format of the same or larger size")
        run_uniform_check(ctx, budgeted, teacher, lambda m: kind.evaluate(
            m, tokenizer, task, eval_config, config.train.max_length, config.progress),
            predictions["compressed"], predictions["base"], config.seed)
    if divergence is not None:
        results["compressed"]["divergence"] = divergence
    robustness = None
    if config.robustness:  # a classifier's (validate.py)
        step(f"CLEVER robustness estimates ({config.clever.examples} dev examples per model)")
        robustness = {"clever": {role: _clever_summary(m, tokenizer, task, config.clever, ctx.work_dir, role)
                                 for role, m in (("base", teacher), ("compressed", compressed))}}
    if why_not:
        step(why_not)
        speed = not_timed(why_not, config.speed.mode)
    else:
        step(f"speed: base vs compressed, {config.speed.repeats} interleaved repeats (--speed {config.speed.mode})")
        speed = timed(config.speed.mode, kind.speed, teacher, deployed, config.speed)
        speed["engine"] = in_process_engine(deployed, config.eval.runtime)  # what ran the timing above
    speed["meaningful"] = unchanged is None  # a speed difference can be real: the dense computation changed
    started = config.teacher if (config.teacher and config.student_init == "teacher") else config.model
    return Measurements(
        task=task, run=config, method=method, then=then, objective=ctx.objective, kind=kind, results=results,
        predictions=predictions, sizes={}, speed=speed, notes=ctx.notes, command=" ".join(sys.argv),
        robustness=robustness, calibration=calibration_section(task, predictions),  # ECE, confidence
        agreement=agreement(predictions), recipe=drop_empty({"command": "compress", **to_recipe(config)}),
        calibration_texts=ctx.calibration, device=ctx.device,
        model={"compressed": started, "model_type": getattr(compressed.config, "model_type", None)})


def release(model: nn.Module) -> None:
    """Free a model's weights once nothing needs them (the base after its evaluation and the divergence, when
    neither the speed step, CLEVER nor a budget's uniform check runs it again): its tensors move to the meta
    device, so the compressed model generates without the base's weights in memory. The module stays (its
    config, its parameter names); the base is always forgetless's own object (``teacher.train_teacher`` loads
    or copies it), never the caller's."""
    model.to("meta")


def compare_answers_of(task: Task, models: dict, tokenizer, batch_size: int, seed: int) -> dict | None:
    """With ``--divergence-prompts``: the compressed model scored along the base's own greedy answers
    (``llm/answers.compare_answers``), before the suite, so that a prompt too long for the model stops the
    run early; None without."""
    prompts = getattr(task.suite, "divergence", None)
    if prompts is None:
        return None
    from .llm.answers import compare_answers

    stage(f"divergence along the base's answers to {len(prompts.prompts)} prompts of {prompts.source}")
    return compare_answers(models["base"], models["compressed"], tokenizer, prompts, batch_size, seed)


def evaluation_words(task: Task) -> str:
    """What evaluating one model on ``task`` is, for its stage line: ``lm-eval on 6 task(s), then
    wikitext2 perplexity`` for an LLM suite, else the sets and their sizes."""
    suite = task.suite
    if suite is None:
        return "scoring " + ", ".join(f"{name} ({len(s)})" for name, s in task.eval_sets().items())
    return f"lm-eval on {len(suite.sets)} task(s)" + (f", then {suite.perplexity.name} perplexity"
                                                      if suite.perplexity else "")


def _sizes(teacher, compressed, teacher_info: dict, work_dir: Path | None) -> dict:
    """Parameter counts of both models and the base's folder on disk (the compressed model's folder
    joins when ``save_run`` writes it)."""
    folder = teacher_info.get("path") or (work_dir / "teacher" if work_dir is not None else None)
    folder = Path(folder) if folder and Path(folder).exists() else None
    base = parameter_counts(teacher)
    return {"base": {**base, "disk_bytes": disk_size(folder) if folder else None, "source": teacher_info,
                     "started_from": started_from(teacher_info, folder),
                     "bits_per_parameter": bits_per_parameter(folder, base["total"]) if folder else None},
            "compressed": {**parameter_counts(compressed), "disk_bytes": None, "path": None,
                           "bits_per_parameter": None}}


def clean_work(work_dir: Path) -> int:
    """Delete training checkpoints (``checkpoint-*`` folders, stale checkpoint folders) under
    ``work_dir`` after a successful run; returns the bytes freed. Logs, caches and scores stay."""
    freed = 0
    for path in sorted(Path(work_dir).rglob("*")):
        if path.is_dir() and (path.name.startswith("checkpoint-") or ".stale-" in path.name) and path.exists():
            freed += disk_size(path)
            shutil.rmtree(path, ignore_errors=True)
    return freed


def _clever_summary(model, tokenizer, task: Task, config: CleverConfig, work_dir: Path | None, role: str) -> dict:
    """CLEVER summary for the card; per-example details go to ``work_dir/clever-<role>.json``."""
    result = clever_evaluate(model, tokenizer, task.dev, config)
    if work_dir is not None:
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
