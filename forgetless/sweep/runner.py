"""Experiments as a product feature: one compression configuration over several objectives, seeds
and levels of one method option (magnitude sparsity, truncate layers, NASH decoder depth …),
reported as mean ± std per set with F_bias, hard/easy accuracy and plots (the comparisons of
Du et al., "What do Compressed Large Language Models Forget?": Figure 1, Figure 3, Table 7 and
Table 11; NASH's decoder-depth sweeps).

Each (objective, level, seed) run is one call of ``pipeline.run_and_save`` in its own folder
``runs/<objective>-s<level>-seed<seed>``. One teacher per seed is fine-tuned once and shared by
all runs of that seed; teacher probabilities, difficulty variances and JTT error sets go to one
shared cache (``cache/``). A finished run of the same run (``validate.run_key``: settings and data)
is reused, so an interrupted sweep resumes. The sweep names no method or objective: an objective
whose config declares ``uses_difficulty`` reports its sample difficulty (``difficulty_summary``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from ..config import RunConfig, SweepConfig
from ..data.task import Task
from ..errors import ConfigError, OptionError
from ..fsutil import atomic_write_json, remove_leftovers
from ..kinds import kind_for
from ..methods.base import CompressionContext
from ..outputs import RUN_FILE, check_cache, check_output, claim_output, mark_output, read_mark
from ..pipeline import clean_work, run_and_save
from ..recipes.dump import dump_recipe
from ..registry import METHODS, OBJECTIVES
from ..report.card_types import Card
from ..report.rerender import read_card
from ..teacher import train_teacher
from ..tree import flatten, to_recipe
from ..validate import run_identity, run_key, validate_run
from .table import _record, _summary, write_sweep

log = logging.getLogger(__name__)


def task_fingerprint(task: Task) -> str:
    """Content hash of every set of the task (names the sweep's teacher folders)."""
    parts = {"train": task.train.fingerprint(), **{n: s.fingerprint() for n, s in task.eval_sets().items()}}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def run_sweep(task: Task, sweep: SweepConfig, out_dir: str | Path, meta: dict | None = None,
              plots: bool = True) -> dict:
    """Run every (objective, level, seed) combination of ``sweep`` and write ``sweep.json``,
    ``sweep.md`` and plots into ``out_dir``; returns the summary (see :func:`aggregate`).

    ``sweep.levels`` are values of the method option ``sweep.level_option`` (``sparsity`` for
    magnitude); ``sweep.objective_options`` go to every listed objective whose config has them.
    A finished run keeps its model and report; its training checkpoints (``work/``, ~2x the model
    size with optimiser state) are removed unless ``keep_work``. ``teacher_seed`` trains one teacher
    (with that seed) shared by every seed of the sweep; by default each seed has its own. The
    resolved recipe (``meta`` + the tree) is saved as ``out_dir/recipe.yaml`` and in ``sweep.json``,
    and each run's own ``compress`` recipe as ``runs/<run>/model/recipe.yaml`` and in its card:
    ``forgetless run`` on it reruns that one run into ``reruns/<run>``.
    """
    levels, objectives, methods = _plan(sweep)  # unknown names and options fail before any training
    kind = kind_for(task, methods[levels[0]])
    out_dir = check_output(out_dir, command="sweep", inputs={"--model": sweep.model})
    check_cache()  # the teachers are saved there: checked before the first one is trained
    base = RunConfig(**{f.name: getattr(sweep, f.name) for f in dataclasses.fields(RunConfig)})
    base = replace(base, task=replace(base.task, data_seed=sweep.seed if sweep.task.data_seed is None
                                      else sweep.task.data_seed))  # the runs of a sweep share one data split
    for level in levels:  # every run checked before the first teacher is trained (a level beyond the model …)
        for objective in objectives.values():
            try:
                validate_run(task, replace(base, method=methods[level], objective=objective))
            except OptionError as exc:
                level_flag = "--" + sweep.level_option.replace("_", "-")
                message = exc.args[0]  # as written, with flags (str() speaks the caller's language)
                raise OptionError(f"--levels {','.join(map(str, sweep.levels))}: {message}" if message.startswith(
                    f"{level_flag} ") else message) from None
    recipe = {"command": "sweep", **(meta or {}), **to_recipe(sweep)}
    with claim_output(out_dir):  # a second sweep on the same folder stops here; this one resumes its runs
        mark_output(out_dir, "sweep")
        remove_leftovers(out_dir)  # temporary files a killed sweep left (we hold the folder's lock)
        records, difficulty, started = [], {}, time.time()
        setup = {"method": sweep.method.name, "method_options": asdict(sweep.method),
                 "level_option": sweep.level_option, "objectives": list(sweep.objectives), "seeds": list(sweep.seeds),
                 "levels": levels, "objective_options": {n: asdict(c) for n, c in objectives.items() if c},
                 "model": sweep.model, "student_init": sweep.student_init, "teacher_seed": sweep.teacher_seed,
                 "train": asdict(sweep.train), "teacher_train": asdict(sweep.teacher_train)}
        total = len(sweep.seeds) * len(levels) * len(objectives)
        for seed in sweep.seeds:
            t_seed = seed if sweep.teacher_seed is None else sweep.teacher_seed
            # one teacher folder per task content and seed: a changed task never resumes an old teacher's checkpoints
            _, _, info = train_teacher(task, replace(base, seed=t_seed),
                                       out_dir / "teachers" / f"{task_fingerprint(task)}-seed{t_seed}", kind)
            teacher_dir = info["path"] if "path" in info else str(info["source"])
            graded = next((c for c in objectives.values() if c is not None and c.uses_difficulty), None)
            if graded is not None:  # how well the objective's difficulty finds the hard examples
                difficulty[str(seed)] = _difficulty(task, graded, teacher_dir, replace(base, seed=seed),
                                                    out_dir / "cache")
                write_sweep(_summary([], task, setup, difficulty, started), out_dir, plots=False)
            for level in levels:
                for name, objective in objectives.items():
                    config = replace(base, method=methods[level], objective=objective, teacher=teacher_dir,
                                     seed=seed, cache_dir=str(out_dir / "cache"))
                    run_dir = out_dir / "runs" / f"{name}-s{level:g}-seed{seed}"
                    card, seconds = _reuse(run_dir, config, task) or _run(task, config, run_dir, out_dir,
                                                                          len(records) + 1, total, sweep.keep_work)
                    records.append(_record(card, sweep.level_option, seconds))
                    # partial results after every run: an interrupted sweep still has its table
                    write_sweep(_summary(records, task, setup, difficulty, started), out_dir, plots=False)
        summary = {**_summary(records, task, setup, difficulty, started), "complete": True, "recipe": recipe}
        dump_recipe(recipe, out_dir / "recipe.yaml")
        write_sweep(summary, out_dir, plots=plots)
        clean_work(out_dir / "teachers")  # the teachers' training checkpoints (the teachers are in the cache)
        return summary


def _plan(sweep: SweepConfig):
    """``(levels, {objective name: config}, {level: method config})`` of a sweep, every name and
    option checked."""
    levels = [_number(str(level)) for level in sweep.levels]
    if not sweep.objectives or not sweep.seeds or not levels:
        raise ConfigError("a sweep needs at least one objective, one seed and one level")
    for option in sweep.objective_options:
        if not any(option in _fields(OBJECTIVES.config_class(name)) for name in sweep.objectives):
            raise ConfigError(f"unknown option --objective-{option.replace('_', '-')}: no objective of the sweep "
                              f"({', '.join(sweep.objectives)}) has it")
    objectives = {name: OBJECTIVES.make_config(name, {k: v for k, v in sweep.objective_options.items()
                                                      if k in _fields(OBJECTIVES.config_class(name))})
                  for name in sweep.objectives}
    return levels, objectives, {level: _with_level(sweep.method, sweep.level_option, level) for level in levels}


def _run(task: Task, config: RunConfig, run_dir: Path, out_dir: Path, number: int, total: int,
         keep_work: bool) -> tuple[Card, float]:
    """One run of the sweep into ``run_dir`` (its rerun recipe points to ``reruns/``): its card and the
    seconds it took (the ``sweep_run`` record, key and seconds, kept as ``sweep-run.json``)."""
    print(f"[forgetless] sweep run {number} of {total}: {run_dir.name}", file=sys.stderr, flush=True)
    shutil.rmtree(run_dir, ignore_errors=True)  # never resume another configuration's checkpoints
    started = time.time()
    card = run_and_save(task, config, run_dir, meta={"out": str(out_dir / "reruns" / run_dir.name)}).card
    record = {"key": run_key(task, config), "seconds": time.time() - started}
    atomic_write_json(run_dir / "sweep-run.json", record)
    if not keep_work:
        shutil.rmtree(run_dir / "work", ignore_errors=True)
    return card, record["seconds"]


def _fields(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)} if cls is not None else set()


