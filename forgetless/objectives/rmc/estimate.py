"""Stand-alone difficulty estimation for a task (Du et al. 2023 §4.1 / §5.1): the teacher through
the pipeline, the variance of per-sample losses under pruned models (``difficulty.py``), eq. 2
degrees, and files a person can read (JSON summary, TSV per example, histogram).

An entry point (it runs the pipeline's teacher stage), not part of the objective: it belongs in the
entry-points package once that exists."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...fsutil import atomic_write_json, atomic_write_text
from ...kinds import kind_for
from ...pipeline import RunConfig, train_teacher
from ...report.rmc_plots import variance_histogram
from ...training.trainer import TrainConfig
from .config import DifficultyConfig, default_alpha
from .difficulty import compute_difficulty


def estimate_difficulty(task, out_dir: str | Path, model: str = "minilm", teacher: str | None = None,
                        train_config=None, config: DifficultyConfig | None = None, alpha: float | None = None,
                        seed: int = 0) -> dict:
    """Stand-alone difficulty estimation for a task: fine-tune (or load) the teacher with the
    pipeline, compute variances and eq. 2 degrees, and write ``difficulty.json`` (summary and
    agreement with ground-truth hard flags), ``difficulty.tsv`` (per training example) and
    ``difficulty.png`` (variance histogram, easy vs hard where known). Returns the summary."""
    out_dir = Path(out_dir)
    train_config = train_config or TrainConfig()
    run = RunConfig(model=model, teacher=teacher, train=replace(train_config, seed=seed), seed=seed)
    teacher_model, tokenizer, info = train_teacher(task, run, out_dir / "work")
    result = compute_difficulty(teacher_model, tokenizer, task.train, run.train, out_dir / "work",
                                out_dir / "cache", config, seed, dev_set=task.dev,
                                pretrained=lambda: kind_for(task).load_model(model, task, seed)[0])
    alpha = alpha if alpha is not None else default_alpha(task.name)
    degrees = result.degrees(alpha)
    summary = {"task": task.name, "protocol": task.protocol, "teacher": info, "alpha": alpha, **result.summary()}
    header = ["index", *[f"loss@{s:g}" for s in result.sparsities], "variance", "degree", "hard"]
    rows = ["\t".join(header)]
    hard = task.train.hard or [None] * len(task.train)
    for i in range(len(task.train)):
        losses = [f"{result.losses[j, i]:.6g}" for j in range(len(result.sparsities))]
        flag = "" if hard[i] is None else str(int(hard[i]))
        rows.append("\t".join([str(i), *losses, f"{result.variance[i]:.6g}", f"{degrees[i]:.6g}", flag]))
    atomic_write_text(out_dir / "difficulty.tsv", "\n".join(rows) + "\n")
    summary["plot"] = variance_histogram(result.variance, task.train.hard, out_dir / "difficulty.png", task.name).name
    atomic_write_json(out_dir / "difficulty.json", summary)
    return summary
