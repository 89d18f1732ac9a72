"""A bit budget spent where it matters (``--bits-budget B`` of ``rtn``, ``gptq``, ``awq``): each unit of the
model (``--sensitivity``'s units: blocks, the default, linear kinds, or single linears) takes one of the
candidate formats (``candidates.py``), chosen from its measured sensitivity. The experts of a fused
mixture-of-experts are refused (a folder packs them only under one scheme for all its layers: a mix would
store them float32, off budget); ``--ignore`` them, and the budget spends itself on the other linears.

1. Sizes, before any work: the bytes each unit stores in each format (``compressed_tensors.stored_layout``: codes,
   scales, zero points; a kept layer float32); a format whose group does not divide one of the unit's
   widths is not offered to it. The budget ``B`` bits per weight over the chosen linears is ``B · weights /
   8`` bytes; a budget outside what the units can reach is one error naming the range.
2. Sensitivity: for each quantized candidate the base model rounded to nearest in that format (every unit
   that can take it), and each unit of it put alone into the base (``sensitivity.unit_rows``): ``KL_u(f)``,
   its KL divergence to the base on ``sensitivity.TEXTS`` calibration texts (a kept unit: 0). The run's
   algorithm (GPTQ / AWQ) lowers every format's error; round-to-nearest ranks the units at a fraction of
   its cost (the HAWQ-style proxy; Dong et al. 2019).
3. Allocation: the assignment minimising ``Σ_u KL_u(f_u)`` with ``Σ_u bytes_u(f_u) ≤ budget``
   (``allocation.allocate``, exact).
4. The run quantizes each unit's linears in its format with its own algorithm; kept linears are left out of
   its selection (``Selection.left``) and stay float32 in the folder (``ignore``); the folder gets one
   compressed-tensors config group per format (``compressed_tensors.schemes_config``).

The card's ``budget`` section: the budget, the reachable range, the assignment (unit, format, bits, KL), the
bits per weight reached and the bytes stored, what the pass and the allocation cost (``report/budget.py``).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import time

import torch
from torch import nn

from ...errors import ConfigError
from ...models.adapters import get_adapter
from ...models.experts import ExpertLinear, linearized
from ...models.sites import weight_matrix
from ...models.targets import Selection, select_linears
from ...quantization.candidates import Candidate, candidates
from ...quantization.compressed_tensors import stored_layout
from ...quantization.format import PACKED
from ...quantization.layers import attach
from .allocation import allocate
from .sensitivity import Reference, _expert_linears, sensitivity_batches, unit_rows, units

ITEM_BYTES = {"I32": 4, "F32": 4, "I64": 8, "I8": 1, "F8_E4M3": 1}
NOT_COUNTED = ".weight_shape"  # the 16-byte shape record of a packed layer (module docstring of candidates.py)


def candidate_config(config, candidate: Candidate):
    """The run's config in ``candidate``'s format (the budget's own options cleared)."""
    return dataclasses.replace(config, bits=candidate.bits, group_size=candidate.group_size,
                               weight_type=candidate.weight_type, sensitivity="none", bits_budget=0.0,
                               budget_formats=[], no_uniform_check=False)


def linear_bytes(rows: int, columns: int, candidate: Candidate, config) -> int | None:
    """Bytes a ``rows × columns`` linear stores in ``candidate`` (None: its group does not divide ``columns``)."""
    if candidate.kept:
        return rows * columns * 4
    if candidate.group_size != -1 and columns % candidate.group_size:
        return None
    fmt = candidate_config(config, candidate).format  # symmetric: a mix is (``candidates.check_budget``)
    inputs = None if fmt.weight_only else {"dynamic": not fmt.static_inputs}
    scheme = {"format": fmt.ct_format, "weights": fmt.weights_args(), "input_activations": inputs}
    layout = stored_layout("m", scheme, rows, columns, "F32")
    return sum(math.prod(shape) * ITEM_BYTES[kind] for name, (shape, kind) in layout.items()
               if not name.endswith(NOT_COUNTED))


@dataclasses.dataclass
class Unit:
    """One unit of the allocation: its label and its chosen linears ``(name, rows, columns, nn.Linear?)``."""

    label: str
    linears: list[tuple[str, int, int, bool]]

    @property
    def weights(self) -> int:
        return sum(rows * columns for _, rows, columns, _ in self.linears)

    def bytes(self, candidate: Candidate, config) -> int | None:
        """Its bytes in ``candidate``; None when one linear cannot take it (group, or a format stored for
        ``nn.Linear`` only — all but pack-quantized — on an expert that is no ``nn.Linear``)."""
        if not candidate.kept and candidate.format_of(config).ct_format != PACKED and \
                not all(plain for *_, plain in self.linears):
            return None
        sizes = [linear_bytes(rows, columns, candidate, config) for _, rows, columns, _ in self.linears]
        return None if None in sizes else sum(sizes)


def budget_units(model: nn.Module, config) -> list[Unit]:
    """The units of ``--sensitivity`` (blocks when none) holding the linears ``targets`` / ``ignore`` choose."""
    kind = config.sensitivity if config.sensitivity != "none" else "blocks"
    with linearized(model):
        selected = select_linears(model, Selection.of(config))
        chosen = [(name, *weight_matrix(m).shape, type(m) is nn.Linear) for name, m in selected]
        experts = [name for name, m in selected if isinstance(m, ExpertLinear)]
    if experts:
        raise ConfigError(f"--bits-budget {config.bits_budget:g}: {experts[0]} is one expert of a fused "
                          "mixture-of-experts; a folder stores fused experts packed only when every quantized layer "
                          "shares one scheme (stock loading decompresses them with the first config group's), so a "
                          "mix would store them float32, off budget: leave them out with --ignore 're:.*experts.*' "
                          "or quantize uniformly")
    found = []
    for label, names in units(model, kind).items():
        expanded = [e for n in names for e in _expert_linears(model, n)]
        mine = [c for c in chosen if any(c[0] == n or c[0].startswith(n + ".") for n in expanded)]
        if mine:
            found.append(Unit(label, mine))
    return found


@dataclasses.dataclass
class BudgetPlan:
    """The allocation: each chosen linear's candidate (``formats``), the kept ones, and the card's section."""

    formats: dict[str, Candidate]
    configs: dict[str, object]  # candidate name → the run's config in that format
    prefixes: dict[str, str]  # "decoder.3" → "model.layers.3."
    section: dict

    @property
    def kept(self) -> frozenset[str]:
        return frozenset(name for name, c in self.formats.items() if c.kept)

    def config_of(self, name: str, where: str | None = None):
        """The config that quantizes linear ``name`` (inside block ``where``, layer-relative, when given)."""
        full = self.prefixes[where] + name if where is not None else name
        return self.configs[self.formats[full].name]


def feasible(units_: list[Unit], chosen: list[Candidate], config) -> tuple[list[list[int | None]], float, float]:
    """Each unit's bytes per candidate and the least and most bits per weight the units can reach."""
    costs = [[unit.bytes(c, config) for c in chosen] for unit in units_]
    weights = sum(unit.weights for unit in units_)
    low = 8 * sum(min(b for b in row if b is not None) for row in costs) / weights
    high = 8 * sum(max(b for b in row if b is not None) for row in costs) / weights
    return costs, low, high


def check_range(config, low: float, high: float, units_: list[Unit]) -> None:
    """The budget within what the units reach on this model: one error naming the range before any work."""
    budget = config.bits_budget
    if low - 1e-9 <= budget < high:
        return
    side = "below the least" if budget < low else "at or above the most"
    raise ConfigError(f"--bits-budget {budget:g}: {side} this model's {len(units_)} units can store with "
                      f"--budget-formats {','.join(c.name for c in candidates(config))}; feasible: {low:.4g} to below "
                      f"{high:.4g} bits per weight (codes, scales and zero points; at the top every unit takes the "
                      "largest format: nothing to choose)")


def candidate_kl(base: nn.Module, units_: list[Unit], chosen: list[Candidate], costs, batches, config) -> tuple:
    """``KL[u][c]`` of each unit at each candidate (module docstring, step 2; None where not offered) and the
    token count. The base's predictions are computed once for every candidate (``sensitivity.Reference``)."""
    kind = config.sensitivity if config.sensitivity != "none" else "blocks"
    kl = [[0.0 if c.kept else None for c in chosen] for _ in units_]
    reference = Reference(base, batches, blocks=kind == "blocks")
    for index, candidate in enumerate(chosen):
        offered = {name for unit, row in zip(units_, costs) if row[index] is not None for name, *_ in unit.linears}
        if candidate.kept or not offered:
            continue
        fmt = candidate_config(config, candidate).format
        rounded = copy.deepcopy(base)
        with linearized(rounded), torch.no_grad():
            for name, module in select_linears(rounded, Selection.of(config)):
                if name in offered:
                    attach(module, fmt.round(weight_matrix(module)), fmt.input_quant(), fmt)
        by_unit = {row["unit"]: row["kl"] for row in unit_rows(reference, base, rounded, kind)}
        del rounded
        for u, unit in enumerate(units_):
            if costs[u][index] is not None:
                kl[u][index] = max(by_unit[unit.label], 0.0)
    return kl, reference.tokens


def sized(config, model: nn.Module) -> tuple[list[Unit], list[Candidate], list, float, float]:
    """Step 1 of the module docstring: units, candidates, bytes, reachable range (checked)."""
    units_, chosen = budget_units(model, config), candidates(config)
    costs, low, high = feasible(units_, chosen, config)
    check_range(config, low, high, units_)
    return units_, chosen, costs, low, high


def plan_budget(model: nn.Module, ctx, config) -> BudgetPlan:
    """The allocation for ``model`` (still the base: called before the method quantizes) on the run's
    calibration texts (``ctx``)."""
    units_, chosen, costs, low, high = sized(config, model)
    start = time.perf_counter()
    batches = sensitivity_batches(ctx, config.name)
    kl, tokens = candidate_kl(model.eval(), units_, chosen, costs, batches, config)
    measured = time.perf_counter() - start
    start = time.perf_counter()
    budget_bytes = int(config.bits_budget * sum(u.weights for u in units_) / 8)
    picks = allocate(costs, [[v if v is not None else math.inf for v in row] for row in kl], budget_bytes)
    allocated = time.perf_counter() - start
    formats = {name: chosen[p] for unit, p in zip(units_, picks) for name, *_ in unit.linears}
    stored = sum(costs[u][p] for u, p in enumerate(picks))
    weights = sum(u.weights for u in units_)
    names = {id(m): n for n, m in model.named_modules()}
    stacks = get_adapter(model).stacks(model).items()
    prefixes = {f"{stack}.{i}": f"{names[id(layers)]}.{i}." for stack, layers in stacks for i in range(len(layers))}
    rows = [{"unit": unit.label, "format": chosen[p].name, "bits": 8 * costs[u][p] / unit.weights,
             "weights": unit.weights, "kl": kl[u][p],
             "kl_by_format": {c.name: kl[u][i] for i, c in enumerate(chosen) if kl[u][i] is not None}}
            for u, (unit, p) in enumerate(zip(units_, picks))]
    section = {"bits_budget": config.bits_budget, "formats": [c.name for c in chosen],
               "units": config.sensitivity if config.sensitivity != "none" else "blocks", "feasible": [low, high],
               "bits_per_weight": 8 * stored / weights, "bytes": stored, "weights": weights,
               "kl_sum": sum(r["kl"] for r in rows), "assignment": rows, "measured_with": "round-to-nearest",
               "texts": sum(len(b["input_ids"]) for b in batches), "tokens": tokens,
               "seconds_sensitivity": round(measured, 2), "seconds_allocation": round(allocated, 4),
               **({"uniform_check": None} if config.no_uniform_check else {})}  # filled by ``uniform_check.py``
    return BudgetPlan(formats, {c.name: candidate_config(config, c) for c in chosen if not c.kept}, prefixes, section)


def budget_note(plan: BudgetPlan) -> str:
    """The card's note on the allocation: the mix, the bits reached, what the pass and the allocation cost."""
    s = plan.section
    counts: dict[str, int] = {}
    for row in s["assignment"]:
        counts[row["format"]] = counts.get(row["format"], 0) + 1
    mix = ", ".join(f"{n} {name}" for name, n in counts.items())
    return (f"bit budget {s['bits_budget']:g} bits per weight over {len(s['assignment'])} units ({s['units']}): {mix}; "
            f"{s['bits_per_weight']:.3f} bits per weight reached ({s['bytes']:,} bytes stored); sensitivity at each "
            f"format measured with round-to-nearest on {s['tokens']} calibration tokens in "
            f"{s['seconds_sensitivity']:g} s, allocation (exact) in {1000 * s['seconds_allocation']:.1f} ms")


def start_budget(method, model: nn.Module, ctx) -> None:
    """Before a quantizing method's work: its plan (``method.plan``, None without a budget) and its note."""
    method.plan = plan_budget(model, ctx, method.config) if getattr(method.config, "bits_budget", 0) else None
    if method.plan is not None and ctx is not None:
        ctx.notes.append(budget_note(method.plan))


def selection_of(method) -> Selection:
    """The linears a method quantizes: its ``targets`` / ``ignore`` less the linears its budget keeps."""
    plan = getattr(method, "plan", None)
    return Selection.of(method.config, plan.kept if plan is not None else frozenset())


@contextlib.contextmanager
def formatted(method, name: str, where: str | None = None):
    """Inside: ``method.config`` is the format its plan gives linear ``name`` (no plan: unchanged)."""
    plan = getattr(method, "plan", None)
    if plan is None:
        yield method.config
        return
    run = method.config
    method.config = plan.config_of(name, where)
    try:
        yield method.config
    finally:
        method.config = run


def split_by_format(method, where: str, names: list[str]) -> list[list[str]]:
    """``names`` (linears of block ``where`` that share inputs) grouped by the format the plan gives them."""
    plan = getattr(method, "plan", None)
    if plan is None:
        return [names]
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(plan.formats[plan.prefixes[where] + name].name, []).append(name)
    return list(groups.values())


def check_budget_fits(method, model: nn.Module) -> None:
    """A budget's range on the model's units, before any work (``sized``)."""
    if method.config.bits_budget:
        sized(method.config, model)
