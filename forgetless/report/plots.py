"""Plots for the report card (matplotlib, headless)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..fsutil import atomic_write_bytes  # noqa: E402


def save_figure(fig, path: str | Path) -> Path:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


def accuracy_plot(card: dict, path: str | Path) -> Path:
    """Grouped bars: base vs compressed headline metric (accuracy, or ROUGE-L / METEOR) on dev,
    hard / easy dev and every challenge set; an empty subset is drawn as a missing bar (n = 0)."""
    metric = card["task"]["metric"]
    scale = 100 if metric == "accuracy" else 1
    labels, base, comp = [], [], []
    for name, entry in card["sets"].items():
        labels.append(f"{name}\n(n={entry['base']['n']})")
        base.append(_value(entry["base"].get(metric), scale))
        comp.append(_value(entry["compressed"].get(metric), scale))
    hard_easy = card.get("hard_easy") or {}
    for part in ("hard", "easy"):
        if hard_easy.get("base"):
            labels.append(f"dev {part}\n(n={hard_easy['base']['n_' + part]})")
            base.append(_value(hard_easy["base"][part], 100))
            comp.append(_value(hard_easy["compressed"][part], 100))
    fig, ax = plt.subplots(figsize=(1.6 * len(labels) + 2, 3.8))
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], base, width=0.4, label="base", color="#4c72b0")
    ax.bar([i + 0.2 for i in x], comp, width=0.4, label="compressed", color="#dd8452")
    for i, (b, c) in enumerate(zip(base, comp)):
        for pos, v in ((i - 0.2, b), (i + 0.2, c)):
            ax.text(pos, (v if v == v else 0) + 1, f"{v:.1f}" if v == v else "n=0", ha="center", fontsize=8)
    ax.set_xticks(list(x), labels)
    ax.set_ylabel(f"{metric} (%)")
    ax.set_ylim(0, 105)
    f_bias = (card.get("bias") or {}).get("f_bias")
    title = f"{card['task']['name']}: {card['method']['name']}"
    if f_bias is not None:
        meaningful = (card.get("bias") or {}).get("meaningful", True)
        title += f"  (F_bias = {f_bias:.2f}{'' if meaningful else ', not meaningful'})"
    ax.set_title(title)
    ax.legend(loc="lower right")
    return save_figure(fig, path)


def _value(value, scale: float) -> float:
    return float("nan") if value is None else value * scale
