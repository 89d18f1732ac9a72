"""Stand-alone difficulty estimation on a tiny BERT (Du et al. 2023 §4.1 / §5.1): the teacher through
the pipeline, the variance of per-sample losses under pruned models, eq. 2 degrees; files written,
agreement reported, cache reused. ``estimate_difficulty`` is test scaffolding (also used by
test_difficulty_independent.py), not a package entry point."""
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.fsutil import atomic_write_json, atomic_write_text
from forgetless.kinds import kind_for
from forgetless.objectives.rmc.config import DifficultyConfig, default_alpha
from forgetless.objectives.rmc.difficulty import compute_difficulty
from forgetless.pipeline import RunConfig, train_teacher
from forgetless.report.plots import plt, save_figure
from forgetless.report.rmc_plots import COLORS
from forgetless.training.trainer import TrainConfig
from tiny_bert import tiny_bert, tiny_tokenizer


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


def variance_histogram(variance, hard, path: Path, title: str = "") -> Path:
    """Histogram of per-sample loss variance across pruned models (log scale), split into
    ground-truth easy and hard samples when the flags are known (Du et al. §4.1); test scaffolding
    beside ``estimate_difficulty``."""
    v = np.asarray(variance, dtype=float)
    bins = np.logspace(np.log10(max(v.min(), 1e-12)), np.log10(max(v.max(), 1e-11)), 40)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if hard is None:
        ax.hist(v, bins=bins, color=COLORS[0])
    else:
        hard = np.asarray(hard, dtype=bool)
        ax.hist(v[~hard], bins=bins, alpha=0.6, label=f"easy (n={int((~hard).sum())})", color=COLORS[0])
        ax.hist(v[hard], bins=bins, alpha=0.6, label=f"hard (n={int(hard.sum())})", color=COLORS[3])
        ax.legend(fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("variance of the loss across pruned models")
    ax.set_ylabel("training samples")
    ax.set_title(f"{title}: sample difficulty".strip(": "))
    return save_figure(fig, path)


def test_estimate_difficulty_writes_report(tmp_path):
    tokenizer = tiny_tokenizer()
    tiny_bert(tokenizer).save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    task = synthetic_shortcut_task(n_train=48, n_dev=16, n_challenge=16, hard_fraction=0.25, seed=0)
    train = TrainConfig(epochs=1, batch_size=16, max_length=32, save_steps=10 ** 6, progress=False)
    config = DifficultyConfig(sparsities=(0.3, 0.6, 0.9), recovery_epochs=0)
    summary = estimate_difficulty(task, tmp_path / "out", model=str(tmp_path / "tiny"), train_config=train,
                                  config=config)
    assert summary["agreement"]["n"] == 48 and summary["agreement"]["n_hard"] == 12
    assert "cheaper than the paper" in summary["schedule"] and not summary["from_cache"]
    rows = (tmp_path / "out" / "difficulty.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["index", "loss@0.3", "loss@0.6", "loss@0.9", "variance", "degree", "hard"]
    assert len(rows) == 49
    degrees = [float(r.split("\t")[5]) for r in rows[1:]]
    assert min(degrees) == 0.5 and max(degrees) == 1.0
    assert (tmp_path / "out" / "difficulty.png").stat().st_size > 1000
    again = estimate_difficulty(task, tmp_path / "out", model=str(tmp_path / "tiny"), train_config=train, config=config)
    assert again["from_cache"] and again["agreement"] == summary["agreement"]
    assert json.loads((tmp_path / "out" / "difficulty.json").read_text())["alpha"] == 0.5
