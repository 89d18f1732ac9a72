"""Figures of the RAHP paper (Figures 2-5) as PNG files (matplotlib, headless: ``report/plots.py``).

* ``score_heatmap`` — layers × heads map of a score (normalised Fisher, ΔCLEVER, composite S),
  pruned heads crossed, protected heads boxed (Figures 2-4).
* ``pruned_per_layer_bars`` — pruned heads per layer across pruning ratios (Figure 5).
* ``ablation_scatter`` — the (α, β) ablation: accuracy against CLEVER score per setting.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ...report.plots import plt, save_figure
from .._shared.head_layout import HeadLayout


def score_heatmap(layout: HeadLayout, values, path: Path, title: str, pruned=None, protected=None,
                  cmap: str = "viridis") -> Path:
    """Heatmap of flat per-head ``values``; ``pruned`` / ``protected`` are flat bool masks."""
    matrix = layout.matrix(torch.as_tensor(values, dtype=torch.float32)).numpy()
    rows, cols = matrix.shape
    fig, ax = plt.subplots(figsize=(0.55 * cols + 2, 0.45 * rows + 1.5))
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, aspect="auto")
    fig.colorbar(image, ax=ax, fraction=0.04)
    for mask, style in ((pruned, "cross"), (protected, "box")):
        if mask is None:
            continue
        grid = layout.matrix(torch.as_tensor(mask, dtype=torch.float32)).numpy()
        for r, c in zip(*np.nonzero(np.nan_to_num(grid) > 0.5)):
            if style == "cross":
                ax.plot([c - 0.35, c + 0.35], [r - 0.35, r + 0.35], color="red", lw=1.5)
                ax.plot([c - 0.35, c + 0.35], [r + 0.35, r - 0.35], color="red", lw=1.5)
            else:
                ax.add_patch(plt.Rectangle((c - 0.48, r - 0.48), 0.96, 0.96, fill=False, ec="white", lw=2.2))
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.set_yticklabels([f"{s[0][0]}{s[1]}" if s[0] != "encoder" else str(s[1]) for s, _ in layout.sites])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    legend = "  (× pruned" + (", □ protected)" if protected is not None else ")") if pruned is not None else ""
    ax.set_title(title + legend, fontsize=10)
    return save_figure(fig, path)


def pruned_per_layer_bars(layout: HeadLayout, masks_by_ratio: dict[float, list[bool]], path: Path,
                          title: str = "pruned heads per layer") -> Path:
    """Grouped bars: for each ratio, how many heads each layer loses."""
    ratios = sorted(masks_by_ratio)
    layers = [str(key[1]) for key, _ in layout.sites]
    width = 0.8 / max(len(ratios), 1)
    fig, ax = plt.subplots(figsize=(max(6, len(layers) * 1.1), 3.8))
    for j, ratio in enumerate(ratios):
        per_site = layout.unflatten(torch.as_tensor(masks_by_ratio[ratio], dtype=torch.float32))
        counts = [float(v.sum()) for v in per_site.values()]
        ax.bar(np.arange(len(layers)) + (j - (len(ratios) - 1) / 2) * width, counts, width, label=f"ρ={ratio:g}")
    ax.set_xticks(range(len(layers)))
    ax.set_xticklabels(layers)
    ax.set_xlabel("layer")
    ax.set_ylabel("heads pruned")
    ax.set_ylim(0, max(n for _, n in layout.sites) + 0.5)
    ax.legend(fontsize=8, ncol=min(len(ratios), 5))
    ax.set_title(title, fontsize=10)
    return save_figure(fig, path)


def ablation_scatter(points: list[dict], path: Path, title: str = "(α, β) ablation") -> Path:
    """Scatter of ``accuracy`` vs ``clever`` for dicts with keys alpha, beta, accuracy, clever."""
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for p in points:
        ax.scatter(p["clever"], p["accuracy"], s=40)
        ax.annotate(f"α={p['alpha']:g}, β={p['beta']:g}", (p["clever"], p["accuracy"]), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("mean CLEVER score")
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)
