"""The card's bit budget (``methods/_shared/budget.py``): the budget and the range the model's units can
reach, the formats chosen per unit with their bits and measured KL, the bits per weight reached and the bytes
stored, what the sensitivity pass and the allocation cost, and a plot of the bits per unit
(``budget_bits.png``). Read from the quantizing method's card section ``budget``."""
from __future__ import annotations

from pathlib import Path

from .card_types import Card

SHOWN = 16  # rows of the assignment in the card (the JSON keeps every unit)
PLOT = "budget_bits.png"
COLORS = {"kept": "#8c8c8c"}
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3")


def budget_markdown(card: Card) -> list[str]:
    """The budget's lines of ``report.md`` (none without a budget)."""
    section = card.method.sections.get("budget")
    if not section:
        return []
    low, high = section["feasible"]
    counts: dict[str, int] = {}
    for row in section["assignment"]:
        counts[row["format"]] = counts.get(row["format"], 0) + 1
    lines = ["", f"## Bit budget: {section['bits_budget']:g} bits per weight", "",
             f"Each of {len(section['assignment'])} units ({section['units']}) took one of "
             f"{', '.join(section['formats'])}: the assignment with the least summed KL within the budget (exact; "
             f"the units could reach {low:.3f} to {high:.3f} bits per weight). Reached: "
             f"**{section['bits_per_weight']:.3f} bits per weight**, {section['bytes']:,} bytes for "
             f"{section['weights']:,} weights (codes, scales and zero points as the folder stores them, a kept layer "
             f"float32; the 16-byte shape record of each packed layer not counted). Chosen: "
             f"{', '.join(f'{n} × {name}' for name, n in counts.items())}; summed KL {section['kl_sum']:.3g} nats per "
             f"token. KL of each unit at each format measured with {section['measured_with']} on {section['texts']} "
             f"calibration texts ({section['tokens']} tokens) in {section['seconds_sensitivity']:g} s; the allocation "
             f"took {1000 * section['seconds_allocation']:.1f} ms.", "",
             "| unit | format | bits per weight | KL at its format | " +
             " | ".join(f"KL {name}" for name in section["formats"]) + " |",
             "|---|---|---:|---:|" + "---:|" * len(section["formats"])]
    for row in section["assignment"][:SHOWN]:
        kls = [row["kl_by_format"].get(name) for name in section["formats"]]
        lines.append(f"| {row['unit']} | {row['format']} | {row['bits']:.3f} | {row['kl']:.3g} | " +
                     " | ".join("–" if v is None else f"{v:.3g}" for v in kls) + " |")
    if len(section["assignment"]) > SHOWN:
        lines.append(f"| … {len(section['assignment']) - SHOWN} more in report.json | | | |" +
                     " |" * len(section["formats"]))
    if PLOT in (card.plots or []):
        lines += ["", f"The bits of each unit: `{PLOT}` (method plots, below)."]
    return lines + uniform_markdown(section)


def _pct(entry: dict | None) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    return f"{100 * entry['value']:+.1f} points [{100 * entry['low']:+.1f}, {100 * entry['high']:+.1f}]"


def uniform_markdown(section: dict) -> list[str]:
    """The uniform check's lines: the mix against one format of the same or larger size, item by item."""
    check = section.get("uniform_check")
    if not check:
        return ["", "No uniform check (--no-uniform-check)."] if "uniform_check" in section else []
    if "skipped" in check:
        return ["", f"No uniform check: {check['skipped']}."]
    accuracy, flips, kl = check.get("accuracy") or {}, check.get("flips") or {}, check.get("kl") or {}
    uniform, mixed = (accuracy.get(role) or {} for role in ("base", "compressed"))
    lines = ["", f"### Against uniform {check['format']}: {check['verdict']}", "",
             f"The base quantized in {check['format']} alone by {check['method']} "
             f"({check['bits_per_weight']:.3f} bits per weight, {check['bytes']:,} bytes, against the mix's {section['bits_per_weight']:.3f} and "
             f"{section['bytes']:,}) and evaluated on the same items; paired item by item over "
             + (f"every multiple-choice task, none being above chance ({', '.join(check.get('tasks') or [])}): the "
                "verdict compares two models that guess" if check.get("near_chance") else
                f"the headline tasks ({', '.join(check.get('tasks') or [])})") + "."]
    if uniform.get("value") is None:
        return lines + ["", "No multiple-choice task: nothing to pair."]
    lines += ["", "| | uniform | mixed | mixed − uniform (95% paired interval) | flips correct → wrong / wrong → "
                  "correct (McNemar p) | KL(uniform ‖ mixed), nats |", "|---|---:|---:|---|---|---|",
              f"| pooled accuracy | {100 * uniform['value']:.1f}% | {100 * mixed['value']:.1f}% | "
              f"{_pct(check['difference'])} | {flips.get('correct_to_wrong')} / {flips.get('wrong_to_correct')} "
              f"(p = {flips.get('mcnemar_p', float('nan')):.3g}) | {kl.get('value', float('nan')):.3g} |"]
    return lines


def budget_plot(section: dict, path: str | Path) -> Path:
    """Bars: the bits per weight of each unit in the model's order, coloured by format; the budget dotted."""
    from .plots import plt, save_figure

    rows = section["assignment"]
    colors = {name: COLORS.get(name, PALETTE[i % len(PALETTE)]) for i, name in enumerate(section["formats"])}
    fig, ax = plt.subplots(figsize=(max(6.0, 0.22 * len(rows) + 2), 3.4))
    for name in section["formats"]:
        xs = [i for i, row in enumerate(rows) if row["format"] == name]
        if xs:
            ax.bar(xs, [rows[i]["bits"] for i in xs], color=colors[name], label=name)
    ax.axhline(section["bits_budget"], color="#333333", linestyle="dotted", label=f"budget {section['bits_budget']:g}")
    ax.set_xticks(list(range(len(rows))), [row["unit"] for row in rows], rotation=90, fontsize=6)
    ax.set_ylabel("bits per weight (as stored)")
    ax.set_yscale("log", base=2)
    ax.set_title(f"bit budget {section['bits_budget']:g}: {section['bits_per_weight']:.3f} bits per weight reached")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save_figure(fig, path)
