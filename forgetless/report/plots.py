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
    """Grouped bars: base vs compressed accuracy on dev, hard/easy dev and every challenge set."""
    labels, base, comp = [], [], []
    for name, entry in card["sets"].items():
        labels.append(f"{name}\n(n={entry['base']['n']})")
        base.append(entry["base"]["accuracy"] * 100)
        comp.append(entry["compressed"]["accuracy"] * 100)
    for part in ("hard", "easy"):
        if card["hard_easy"]["base"]:
            labels.append(f"dev {part}")
            base.append(card["hard_easy"]["base"][part] * 100)
            comp.append(card["hard_easy"]["compressed"][part] * 100)
    fig, ax = plt.subplots(figsize=(1.6 * len(labels) + 2, 3.8))
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], base, width=0.4, label="base", color="#4c72b0")
    ax.bar([i + 0.2 for i in x], comp, width=0.4, label="compressed", color="#dd8452")
    for i, (b, c) in enumerate(zip(base, comp)):
        ax.text(i - 0.2, b + 1, f"{b:.1f}", ha="center", fontsize=8)
        ax.text(i + 0.2, c + 1, f"{c:.1f}", ha="center", fontsize=8)
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    f_bias = card["bias"]["f_bias"]
    title = f"{card['task']['name']}: {card['method']['name']}"
    if f_bias is not None:
        title += f"  (F_bias = {f_bias:.2f})"
    ax.set_title(title)
    ax.legend(loc="lower right")
    return save_figure(fig, path)
