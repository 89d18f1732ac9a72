"""Plots of an objective × sparsity × seed sweep (``forgetless.sweep``), after Du et al.,
"What do Compressed Large Language Models Forget?": Figure 1 (accuracy on hard vs easy dev
samples vs sparsity: the compressed model keeps the easy ones and loses the hard ones), Figure 3
(F_bias per objective) and Table 11 (hard vs easy accuracy per objective); plus dev and challenge
accuracy vs sparsity (the Table 1 / 4 numbers as curves, not a figure of the paper).
Error bars are the standard deviation over seeds.
"""
from __future__ import annotations

from pathlib import Path

from .plots import plt, save_figure

COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]


def _series(summary: dict, metric: str) -> dict[str, tuple[list, list, list]]:
    out: dict[str, tuple[list, list, list]] = {}
    for row in summary["rows"]:
        entry = row[metric]
        if entry["mean"] is None:
            continue
        xs, ys, es = out.setdefault(row["objective"], ([], [], []))
        xs.append(row["sparsity"])
        ys.append(entry["mean"])
        es.append(entry["std"] or 0.0)
    return out


def accuracy_vs_sparsity(summary: dict, path: str | Path, metrics=(("dev", "in-distribution (dev)"),
                                                                   ("challenge", "challenge")),
                         heading: str = "accuracy vs sparsity") -> Path:
    """Dev (solid) and challenge (dashed) accuracy vs sparsity (Tables 1 / 4 as curves), one colour
    per objective; the uncompressed teacher is plotted at sparsity 0. With ``metrics`` hard / easy
    it is the paper's Figure 1 (:func:`hard_easy_vs_sparsity`)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
    base = summary["base"]
    for ax, (metric, title) in zip(axes, metrics):
        for i, (objective, (xs, ys, es)) in enumerate(_series(summary, metric).items()):
            order = sorted(range(len(xs)), key=xs.__getitem__)
            xs, ys, es = ([v[j] for j in order] for v in (xs, ys, es))
            if base[metric]["mean"] is not None:
                xs, ys, es = [0.0] + xs, [base[metric]["mean"]] + ys, [base[metric]["std"] or 0.0] + es
            ax.errorbar([100 * x for x in xs], [100 * y for y in ys], yerr=[100 * e for e in es], marker="o",
                        capsize=3, label=objective, color=COLORS[i % len(COLORS)],
                        linestyle="-" if metric in ("dev", "easy") else "--")
        ax.set_xlabel("sparsity (%)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8, loc="best")
    fig.suptitle(f"{summary['task']['name']}: {heading} ({summary['setup']['method']})")
    return save_figure(fig, path)


def hard_easy_vs_sparsity(summary: dict, path: str | Path) -> Path:
    """Du et al. Figure 1: dev accuracy on easy (solid) and hard (dashed) samples vs sparsity."""
    return accuracy_vs_sparsity(summary, path, (("easy", "easy dev samples"), ("hard", "hard dev samples")),
                                "Figure 1: hard vs easy accuracy vs sparsity")


def _grouped_bars(ax, labels: list[str], groups: dict[str, tuple[list, list]], scale: float = 100.0):
    width = 0.8 / max(1, len(groups))
    for i, (name, (means, stds)) in enumerate(groups.items()):
        xs = [j - 0.4 + width * (i + 0.5) for j in range(len(labels))]
        ax.bar(xs, [scale * m for m in means], width=width, yerr=[scale * s for s in stds], capsize=2,
               label=name, color=COLORS[i % len(COLORS)])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _rows_by_objective(summary: dict, metric: str) -> tuple[list[str], dict[str, tuple[list, list]]]:
    """x labels = objectives (with sparsity when several); bars per sparsity level."""
    objectives = list(dict.fromkeys(r["objective"] for r in summary["rows"]))
    levels = sorted({r["sparsity"] for r in summary["rows"]})
    groups = {}
    for level in levels:
        means, stds = [], []
        for objective in objectives:
            row = next((r for r in summary["rows"] if r["objective"] == objective and r["sparsity"] == level), None)
            entry = row[metric] if row else {"mean": None, "std": None}
            means.append(entry["mean"] if entry["mean"] is not None else float("nan"))
            stds.append(entry["std"] or 0.0)
        groups[f"sparsity {level:g}"] = (means, stds)
    return objectives, groups


def f_bias_per_objective(summary: dict, path: str | Path) -> Path:
    """Figure 3: F_bias of the compressed model per objective (1 = as biased as the teacher)."""
    labels, groups = _rows_by_objective(summary, "f_bias")
    fig, ax = plt.subplots(figsize=(1.2 * len(labels) + 3, 3.6))
    _grouped_bars(ax, labels, groups, scale=1.0)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":")
    ax.set_ylabel("F_bias (compressed gap / base gap)")
    ax.set_title(f"{summary['task']['name']}: relative bias per objective (lower is better)")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def hard_easy_per_objective(summary: dict, path: str | Path) -> Path:
    """Table 11 as a plot: dev accuracy on hard and easy samples per objective (and the teacher)."""
    rows = [("base", summary["base"])] + [
        (f"{r['objective']}\n@{r['sparsity']:g}" if len({x['sparsity'] for x in summary['rows']}) > 1
         else r["objective"], r) for r in summary["rows"]]
    labels = [name for name, _ in rows]
    groups = {part: ([r[part]["mean"] if r[part]["mean"] is not None else float("nan") for _, r in rows],
                     [r[part]["std"] or 0.0 for _, r in rows]) for part in ("hard", "easy")}
    fig, ax = plt.subplots(figsize=(1.1 * len(labels) + 3, 3.6))
    _grouped_bars(ax, labels, groups)
    ax.set_ylabel("dev accuracy (%)")
    ax.set_title(f"{summary['task']['name']}: hard vs easy dev samples")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def sweep_plots(summary: dict, out_dir: str | Path) -> list[Path]:
    """All sweep plots that the summary has data for; returns the written paths."""
    out_dir = Path(out_dir)
    paths = [accuracy_vs_sparsity(summary, out_dir / "accuracy_vs_sparsity.png")]
    if any(r["f_bias"]["mean"] is not None for r in summary["rows"]):
        paths.append(f_bias_per_objective(summary, out_dir / "f_bias_per_objective.png"))
    if summary["base"]["hard"]["mean"] is not None:
        paths.append(hard_easy_per_objective(summary, out_dir / "hard_easy_per_objective.png"))
        paths.append(hard_easy_vs_sparsity(summary, out_dir / "figure1_hard_easy_vs_sparsity.png"))
    return paths


def variance_histogram(variance, hard, path: str | Path, title: str = "") -> Path:
    """Histogram of per-sample loss variance across pruned models (log scale), split into
    ground-truth easy and hard samples when the flags are known (Du et al. §4.1)."""
    import numpy as np

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
