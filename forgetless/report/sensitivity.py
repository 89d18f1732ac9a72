"""The card's sensitivity ranking (``methods/_shared/sensitivity.py``: each quantized unit put alone into
the base model, its KL divergence to the base on calibration text, its share and the predictions it
flips), what the ranking cost, and the mixed-precision advice: an ``--ignore`` option keeping the most
sensitive units unquantized, or why there is none. Read from the quantizing method's card section
``sensitivity``."""
from __future__ import annotations

from dataclasses import dataclass

SHOWN = 12  # rows of the ranking in the card (the JSON keeps every unit)


@dataclass(frozen=True)
class SensitivitySection:
    """The quantizing method's ``sensitivity`` section: the ``units`` ranked (``ranking``: each one's ``unit``,
    ``kl``, ``kl_share``, ``flips``), the ``whole_model``'s KL and flips, per ``per`` (token or example) on
    ``texts`` calibration texts of ``tokens`` tokens in ``seconds``, and the ``mixed`` advice."""
    units: str
    ranking: list
    whole_model: dict
    per: str
    texts: int
    tokens: int
    seconds: float | None
    mixed: dict

    @classmethod
    def read(cls, data: dict) -> SensitivitySection:
        """The section from the card's JSON (a card written before ``per`` / ``seconds``: token, not given)."""
        return cls(data.get("units"), data.get("ranking"), data.get("whole_model"), data.get("per", "token"),
                   data.get("texts"), data.get("tokens"), data.get("seconds"), data.get("mixed") or {})

    def markdown(self) -> list[str]:
        """The ranking's lines of ``report.md``, then the mixed-precision advice."""
        whole = self.whole_model
        what = {"blocks": "block", "linears": "linear layer"}.get(self.units, "kind of linear layer (every block's)")
        predictions = "next-token predictions" if self.per == "token" else "predicted classes"
        cost = f" Measured in {self.seconds:g} s." if self.seconds is not None else ""
        lines = ["", f"## Sensitivity: which {what} causes the loss", "",
                 f"Each unit quantized alone in the base model; KL(base ‖ that model) in nats per {self.per} and the "
                 f"share of {predictions} it flips, on {self.texts} calibration texts ({self.tokens} tokens; the "
                 f"protocol names them). The whole quantized model: KL {whole['kl']:.3g}, flips "
                 f"{100 * whole['flips']:.1f}%. Shares are of the units' summed KL (effects need not add up).{cost}", "",
                 "| rank | unit | KL | share of KL | flips |", "|---:|---|---:|---:|---:|"]
        for rank, row in enumerate(self.ranking[:SHOWN], 1):
            lines.append(f"| {rank} | {row['unit']} | {row['kl']:.3g} | {100 * row['kl_share']:.1f}% | "
                         f"{100 * row['flips']:.1f}% |")
        if len(self.ranking) > SHOWN:
            lines.append(f"| | … {len(self.ranking) - SHOWN} more in report.json | | | |")
        return lines + self._advice()

    def _advice(self) -> list[str]:
        """The mixed-precision line: the ``--ignore`` option to add to the run, or why there is none."""
        mixed = self.mixed
        if "none" in mixed:
            return ["", f"No mixed-precision advice: {mixed['none']}."]
        if not mixed.get("keep"):
            return []
        units = ", ".join(mixed["keep"])
        return ["", f"Mixed precision: the same run with `{mixed['ignore']}` keeps the {len(mixed['keep'])} most "
                    f"sensitive unit(s) unquantized ({units}: {len(mixed['modules'])} linear layers, listed in "
                    "report.json as `mixed_ignore`, the `ignore:` of the quantizing method in model/recipe.yaml)."]
