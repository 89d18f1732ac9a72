"""The formats a bit budget chooses from (``--bits-budget B --budget-formats …`` of ``rtn``, ``gptq``, ``awq``;
``methods/_shared/budget.py`` spends the budget): each unit of the model gets one of them.

Spellings: ``W<b>A16-g<G>`` (``b``-bit integer weights, groups of ``G`` input columns), ``W<b>A16`` (one scale
per output row), ``W8A8`` (int8 weights and inputs per token, the run's ``--activations int8-token``), ``FP8``
(float8_e4m3fn weights, one scale per row, the run's fp8 inputs if any), ``kept`` (the layer left in float32,
as the folder stores it). A run mixes the formats of its scheme family only, so that every quantized layer
runs its inputs as the run says (``--activations``) and the folder holds one compressed-tensors format per
config group that forgetless, transformers and vLLM read:

* integer weights, weight-only (default): ``W4A16-g128, W4A16-g64, W8A16, kept``;
* ``--activations int8-token``: ``W8A8, kept``;
* ``--weight-type fp8``: ``FP8, kept``.

Bits per weight count what the folder stores for a layer (``compressed_tensors.stored_layout``): codes,
scales (float32); the 16-byte shape record of a packed layer is not counted. A mix is symmetric (no zero
points): transformers reads an asymmetric folder only through ``CompressedTensorsConfig(dequantize=True)``,
which decompresses every layer with one config group's scheme. The nominal bits below are those of a layer
whose width is a multiple of the group (``b + 32/G``); a per-row scale adds ``32 / width`` bits, known on the
model only. Standard
library only (read by the registry without torch).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import OptionError
from .format import QuantFormat

KEPT = "kept"
KEPT_BITS = 32  # a kept layer's weight, float32 in the folder
FAMILY_DEFAULTS = {"int": ("W4A16-g128", "W4A16-g64", "W8A16", KEPT), "int8-token": ("W8A8", KEPT),
                   "fp8": ("FP8", KEPT)}
_SPELLING = re.compile(r"^W(?P<bits>[2348])A(?P<acts>16|8)(?:-g(?P<group>[1-9]\d*))?$")


@dataclass(frozen=True)
class Candidate:
    """One format a unit may take: ``bits`` None for a kept layer; ``group_size`` -1 for one scale per row."""

    name: str
    bits: int | None
    group_size: int = -1
    weight_type: str = "int"

    @property
    def kept(self) -> bool:
        return self.bits is None

    def format_of(self, config) -> QuantFormat:
        """This candidate's format in the run ``config`` (its inputs and symmetry the run's)."""
        return QuantFormat(self.bits, self.weight_type, self.group_size, not config.asymmetric, config.activations)

    def nominal_bits(self) -> float:
        """Bits per weight on a layer whose width is a multiple of the group (module docstring)."""
        if self.kept:
            return float(KEPT_BITS)
        if self.group_size == -1:
            return float(self.bits)
        return self.bits + 32 / self.group_size


def family(config) -> str:
    """The run's scheme family: ``fp8`` weights, int8 inputs per token (``int8-token``) or weight-only ``int``."""
    if config.weight_type == "fp8":
        return "fp8"
    return "int8-token" if config.activations == "int8-token" else "int"


def parse(name: str) -> Candidate:
    """A candidate's spelling (module docstring) → ``Candidate``; anything else is one error listing them."""
    if name == KEPT:
        return Candidate(KEPT, None)
    if name == "FP8":
        return Candidate("FP8", 8, -1, "fp8")
    found = _SPELLING.match(name)
    if not found or (found["acts"] == "8" and (found["bits"] != "8" or found["group"])):
        raise OptionError(f"--budget-formats {name}: not a format; spell W<bits>A16-g<group> (e.g. W4A16-g128), "
                          "W<bits>A16 (one scale per row), W8A8, FP8 or kept")
    return Candidate(name, int(found["bits"]), int(found["group"] or -1))


def candidates(config) -> list[Candidate]:
    """The run's candidates: ``budget_formats``, or its family's default."""
    return [parse(name) for name in (config.budget_formats or FAMILY_DEFAULTS[family(config)])]


def _fits_family(candidate: Candidate, kind: str) -> bool:
    if candidate.kept:
        return True
    if kind == "fp8":
        return candidate.weight_type == "fp8"
    if kind == "int8-token":
        return candidate.name == "W8A8"
    return candidate.weight_type == "int" and candidate.name != "W8A8"


def check_budget(config) -> None:
    """``--bits-budget`` and ``--budget-formats`` fit the run (one ``OptionError`` before any work): formats of
    the run's scheme family, at least two, a budget within the nominal range they span."""
    if not config.bits_budget:
        if config.no_uniform_check:
            raise OptionError("--no-uniform-check: skips the check of a bit budget's mix; give --bits-budget or drop "
                              "it")
        if config.budget_formats:
            raise OptionError(f"--budget-formats {','.join(config.budget_formats)}: chooses among formats for "
                              "--bits-budget; give a budget (e.g. --bits-budget 4.5) or drop it")
        return
    if config.asymmetric:
        raise OptionError(f"--bits-budget {config.bits_budget:g} with --asymmetric: transformers reads asymmetric "
                          "folders only with CompressedTensorsConfig(dequantize=True), which decompresses every layer "
                          "with one config group's scheme (transformers 5.24), wrong for a mix of formats; drop "
                          "--asymmetric")
    chosen, kind = candidates(config), family(config)
    foreign = [c.name for c in chosen if not _fits_family(c, kind)]
    if foreign:
        what = {"fp8": "--weight-type fp8", "int8-token": "--activations int8-token",
                "int": "integer weight-only weights"}[kind]
        raise OptionError(f"--budget-formats {','.join(foreign)}: one folder mixes the formats of the run's scheme "
                          f"family ({what}: {', '.join(FAMILY_DEFAULTS[kind])}), so that every layer runs its "
                          "inputs as --activations says")
    if len({c.name for c in chosen}) < 2:
        raise OptionError(f"--budget-formats {','.join(c.name for c in chosen)}: a budget chooses among at least two "
                          f"formats (e.g. {','.join(FAMILY_DEFAULTS[kind])})")
    low, high = nominal_range(chosen)
    if not low[1] <= config.bits_budget < high[1]:
        side = "below the smallest" if config.bits_budget < low[1] else "at or above the largest"
        raise OptionError(f"--bits-budget {config.bits_budget:g}: {side} candidate; feasible: {low[1]:g} ({low[0]}) to "
                          f"below {high[1]:g} ({high[0]}: everything in it leaves nothing to choose) bits per weight "
                          f"with --budget-formats {','.join(c.name for c in chosen)}")


def nominal_range(chosen: list[Candidate]) -> tuple[tuple[str, float], tuple[str, float]]:
    """``((name, bits), (name, bits))`` of the smallest and largest candidate (nominal bits)."""
    sized = sorted(((c.name, c.nominal_bits()) for c in chosen), key=lambda pair: pair[1])
    return sized[0], sized[-1]
