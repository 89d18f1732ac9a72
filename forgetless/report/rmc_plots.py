"""Plots of an objective × level × seed sweep (``forgetless.sweep``), after Du et al.,
"What do Compressed Large Language Models Forget?": Figure 1 (accuracy on hard vs easy dev
samples vs sparsity (or the swept level): the compressed model keeps the easy ones and loses the hard ones), Figure 3
(F_bias per objective) and Table 11 (hard vs easy accuracy per objective); plus dev and challenge
accuracy vs the swept level (the Table 1 / 4 numbers as curves, not a figure of the paper).
The x axis is labelled by the swept option's name (``sparsity``, ``ratio``, ``layers``,
``decoder_layers``); the uncompressed base (the teacher) is a dotted line. Error bars are the
standard deviation over seeds.
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
        xs.append(row["level"])
        ys.append(entry["mean"])
        es.append(entry["std"] or 0.0)
    return out


def level_name(summary: dict) -> str:
    """The swept option's name (``sparsity`` when the summary predates ``level_option``)."""
    return summary["setup"].get("level_option", "sparsity")


def accuracy_vs_level(summary: dict, path: str | Path, metrics=(("dev", "in-distribution (dev)"),
                                                                   ("challenge", "challenge")),
                         heading: str = "accuracy vs {level}") -> Path:
    """Dev (solid) and challenge (dashed) accuracy vs the swept level (Tables 1 / 4 as curves), one
    colour per objective; the uncompressed teacher is a dotted line. With ``metrics`` hard / easy
    it is the paper's Figure 1 (:func:`hard_easy_vs_level`)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
    base = summary["base"]
    level = level_name(summary)
    for ax, (metric, title) in zip(axes, metrics):
        for i, (objective, (xs, ys, es)) in enumerate(_series(summary, metric).items()):
            order = sorted(range(len(xs)), key=xs.__getitem__)
            xs, ys, es = ([v[j] for j in order] for v in (xs, ys, es))
            ax.errorbar(xs, [100 * y for y in ys], yerr=[100 * e for e in es], marker="o",
                        capsize=3, label=objective, color=COLORS[i % len(COLORS)],
                        linestyle="-" if metric in ("dev", "easy") else "--")
        if base[metric]["mean"] is not None:
            ax.axhline(100 * base[metric]["mean"], color="black", linestyle=":", linewidth=1, label="base (teacher)")
        ax.set_xlabel(level)
        ax.set_ylabel("accuracy (%)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8, loc="best")
    fig.suptitle(f"{summary['task']['name']}: {heading.format(level=level)} ({summary['setup']['method']})")
    return save_figure(fig, path)


def hard_easy_vs_level(summary: dict, path: str | Path) -> Path:
    """Du et al. Figure 1: dev accuracy on easy (solid) and hard (dashed) samples vs the level."""
    return accuracy_vs_level(summary, path, (("easy", "easy dev samples"), ("hard", "hard dev samples")),
                                "Figure 1: hard vs easy accuracy vs {level}")


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
    """x labels = objectives; bars per level of the swept option."""
    objectives = list(dict.fromkeys(r["objective"] for r in summary["rows"]))
    levels = sorted({r["level"] for r in summary["rows"]})
    groups = {}
    for level in levels:
        means, stds = [], []
        for objective in objectives:
            row = next((r for r in summary["rows"] if r["objective"] == objective and r["level"] == level), None)
            entry = row[metric] if row else {"mean": None, "std": None}
            means.append(entry["mean"] if entry["mean"] is not None else float("nan"))
            stds.append(entry["std"] or 0.0)
        groups[f"{level_name(summary)} {level:g}"] = (means, stds)
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
        (f"{r['objective']}\n{level_name(summary)}={r['level']:g}" if len({x['level'] for x in summary['rows']}) > 1
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
    level = level_name(summary)
    paths = [accuracy_vs_level(summary, out_dir / f"accuracy_vs_{level}.png")]
    if any(r["f_bias"]["mean"] is not None for r in summary["rows"]):
        paths.append(f_bias_per_objective(summary, out_dir / "f_bias_per_objective.png"))
    if summary["base"]["hard"]["mean"] is not None:
        paths.append(hard_easy_per_objective(summary, out_dir / "hard_easy_per_objective.png"))
        paths.append(hard_easy_vs_level(summary, out_dir / f"figure1_hard_easy_vs_{level}.png"))
    return paths

