"""The card's sensitivity ranking (``methods/quantize/sensitivity.py``: each quantized unit put alone into
the base model, its KL divergence to the base on calibration text, its share and the next-token
predictions it flips) and the ``ignore:`` list of a mixed-precision recipe keeping the most sensitive
units unquantized. Read from the quantizing method's card section ``sensitivity``."""
from __future__ import annotations

SHOWN = 12  # rows of the ranking in the card (the JSON keeps every unit)


def sensitivity_markdown(card: dict) -> list[str]:
    section = ((card.get("method") or {}).get("sections") or {}).get("sensitivity")
    if not section:
        return []
    whole = section["whole_model"]
    what = "decoder block" if section["units"] == "blocks" else "kind of linear layer (every block's)"
    lines = ["", f"## Sensitivity: which {what} causes the loss", "",
             f"Each unit quantized alone in the base model; KL(base ‖ that model) in nats per token and the share of "
             f"next-token predictions it flips, on {section['texts']} calibration texts ({section['tokens']} tokens). "
             f"The whole quantized model: KL {whole['kl']:.3g}, flips {100 * whole['flips']:.1f}%. Shares are of the "
             "units' summed KL (effects need not add up).", "",
             "| rank | unit | KL | share of KL | flips |", "|---:|---|---:|---:|---:|"]
    for rank, row in enumerate(section["ranking"][:SHOWN], 1):
        lines.append(f"| {rank} | {row['unit']} | {row['kl']:.3g} | {100 * row['kl_share']:.1f}% | "
                     f"{100 * row['flips']:.1f}% |")
    if len(section["ranking"]) > SHOWN:
        lines.append(f"| | … {len(section['ranking']) - SHOWN} more in report.json | | | |")
    ignore = section.get("mixed_ignore") or []
    if ignore:
        lines += ["", "A mixed-precision recipe keeping the 3 most sensitive units unquantized: the run's recipe "
                      "(model/recipe.yaml) with, on the quantizing method, "
                      f"`ignore: [{', '.join(ignore[:4])}{', …' if len(ignore) > 4 else ''}]` ({len(ignore)} "
                      "modules; the full list in report.json)."]
    return lines
