"""Plots for the report card (matplotlib, headless)."""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..fsutil import atomic_write_bytes  # noqa: E402
from .card_types import Card  # noqa: E402
from .budget import BudgetSection  # noqa: E402
from .headline import hard_easy_estimates, set_estimates, size_numbers  # noqa: E402
from .sections import method_sections  # noqa: E402


def save_figure(fig, path: str | Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


def accuracy_plot(card: Card, path: str | Path) -> Path:
    """Grouped bars: base vs compressed headline metric (accuracy, or ROUGE-L / METEOR) on dev,
    hard / easy dev and every challenge set, with the 95% bootstrap interval of each accuracy as
    its error bar (``card.intervals``); an empty subset is drawn as a missing bar (n = 0). An LLM
    suite's card: ``llm_plot``."""
    if card.llm:
        return llm_plot(card, path)
    metric = card.task.metric
    scale = 100 if metric == "accuracy" else 1
    intervals = card.intervals
    estimates, hard_easy = set_estimates(card), hard_easy_estimates(card)
    labels, bars = [], {"base": [], "compressed": []}
    for name, entry in card.sets.items():
        labels.append(f"{name}\n(n={entry.base['n']})")
        for role in bars:
            bars[role].append(_bar(estimates[name][role], scale))
    for part in ("hard", "easy") if hard_easy else ():
        labels.append(f"dev {part}\n(n={card.hard_easy.base['n_' + part]})")
        for role in bars:
            bars[role].append(_bar(hard_easy[part][role], 100))
    fig, ax = plt.subplots(figsize=(1.6 * len(labels) + 2, 3.8))
    for role, xs in _paired_bars(ax, bars).items():
        for x, (v, _, high) in zip(xs, bars[role]):
            ax.text(x, (high if high == high else 0) + 1.5, f"{v:.1f}" if v == v else "n=0", ha="center", fontsize=8)
    ax.set_xticks(list(range(len(labels))), labels)
    ax.set_ylabel(f"{metric} (%)" + (", 95% bootstrap interval" if intervals and intervals.sets else ""))
    ax.set_ylim(0, 112)
    f_bias = card.bias.f_bias if card.bias else None
    title = f"{card.task.name}: {card.method.name}"
    if f_bias is not None:
        meaningful = card.bias.meaningful is not False
        title += f"  (F_bias = {f_bias:.2f}{'' if meaningful else ', not meaningful'})"
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return save_figure(fig, path)


def _bar(entry: dict, scale: float) -> tuple[float, float, float]:
    """(value, low, high) of an estimate (``headline.estimate``) in plot units; low = high = value without an
    interval, NaN for n = 0."""
    v = float("nan") if entry["value"] is None else entry["value"] * scale
    if entry.get("low") is None:
        return v, v, v
    return v, entry["low"] * scale, entry["high"] * scale


def _paired_bars(ax, bars: dict[str, list[tuple]]) -> dict[str, list[float]]:
    """Base and compressed bars side by side, each ``(value, low, high)`` with its interval as the error bar;
    returns each role's x positions."""
    positions = {}
    for offset, (role, color) in zip((-0.2, 0.2), (("base", "#4c72b0"), ("compressed", "#dd8452"))):
        positions[role] = [i + offset for i in range(len(bars[role]))]
        errors = [[v - low for v, low, _ in bars[role]], [high - v for v, _, high in bars[role]]]
        ax.bar(positions[role], [v for v, _, _ in bars[role]], width=0.4, label=role, color=color, yerr=errors,
               capsize=3, ecolor="#333333")
    return positions


def llm_plot(card: Card, path: str | Path) -> Path:
    """An LLM suite: per multiple-choice task the accuracy (its metric) of base and compressed with
    their 95% intervals, and the items that flip correct → wrong and wrong → correct."""
    tasks = {n: t for n, t in card.llm.tasks.items() if t["output_type"] == "multiple_choice"}
    labels = [f"{n.replace('_offline', '')}\n{t['metric']}, n={t['n']}" + ("\n(at chance)" if t["near_chance"] else "")
              for n, t in tasks.items()]
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(8.0, 2.4 * len(tasks) + 2), 4.2))
    xs = range(len(tasks))
    _paired_bars(left, {role: [_bar(t[t["metric"]][role], 100) for t in tasks.values()]
                        for role in ("base", "compressed")})
    for x, t in zip(xs, tasks.values()):
        left.hlines(100 * t["chance"], x - 0.45, x + 0.45, colors="#888888", linestyles="dotted")
    left.set_xticks(list(xs), labels, fontsize=7)
    left.set_ylabel("accuracy (%), 95% bootstrap interval; dotted: chance")
    left.set_ylim(0, 100)
    left.legend(fontsize=8)
    lost = [t["flips"]["correct_to_wrong"] for t in tasks.values()]
    gained = [t["flips"]["wrong_to_correct"] for t in tasks.values()]
    right.bar([x - 0.2 for x in xs], lost, width=0.4, color="#cf222e", label="correct → wrong")
    right.bar([x + 0.2 for x in xs], gained, width=0.4, color="#1a7f37", label="wrong → correct")
    right.set_xticks(list(xs), labels, fontsize=7)
    right.set_ylabel("items that flip")
    right.yaxis.get_major_locator().set_params(integer=True)
    right.legend(fontsize=8)
    fig.suptitle(f"{card.task.name}: {card.method.name} vs base, item by item")
    return save_figure(fig, path)


