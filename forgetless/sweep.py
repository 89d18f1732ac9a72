"""Experiments as a product feature: one compression configuration over several objectives, seeds
and sparsities, reported as mean ± std per set with F_bias, hard/easy accuracy and plots
(the comparisons of Du et al., "What do Compressed Large Language Models Forget?": Figure 1,
Figure 3, Table 7 and Table 11).

Each (objective, sparsity, seed) run is one call of ``pipeline.compress`` in its own folder
``runs/<objective>-s<sparsity>-seed<seed>``. One teacher per seed is fine-tuned once and shared by
all runs of that seed; teacher probabilities, difficulty variances and JTT error sets go to one
shared cache (``cache/``). A run whose ``report.json`` exists for the same run configuration is
reused, so an interrupted sweep resumes.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import asdict, replace
from pathlib import Path

from .data.task import Task
from .errors import ConfigError
from .fsutil import atomic_write_json, atomic_write_text
from .training.trainer import TrainConfig

log = logging.getLogger(__name__)

ALL_OBJECTIVES = ("ce", "distil", "smooth", "focal", "jtt", "rmc")
METRICS = ("dev", "challenge", "f_bias", "hard", "easy")


def parse_list(value, cast=str) -> list:
    """``"a,b,c"`` (command line) or a sequence → list of ``cast`` values."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [cast(str(v).strip()) for v in items if str(v).strip()]


def distribute_options(objectives, options: dict | None) -> dict[str, dict]:
    """Flat command-line objective options (``{"alpha": 0.3, "lam": 0.8}``) → per-objective options:
    each option goes to every objective of the sweep whose config has that field. An option that
    no objective of the sweep accepts is an error."""
    import dataclasses

    from .objectives import OBJECTIVES

    out: dict[str, dict] = {}
    for key, value in (options or {}).items():
        if value is None:
            continue
        takers = [name for name in parse_list(objectives) if OBJECTIVES.config_class(name) is not None
                  and key in {f.name for f in dataclasses.fields(OBJECTIVES.config_class(name))}]
        if not takers:
            raise ConfigError(f"objective option {key!r} applies to none of the objectives {parse_list(objectives)}")
        for name in takers:
            out.setdefault(name, {})[key] = value
    return out


def task_fingerprint(task: Task) -> str:
    """Content hash of every set of the task: a changed data set never reuses old runs."""
    parts = {"train": task.train.fingerprint(), **{n: s.fingerprint() for n, s in task.eval_sets().items()}}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def run_key(config, task_key: str = "") -> str:
    data = {"run": asdict(config), "task": task_key}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


@contextlib.contextmanager
def shared_cache(path: Path):
    """Point objectives' disk caches (``FORGETLESS_CACHE``) at ``path`` for the sweep's duration."""
    old = os.environ.get("FORGETLESS_CACHE")
    os.environ["FORGETLESS_CACHE"] = str(path)
    try:
        yield path
    finally:
        if old is None:
            os.environ.pop("FORGETLESS_CACHE", None)
        else:
            os.environ["FORGETLESS_CACHE"] = old


def card_metrics(card: dict) -> dict:
    """The Table-7 numbers of one report card (fractions), for base and compressed models, plus
    per-group accuracies by gold label on challenge sets (e.g. HANS non-entailment per heuristic)."""
    out = {}
    for role in ("base", "compressed"):
        hard_easy = card["hard_easy"][role] or {}
        groups = {}
        for set_name in card["challenge"]["sets"]:
            for group, entry in (card["sets"][set_name][role].get("groups") or {}).items():
                for key, value in entry.items():
                    if key not in ("n", "accuracy"):  # accuracy per gold label within the group
                        groups[f"{set_name}/{group}/{key}"] = value
        out[role] = {"dev": card["sets"]["dev"][role]["accuracy"], "challenge": card["challenge"][role],
                     "hard": hard_easy.get("hard"), "easy": hard_easy.get("easy"), "groups": groups}
    out["compressed"]["f_bias"] = card["bias"]["f_bias"]
    out["base"]["f_bias"] = 1.0
    return out


