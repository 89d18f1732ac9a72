"""The card's bit budget (``methods/_shared/budget.py``): the budget and the range the model's units can
reach, the formats chosen per unit with their bits and measured KL, the bits per weight reached and the bytes
stored, what the sensitivity pass and the allocation cost, and a plot of the bits per unit
(``budget_bits.png``, ``plots.budget_plot``). Read from the quantizing method's card section ``budget``."""
from __future__ import annotations

from dataclasses import dataclass

SHOWN = 16  # rows of the assignment in the card (the JSON keeps every unit)
PLOT = "budget_bits.png"


@dataclass(frozen=True)
class BudgetSection:
    """The quantizing method's ``budget`` section (``methods/_shared/budget.py``): the ``bits_budget`` and the
    range the units could reach (``feasible``), each unit's format (``assignment``: ``unit``, ``format``,
    ``bits``, ``kl``, ``kl_by_format``), what was reached and stored, what the passes cost, and the
    ``uniform_check`` (``no_uniform_check``: turned off by its flag)."""
    bits_budget: float
    feasible: list
    units: str
    formats: list
    assignment: list
    bits_per_weight: float
    bytes: int
    weights: int
    kl_sum: float
    measured_with: str
    texts: int
    tokens: int
    seconds_sensitivity: float
    seconds_allocation: float
    uniform_check: dict | None
    no_uniform_check: bool

    @classmethod
    def read(cls, data: dict) -> BudgetSection:
        """The section from its JSON (the card's, or the method's plan)."""
        names = [f for f in cls.__dataclass_fields__ if f not in ("uniform_check", "no_uniform_check")]
        return cls(**{name: data.get(name) for name in names}, uniform_check=data.get("uniform_check") or None,
                   no_uniform_check="uniform_check" in data and not data["uniform_check"])

    def markdown(self, plots: list[str]) -> list[str]:
        """The budget's lines of ``report.md`` (``plots``: the card's, naming ``PLOT`` when it was drawn)."""
        low, high = self.feasible
        counts: dict[str, int] = {}
        for row in self.assignment:
            counts[row["format"]] = counts.get(row["format"], 0) + 1
        lines = ["", f"## Bit budget: {self.bits_budget:g} bits per weight", "",
                 f"Each of {len(self.assignment)} units ({self.units}) took one of {', '.join(self.formats)}: the "
                 f"assignment with the least summed KL within the budget (exact; the units could reach {low:.3f} to "
                 f"{high:.3f} bits per weight). Reached: **{self.bits_per_weight:.3f} bits per weight**, "
                 f"{self.bytes:,} bytes for {self.weights:,} weights (codes, scales and zero points as the folder "
                 f"stores them, a kept layer float32; the 16-byte shape record of each packed layer not counted). "
                 f"Chosen: {', '.join(f'{n} × {name}' for name, n in counts.items())}; summed KL {self.kl_sum:.3g} "
                 f"nats per token. KL of each unit at each format measured with {self.measured_with} on {self.texts} "
                 f"calibration texts ({self.tokens} tokens) in {self.seconds_sensitivity:g} s; the allocation took "
                 f"{1000 * self.seconds_allocation:.1f} ms.", "",
                 "| unit | format | bits per weight | KL at its format | " +
                 " | ".join(f"KL {name}" for name in self.formats) + " |",
                 "|---|---|---:|---:|" + "---:|" * len(self.formats)]
        for row in self.assignment[:SHOWN]:
            kls = [row["kl_by_format"].get(name) for name in self.formats]
            lines.append(f"| {row['unit']} | {row['format']} | {row['bits']:.3f} | {row['kl']:.3g} | " +
                         " | ".join("–" if v is None else f"{v:.3g}" for v in kls) + " |")
        if len(self.assignment) > SHOWN:
            lines.append(f"| … {len(self.assignment) - SHOWN} more in report.json | | | |" + " |" * len(self.formats))
        if PLOT in plots:
            lines += ["", f"The bits of each unit: `{PLOT}` (method plots, below)."]
        return lines + self.uniform_markdown()

    def uniform_markdown(self) -> list[str]:
        """The uniform check's lines: the mix against one format of the same or larger size, item by item."""
        check = self.uniform_check
        if not check:
            return ["", "No uniform check (--no-uniform-check)."] if self.no_uniform_check else []
        if "skipped" in check:
            return ["", f"No uniform check: {check['skipped']}."]
        accuracy, flips, kl = check.get("accuracy") or {}, check.get("flips") or {}, check.get("kl") or {}
        uniform, mixed = (accuracy.get(role) or {} for role in ("base", "compressed"))
        tasks = ", ".join(check.get("tasks") or [])
        lines = ["", f"### Against uniform {check['format']}: {check['verdict']}", "",
                 f"The base quantized in {check['format']} alone by {check['method']} "
                 f"({check['bits_per_weight']:.3f} bits per weight, {check['bytes']:,} bytes, against the mix's "
                 f"{self.bits_per_weight:.3f} and {self.bytes:,}) and evaluated on the same items; paired item by "
                 "item over " + (f"every multiple-choice task, none being above chance ({tasks}): the verdict "
                                 "compares two models that guess" if check.get("near_chance") else
                                 f"the headline tasks ({tasks})") + "."]
        if uniform.get("value") is None:
            return lines + ["", "No multiple-choice task: nothing to pair."]
        lines += ["", "| | uniform | mixed | mixed − uniform (95% paired interval) | flips correct → wrong / wrong → "
                      "correct (McNemar p) | KL(uniform ‖ mixed), nats |", "|---|---:|---:|---|---|---|",
                  f"| pooled accuracy | {100 * uniform['value']:.1f}% | {100 * mixed['value']:.1f}% | "
                  f"{_pct(check['difference'])} | {flips.get('correct_to_wrong')} / {flips.get('wrong_to_correct')} "
                  f"(p = {flips.get('mcnemar_p', float('nan')):.3g}) | {kl.get('value', float('nan')):.3g} |"]
        return lines


def _pct(entry: dict | None) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    return f"{100 * entry['value']:+.1f} points [{100 * entry['low']:+.1f}, {100 * entry['high']:+.1f}]"