def llm_compare_plot(cards: dict[str, Card], path: str | Path) -> Path:
    """LLM suites side by side: the mean accuracy of the tasks above chance (95% interval) and
    WikiText-2 perplexity of every compressed model against its size (MB on disk, else of the stored
    weights; ``headline.size_numbers``), its stored bits per parameter and the sparsity its pruning made
    (none for a model only quantized); the base (first run's) as a grey star."""
    def bits(card, role):
        stored = ((card.params.stored or {}).get("overall") or {}) if role == "compressed" else {}
        return stored.get("bits_per_parameter") or getattr(card.params, role).get("bits_per_parameter")

    def size(card, role):
        found = size_numbers(card).get(f"{role}_bytes")
        return None if found is None else found / 1e6

    def sparsity(card, role):
        found = size_numbers(card)["sparsity"] if role == "compressed" else card.params.base["prunable_sparsity"]
        return None if found is None else 100 * found

    axes_of = (("size (MB)", size), ("bits per parameter (model.safetensors)", bits),
               ("sparsity made by pruning (%)", sparsity))
    fig, grid = plt.subplots(2, 3, figsize=(13, 7), squeeze=False)
    first = next(iter(cards.values()))
    for column, (label, x_of) in enumerate(axes_of):
        for row, part in enumerate(("accuracy", "perplexity")):
            ax = grid[row][column]
            for name, card in list(cards.items()) + [("base", first)]:
                role = "base" if name == "base" else "compressed"
                x = x_of(card, role)
                y, low, high = _llm_point(card, part, role)
                if x is None or y is None:
                    continue
                style = {"marker": "*", "color": "#888888", "markersize": 12} if role == "base" else {"marker": "o"}
                ax.errorbar([x], [y], yerr=[[y - low], [high - y]] if low is not None else None, capsize=3,
                            linestyle="none", **style)
                ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
            if column == 0 and part == "accuracy":
                _uniform_points(ax, cards, size)
            ax.set_xlabel(label, fontsize=8)
            ax.set_ylabel("mean accuracy (%), 95% interval" if part == "accuracy" else "WikiText-2 perplexity",
                          fontsize=8)
    fig.suptitle(f"{first.task.name}: accuracy and perplexity against size, bits and sparsity")
    fig.tight_layout()
    return save_figure(fig, path)


def _uniform_points(ax, cards: dict[str, Card], size) -> None:
    """A bit budget's uniform check (``methods/_shared/uniform_check.py``) as a square beside its mix: the
    uniform format's mean accuracy on the same items against its size (the mix's, with the uniform format's
    bytes in place of the mix's)."""
    for name, card in cards.items():
        budget = method_sections(card).budget
        check = (budget.uniform_check if budget is not None else None) or {}
        entry = (check.get("headline") or {}).get("uniform") or {}
        mixed = size(card, "compressed")
        if entry.get("value") is None or mixed is None:
            continue
        x, y = mixed + (check["bytes"] - budget.bytes) / 1e6, 100 * entry["value"]
        ax.errorbar([x], [y], yerr=[[y - 100 * entry["low"]], [100 * entry["high"] - y]], capsize=3,
                    linestyle="none", marker="s", color="#8c8c8c")
        ax.annotate(f"{name}: uniform {check['format']}", (x, y), fontsize=7, xytext=(3, -9), textcoords="offset points")


def _llm_point(card: Card, part: str, role: str) -> tuple:
    """(value, low, high) of a run's mean accuracy (%) or perplexity; None where the card has none."""
    if part == "accuracy":
        entry = (card.llm.headline or {}).get(role) or {}
        if entry.get("value") is None:
            return None, None, None
        return 100 * entry["value"], 100 * entry["low"], 100 * entry["high"]
    lm = card.language_model
    return (getattr(lm, role)["perplexity"], None, None) if lm else (None, None, None)


BUDGET_COLORS = {"kept": "#8c8c8c"}  # a bit budget's formats: a kept layer grey, the others in turn
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3")


def budget_plot(budget: BudgetSection, path: str | Path) -> Path:
    """Bars: the bits per weight of each unit in the model's order, coloured by format; the budget dotted."""
    rows = budget.assignment
    colors = {name: BUDGET_COLORS.get(name, PALETTE[i % len(PALETTE)]) for i, name in enumerate(budget.formats)}
    fig, ax = plt.subplots(figsize=(max(6.0, 0.22 * len(rows) + 2), 3.4))
    for name in budget.formats:
        xs = [i for i, row in enumerate(rows) if row["format"] == name]
        if xs:
            ax.bar(xs, [rows[i]["bits"] for i in xs], color=colors[name], label=name)
    ax.axhline(budget.bits_budget, color="#333333", linestyle="dotted", label=f"budget {budget.bits_budget:g}")
    ax.set_xticks(list(range(len(rows))), [row["unit"] for row in rows], rotation=90, fontsize=6)
    ax.set_ylabel("bits per weight (as stored)")
    ax.set_yscale("log", base=2)
    ax.set_title(f"bit budget {budget.bits_budget:g}: {budget.bits_per_weight:.3f} bits per weight reached")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save_figure(fig, path)