def run_sweep(task: Task, out_dir: str | Path, objectives=ALL_OBJECTIVES, seeds=(0,), sparsities=(0.4,),
              method: str = "magnitude", method_options: dict | None = None, level_option: str = "sparsity",
              objective_options: dict[str, dict] | None = None, model: str = "minilm",
              train: TrainConfig | None = None, teacher_train: TrainConfig | None = None,
              student_init: str = "pretrained", speed=None, eval_batch_size: int = 64,
              progress: bool = True, plots: bool = True, keep_work: bool = False) -> dict:
    """Run every (objective, sparsity, seed) combination and write ``sweep.json``, ``sweep.md`` and
    plots into ``out_dir``; returns the summary (see :func:`aggregate`).

    ``objectives``/``seeds``/``sparsities`` take sequences or comma-separated strings;
    ``objective_options`` maps an objective name to its options (e.g. ``{"rmc": {"alpha": 0.5}}``);
    ``level_option`` is the method option the sparsity levels set (``sparsity`` for magnitude).
    A finished run keeps its model and report; its training checkpoints (``work/``, ~2x the model
    size with optimiser state) are removed unless ``keep_work``.
    """
    from .evaluate.speed import SpeedConfig
    from .objectives import OBJECTIVES
    from .pipeline import RunConfig, compress, train_teacher

    objectives, seeds = parse_list(objectives), parse_list(seeds, int)
    sparsities = parse_list(sparsities, float)
    if not objectives or not seeds or not sparsities:
        raise ConfigError("a sweep needs at least one objective, one seed and one sparsity")
    for name in objectives:
        OBJECTIVES.get(name)  # unknown names fail before any training
    unknown = set(objective_options or {}) - set(objectives)
    if unknown:
        raise ConfigError(f"options given for objectives not in the sweep: {sorted(unknown)}")
    out_dir = Path(out_dir)
    train = train or TrainConfig()
    speed = speed or SpeedConfig(batch_size=8, seq_len=64, warmup=1, repeats=2)
    records, difficulty, started = [], {}, time.time()
    setup = {"method": method, "method_options": method_options or {}, "objectives": objectives, "seeds": seeds,
             "sparsities": sparsities, "objective_options": objective_options or {}, "model": model,
             "student_init": student_init, "train": asdict(train), "teacher_train": asdict(teacher_train or train)}
    task_key = task_fingerprint(task)
    with shared_cache(out_dir / "cache"):
        for seed in seeds:
            seed_train = replace(train, seed=seed)
            seed_teacher_train = replace(teacher_train or train, seed=seed)
            base = RunConfig(model=model, train=seed_train, teacher_train=seed_teacher_train, seed=seed)
            # one teacher folder per task content and seed: a changed task never resumes an old teacher's checkpoints
            _, _, info = train_teacher(task, base, out_dir / "teachers" / f"{task_key}-seed{seed}")
            teacher_dir = info["path"] if "path" in info else str(info["source"])
            if "rmc" in objectives:
                difficulty[str(seed)] = _difficulty_summary(task, teacher_dir, seed_train, seed,
                                                            (objective_options or {}).get("rmc", {}),
                                                            out_dir / "cache")
                write_sweep(_summary([], task, setup, difficulty, started), out_dir, plots=False)
            for sparsity in sparsities:
                for name in objectives:
                    config = RunConfig(model=model, method=method,
                                       method_options={**(method_options or {}), level_option: sparsity},
                                       objective=name, objective_options=dict((objective_options or {}).get(name, {})),
                                       teacher=teacher_dir, student_init=student_init, train=seed_train,
                                       speed=speed, eval_batch_size=eval_batch_size, seed=seed, progress=progress)
                    run_dir = out_dir / "runs" / f"{name}-s{sparsity:g}-seed{seed}"
                    card = _reuse(run_dir, config, task_key)
                    if card is None:
                        log.info("sweep run %s", run_dir.name)
                        shutil.rmtree(run_dir, ignore_errors=True)  # never resume another configuration's checkpoints
                        t0 = time.time()
                        card = compress(task, config, run_dir)
                        card["sweep_run"] = {"key": run_key(config, task_key), "seconds": time.time() - t0}
                        atomic_write_json(run_dir / "sweep-run.json", card["sweep_run"])
                        if not keep_work:
                            shutil.rmtree(run_dir / "work", ignore_errors=True)
                    records.append(_record(card))
                    # partial results after every run: an interrupted sweep still has its table
                    write_sweep(_summary(records, task, setup, difficulty, started), out_dir, plots=False)
    summary = _summary(records, task, setup, difficulty, started)
    summary["complete"] = True
    write_sweep(summary, out_dir, plots=plots)
    return summary


def _record(card: dict) -> dict:
    return {"objective": card["method"]["objective"], "sparsity": card["method"]["config"].get("sparsity"),
            "seed": card["seed"], "seconds": card.get("sweep_run", {}).get("seconds"),
            "notes": card.get("notes", []), **card_metrics(card)}


def _summary(records: list[dict], task: dict | Task, setup: dict, difficulty: dict, started: float | None) -> dict:
    summary = aggregate(records)
    if isinstance(task, Task):
        task = {"name": task.name, "protocol": task.protocol, "train": len(task.train),
                "sets": {name: len(s) for name, s in task.eval_sets().items()}}
    summary.update({"task": task, "setup": setup, "difficulty": difficulty, "runs": records,
                    "seconds": time.time() - started if started else None})
    return summary