def _with_level(method, option: str, level):
    """The sweep's method config with ``option`` set to ``level`` (an unknown option is an error)."""
    if option not in _fields(type(method)):
        raise ConfigError(f"--level-option {option}: not an option of method {method.name!r} (it has "
                          f"{', '.join(sorted(_fields(type(method))))})")
    return METHODS.make_config(method.name, {**asdict(method), option: level})


def _reuse(run_dir: Path, config, task: Task) -> tuple[Card, float | None] | None:
    """The card and seconds of a finished run (``sweep-run.json`` and ``report.json`` written) of the same
    run: the run folder's ``forgetless-run.json`` holds its ``validate.run_key``; else None (with a line
    naming the settings that changed)."""
    marker, report = run_dir / "sweep-run.json", run_dir / "report.json"
    if not (marker.is_file() and report.is_file()):
        return None
    if (read_mark(run_dir) or {}).get("key") != run_key(task, config):
        print(f"[forgetless] {run_dir.name} finished with other settings ({_changed_settings(run_dir, config)}); "
              "running it again", file=sys.stderr, flush=True)
        return None
    return read_card(run_dir), json.loads(marker.read_text()).get("seconds")


def _changed_settings(run_dir: Path, config) -> str:
    """The dotted settings in which a finished run (its ``forgetless-run.json``) differs from ``config``."""
    try:
        before = flatten(json.loads((run_dir / RUN_FILE).read_text())["config"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "its settings were not recorded"
    now = flatten(run_identity(config))
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    if not changed:
        return "the same settings, other data"
    return ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")


def _difficulty(task: Task, objective, teacher_dir: str, config: RunConfig, cache: Path) -> dict | None:
    """The sample difficulty ``objective`` (its config) computes from the teacher, and its agreement
    with the ground-truth hard flags of the training and dev sets (cached in the sweep's cache)."""
    kind = kind_for(task)
    teacher, tokenizer = kind.load_model(teacher_dir, task)
    ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=teacher, work_dir=Path(teacher_dir).parent,
                             train_config=config.train, seed=config.seed, base_model=config.model, kind=kind,
                             cache_dir=cache)
    return OBJECTIVES.build(objective).difficulty_summary(ctx)


def _number(value: str):
    """A level from the command line: an int when it has no decimal point, else a float."""
    value = str(value).strip()
    try:
        return float(value) if any(c in value for c in ".eE") else int(value)
    except ValueError as exc:
        raise ConfigError(f"sweep level {value!r} is not a number") from exc
