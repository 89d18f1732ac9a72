"""A method's own card section, typed (issue 53). A method writes its section as free JSON (``report_section``:
``card.method.sections``, the keys in the method's own order, so ``report.json`` and its schema stay as they
are); the card's readers take the sections through one reader, ``method_sections``, each as the dataclass of
its kind, whose renderer sits beside it:

* ``sparsity``: a one-shot pruning's (``methods/_shared/oneshot.py``): the share of zeros it ``reached``;
* ``quantization``: a quantizing method's (``methods/_shared/quantized.py``, ``quantize``): the ``layers`` it
  quantized;
* ``sensitivity``: the ranking of the units by their loss (``sensitivity.SensitivitySection``);
* ``budget``: a bit budget's formats per unit (``budget.BudgetSection``).

A section the readers do not ask for (``smoothing``: smoothquant's) stays JSON in the card.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .budget import BudgetSection
from .sensitivity import SensitivitySection

if TYPE_CHECKING:  # types only: card_types → comparison_text → headline reads this module
    from .card_types import Card


@dataclass(frozen=True)
class SparsitySection:
    """A one-shot pruning's section: the share of the pruned layers' weights that are zero (``reached``)."""
    reached: float | None

    @classmethod
    def read(cls, data: dict) -> SparsitySection:
        return cls(data.get("reached"))


@dataclass(frozen=True)
class QuantizationSection:
    """A quantizing method's section: how many linear layers it quantized (``layers``; an expert's projection
    once, as its coverage note counts it; None in a section without the count)."""
    layers: int | None

    @classmethod
    def read(cls, data: dict) -> QuantizationSection:
        return cls(data["layers"] if isinstance(data.get("layers"), int) else None)


@dataclass(frozen=True)
class MethodSections:
    """The typed sections of a card's methods; None for one no method of the chain wrote."""
    sparsity: SparsitySection | None = None
    quantization: QuantizationSection | None = None
    sensitivity: SensitivitySection | None = None
    budget: BudgetSection | None = None


SECTIONS = {"sparsity": SparsitySection, "quantization": QuantizationSection, "sensitivity": SensitivitySection,
            "budget": BudgetSection}  # a section's name in the card → its dataclass


def method_sections(card: Card) -> MethodSections:
    """The card's method sections, each read into its dataclass (the one reader of ``card.method.sections``; an
    empty section counts as none)."""
    found = card.method.sections
    return MethodSections(**{name: kind.read(found[name]) for name, kind in SECTIONS.items() if found.get(name)})