def collect_sweep(out_dir: str | Path, write: bool = True, plots: bool = True) -> dict:
    """Summarise the finished runs of a sweep folder without training anything (a sweep still
    running or interrupted): reads ``runs/*/report.json`` and the difficulty summaries in ``cache/``."""
    out_dir = Path(out_dir)
    reports = sorted((out_dir / "runs").glob("*/report.json"))
    if not reports:
        raise ConfigError(f"{out_dir} has no finished sweep runs (runs/*/report.json)")
    cards = [json.loads(path.read_text()) for path in reports]
    for card, path in zip(cards, reports):
        marker = path.parent / "sweep-run.json"
        card["sweep_run"] = json.loads(marker.read_text()) if marker.is_file() else {}
    order = {name: i for i, name in enumerate(ALL_OBJECTIVES)}
    previous = json.loads((out_dir / "sweep.json").read_text()) if (out_dir / "sweep.json").is_file() else {}
    setup = previous.get("setup") or {}
    if setup.get("objectives"):
        order = {name: i for i, name in enumerate(setup["objectives"])}
    cards.sort(key=lambda c: (c["seed"], c["method"]["config"].get("sparsity") or 0,
                              order.get(c["method"]["objective"], len(order))))
    first = cards[0]
    task = previous.get("task") or {"name": first["task"]["name"], "protocol": first["task"]["protocol"],
                                     "train": first["task"]["sizes"]["train"],
                                     "sets": {k: v for k, v in first["task"]["sizes"].items() if k != "train"}}
    if not setup:
        setup = {"method": first["method"]["name"], "method_options": {}, "student_init": first["method"]["student_init"],
                 "seeds": sorted({c["seed"] for c in cards}), "train": first["method"]["train"],
                 "teacher_train": first["method"]["train"]}
    difficulty = previous.get("difficulty") or {}
    if not difficulty:  # sweep.json not written yet: the difficulty summaries in the shared cache
        from .difficulty import default_alpha

        for path in sorted((out_dir / "cache").glob("difficulty-*.json")):
            difficulty[path.stem] = {"alpha": default_alpha(task["name"]), **json.loads(path.read_text())}
    summary = _summary([_record(c) for c in cards], task, setup, difficulty, None)
    summary["complete"] = False
    if write:
        write_sweep(summary, out_dir, plots=plots)
    return summary


def compare_objectives(task: Task, out_dir: str | Path, objectives=ALL_OBJECTIVES, sparsity: float = 0.4,
                       seeds=(0,), **kwargs) -> dict:
    """Table 7 of Du et al.: every objective guiding magnitude pruning at one sparsity."""
    return run_sweep(task, out_dir, objectives=objectives, seeds=seeds, sparsities=(sparsity,), **kwargs)


def _reuse(run_dir: Path, config, task_key: str) -> dict | None:
    marker, report = run_dir / "sweep-run.json", run_dir / "report.json"
    if not (marker.is_file() and report.is_file()):
        return None
    meta = json.loads(marker.read_text())
    if meta.get("key") != run_key(config, task_key):
        return None
    card = json.loads(report.read_text())
    card["sweep_run"] = meta
    return card


def _difficulty_summary(task: Task, teacher_dir: str, train: TrainConfig, seed: int, rmc_options: dict,
                        cache: Path) -> dict:
    """Compute (or load from the shared cache) the difficulty RMC will use, and its agreement with
    the training set's ground-truth hard flags."""
    from .difficulty import compute_difficulty, default_alpha
    from .models.loading import load_classifier
    from .objectives import OBJECTIVES

    config = OBJECTIVES.make_config("rmc", rmc_options)
    teacher, tokenizer = load_classifier(teacher_dir, task.label_names)
    result = compute_difficulty(teacher, tokenizer, task.train, train, Path(teacher_dir).parent, cache,
                                config.difficulty_config(), seed)
    alpha = config.alpha if config.alpha is not None else default_alpha(task.name)
    return {"alpha": alpha, **result.summary()}


def _mean_std(values: list) -> dict:
    import numpy as np

    vals = [v for v in values if v is not None]
    if not vals:
        return {"mean": None, "std": None, "n": 0}
    arr = np.asarray(vals, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0, "n": len(arr)}


