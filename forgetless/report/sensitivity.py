"""The card's sensitivity ranking (``methods/_shared/sensitivity.py``: each quantized unit put alone into
the base model, its KL divergence to the base on calibration text, its share and the predictions it
flips), what the ranking cost, and the mixed-precision advice: an ``--ignore`` option keeping the most
sensitive units unquantized, or why there is none. Read from the quantizing method's card section
``sensitivity``."""
from __future__ import annotations

from .card_types import Card

SHOWN = 12  # rows of the ranking in the card (the JSON keeps every unit)


def sensitivity_markdown(card: Card) -> list[str]:
    section = card.method.sections.get("sensitivity")
    if not section:
        return []
    whole = section["whole_model"]
    what = {"blocks": "block", "linears": "linear layer"}.get(section["units"], "kind of linear layer (every block's)")
    per = section.get("per", "token")
    predictions = "next-token predictions" if per == "token" else "predicted classes"
    cost = f" Measured in {section['seconds']:g} s." if "seconds" in section else ""
    lines = ["", f"## Sensitivity: which {what} causes the loss", "",
             f"Each unit quantized alone in the base model; KL(base ‖ that model) in nats per {per} and the share of "
             f"{predictions} it flips, on {section['texts']} calibration texts ({section['tokens']} tokens; the "
             f"protocol names them). The whole quantized model: KL {whole['kl']:.3g}, flips "
             f"{100 * whole['flips']:.1f}%. Shares are of the units' summed KL (effects need not add up).{cost}", "",
             "| rank | unit | KL | share of KL | flips |", "|---:|---|---:|---:|---:|"]
    for rank, row in enumerate(section["ranking"][:SHOWN], 1):
        lines.append(f"| {rank} | {row['unit']} | {row['kl']:.3g} | {100 * row['kl_share']:.1f}% | "
                     f"{100 * row['flips']:.1f}% |")
    if len(section["ranking"]) > SHOWN:
        lines.append(f"| | … {len(section['ranking']) - SHOWN} more in report.json | | | |")
    return lines + _advice(section.get("mixed") or {})


def _advice(mixed: dict) -> list[str]:
    """The mixed-precision line: the ``--ignore`` option to add to the run, or why there is none."""
    if "none" in mixed:
        return ["", f"No mixed-precision advice: {mixed['none']}."]
    if not mixed.get("keep"):
        return []
    units = ", ".join(mixed["keep"])
    return ["", f"Mixed precision: the same run with `{mixed['ignore']}` keeps the {len(mixed['keep'])} most "
                f"sensitive unit(s) unquantized ({units}: {len(mixed['modules'])} linear layers, listed in "
                "report.json as `mixed_ignore`, the `ignore:` of the quantizing method in model/recipe.yaml)."]
