"""What the quantizing methods (``rtn``, ``gptq``, ``awq``) share around the library (``forgetless/quantization``):
the card's quantization section and notes, the artifacts saved with the model, the end of ``finalize`` and the
check that the chosen linears can be stored in the run's format. Each takes the method's config, whose
``format`` (``quantization.format.QuantFormat``) answers every question about the format; a bit budget's mix
(``budget.py``) is named as such."""
from __future__ import annotations

import statistics
from pathlib import Path

from torch import nn

from ...errors import OptionError
from ...models.experts import ExpertLinear, linearized
from ...models.sites import in_features
from ...models.targets import Selection, select_linears
from ...quantization.format import INPUT_WORDS, PACKED
from ...quantization.options import check_groups_fit
from ...report.budget import PLOT, BudgetSection
from .budget import check_budget_fits
from .sensitivity import check_sensitivity


def label(config) -> str:
    """"int4", "fp8", "W8A8 int8", …, "mixed (4.5-bit budget)": the card's quantization dtype."""
    return f"mixed ({config.bits_budget:g}-bit budget)" if config.bits_budget else config.format.label


def describe(config) -> str:
    """"int4 weights, groups of 128, symmetric, weight-only" and the like, for the card's notes."""
    if config.bits_budget:
        return (f"the formats a {config.bits_budget:g}-bit budget chose per unit (bit budget note), "
                f"{INPUT_WORDS[config.activations]}")
    return config.format.describe()


class QuantizedOutput:
    """What ``rtn``, ``gptq`` and ``awq`` do alike (mixed in before their base class): the checks before any work,
    the end of ``finalize``, the artifacts saved with the model, the bit budget's plot, and the card's quantization
    section (``ERROR``: the name of the per-layer error their ``layers`` record; ``section_keys``: the method's own
    keys)."""
    ERROR = "reconstruction_error"

    def check_fits(self, model) -> None:
        """``targets`` / ``ignore``, the format against the chosen linears' kinds (``check_linears``) and the group
        size against every one's width (experts included: one error naming what fits them all; a bit budget offers
        each unit the formats whose groups fit it)."""
        with linearized(model):
            linears = select_linears(model, Selection.of(self.config))
            check_linears(linears, self.config)
            if not self.config.bits_budget:
                check_groups_fit(self.config.group_size, [(f"{name} has", in_features(module))
                                                          for name, module in linears])
        check_budget_fits(self, model)

    def prepare(self, model, ctx):
        check_sensitivity(self.config, ctx)
        return super().prepare(model, ctx)

    def finalize(self, model, ctx):
        return finish_quantized(self, model, ctx)

    def artifacts(self) -> dict:
        """What the method saves with the model: bits, group size (None for a bit budget's mix), its layers."""
        mixed = bool(self.config.bits_budget)
        return {"bits": None if mixed else self.config.bits, "group_size": None if mixed else self.config.group_size,
                "layers": getattr(self, "layers", [])}

    def plots(self, out_dir) -> list:
        """The bits-per-unit plot of a method that spent a bit budget (``report/budget.py``)."""
        from ...report.plots import budget_plot  # matplotlib: imported when a budget is drawn

        plan = getattr(self, "plan", None)
        return [budget_plot(BudgetSection.read(plan.section), Path(out_dir) / PLOT)] if plan is not None else []

    def report_section(self) -> dict | None:
        """The card's quantization section (None before the method quantized)."""
        return quantization_section(self, self.ERROR, **self.section_keys()) if getattr(self, "layers", None) else None

    def section_keys(self) -> dict:
        """The method's own keys of its quantization section, after the error (none)."""
        return {}


def quantization_section(method, error: str, **extra) -> dict:
    """A quantizing method's card section: its format, storage, the mean and largest
    per-layer ``error``, ``extra`` keys, the speed note, its sensitivity ranking if measured and its bit budget's
    plan if it spent one."""
    from .sensitivity import sensitivity_section

    c = method.config
    mixed = bool(c.bits_budget)  # a bit budget's mix: bits and groups per unit, in the budget section
    errors = [entry[error] for entry in method.layers]
    plan = getattr(method, "plan", None)
    return {"quantization": {
        "dtype": f"{c.name} {label(c)}", "bits": None if mixed else c.bits,
        "group_size": None if mixed else c.group_size, "asymmetric": c.asymmetric,
        "weight_type": c.weight_type, "activations": c.activations, "format": getattr(method, "format", None),
        "layers": len(method.layers), **getattr(method, "storage", {}),
        **({"modules": method.coverage} if getattr(method, "coverage", None) else {}),
        error: {"mean": statistics.fmean(errors), "max": max(errors)}, **extra, "expected": False,
        "why": c.format.speed_note}, **sensitivity_section(method), **({"budget": plan.section} if plan is not None else {})}


def finish_quantized(method, model: nn.Module, ctx) -> nn.Module:
    """The end of a quantizing method's ``finalize`` (``rtn``, ``gptq``, ``awq``): what the layers store
    (``expert_checkpoint.storage_notes``: storage, format, the card's notes) and the sensitivity ranking."""
    from ...models.expert_checkpoint import storage_notes
    from .sensitivity import run_sensitivity

    method.storage, notes, method.format = storage_notes(method.config.name, model)
    if ctx is not None:
        ctx.notes.extend(notes)
    method.sensitivity = run_sensitivity(model, ctx, method.config)
    return model


def check_linears(linears: list[tuple[str, nn.Module]], config) -> None:
    """Only ``pack-quantized`` (weight-only integer codes) is stored for experts and ``Conv1D``; every other
    format for ``nn.Linear`` only (compressed-tensors)."""
    fmt = config.format
    if fmt.ct_format == PACKED:
        return
    other = next((name for name, module in linears if type(module) is not nn.Linear), None)
    if other is not None:
        flag = f"--weight-type {fmt.type}" if fmt.type != "int" else f"--activations {fmt.activations}"
        kind = type(dict(linears)[other]).__name__
        if isinstance(dict(linears)[other], ExpertLinear):
            raise OptionError(f"{flag}: {other} is one expert of a fused mixture-of-experts ({kind}), not an "
                              "nn.Linear; compressed-tensors stores this format for nn.Linear only: leave the experts "
                              "out with --ignore 're:.*experts.*', or quantize them weight-only (int, no quantized "
                              "inputs)")
        raise OptionError(f"{flag}: {other} is a {kind}, not an nn.Linear; compressed-tensors stores these schemes "
                          "for nn.Linear only (not GPT-2's Conv1D): leave those out with --ignore")