def aggregate(records: list[dict]) -> dict:
    """Mean ± sample std (ddof 1; 0 for one seed) over seeds of every metric, per
    (objective, sparsity); the uncompressed base model (the teacher) as its own row."""
    rows, keys = [], []
    for r in records:
        if (r["objective"], r["sparsity"]) not in keys:
            keys.append((r["objective"], r["sparsity"]))
    base_by_seed = {r["seed"]: r["base"] for r in records}
    group_names = sorted({g for r in records for g in r["compressed"]["groups"]})
    base = {m: _mean_std([b[m] for b in base_by_seed.values()]) for m in METRICS}
    base["groups"] = {g: _mean_std([b["groups"].get(g) for b in base_by_seed.values()]) for g in group_names}
    for objective, sparsity in keys:
        runs = [r for r in records if (r["objective"], r["sparsity"]) == (objective, sparsity)]
        row = {"objective": objective, "sparsity": sparsity, "seeds": [r["seed"] for r in runs]}
        row.update({m: _mean_std([r["compressed"][m] for r in runs]) for m in METRICS})
        row["groups"] = {g: _mean_std([r["compressed"]["groups"].get(g) for r in runs]) for g in group_names}
        rows.append(row)
    return {"schema": "forgetless-sweep-1", "base": base, "rows": rows}


def _fmt(entry: dict, percent: bool = True) -> str:
    if entry["mean"] is None:
        return "–"
    scale = 100 if percent else 1
    digits = 1 if percent else 2
    text = f"{entry['mean'] * scale:.{digits}f}"
    return text + (f" ± {entry['std'] * scale:.{digits}f}" if entry["n"] > 1 else "")


def render_markdown(summary: dict) -> str:
    """Table-7-style table (accuracies in %, mean ± std over seeds) plus difficulty agreement."""
    lines = [f"# Sweep: {summary['task']['name']}", "", summary["task"]["protocol"], ""]
    setup = summary["setup"]
    lines += [f"method {setup['method']} {setup['method_options'] or ''} (sparsity per row); student init {setup['student_init']}; "
              f"seeds {setup['seeds']}; training {setup['train']['epochs']:g} epochs "
              f"(teacher {setup['teacher_train']['epochs']:g}); train set {summary['task']['train']} examples; "
              f"eval sets {summary['task']['sets']}", ""]
    lines += ["| objective | sparsity | dev | challenge | F_bias | hard | easy | seeds |",
              "|---|---|---|---|---|---|---|---|"]
    b = summary["base"]
    lines.append(f"| base (teacher) | 0 | {_fmt(b['dev'])} | {_fmt(b['challenge'])} | 1 | {_fmt(b['hard'])} | "
                 f"{_fmt(b['easy'])} | {b['dev']['n']} |")
    for row in summary["rows"]:
        lines.append(f"| {row['objective']} | {row['sparsity']:g} | {_fmt(row['dev'])} | {_fmt(row['challenge'])} | "
                     f"{_fmt(row['f_bias'], percent=False)} | {_fmt(row['hard'])} | {_fmt(row['easy'])} | "
                     f"{len(row['seeds'])} |")
    groups = sorted(b.get("groups", {}))
    if groups:
        one_set = len({g.split("/")[0] for g in groups}) == 1
        headers = ["/".join(g.split("/")[1:]) if one_set else g for g in groups]
        lines += ["", "Challenge accuracy per group and gold label (%):", "",
                  "| objective | sparsity | " + " | ".join(headers) + " |", "|---|---|" + "---|" * len(groups),
                  "| base (teacher) | 0 | " + " | ".join(_fmt(b["groups"][g]) for g in groups) + " |"]
        for row in summary["rows"]:
            lines.append(f"| {row['objective']} | {row['sparsity']:g} | "
                         + " | ".join(_fmt(row["groups"][g]) for g in groups) + " |")
    for seed, d in summary.get("difficulty", {}).items():
        lines += ["", f"Difficulty (seed {seed}, alpha {d['alpha']:g}): {d['schedule']}."]
        if d.get("agreement"):
            a = d["agreement"]
            lines.append(f"Variance split vs ground-truth hard flags on the {a['n']} training examples "
                         f"({a['n_hard']} hard): agreement {100 * a['topk']:.1f}% (top-k split; a random split "
                         f"of the same proportions: {100 * _chance(a):.1f}%), "
                         f"{100 * a['median']:.1f}% (median split), AUROC {a['auroc']:.3f}.")
    if summary.get("plots"):
        lines += [""] + [f"![{p}]({p})" for p in summary["plots"]]
    return "\n".join(lines) + "\n"


def _chance(agreement: dict) -> float:
    q = agreement["n_hard"] / agreement["n"]
    return q * q + (1 - q) * (1 - q)


def write_sweep(summary: dict, out_dir: str | Path, plots: bool = True) -> None:
    out_dir = Path(out_dir)
    if plots:
        from .report.rmc_plots import sweep_plots

        summary["plots"] = [p.name for p in sweep_plots(summary, out_dir)]
    atomic_write_json(out_dir / "sweep.json", summary)
    atomic_write_text(out_dir / "sweep.md", render_markdown(summary))
